"""examples/pytorch_summarywriter.ipynb, executed as a user runs it: real torch training in a local job, live pane."""

from __future__ import annotations

import re

from .notebooks import cell, displayed_widgets, example_environment, execute, stdout, widget_state


def test_torch_summary_writer_notebook_trains_and_reads_its_series_back(tmp_path, monkeypatch):
    with example_environment(tmp_path, monkeypatch) as home:
        nb = execute("pytorch_summarywriter", tmp_path)

    submitted = stdout(cell(nb, "train"))
    match = re.search(r"run (torch-mlp-[0-9a-f]{6}) submitted \(local; project demo, group sine-mlp\)", submitted)
    assert match, submitted
    run_id = match.group(1)
    # The metrics came through the TensorBoard event files the SummaryWriter wrote in the run's logdir.
    run_dir = home / "projects" / "default" / "runs" / run_id
    assert list((run_dir / "tensorboard").glob("events.out.tfevents.*"))

    lines = stdout(cell(nb, "readback")).splitlines()
    assert lines[:2] == ["state: succeeded", "metrics: train/loss, val/loss"]
    train = re.fullmatch(r"train/loss: 300 points, steps 0\.\.299, ([\d.]+) -> ([\d.]+)", lines[2])
    val = re.fullmatch(r"val/loss: 30 points, steps 9\.\.299, ([\d.]+) -> ([\d.]+)", lines[3])
    assert train and val, lines
    assert float(train.group(2)) < float(train.group(1)) / 10  # the model really learned
    assert float(val.group(2)) < float(val.group(1)) / 10
    assert len(lines) == 4

    # The live pane was displayed under the training cell and polled the run's points from the Portal while
    # the next cell waited for the job (nbclient keeps the widget updates the pane's thread sends meanwhile;
    # the job needs seconds to import torch before its first point, so none of them falls between two cells).
    (pane_id,) = displayed_widgets(cell(nb, "train"))
    pane = widget_state(nb, pane_id)
    assert pane["run_id"] == run_id
    assert pane["metrics"] == ["train/loss", "val/loss"]
    assert pane["runs"][run_id]["metrics"]["train/loss"]["count"] > 0
    assert pane["stellar_href"].endswith(f"/stellar?target={run_id}&project=demo")
