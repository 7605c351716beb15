"""examples/pytorch_summarywriter.ipynb, executed as a user runs it: real torch training in a local job, live pane."""

from __future__ import annotations

import json
import re

from .notebooks import cell, displayed_widgets, example_environment, execute, stdout, widget_state

# Run in the notebook's kernel after its cells: what the pane the training cell displayed holds, once its
# polling thread has loaded every point of the finished run (polled, with a deadline only a broken build meets).
PANE_STATE = """
import gc, json, time
from taunotebook.pane import LossPane

(pane,) = [o for o in gc.get_objects() if isinstance(o, LossPane)]
def loaded():
    return pane.runs.get(pane.run_id, {}).get("metrics", {}).get("train/loss", {}).get("count") == 300
deadline = time.monotonic() + 300
while not loaded() and time.monotonic() < deadline:
    time.sleep(0.1)
print(json.dumps({"model_id": pane.model_id, "run_id": pane.run_id, "metrics": pane.metrics,
                  "counts": {m: v["count"] for m, v in pane.runs.get(pane.run_id, {}).get("metrics", {}).items()},
                  "stellar_href": pane.stellar_href}))
"""


def test_torch_summary_writer_notebook_trains_and_reads_its_series_back(tmp_path, monkeypatch):
    with example_environment(tmp_path, monkeypatch) as home:
        nb = execute("pytorch_summarywriter", tmp_path, timeout=600, after=[PANE_STATE])

    submitted = stdout(cell(nb, "train"))
    match = re.search(r"run (torch-mlp-[0-9a-f]{6}) submitted \(local; project demo, group sine-mlp\)", submitted)
    assert match, submitted
    run_id = match.group(1)
    # The metrics came through the TensorBoard event files the SummaryWriter wrote in the run's logdir.
    run_dir = home / "projects" / "default" / "runs" / run_id
    assert list((run_dir / "tensorboard").glob("events.out.tfevents.*"))

    # A job that ran 10 s or more also has the sidecar's system/ metrics (sampled every 10 s): how many depends
    # on the machine's speed, so they are not this test's to count.
    lines = [line for line in stdout(cell(nb, "readback")).splitlines() if not line.startswith("system/")]
    assert lines[0] == "state: succeeded"
    names = lines[1].removeprefix("metrics: ").split(", ")
    assert [name for name in names if not name.startswith("system/")] == ["train/loss", "val/loss"], lines
    train = re.fullmatch(r"train/loss: 300 points, steps 0\.\.299, ([\d.]+) -> ([\d.]+)", lines[2])
    val = re.fullmatch(r"val/loss: 30 points, steps 9\.\.299, ([\d.]+) -> ([\d.]+)", lines[3])
    assert train and val, lines
    assert float(train.group(2)) < float(train.group(1)) / 10  # the model really learned
    assert float(val.group(2)) < float(val.group(1)) / 10
    assert len(lines) == 4

    # The live pane was displayed under the training cell and polled the run's points from the Portal: what
    # its kernel-side state holds, printed from the kernel (the copy of the widget state nbclient keeps in the
    # notebook can miss updates the pane's thread sends between two cells, so it is read only for what the
    # pane was displayed with).
    (pane_id,) = displayed_widgets(cell(nb, "train"))
    pane = json.loads(stdout(cell(nb, "after-0")))
    assert pane["model_id"] == pane_id and pane["run_id"] == run_id
    assert [m for m in pane["metrics"] if not m.startswith("system/")] == ["train/loss", "val/loss"]
    assert pane["counts"]["train/loss"] == 300 and pane["counts"]["val/loss"] == 30
    assert pane["stellar_href"].endswith(f"/stellar?target={run_id}&project=demo")
    assert widget_state(nb, pane_id)["run_id"] == run_id
