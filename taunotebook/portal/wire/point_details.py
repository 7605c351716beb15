"""What a v2 series cannot carry (``/stellar/data/runs/{run_id}/points``): non-finite marks and wall-time
samples; the encoder and its OpenAPI fragment."""

from __future__ import annotations

import math

import numpy as np

from .common import INT64, NONNEG, ref

__all__ = ["NON_FINITE_LIMIT", "POINT_DETAILS", "point_details_json"]

NON_FINITE_LIMIT = 1000  # marks listed per answer; non_finite_count counts them all


def _kind(value: float) -> str:
    return "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")


def point_details_json(meta, run_id: str, metric: str, non_finite_count: int = 0, marks=None,
                       sample=None) -> dict:
    """The answer: ``marks`` (step, value, wall_time columns of the listed non-finite observations) and
    ``sample`` (step, wall_time columns); both ``None`` for a metric the run does not have."""
    body: dict = {"metadata": meta, "run_id": run_id, "metric": metric, "non_finite_count": non_finite_count}
    body["non_finite"] = [] if marks is None else [
        {"step": s, "value": _kind(v), "wall_time": w}
        for s, v, w in zip(marks.step.tolist(), marks.value.tolist(), marks.wall_time.tolist(), strict=True)]
    body["wall_time"] = ({"step": [], "wall_time": []} if sample is None else
                         {"step": sample.step.tolist(), "wall_time": sample.wall_time.astype(np.int64).tolist()})
    return body


POINT_DETAILS = {
    "type": "object", "additionalProperties": False,
    "required": ["metadata", "run_id", "metric", "non_finite_count", "non_finite", "wall_time"],
    "properties": {
        "metadata": ref("Metadata"), "run_id": {"type": "string"}, "metric": {"type": "string"},
        "non_finite_count": NONNEG,
        "non_finite": {"type": "array", "maxItems": NON_FINITE_LIMIT, "items": {
            "type": "object", "additionalProperties": False, "required": ["step", "value", "wall_time"],
            "properties": {"step": INT64, "value": {"type": "string", "enum": ["NaN", "+Inf", "-Inf"]},
                           "wall_time": {**INT64, "description": "microseconds since the epoch, UTC"}}}},
        "wall_time": {"type": "object", "additionalProperties": False, "required": ["step", "wall_time"],
                      "properties": {"step": {"type": "array", "items": INT64},
                                     "wall_time": {"type": "array", "items": INT64}}},
    },
}
