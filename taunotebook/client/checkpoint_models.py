"""The client's models for a run's checkpoints and retries (the local Portal's ``/runs/{run_id}/checkpoints``).

TauGrid's Portal has no such route (it answers 404, route not found). Unknown fields are kept in ``extra``,
as in :mod:`.models`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .decode import WireModel
from .models import Metadata

__all__ = ["Checkpoint", "CheckpointRetry", "RunCheckpoints", "checkpoint_at"]


@dataclass(frozen=True, slots=True)
class Checkpoint(WireModel):
    """One checkpoint of a run: the ``step`` its name carries (None without one), where it is (``uri``, never
    copied into the store), ``size_bytes``, ``digest`` (``sha256:<hex>``, of a directory's manifest for a
    directory), and ``deleted`` once its file was removed after it was registered."""

    step: int | None
    uri: str
    name: str = ""
    digest: str | None = None
    size_bytes: int | None = None
    created_at: str | None = None
    deleted: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CheckpointRetry(WireModel):
    """A retry of the job: the ``step`` of the checkpoint it resumed from (None without one), when, and why."""

    step: int | None
    time: str
    message: str
    attempt: int | None = None
    max_retries: int | None = None
    exit_code: int | None = None
    resume_from: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RunCheckpoints(WireModel):
    """A run's checkpoints in step order (those without a step first) and its retries, oldest first."""

    metadata: Metadata
    run_id: str
    checkpoints: tuple[Checkpoint, ...] = ()
    retries: tuple[CheckpointRetry, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    def at(self, step: int) -> Checkpoint:
        """The checkpoint nearest at or before ``step`` (:func:`checkpoint_at`)."""
        return checkpoint_at(self.checkpoints, step, self.run_id)


def checkpoint_at(checkpoints: tuple[Checkpoint, ...] | list[Checkpoint], step: int, run_id: str) -> Checkpoint:
    """The checkpoint with the highest step at or before ``step`` that was not deleted; ``LookupError`` saying
    what the run has when there is none."""
    if isinstance(step, bool) or not isinstance(step, int):
        raise TypeError(f"step must be a whole number, not {step!r}")
    usable = [c for c in checkpoints if c.step is not None and c.step <= step and not c.deleted]
    if usable:
        return max(usable, key=lambda c: c.step)  # type: ignore[arg-type, return-value]
    stepped = sorted(c.step for c in checkpoints if c.step is not None and not c.deleted)
    if not checkpoints:
        raise LookupError(f"run {run_id} has no checkpoints (none registered: give --checkpoints GLOB or "
                          "checkpoint_path when submitting)")
    if not stepped:
        raise LookupError(f"run {run_id} has no checkpoint with a step to pick from (its {len(checkpoints)} "
                          "checkpoint(s) were deleted or carry no step in their names)")
    raise LookupError(f"run {run_id} has no checkpoint at or before step {step}: its first is at step {stepped[0]}")
