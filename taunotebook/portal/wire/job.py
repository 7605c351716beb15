"""A run's job (our page data ``/stellar/data/runs/{run_id}/job``): its encoder and its OpenAPI fragment."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tau_collector.reads import RunEvent

from .common import ref

__all__ = ["RUN_JOB", "job_json"]


def job_json(meta: dict, run_id: str, submission: Mapping[str, Any], lifecycle: Mapping[str, Any],
             events: Sequence[RunEvent]) -> dict:
    """The answer: the backend and resources of the run's ``submission`` event, its lifecycle and its faults."""
    return {
        "metadata": meta, "run_id": run_id,
        "backend": str(submission.get("backend", "")),
        "resources": dict(submission.get("resources") or {}),
        "lifecycle": dict(lifecycle),
        "faults": [{"time": e.time, "kind": str((e.payload or {}).get("kind", "")), "message": e.message}
                   for e in events if e.type == "fault"],
    }


RUN_JOB = {
    "type": "object", "additionalProperties": False,
    "required": ["metadata", "run_id", "backend", "resources", "lifecycle", "faults"],
    "properties": {
        "metadata": ref("Metadata"), "run_id": {"type": "string"},
        "backend": {"type": "string", "description": "local | ray | tau; empty when no submission was recorded"},
        "resources": {"type": "object", "description": "the JobResources fields the job asked for (gpus, workers, "
                                                       "image, queue ...); {} when none were given or recorded"},
        "lifecycle": {"type": "object", "additionalProperties": False,
                      "required": ["phase", "reason", "retries", "text"],
                      "properties": {
                          "phase": {"type": "string", "enum": ["submitted", "queued", "admitted", "running",
                                                               "succeeded", "failed", "cancelled", "unknown",
                                                               "pending"]},
                          "reason": {"type": "string"}, "retries": {"type": "integer", "minimum": 0},
                          "text": {"type": "string", "description": "e.g. failed: killed by SIGKILL (exit 137)"}}},
        "faults": {"type": "array", "items": {
            "type": "object", "additionalProperties": False, "required": ["time", "kind", "message"],
            "properties": {"time": {"type": "string"}, "kind": {"type": "string"}, "message": {"type": "string"}}}},
    },
}
