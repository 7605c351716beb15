"""The local Portal started on demand: reuse the one recorded in ``<TAU_HOME>/portal.json`` or start it detached.

A first-time user needs no setup: the first pane or ``Run.series`` starts ``taunotebook portal``
over ``<TAU_HOME>/store`` on 127.0.0.1 with a free port and a generated token, in its own session so
it outlives the kernel, and records ``{pid, port, token, url, workspace}``. Later kernels verify the
recorded Portal answers with that token before reusing it. A Portal serves one workspace; the
default workspace's record is ``portal.json``, another workspace's ``portal-<workspace>.json``.
A file lock keeps two kernels from starting two Portals at once.

The Portal also serves ``source=kusto`` when the kernel's environment names an ADX database
(:func:`taunotebook.kusto_env.portal_kusto_env`: ``TAU_PORTAL_KUSTO_*``, else the jobs' own
``TAU_METRICS_OFFLOAD_ADX_*``); the record says which (``kusto``), and a recorded Portal that reads
another database, or none, is replaced rather than reused.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

from .backends import path_component, tau_home, validate_id
from .backends.local import process_alive, start_ticks_of, store_dir
from .client import PortalClient
from .kusto_env import ENV_CLUSTER, ENV_DATABASE, portal_kusto_env

__all__ = ["LocalPortal", "ensure_portal", "portal_client", "record_file", "stop_portal"]

START_TIMEOUT = 60.0
_URL = re.compile(rb"http://127\.0\.0\.1:(\d+)/stellar\?token=")
_CHILDREN: dict[int, subprocess.Popen] = {}  # Portals this process started, reaped when stopped


@dataclass(frozen=True)
class LocalPortal:
    pid: int
    port: int
    token: str
    workspace: str
    store: str
    start_ticks: int | None = None
    kusto: str = ""  # "<database> at <cluster>" when it serves source=kusto

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def client(self, project: str | None = None, source: str | None = None) -> PortalClient:
        return PortalClient(self.url, self.token, workspace=self.workspace, project=project, source=source)


def record_file(workspace: str = "default", home: Path | None = None) -> Path:
    home = home or tau_home()
    return home / ("portal.json" if workspace == "default" else f"portal-{path_component(workspace)}.json")


def _read(path: Path) -> LocalPortal | None:
    try:
        data = json.loads(path.read_text())
        return LocalPortal(int(data["pid"]), int(data["port"]), str(data["token"]), str(data["workspace"]),
                           str(data["store"]), data.get("start_ticks"), str(data.get("kusto", "")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _answers(portal: LocalPortal) -> bool:
    """The Portal at the recorded port is ours: it accepts the token and speaks the v2 error envelope."""
    try:
        response = httpx.get(f"{portal.url}/api/v2/stellar/runs/tau-portal-probe",
                             headers={"Authorization": f"Bearer {portal.token}"}, timeout=5.0)
    except httpx.HTTPError:
        return False
    try:
        return response.status_code == 404 and response.json()["error"]["code"] == "NOT_FOUND"
    except (ValueError, KeyError, TypeError):
        return False


def ensure_portal(workspace: str = "default", *, home: Path | None = None,
                  timeout: float = START_TIMEOUT) -> LocalPortal:
    """The running local Portal for ``workspace``, started if none answers."""
    validate_id(workspace, "workspace")
    home = home or tau_home()
    home.mkdir(parents=True, exist_ok=True)
    path = record_file(workspace, home)
    kusto_env = portal_kusto_env()
    kusto = f"{kusto_env[ENV_DATABASE]} at {kusto_env[ENV_CLUSTER]}" if kusto_env else ""
    with open(home / ".portal.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        existing = _read(path)
        if existing is not None and process_alive(existing.pid, existing.start_ticks) and _answers(existing):
            if existing.kusto == kusto:
                return existing
            stop_portal(workspace, home=home)  # it reads another ADX database (or none): this kernel's wins
        portal = _start(workspace, home, timeout, kusto_env, kusto)
        fd, tmp = tempfile.mkstemp(prefix=".portal.", dir=home)
        with os.fdopen(fd, "w") as f:
            json.dump({**asdict(portal), "url": portal.url}, f, indent=2)
        os.chmod(tmp, 0o600)  # the token guards the store
        os.replace(tmp, path)
        return portal


def _start(workspace: str, home: Path, timeout: float, kusto_env: dict[str, str], kusto: str) -> LocalPortal:
    from tau_collector.expstore import ExpStore

    from .portal.auth import generate_token

    store = store_dir(home)
    ExpStore(store, create=True, writable=False).close()  # the Portal refuses a missing store; it only reads
    token = generate_token()
    log_path = home / ("portal.log" if workspace == "default" else f"portal-{path_component(workspace)}.log")
    # The token travels in the environment, not argv (visible in `ps` to every user), and the log
    # that repeats it in the printed URL is private.
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(fd, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "taunotebook", "portal", "--store", str(store), "--port", "0",
             "--workspace", workspace],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, close_fds=True,
            env={**os.environ, **kusto_env, "TAU_PORTAL_TOKEN": token},
        )
    deadline = time.monotonic() + timeout
    port = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the local Portal exited with code {process.returncode}; see {log_path}")
        match = _URL.search(log_path.read_bytes())
        if match:
            port = int(match.group(1))
            portal = LocalPortal(process.pid, port, token, workspace, str(store), start_ticks_of(process.pid), kusto)
            _CHILDREN[process.pid] = process
            if _answers(portal):
                return portal
        time.sleep(0.1)
    process.terminate()
    raise RuntimeError(f"the local Portal did not answer within {timeout:.0f}s; see {log_path}")


def portal_client(workspace: str = "default", project: str | None = None, *,
                  home: Path | None = None, source: str | None = None) -> PortalClient:
    """A :class:`PortalClient` for the local Portal of ``workspace``, starting the Portal if needed."""
    return ensure_portal(workspace, home=home).client(project, source)


def stop_portal(workspace: str = "default", *, home: Path | None = None, timeout: float = 10.0) -> bool:
    """Stop the recorded local Portal (SIGTERM to its pid, only if it is still that process); True if one ran."""
    path = record_file(workspace, home)
    portal = _read(path)
    if portal is None:
        return False
    running = process_alive(portal.pid, portal.start_ticks)
    if running:
        os.kill(portal.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while process_alive(portal.pid, portal.start_ticks) and time.monotonic() < deadline:
            time.sleep(0.05)
        if process_alive(portal.pid, portal.start_ticks):
            os.kill(portal.pid, signal.SIGKILL)
    child = _CHILDREN.pop(portal.pid, None)
    if child is not None:
        child.wait(timeout)
    path.unlink(missing_ok=True)
    return running
