"""The workspace's experiments with their run counts (``/stellar/data/experiments``): encoder and OpenAPI fragment."""

from __future__ import annotations

from collections.abc import Mapping

from .common import ref

__all__ = ["EXPERIMENT_LIST", "experiment_list_json"]


def experiment_list_json(meta, counts: Mapping[tuple[str, str], int]) -> dict:
    """The answer: each (experiment id, project) with its run count, sorted by both."""
    return {"metadata": meta, "experiments": [{"experiment_id": e, "project": p, "run_count": n}
                                              for (e, p), n in sorted(counts.items())]}


EXPERIMENT_LIST = {
    "type": "object", "additionalProperties": False, "required": ["metadata", "experiments"],
    "properties": {"metadata": ref("Metadata"), "experiments": {"type": "array", "items": {
        "type": "object", "additionalProperties": False,
        "required": ["experiment_id", "project", "run_count"],
        "properties": {"experiment_id": {"type": "string"}, "project": {"type": "string"},
                       "run_count": {"type": "integer", "minimum": 1}}}}},
}
