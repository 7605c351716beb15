"""examples/hyperparameter_sweep.ipynb, executed as a user runs it: three real local jobs submitted with
``%%tau_submit --config``, one pane comparing their experiment, the Stellar pages for it."""

from __future__ import annotations

import json
import re

from taunotebook.client import PortalClient

from .notebooks import (
    cell,
    displayed_widgets,
    example_environment,
    execute,
    fetch_with_local_portal_token,
    stdout,
    widget_state,
)

LRS = [0.1, 0.03, 0.01]


def test_hyperparameter_sweep_notebook_compares_the_experiment_named_by_what_differs(tmp_path, monkeypatch):
    with example_environment(tmp_path, monkeypatch) as home:
        nb = execute("hyperparameter_sweep", tmp_path, timeout=300)
        summary = stdout(cell(nb, "summary")).splitlines()
        compare_link = summary[-2].removeprefix("Open in Stellar: ")
        table_link = summary[-1].removeprefix("Runs table: ")
        compare_page = fetch_with_local_portal_token(home, compare_link)
        table_page = fetch_with_local_portal_token(home, table_link)
        portal = json.loads((home / "portal.json").read_text())
        with PortalClient(f"http://127.0.0.1:{portal['port']}", portal["token"], project="sweeps") as client:
            table = client.run_table(experiment="lr-sweep", metrics=["loss"])

    waited = stdout(cell(nb, "wait")).splitlines()
    ids = [line.split()[0] for line in waited]
    assert [line.split()[1] for line in waited] == ["succeeded"] * 3
    assert all(re.fullmatch(r"lr-sweep-[0-9a-z-]+", r) for r in ids) and len(set(ids)) == 3

    # compare="lr-sweep" is the experiment: its three runs, the pane's own first (as the kernel's pane holds
    # them; the widget state nbclient keeps is the one the pane was displayed with).
    (pane_id,) = displayed_widgets(cell(nb, "pane"))
    assert widget_state(nb, pane_id)["compare"] == ["lr-sweep"]
    drawn = summary[0].removeprefix("compare= ['lr-sweep'] draws ").split(", ")
    assert drawn[0] == ids[0] and sorted(drawn) == sorted(ids)

    # Each run's config, which the legend names it by (js/shared/differing.js: lr differs, batch and
    # optimizer.name do not), and its final loss.
    lines = {line.split(":")[0]: line for line in summary[1:-2]}
    assert sorted(lines) == sorted(ids)
    finals = []
    for run, lr in zip(ids, LRS, strict=True):
        match = re.fullmatch(rf"{run}: lr={lr}, final loss ([\d.]+)", lines[run])
        assert match, lines[run]
        finals.append(float(match.group(1)))
    assert finals == sorted(finals)  # a larger lr falls further in 200 steps

    # The pane's link compares the same three runs; the runs table page and its data list them with configs.
    assert f"target={ids[0]}" in compare_link and sorted(compare_link.split("&compare=")[1].split(",")) == \
        sorted(ids[1:])
    assert compare_page.status_code == 200 and table_page.status_code == 200
    rows = {row.run_id: row for row in table.runs}
    assert sorted(rows) == sorted(ids)
    for run, lr in zip(ids, LRS, strict=True):  # --config lr=0.1 is the number 0.1
        assert rows[run].config == {"batch": 32, "lr": lr, "optimizer.name": "sgd"}
        assert rows[run].metrics["loss"].count == 200
