"""A live pane's poll answer (``/stellar/data/runs/{run_id}/tails``): its encoders and its OpenAPI fragment.

Each tail is the metric's catalog entry (:func:`.metric.metric_json`, the same bytes the v2 catalog sends)
followed by its points from ``since`` on; a metric the run does not have is ``missing``.
"""

from __future__ import annotations

import numpy as np
import orjson

from tau_collector.reads import RunRow
from tau_collector.taugrid.gojson import RawJSON, encode_string

from .common import INT64, NONNEG, STRINGS, ref
from .metric import METRIC, metric_json

__all__ = ["MAX_TAIL_METRICS", "STATUS_MESSAGE_TAG", "TAILS", "missing_tail_json", "tail_json", "tails_json"]

MAX_TAIL_METRICS = 256  # metrics named in one request (and tails in one answer); a pane showing more asks in several
STATUS_MESSAGE_TAG = "tau.status.message"


def _array(values: np.ndarray) -> str:
    return orjson.dumps(values, option=orjson.OPT_SERIALIZE_NUMPY).decode()


def _int(value: int | None) -> str:
    return "null" if value is None else str(int(value))


def tail_json(summary, since: int | None, changed: bool, source_points: int, steps: np.ndarray,
              values: np.ndarray) -> RawJSON:
    """A metric's tail: its catalog entry, the ``since`` it was asked from, whether it changed, its points."""
    return RawJSON(f'{metric_json(summary)[:-1]},"since":{_int(since)},"changed":{"true" if changed else "false"},'
                   f'"source_points":{int(source_points)},"returned_points":{int(steps.size)},'
                   f'"step":{_array(steps)},"value":{_array(values)}}}')


def missing_tail_json(name: str, since: int | None) -> RawJSON:
    """The tail of a metric the run does not have."""
    return RawJSON(f'{{"name":{encode_string(name)},"missing":true,"since":{_int(since)},"changed":false,'
                   '"step":[],"value":[]}')


def tails_json(meta: RawJSON | dict, run_id: str, run: RunRow, lifecycle_state: str, cursor: str, total: int,
               names: RawJSON | None, tails: list[RawJSON]) -> dict:
    """The answer: the run's state, the catalog's cursor and size (and its names when they changed), the tails."""
    catalog: dict = {"cursor": cursor, "total": total}
    if names is not None:
        catalog["names"] = names
    return {"metadata": meta, "run_id": run_id,
            "run": {"state": run.state, "lifecycle_state": lifecycle_state, "project": run.project,
                    "status_message": run.tags.get(STATUS_MESSAGE_TAG, "")},
            "catalog": catalog, "metrics": tails}


_RUN_KEYS = ("state", "lifecycle_state", "project", "status_message")

TAIL = {
    "type": "object", "additionalProperties": False, "required": ["name", "since", "changed", "step", "value"],
    "description": "the metric's v2 catalog entry (or missing: true) and its points from since on",
    "properties": {**METRIC["properties"], "missing": {"type": "boolean"}, "since": {**INT64, "nullable": True},
                   "changed": {"type": "boolean"}, "source_points": NONNEG, "returned_points": NONNEG,
                   "step": {"type": "array", "items": INT64}, "value": {"type": "array", "items": {"type": "number"}}},
}

TAILS = {
    "type": "object", "additionalProperties": False,
    "required": ["metadata", "run_id", "run", "catalog", "metrics"],
    "properties": {
        "metadata": ref("Metadata"), "run_id": {"type": "string"},
        "run": {"type": "object", "required": list(_RUN_KEYS),
                "properties": {k: {"type": "string"} for k in _RUN_KEYS}},
        "catalog": {"type": "object", "additionalProperties": False, "required": ["cursor", "total"],
                    "properties": {"cursor": {"type": "string"}, "total": NONNEG, "names": STRINGS}},
        "metrics": {"type": "array", "maxItems": MAX_TAIL_METRICS, "items": ref("Tail")},
    },
}
