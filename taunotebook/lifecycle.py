"""Where a run is in its lifecycle, in words: queued, admitted, running, retried N, succeeded / failed / cancelled.

Each backend says it from what it knows (:meth:`lifecycle` of the local, ray and tau backends): the local
wrapper's completion file and exit (``failed: killed by SIGKILL (exit 137)``), Ray's job status and
its message (``queued: Job has not started yet. It may be waiting for resources ...``), TauGrid's run
state and status reason. The Portal says it from the store (:func:`from_store`): the run's state, its
``tau.status.message`` tag and its ``fault`` / ``retry`` events. What the job asked for (GPUs, workers,
image, queue) is the run's ``submission`` event (:func:`submission_event`), recorded when it is submitted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["PHASES", "SUBMISSION_EVENT", "Lifecycle", "from_store", "ray_lifecycle", "record_submission",
           "submission_event", "terminal"]

PHASES = ("submitted", "queued", "admitted", "running", "succeeded", "failed", "cancelled", "unknown")
SUBMISSION_EVENT = "submission"  # run event type: payload {"backend", "resources"}
RETRY_EVENT = "retry"  # the checkpoint helper's: one per retry of the job
STATUS_MESSAGE_TAG = "tau.status.message"


@dataclass(frozen=True)
class Lifecycle:
    """A phase of :data:`PHASES`, the backend's reason in words, and how often the job was retried."""

    phase: str
    reason: str = ""
    retries: int = 0

    @property
    def text(self) -> str:
        """``failed: killed by SIGKILL (exit 137)``, ``running (retried 2)``, ``queued: waiting for 1 GPU``."""
        words = self.phase + (f" (retried {self.retries})" if self.retries else "")
        return f"{words}: {self.reason}" if self.reason else words

    def to_json(self) -> dict[str, Any]:
        return {"phase": self.phase, "reason": self.reason, "retries": self.retries, "text": self.text}


def _plain(message: str) -> str:
    message = message.strip()
    return message[len("entrypoint "):] if message.startswith("entrypoint ") else message


def terminal(state: str, message: str = "", retries: int = 0) -> Lifecycle:
    """A finished run: its state and the wrapper's message (``entrypoint`` left out); a success says no more
    than that it succeeded."""
    reason = "" if state == "succeeded" and message.startswith("entrypoint exited with code 0") else _plain(message)
    return Lifecycle(state, reason, retries)


_RAY_PHASES = {"PENDING": "queued", "RUNNING": "running", "SUCCEEDED": "succeeded", "FAILED": "failed",
               "STOPPED": "cancelled"}


def ray_lifecycle(info: Any) -> Lifecycle:
    """Ray's ``JobDetails``/``JobInfo`` in words: its status as a phase, its ``message`` as the reason (a failure
    adds the error type and the driver's exit code when Ray gives them)."""
    status = str(getattr(getattr(info, "status", None), "value", getattr(info, "status", ""))).upper()
    phase = _RAY_PHASES.get(status, "unknown")
    reason = (getattr(info, "message", None) or "").strip()
    if phase == "failed":
        extra = [str(x) for x in (getattr(info, "error_type", None),) if x]
        code = getattr(info, "driver_exit_code", None)
        if code is not None:
            extra.append(f"exit {code}")
        if extra:
            reason = f"{reason} ({', '.join(extra)})" if reason else ", ".join(extra)
    return Lifecycle(phase, reason)


def from_store(state: str, tags: Mapping[str, str], events: Sequence[Any]) -> Lifecycle:
    """A stored run's lifecycle: its state (``pending`` is queued), the retries its ``retry`` events count, and
    for a failure the fault that ended it, else its status message."""
    retries = sum(1 for e in events if e.type == RETRY_EVENT)
    faults = [e for e in events if e.type == "fault"]
    message = tags.get(STATUS_MESSAGE_TAG, "")
    if state in ("succeeded", "failed", "cancelled"):
        if state == "failed" and faults:
            message = faults[-1].message
        return terminal(state, message, retries)
    if state == "pending":
        return Lifecycle("queued", _plain(message), retries)
    if state == "running":
        return Lifecycle("running", "", retries)
    return Lifecycle(state or "unknown", _plain(message), retries)


def submission_event(run_id: str, backend: str, resources: Mapping[str, Any]):
    """The run's ``submission`` event: the backend and the resources the job asked for."""
    from tau_collector.expstore.store import utc_now_rfc3339
    from tau_collector.reads.rows import RunEvent

    words = ", ".join(f"{k}={v}" for k, v in resources.items()) or "the platform's defaults"
    return RunEvent(run_id, utc_now_rfc3339(), SUBMISSION_EVENT, "taunotebook", "info",
                    f"submitted to the {backend} backend asking for {words}",
                    {"backend": backend, "resources": _jsonable(resources)})


def _jsonable(resources: Mapping[str, Any]) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else dict(v) if isinstance(v, Mapping) else v
            for k, v in resources.items()}


def record_submission(store_root: str, run_id: str, backend: str, resources: Mapping[str, Any]) -> None:
    """Record :func:`submission_event` in the local store at ``store_root``; never raises (the job runs anyway)."""
    try:
        from tau_collector.expstore import open_store, record_run_events

        record_run_events(open_store(store_root, create=True), [submission_event(run_id, backend, resources)])
    except Exception:
        pass

