"""examples/ray_tune_sweep.ipynb, executed as a user runs it: a real local Ray, a real Tune grid, one comparing pane."""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from pathlib import Path

from fixtures.processes import _running, processes_mentioning, stop_processes_mentioning

from ..polling import DEADLINE
from .notebooks import (
    cell,
    displayed_widgets,
    example_environment,
    execute,
    fetch_with_local_portal_token,
    stdout,
    widget_state,
)

LRS = ["0.01", "0.03", "0.1", "0.3"]


def _ray_processes_gone(ray_tmp: Path, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(_running(pid) for pid in processes_mentioning(ray_tmp)):
            return True
        time.sleep(0.2)
    return False


def test_ray_tune_sweep_notebook_compares_every_trial_in_one_pane(tmp_path, monkeypatch):
    # Ray's own files (and so its processes' command lines) under a directory of this test; short, because
    # Ray puts unix sockets below it and a socket path must stay under 108 bytes.
    ray_tmp = Path(tempfile.mkdtemp(prefix="tau-ray-", dir="/tmp"))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    try:
        with example_environment(tmp_path, monkeypatch, {"RAY_TMPDIR": str(ray_tmp)}) as home:
            nb = execute("ray_tune_sweep", tmp_path, timeout=300)
            summary = stdout(cell(nb, "summary")).splitlines()
            link = summary[1].removeprefix("Open in Stellar: ")
            page = fetch_with_local_portal_token(home, link)
        # The notebook shut its Ray down itself (ray.shutdown() after the sweep).
        assert _ray_processes_gone(ray_tmp, timeout=DEADLINE), processes_mentioning(ray_tmp)
    finally:
        stop_processes_mentioning(ray_tmp)
        shutil.rmtree(ray_tmp, ignore_errors=True)

    assert stdout(cell(nb, "sweep")).strip().splitlines()[-1] == "4 trials, 0 errors"

    imported = stdout(cell(nb, "import")).splitlines()
    assert imported[0].startswith("imported 4 runs, "), imported
    trials = imported[1:]
    assert len(trials) == 4
    for trial, lr in zip(trials, LRS, strict=True):  # one run per trial, named after its directory
        assert re.fullmatch(rf"lr-sweep-lr{re.escape(lr)}-[0-9a-f]+_0000[0-3]", trial), trial

    assert summary[0] == f"pane: {trials[0]} compared with {', '.join(trials[1:])}"
    assert link.endswith(f"&compare={','.join(trials[1:])}") and f"target={trials[0]}" in link
    assert page.status_code == 200
    assert f'id="stellar-title">{" vs ".join(trials)}<' in page.text

    final_losses = []
    for trial, line in zip(trials, summary[2:], strict=True):
        match = re.fullmatch(rf"{re.escape(trial)}: 40 points, final loss ([\d.]+)", line)
        assert match, line
        final_losses.append(float(match.group(1)))
    # Real gradient descent: on this problem a larger learning rate gets further in 40 steps.
    assert final_losses == sorted(final_losses, reverse=True) and final_losses[-1] < 0.05 < final_losses[0]

    (pane_id,) = displayed_widgets(cell(nb, "pane"))
    pane = widget_state(nb, pane_id)
    # The points per trial above are the pane's own (printed from its state in the kernel).
    assert (pane["run_id"], pane["compare"], pane["metrics"]) == (trials[0], trials[1:], ["loss"])
    assert pane["stellar_href"] == link
