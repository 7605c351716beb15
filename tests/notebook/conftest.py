"""Real notebooks run headlessly by nbclient in the venv's ipykernel, with a temporary ``TAU_HOME``.

``tau_home`` points ``TAU_HOME`` at a fresh directory for the test (kernels inherit it) and, when
the test ends, stops every process the test's runs and Portals left: local Portals by their recorded
pid, then whatever still has the test's ``TAU_HOME`` in its command line (wrappers, trainers, collectors).
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from taunotebook.local_portal import record_file, stop_portal

from ..backends.processes import stop_processes_mentioning

KERNEL = "python3"  # ipykernel's native spec: the interpreter running the tests, i.e. the venv's


def notebook(*cells: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(textwrap.dedent(c).strip("\n")) for c in cells]
    return nb


def execute(nb: nbformat.NotebookNode, cwd: Path, *, timeout: int = 180, allow_errors: bool = False):
    client = NotebookClient(nb, kernel_name=KERNEL, timeout=timeout, allow_errors=allow_errors,
                            resources={"metadata": {"path": str(cwd)}})
    client.execute()
    return nb


def text(cell) -> str:
    """All stream and text/plain output of a cell, joined."""
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            parts.append(out["text"])
        elif "data" in out and "text/plain" in out["data"]:
            parts.append(out["data"]["text/plain"])
    return "".join(parts)


def usage_errors(cell) -> Sequence[str]:
    """IPython shows a magic's ``UsageError`` as one stderr line ``UsageError: <message>``; the messages."""
    lines = "".join(o["text"] for o in cell.get("outputs", []) if o.get("name") == "stderr").splitlines()
    assert not [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    return [line.removeprefix("UsageError: ") for line in lines if line.startswith("UsageError: ")]


def stop_everything(home: Path) -> None:
    for path in home.glob("portal*.json"):
        workspace = "default" if path.name == "portal.json" else path.stem.removeprefix("portal-")
        assert record_file(workspace, home) == path
        stop_portal(workspace, home=home)
    stop_processes_mentioning(home)  # run wrappers, trainers and collectors still running when the test ends


@pytest.fixture
def tau_home(tmp_path, monkeypatch) -> Iterator[Path]:
    home = tmp_path / "tau-home"
    home.mkdir()
    monkeypatch.setenv("TAU_HOME", str(home))
    monkeypatch.delenv("TAU_PORTAL_URL", raising=False)
    monkeypatch.delenv("TAU_PORTAL_TOKEN", raising=False)
    monkeypatch.delenv("JUPYTERHUB_SERVICE_PREFIX", raising=False)
    try:
        yield home
    finally:
        stop_everything(home)
