"""A job's faults in words and as run events: killed by a signal, killed for memory, a lost worker, a retry.

A fault is a row of TauGrid's ``events`` table with type :data:`FAULT_EVENT` (``fault``); its payload
says what kind (:data:`KINDS`), the node it happened on, the signal and exit code, and for a kill
the cgroup's OOM-kill counter when it is readable (``memory.events`` of cgroup v2, ``memory.oom_control``
of v1). The Portal answers them as TauGrid's ``/api/portal/experiments/{id}/fault-events``
(``taunotebook.portal.views.fault_events``); the checkpoint helper's ``retry`` events are theirs.
"""

from __future__ import annotations

import os
import signal
import socket
from pathlib import Path

from tau_collector.reads.rows import RunEvent

__all__ = ["FAULT_EVENT", "KINDS", "cgroup_oom_kills", "describe_exit", "fault_event", "signal_name"]

FAULT_EVENT = "fault"
SOURCE = "tau-collector-wrap"
# kind -> (category, checkType) as the fault-events answer names them
KINDS = {
    "oom": ("memory", "OOMKilled"),
    "signal": ("process", "Signal"),
    "worker-lost": ("node", "WorkerLost"),
    "retry": ("job", "Retry"),
}
_SIGKILL_EXIT = 128 + signal.SIGKILL  # 137: what a container runtime reports for a SIGKILL (the OOM killer's)


def signal_name(number: int) -> str:
    """``SIGKILL`` for 9; ``signal 64`` for a number without a name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _cgroup_dir(root: Path) -> Path | None:
    """This process's cgroup v2 directory under ``root`` (``0::/path`` in ``/proc/self/cgroup``)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("0::"):
            return root / line[3:].lstrip("/")
    return None


def cgroup_oom_kills(root: str | os.PathLike = "/sys/fs/cgroup") -> int | None:
    """The cgroup's OOM-kill count (``oom_kill`` of ``memory.events``, or of v1's ``memory.oom_control``);
    None when no such file is readable here."""
    base = Path(root)
    candidates = [d / "memory.events" for d in (_cgroup_dir(base), base) if d is not None]
    candidates.append(base / "memory" / "memory.oom_control")
    for path in candidates:
        try:
            text = path.read_text()
        except OSError:
            continue
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
    return None


def describe_exit(returncode: int, oom_before: int | None = None,
                  oom_after: int | None = None) -> tuple[str, dict | None]:
    """The trainer's end in words (``killed by SIGKILL (exit 137)``) and, for a fault, its payload.

    ``returncode`` is :class:`subprocess.Popen`'s (negative: the signal). Exit 137 counts as SIGKILL (a
    container runtime reports a kill so). A SIGKILL while the cgroup's OOM-kill counter went up is a kill
    for memory (kind ``oom``)."""
    if returncode >= 0 and returncode != _SIGKILL_EXIT:
        return f"exited with code {returncode}", None
    number = -returncode if returncode < 0 else signal.SIGKILL
    code = returncode if returncode >= 0 else 128 + number
    name = signal_name(number)
    payload: dict = {"kind": "signal", "signal": name, "exit_code": code}
    oom = None
    if oom_before is not None and oom_after is not None:
        oom = oom_after - oom_before
        payload["oom_kills"] = oom
    if number == signal.SIGKILL and oom:
        payload["kind"] = "oom"
        return f"killed for memory: {name} while the cgroup's OOM-kill counter rose by {oom} (exit {code})", payload
    return f"killed by {name} (exit {code})", payload


def fault_event(run_id: str, time: str, kind: str, message: str, *, node: str | None = None,
                source: str = SOURCE, **payload) -> RunEvent:
    """A ``fault`` run event of ``kind`` (:data:`KINDS`) on ``node`` (this host when not given)."""
    if kind not in KINDS:
        raise ValueError(f"fault kind {kind!r} is not one of {', '.join(KINDS)}")
    body = {"kind": kind, "node": node or socket.gethostname(), **payload}
    return RunEvent(run_id, time, FAULT_EVENT, source, "error" if kind != "retry" else "warning", message, body)
