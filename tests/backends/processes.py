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


def _stat_fields(pid: int) -> list[str] | None:
    """``/proc/PID/stat`` after the command name (field 3 on), or None when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2:].split()


def _running(pid: int) -> bool:
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in "ZX"


def started_at(pid: int) -> int | None:
    """When ``pid`` started (clock ticks after boot): with the pid, it names one process, not a reused number."""
    fields = _stat_fields(pid)
    return int(fields[19]) if fields is not None else None


def still_running(pid: int, started: int | None) -> bool:
    """Whether the process that was ``pid`` when it had start time ``started`` runs (a zombie has ended).

    Pids are reused (``pid_max`` is 32768 on these machines, and a second test suite beside this one starts
    processes by the thousand), so an existing ``/proc/PID`` alone does not say the same process is alive.
    """
    return _running(pid) and started_at(pid) == started


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
