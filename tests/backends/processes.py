"""Test cleanup: stop every process a test's runs left behind, found by the test's own TAU_HOME in its command line."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def processes_mentioning(path: Path) -> list[int]:
    """Pids whose command line contains ``path`` (a per-test temporary directory: only our processes)."""
    needle = str(path).encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "cmdline").read_bytes():
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def _running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


def stop_processes_mentioning(path: Path, timeout: float = 15.0) -> None:
    """SIGKILL the wrappers, trainers, collectors and Portals started for ``path`` and wait until they are gone."""
    pids = processes_mentioning(path)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    while any(_running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
