"""A real ``jupyter server`` on 127.0.0.1 with a base URL and a token, the Portal registered with its proxy."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

JUPYTER_TOKEN = "jupyter-test-token"
BASE_URL = "/jbase/"


@dataclass(frozen=True)
class JupyterServer:
    base: str  # http://127.0.0.1:PORT/jbase/
    port: int
    token: str
    pid: int
    runtime_dir: Path

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def jupyter_server(tmp_path: Path, store: Path, config: str = "") -> Iterator[JupyterServer]:
    """``jupyter server`` serving ``store`` through jupyter-server-proxy at ``{base}tau-portal/``."""
    port = _free_port()
    config_dir, runtime_dir = tmp_path / "config", tmp_path / "runtime"
    config_dir.mkdir()
    # The same config the package's entry point gives jupyter-server-proxy, without a reinstall.
    (config_dir / "jupyter_server_config.py").write_text(
        "from taunotebook.portal.jupyter_proxy import setup_tau_portal\n"
        "c.ServerProxy.servers = {'tau-portal': setup_tau_portal()}\n" + config
    )
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(config_dir), "JUPYTER_RUNTIME_DIR": str(runtime_dir),
           "JUPYTER_DATA_DIR": str(tmp_path / "data"), "TAU_STORE": str(store), "TMPDIR": str(tmp_path)}
    log_path = tmp_path / "jupyter.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "jupyter", "server", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
             "--ServerApp.port_retries=0", f"--ServerApp.base_url={BASE_URL}", "--ServerApp.token=",
             f"--IdentityProvider.token={JUPYTER_TOKEN}", "--allow-root", "--ServerApp.open_browser=False",
             f"--ServerApp.root_dir={tmp_path}"],
            env=env, stdout=log, stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}{BASE_URL}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}api/status", headers={"Authorization": f"token {JUPYTER_TOKEN}"}).is_success:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"jupyter server did not start:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.2)
        yield JupyterServer(base, port, JUPYTER_TOKEN, proc.pid, runtime_dir)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
