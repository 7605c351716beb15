"""Running an example notebook the way a newcomer does: a fresh kernel, top to bottom, with a temporary TAU_HOME.

The kernel inherits the test's environment: ``TAU_HOME`` is a per-test directory, no TauGrid Portal is
configured (``TAU_PORTAL_URL``/``TAU_PORTAL_TOKEN`` unset), and ``TMPDIR`` is per-test too, so the
directories a notebook makes with ``tempfile`` are removed with the test's ``tmp_path``. When the
notebook ends, every process started for the test's ``TAU_HOME`` (run wrappers, collectors, the local
Portal) is stopped.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx
import nbformat
from nbclient import NotebookClient

from fixtures.processes import stop_processes_mentioning

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@contextmanager
def example_environment(tmp_path: Path, monkeypatch, extra: Mapping[str, str] | None = None) -> Iterator[Path]:
    """Set up the environment a fresh user has (yields ``TAU_HOME``); stop what the notebook started afterwards."""
    home = tmp_path / "home"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TAU_HOME", str(home))
    monkeypatch.setenv("TMPDIR", str(scratch))
    for name in ("TAU_PORTAL_URL", "TAU_PORTAL_TOKEN", "JUPYTERHUB_SERVICE_PREFIX", "JPY_PARENT_PID"):
        monkeypatch.delenv(name, raising=False)
    for name, value in (extra or {}).items():
        monkeypatch.setenv(name, value)
    try:
        yield home
    finally:
        stop_processes_mentioning(home)


def execute(name: str, cwd: Path, *, timeout: int = 240, after: Sequence[str] = ()) -> nbformat.NotebookNode:
    """Execute ``examples/<name>.ipynb`` in a fresh ``python3`` kernel (the venv's) from ``cwd``; the executed copy.

    ``after``: code cells of the test's own, run in the same kernel after the notebook's (ids ``after-0``,
    ``after-1``, ...), to print what the kernel holds -- the state of a pane's thread, say, which the copy of
    widget state nbclient keeps may miss.
    """
    nb = nbformat.read(EXAMPLES / f"{name}.ipynb", as_version=4)
    for i, source in enumerate(after):
        extra = nbformat.v4.new_code_cell(source)
        extra["id"] = f"after-{i}"
        nb.cells.append(extra)
    # The kernel inherits this process's environment (TAU_HOME etc., set by example_environment).
    NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}).execute()
    return nb


def cell(nb: nbformat.NotebookNode, cell_id: str):
    found = [c for c in nb.cells if c.get("id") == cell_id]
    assert len(found) == 1, f"no single cell with id {cell_id!r}"
    return found[0]


def stdout(c) -> str:
    return "".join(o["text"] for o in c.get("outputs", []) if o.get("output_type") == "stream"
                   and o.get("name") == "stdout")


def displayed_widgets(c) -> list[str]:
    """The model ids of the widgets a cell displayed."""
    return [o["data"][WIDGET_VIEW]["model_id"] for o in c.get("outputs", []) if WIDGET_VIEW in o.get("data", {})]


def widget_state(nb: nbformat.NotebookNode, model_id: str) -> dict:
    """The synced state of a widget as the kernel last sent it (nbclient stores it in the notebook's metadata)."""
    return nb.metadata["widgets"][WIDGET_STATE]["state"][model_id]["state"]


def fetch_with_local_portal_token(home: Path, url: str) -> httpx.Response:
    """GET a page of the local Portal the notebook started, authenticated with its recorded token."""
    token = json.loads((home / "portal.json").read_text())["token"]
    return httpx.get(url, headers={"Authorization": f"Bearer {token}"}, timeout=30)
