"""The quickstart notebook, executed headlessly as a user would run it: a real kernel, a real local job."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

from fixtures.processes import stop_processes_mentioning

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "quickstart.ipynb"


def test_quickstart_notebook_runs_its_job_to_completion(tmp_path, monkeypatch):
    monkeypatch.setenv("TAU_HOME", str(tmp_path / "home"))
    for name in ("TAU_PORTAL_URL", "TAU_PORTAL_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    try:
        # The kernel inherits this process's environment (TAU_HOME above).
        NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    finally:
        stop_processes_mentioning(tmp_path / "home")
    last = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    assert last.strip() == "succeeded 2000 points"
    submitted = "".join(o.get("text", "") for o in nb.cells[2].outputs)
    assert "sgd-demo-" in submitted
