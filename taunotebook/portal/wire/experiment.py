"""The experiment of TauGrid's search (``v2Experiment``, ``/experiments/search``): its encoder and OpenAPI fragments."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..params import MAX_LIMIT
from ..run_configs import CONFIG_KEYS_LIMIT, CONFIG_VALUES_LIMIT
from .common import NONNEG, SCALAR, STRINGS, ref

__all__ = ["EXPERIMENT", "EXPERIMENT_SEARCH", "experiment_json"]


def experiment_json(*, experiment_id: str, project: str, name: str, description: str, created_at: str,
                    updated_at: str, run_count: int, run_group_count: int, state_counts: Mapping[str, int],
                    lifecycle_counts: Mapping[str, int], latest_run_at: str, metric_names: Sequence[str],
                    config: Mapping[str, list[Any]] | None = None) -> dict:
    """TauGrid's ``v2Experiment`` (empty maps and strings omitted where Go's omitempty omits them); our
    addition ``config`` (``include=config``): the config space of its runs."""
    out: dict = {"experiment_id": experiment_id, "project": project, "name": name}
    if description:
        out["description"] = description
    out.update(created_at=created_at, updated_at=updated_at, run_count=run_count, run_group_count=run_group_count)
    if state_counts:
        out["state_counts"] = dict(sorted(state_counts.items()))
    if lifecycle_counts:
        out["lifecycle_counts"] = dict(sorted(lifecycle_counts.items()))
    if latest_run_at:
        out["latest_run_at"] = latest_run_at
    out["metric_names"] = list(metric_names)
    if config is not None:
        out["config"] = dict(config)
    return out


EXPERIMENT = {
    "type": "object", "additionalProperties": False,
    "required": ["experiment_id", "project", "name", "created_at", "updated_at", "run_count",
                 "run_group_count", "metric_names"],
    "properties": {
        **{k: {"type": "string"} for k in ("experiment_id", "project", "name", "description", "created_at",
                                           "updated_at", "latest_run_at")},
        "run_count": NONNEG, "run_group_count": NONNEG,
        "state_counts": {"type": "object", "additionalProperties": NONNEG},
        "lifecycle_counts": {"type": "object", "additionalProperties": NONNEG},
        "metric_names": STRINGS,
        "config": {"type": "object", "maxProperties": CONFIG_KEYS_LIMIT,
                   "description": "Our addition, with include=config: each config key of the experiment's "
                                  "runs with its distinct values (numbers ascending, then texts)",
                   "additionalProperties": {"type": "array", "maxItems": CONFIG_VALUES_LIMIT, "items": SCALAR}},
    },
}

EXPERIMENT_SEARCH = {
    "type": "object", "additionalProperties": False, "required": ["metadata", "experiments"],
    "properties": {"metadata": ref("Metadata"),
                   "experiments": {"type": "array", "maxItems": MAX_LIMIT, "items": ref("Experiment")},
                   "next_cursor": {"type": "string"}},
}
