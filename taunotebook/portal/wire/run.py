"""The run (TauGrid's ``v2Run``): its encoder and its OpenAPI fragment.

Sent by ``/runs/{run_id}`` and, one per run, by ``/experiments/{id}/runs`` (with ``include=config``: each
run's flattened config fields besides, our addition).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tau_collector.reads import RunRow
from tau_collector.reads.lifecycle import classify

from .common import FIELDS, STRINGS, ref

__all__ = ["RUN", "RUN_DETAIL", "RUN_LIST", "run_json"]

_OPTIONAL_STRINGS = ("started_at", "completed_at", "config_hash", "code_sha", "image_digest", "result_uri")


def run_json(run: RunRow, summaries: list, served: str, config: Mapping[str, Any] | None = None,
             with_config: bool = False) -> dict:
    """A run as TauGrid's ``v2Run`` (empty optional strings omitted as Go's omitempty does), its lifecycle
    classified over its metric summaries; ``with_config`` adds ``config`` (the fields, or null without one)."""
    lifecycle, successful, reasons = classify(run.state, run.completed_at, run.tags, summaries)
    out: dict = {"run_id": run.run_id}
    if run.experiment_id:
        out["experiment_id"] = run.experiment_id
    out.update(project=run.project, run_group_id=run.run_group_id)
    if run.parent_run_id:
        out["parent_run_id"] = run.parent_run_id
    out.update(state=run.state, lifecycle_state=lifecycle, successful=successful)
    if reasons:
        out["success_reasons"] = reasons
    if run.owner:
        out["owner"] = run.owner
    out["created_at"] = run.created_at
    for key in _OPTIONAL_STRINGS:
        value = getattr(run, key)
        if value:
            out[key] = value
    out.update(tags=dict(sorted(run.tags.items())), metric_names=sorted(run.metric_names), source=served)
    if with_config:
        out["config"] = dict(config) if config is not None else None
    return out


RUN = {
    "type": "object", "additionalProperties": False,
    "required": ["run_id", "project", "run_group_id", "state", "lifecycle_state", "successful",
                 "created_at", "tags", "metric_names", "source"],
    "properties": {
        **{k: {"type": "string"} for k in (
            "run_id", "experiment_id", "project", "run_group_id", "parent_run_id", "state",
            "lifecycle_state", "owner", "created_at", *_OPTIONAL_STRINGS, "source")},
        "successful": {"type": "boolean"},
        "success_reasons": STRINGS,
        "tags": {"type": "object", "additionalProperties": {"type": "string"}},
        "metric_names": STRINGS,
        "config": {**FIELDS, "nullable": True,
                   "description": "Our addition, with include=config: the run's flattened config fields, "
                                  "null for a run without a config."},
    },
}

RUN_DETAIL = {"type": "object", "additionalProperties": False, "required": ["metadata", "run"],
              "properties": {"metadata": ref("Metadata"), "run": ref("Run")}}

RUN_LIST = {"type": "object", "additionalProperties": False, "required": ["metadata", "target", "runs"],
            "properties": {"metadata": ref("Metadata"), "target": {"type": "string"},
                           "runs": {"type": "array", "items": ref("Run")}, "next_cursor": {"type": "string"}}}
