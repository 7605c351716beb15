"""The job's completion file and the ``tau/run_status`` terminal event (TAUGRID-REFERENCE §2.6)."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

import orjson

from tau_collector.spool.durable import write_file_atomic
from tau_collector.taugrid.gojson import GoJSONError, format_time, marshal, parse_time

__all__ = [
    "RUN_STATUS_METRIC",
    "RUN_STATUS_VALUES",
    "TERMINAL_DRAIN_GRACE",
    "Completion",
    "CompletionError",
    "cancellation_observation_id",
    "read_completion",
    "write_completion",
]

RUN_STATUS_METRIC = "tau/run_status"
# TauGrid waits at most this long for the workload's completion file after a signal.
TERMINAL_DRAIN_GRACE = 30.0
RUN_STATUS_VALUES = {"succeeded": 1.0, "failed": -1.0, "cancelled": -2.0}
_ALIASES = {
    **dict.fromkeys(("", "success", "successful", "succeeded", "complete", "completed", "done"), "succeeded"),
    **dict.fromkeys(("fail", "failed", "failure", "error", "errored"), "failed"),
    **dict.fromkeys(("cancel", "cancelled", "canceled"), "cancelled"),
}


class CompletionError(ValueError):
    """The completion file cannot be understood; the message names it."""


@dataclass(frozen=True, slots=True)
class Completion:
    state: str  # succeeded | failed | cancelled
    reason: str
    message: str
    completed_at: int  # ns since the epoch, UTC

    @property
    def observation_id(self) -> str:
        """Identifies this terminal observation: sha256 of the Go-marshalled completion record."""
        raw = marshal({
            "state": self.state, "reason": self.reason, "message": self.message,
            "completed_at": format_time(self.completed_at),
        })
        return hashlib.sha256(raw).hexdigest()

    @property
    def value(self) -> float:
        return RUN_STATUS_VALUES[self.state]


def cancellation_observation_id(config_identity: str) -> str:
    """The observation id of the marker a collector emits when it is stopped before completion."""
    return hashlib.sha256(b"cancelled\x00" + config_identity.encode()).hexdigest()


def normalize_state(state: str) -> str:
    try:
        return _ALIASES[state.strip().lower()]
    except KeyError:
        raise CompletionError("completion state must be succeeded, failed, or cancelled") from None


def read_completion(path: str) -> Completion:
    """Empty file → succeeded at its mtime; plain text → that state; JSON → state/reason/message/completed_at."""
    try:
        stat = os.stat(path)
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        raise CompletionError(f"cannot read completion file {path}: {exc.strerror or exc}") from None
    state, reason, message, completed_at = "succeeded", "", "", stat.st_mtime_ns
    text = raw.strip()
    if text.startswith(b"{"):
        try:
            doc = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise CompletionError(f"read completion status {path}: {exc}") from None
        unknown = set(doc) - {"state", "reason", "message", "completed_at"}
        if unknown:
            raise CompletionError(f"read completion status {path}: json: unknown field {sorted(unknown)[0]!r}")
        if not all(isinstance(v, str) for v in doc.values()):
            raise CompletionError(f"read completion status {path}: every field must be a string")
        state, reason, message = doc.get("state", ""), doc.get("reason", ""), doc.get("message", "")
        if doc.get("completed_at", "").strip():
            try:
                completed_at = parse_time(doc["completed_at"])
            except GoJSONError as exc:
                raise CompletionError(f"completion completed_at must be RFC3339: {exc}") from None
    elif text:
        state = text.decode("utf-8", "replace")
    return Completion(normalize_state(state), reason, message, completed_at)


def write_completion(path: str, state: str, *, reason: str = "", message: str = "",
                     completed_at: int | None = None) -> None:
    """Write a completion file the way TauGrid's workload wrapper does (JSON, atomic)."""
    doc = {"state": normalize_state(state), "reason": reason, "message": message}
    if completed_at is not None:
        doc["completed_at"] = format_time(completed_at)
    write_file_atomic(path, orjson.dumps(doc) + b"\n")
