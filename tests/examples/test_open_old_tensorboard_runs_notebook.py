"""examples/open_old_tensorboard_runs.ipynb, executed as a user runs it: a real logdir, `taunotebook import`, one pane."""

from __future__ import annotations

from .notebooks import (
    cell,
    displayed_widgets,
    example_environment,
    execute,
    fetch_with_local_portal_token,
    stdout,
    widget_state,
)

RUNS = ["cnn-baseline", "cnn-dropout", "cnn-wide"]


def test_old_tensorboard_runs_are_imported_and_compared_in_one_pane(tmp_path, monkeypatch):
    with example_environment(tmp_path, monkeypatch) as home:
        nb = execute("open_old_tensorboard_runs", tmp_path)
        summary = stdout(cell(nb, "summary")).splitlines()
        link = summary[0].removeprefix("Open in Stellar: ")
        page = fetch_with_local_portal_token(home, link)

    assert stdout(cell(nb, "make")).strip() == "['cnn-baseline', 'cnn-dropout', 'cnn-wide']"
    # `taunotebook import` with no --store wrote <TAU_HOME>/store: the store the local Portal serves.
    imported = stdout(cell(nb, "import")).splitlines()
    # Each source and the run id it became, then the summary.
    assert [line.rsplit(" -> ", 1)[1] for line in imported[:3]] == RUNS, imported
    assert all(line.split(" -> ")[0].endswith(f"/{run}") for line, run in zip(imported, RUNS, strict=False))
    assert imported[3].startswith("imported 3 runs, 6 metrics, 660 points (0 non-finite)"), imported
    assert imported[4:] == [f"store: {home / 'store'}"]

    # Every point the writer wrote, as the pane loaded it from the Portal (the values are seeded, so exact).
    assert summary[1:] == [
        "cnn-baseline: train/loss 200 points (last 0.128), val/accuracy 20 points (last 0.978)",
        "cnn-dropout: train/loss 200 points (last 0.204), val/accuracy 20 points (last 0.970)",
        "cnn-wide: train/loss 200 points (last 0.107), val/accuracy 20 points (last 0.980)",
    ]

    # One pane compares the three runs, and its "Open in Stellar" opens the page comparing the same three.
    assert stdout(cell(nb, "pane")).strip() == str(RUNS)  # the imported experiment, as the Portal lists it
    (pane_id,) = displayed_widgets(cell(nb, "pane"))
    pane = widget_state(nb, pane_id)
    # (What the pane loaded is the summary above, printed from the pane in the kernel: the copy of the widget's
    # state nbclient keeps misses updates the pane's thread sends between two cells.)
    assert (pane["run_id"], pane["compare"], pane["stellar_href"]) == (RUNS[0], RUNS[1:], link)
    assert "target=cnn-baseline" in link and link.endswith("&compare=cnn-dropout,cnn-wide")
    assert page.status_code == 200
    assert 'id="stellar-title">cnn-baseline vs cnn-dropout vs cnn-wide<' in page.text
