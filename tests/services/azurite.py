"""Start, stop and restart an Azurite (Azure Storage emulator) process on free 127.0.0.1 ports.

Azurite comes from ``tests/services/node_modules`` (``npm ci --prefix tests/services``). Its data
lives in a directory of its own (not in memory) so that a test can stop it and start it again on
the same ports and find its queues, containers and tables where they were — the "storage down for a
while" fault.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "ACCOUNT_KEY",
    "ACCOUNT_NAME",
    "AZURITE_BIN",
    "Azurite",
    "AzuriteError",
    "free_port",
]

# The emulator's documented development account; public by design, it protects nothing.
ACCOUNT_NAME = "devstoreaccount1"
ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

AZURITE_BIN = Path(__file__).resolve().parent / "node_modules" / ".bin" / "azurite"


class AzuriteError(RuntimeError):
    """Azurite is missing, did not start, or did not stop."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


@dataclass
class Azurite:
    """One Azurite process; ports are chosen once and kept across ``stop``/``start``."""

    location: Path
    blob_port: int = field(default_factory=free_port)
    queue_port: int = field(default_factory=free_port)
    table_port: int = field(default_factory=free_port)
    start_timeout_s: float = 60.0
    _process: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)

    @property
    def blob_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.blob_port}/{ACCOUNT_NAME}"

    @property
    def queue_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.queue_port}/{ACCOUNT_NAME}"

    @property
    def table_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.table_port}/{ACCOUNT_NAME}"

    @property
    def connection_string(self) -> str:
        return (
            f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT_NAME};AccountKey={ACCOUNT_KEY};"
            f"BlobEndpoint={self.blob_endpoint};QueueEndpoint={self.queue_endpoint};"
            f"TableEndpoint={self.table_endpoint};"
        )

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> None:
        if self.running:
            return
        if not AZURITE_BIN.exists():
            raise AzuriteError(
                f"Azurite is not installed: {AZURITE_BIN} does not exist. "
                "Run `npm ci --prefix tests/services` from the repository root first."
            )
        self.location.mkdir(parents=True, exist_ok=True)
        log = (self.location / "azurite.log").open("ab")
        args = [
            str(AZURITE_BIN),
            "--silent",
            # Without it Azurite tries to reach an outside telemetry host.
            "--disableTelemetry",
            "--skipApiVersionCheck",
            "--location", str(self.location),
            "--blobHost", "127.0.0.1", "--blobPort", str(self.blob_port),
            "--queueHost", "127.0.0.1", "--queuePort", str(self.queue_port),
            "--tableHost", "127.0.0.1", "--tablePort", str(self.table_port),
        ]  # fmt: skip
        # Its own process group, so stopping it also stops node's children and nothing else.
        self._process = subprocess.Popen(
            args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
        log.close()
        deadline = time.monotonic() + self.start_timeout_s
        ports = (self.blob_port, self.queue_port, self.table_port)
        while not all(_answers(port) for port in ports):
            if self._process.poll() is not None:
                raise AzuriteError(
                    f"Azurite exited with code {self._process.returncode} while starting; "
                    f"see {self.location / 'azurite.log'} (a port may have been taken meanwhile)."
                )
            if time.monotonic() > deadline:
                self.stop()
                raise AzuriteError(
                    f"Azurite did not answer on ports {ports} within {self.start_timeout_s:.0f}s; "
                    f"see {self.location / 'azurite.log'}."
                )
            time.sleep(0.05)

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=15)
        # Stop means "refuses connections": wait until the ports are really closed.
        deadline = time.monotonic() + 15
        while any(_answers(p) for p in (self.blob_port, self.queue_port, self.table_port)):
            if time.monotonic() > deadline:
                raise AzuriteError("Azurite was stopped but its ports still accept connections.")
            time.sleep(0.05)

    def restart(self) -> None:
        self.stop()
        self.start()

    def __enter__(self) -> Azurite:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
