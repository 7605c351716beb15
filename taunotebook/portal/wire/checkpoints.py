"""A run's checkpoints and retries (our ``/runs/{run_id}/checkpoints``): their encoder and OpenAPI fragment."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tau_collector.reads import RunEvent
from tau_collector.reads.rows import ArtifactRow

from .common import ref

__all__ = ["RUN_CHECKPOINTS", "checkpoint_json", "retry_json", "run_checkpoints_json"]


def checkpoint_json(row: ArtifactRow) -> dict[str, Any]:
    """One checkpoint: TauGrid's ``artifacts`` columns (``step`` null when its name carries none)."""
    body: dict[str, Any] = {"step": row.step, "uri": row.uri, "name": row.name,
                            "deleted": bool((row.tags or {}).get("deleted"))}
    for key in ("digest", "size_bytes", "created_at"):
        value = getattr(row, key)
        if value is not None:
            body[key] = value
    return body


def retry_json(event: RunEvent) -> dict[str, Any]:
    """One retry of the job: the step it resumed from (null without a checkpoint), its attempt, when, and why."""
    payload = event.payload or {}
    step = payload.get("step")
    body: dict[str, Any] = {"step": step if isinstance(step, int) and not isinstance(step, bool) else None,
                            "time": event.time, "message": event.message}
    for key in ("attempt", "max_retries", "exit_code", "resume_from"):
        if payload.get(key) is not None:
            body[key] = payload[key]
    return body


def run_checkpoints_json(meta: dict, run_id: str, rows: Iterable[ArtifactRow],
                         retries: Iterable[RunEvent]) -> dict[str, Any]:
    return {"metadata": meta, "run_id": run_id, "checkpoints": [checkpoint_json(r) for r in rows],
            "retries": [retry_json(e) for e in retries]}


_NULLABLE_STEP = {"type": "integer", "format": "int64", "nullable": True}

RUN_CHECKPOINTS = {
    "type": "object", "additionalProperties": False,
    "required": ["metadata", "run_id", "checkpoints", "retries"],
    "properties": {
        "metadata": ref("Metadata"), "run_id": {"type": "string"},
        "checkpoints": {"type": "array", "description": "in step order (those without a step first)", "items": {
            "type": "object", "additionalProperties": False, "required": ["step", "uri", "name", "deleted"],
            "properties": {
                "step": {**_NULLABLE_STEP, "description": "the step its name carries; null when it carries none"},
                "uri": {"type": "string", "description": "where it is (registered by its place, never copied)"},
                "name": {"type": "string"},
                "digest": {"type": "string", "description": "sha256:<hex> of the file, or of a directory's "
                                                            "manifest"},
                "size_bytes": {"type": "integer", "format": "int64"},
                "created_at": {"type": "string", "format": "date-time"},
                "deleted": {"type": "boolean", "description": "the file was deleted after it was registered"},
            }}},
        "retries": {"type": "array", "description": "the job's retries, oldest first", "items": {
            "type": "object", "additionalProperties": False, "required": ["step", "time", "message"],
            "properties": {
                "step": {**_NULLABLE_STEP, "description": "the step of the checkpoint it resumed from"},
                "time": {"type": "string", "format": "date-time"}, "message": {"type": "string"},
                "attempt": {"type": "integer"}, "max_retries": {"type": "integer"}, "exit_code": {"type": "integer"},
                "resume_from": {"type": "string"},
            }}},
    },
}
