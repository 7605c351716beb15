"""A real ``jupyter lab`` or ``jupyter notebook`` (Notebook 7) on 127.0.0.1 for browser tests, and helpers to
open and run a notebook in either.

The server gets a temporary home for everything it writes (workspaces, settings, runtime files, IPython
profile, TMPDIR), no token (the port is bound to 127.0.0.1 and lives as long as the test session), the
notebook's windowing off (so every cell is in the DOM), and ``window.jupyterapp`` exposed so tests run
commands instead of clicking through menus. Notebook 7 is built from JupyterLab's parts: the same
commands, cells and output areas, one notebook per browser tab at ``/notebooks/<name>``.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page

REPO = Path(__file__).resolve().parents[1]
LAB_START_TIMEOUT = 120.0

_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    # No news or update checks from a closed network.
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                        "checkForUpdates": False},
}


@dataclass(frozen=True)
class JupyterLab:
    base_url: str
    root_dir: Path
    log: Path
    app: str = "lab"  # "lab" (JupyterLab) or "notebook" (Notebook 7)

    def notebook_url(self, name: str) -> str:
        """Where the app opens ``name`` (JupyterLab with a fresh workspace)."""
        if self.app == "notebook":
            return f"{self.base_url}/notebooks/{name}"
        return f"{self.base_url}/lab/tree/{name}?reset"

    def copy_notebook(self, template: Path, name: str, **placeholders: str) -> str:
        """Serve a copy of ``template`` (autosave rewrites it) with ``{{KEY}}`` replaced; returns its name."""
        text = template.read_text(encoding="utf-8")
        for key, value in placeholders.items():
            text = text.replace("{{" + key + "}}", json.dumps(value)[1:-1])
        (self.root_dir / name).write_text(text, encoding="utf-8")
        return name


def _proxy_registered() -> bool:
    return any(e.name == "tau-portal" for e in importlib.metadata.entry_points(group="jupyter_serverproxy_servers"))


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_lab(home: Path, env_extra: dict[str, str], app: str = "lab") -> Iterator[JupyterLab]:
    """Start ``jupyter lab`` (``app="lab"``) or Notebook 7 (``app="notebook"``); yields it, stops it after."""
    for sub in ("nb", "ws", "settings", "config", "runtime", "ipython", "tmp"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    for name, value in _SETTINGS.items():
        path = home / "settings" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value), encoding="utf-8")
    config = ["c = get_config()  # noqa: F821"]
    if not _proxy_registered():
        # The package's own jupyter-server-proxy entry, registered here until the installed package carries it.
        config += ["from taunotebook.portal.jupyter_proxy import setup_tau_portal",
                   "c.ServerProxy.servers = {'tau-portal': setup_tau_portal()}"]
    (home / "config" / "jupyter_server_config.py").write_text("\n".join(config) + "\n", encoding="utf-8")
    port = _free_port()
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(home / "config"), "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
           "IPYTHONDIR": str(home / "ipython"), "TMPDIR": str(home / "tmp"), "PYTHONUNBUFFERED": "1", **env_extra}
    env.pop("JPY_PARENT_PID", None)
    log = home / f"{app}.log"
    if app == "lab":
        module, klass = "jupyterlab", "LabApp"
    elif app == "notebook":
        module, klass = "notebook", "JupyterNotebookApp"
    else:
        raise ValueError(f"app must be 'lab' or 'notebook', got {app!r}")
    cmd = [
        sys.executable, "-m", module, "--no-browser", "--ip=127.0.0.1", f"--port={port}", "--allow-root",
        "--IdentityProvider.token=", "--ServerApp.password=", "--ServerApp.open_browser=False",
        f"--ServerApp.root_dir={home / 'nb'}", f"--{klass}.workspaces_dir={home / 'ws'}",
        f"--{klass}.user_settings_dir={home / 'settings'}", f"--{klass}.expose_app_in_browser=True",
        "--ServerApp.port_retries=0",
    ]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=home / "nb")
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + LAB_START_TIMEOUT
        while True:
            if proc.poll() is not None:
                pytest.fail(f"jupyter {app} exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{base}/api/status", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"jupyter {app} did not answer within {LAB_START_TIMEOUT:.0f} s:\n"
                            f"{log.read_text()[-3000:]}")
            time.sleep(0.25)
        yield JupyterLab(base, home / "nb", log, app)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(home / "tmp", ignore_errors=True)


def open_notebook(page: Page, lab: JupyterLab, name: str) -> None:
    """Open a notebook (in JupyterLab with a fresh workspace) and wait until its kernel is idle."""
    page.goto(lab.notebook_url(name))
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    page.wait_for_function(
        """() => {
            const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
            const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
            return k && k.status === 'idle';
        }""",
        timeout=60_000,
    )


def run_all(page: Page) -> None:
    """Start every cell (returns at once; the cells run in order in the kernel)."""
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")


def run_cell(page: Page, index: int) -> None:
    """Start one cell (returns at once)."""
    page.evaluate("""(i) => {
        const w = window.jupyterapp.shell.currentWidget;
        w.content.activeCellIndex = i;
        window.jupyterapp.commands.execute('notebook:run-cell');
    }""", index)


def cell_running(page: Page, index: int) -> bool:
    prompt = page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".jp-InputPrompt")
    return "[*]" in (prompt.text_content() or "")


def execute(page: Page, command: str) -> None:
    page.evaluate("(c) => window.jupyterapp.commands.execute(c)", command)
