"""The README's main command, headless: a local job, its collector and store, a live terminal view."""

import os
import subprocess
import sys

from tau_collector.expstore.read.reader import StoreReader
from tau_collector.expstore.store import ExpStore


def test_headless_quickstart_runs_a_job_to_completion_and_shows_its_series(tmp_path):
    env = dict(os.environ, TAU_HOME=str(tmp_path / "home"))
    proc = subprocess.run([sys.executable, "-m", "taunotebook.quickstart", "--headless", "--steps", "40",
                           "--delay", "0.01"], env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "succeeded (exit code 0)" in proc.stdout
    assert "loss" in proc.stdout and "accuracy" in proc.stdout
    reader = StoreReader(ExpStore(tmp_path / "home" / "store"))
    (run,) = reader.runs()
    assert run.state == "succeeded"
    assert [int(s) for s in reader.rows(run.run_id, "loss").step] == list(range(40))
