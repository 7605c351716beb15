"""The series answer (TauGrid's ``v2SeriesResponse``, ``/runs/{run_id}/series``): its encoder and OpenAPI fragment."""

from __future__ import annotations

import numpy as np
import orjson

from tau_collector.taugrid.gojson import RawJSON, encode_float

from ..params import MAX_MAX_POINTS, SeriesParams
from .common import INT64, NONNEG, ref

__all__ = ["SERIES", "points_json", "series_json"]


def points_json(steps: np.ndarray, values: np.ndarray) -> RawJSON:
    """The points array, encoded in bulk: a 12000-point response must not cost Python work per value.

    orjson writes the same shortest digits as Go; only its ``1.0`` (Go: ``1``) and its exponent
    forms (Go switches to them at other magnitudes) need rewriting.
    """
    n = int(steps.size)
    if n == 0:
        return RawJSON("[]")
    text = orjson.dumps(values, option=orjson.OPT_SERIALIZE_NUMPY).decode()
    texts = text[1:-1].split(",")
    if "e" in text or "null" in text:
        for i in [i for i, t in enumerate(texts) if "e" in t or t == "null"]:
            texts[i] = encode_float(float(values[i]))  # raises on a non-finite value rather than writing null
    with np.errstate(invalid="ignore"):
        whole = np.flatnonzero(values == np.trunc(values))
    for i in whole.tolist():
        if texts[i].endswith(".0"):
            texts[i] = texts[i][:-2]
    # Four parts per point, placed by slice assignment and joined once: no Python work per point.
    parts = [',"value":'] * (4 * n)
    parts[0::4] = ['},{"step":'] * n
    parts[1::4] = orjson.dumps(steps, option=orjson.OPT_SERIALIZE_NUMPY).decode()[1:-1].split(",")
    parts[3::4] = texts
    parts[0] = '[{"step":'
    return RawJSON("".join(parts) + "}]")


def series_json(meta: RawJSON | dict, target: str, run_id: str, metric: str, params: SeriesParams,
                source_points: int, steps: np.ndarray, values: np.ndarray) -> dict:
    """The series answer: the request's range and budget as given (absent bounds omitted), the counts, the points."""
    body: dict = {"metadata": meta, "target": target, "run_id": run_id, "metric": metric}
    if params.start_step is not None:
        body["start_step"] = params.start_step
    if params.end_step is not None:
        body["end_step"] = params.end_step
    if params.step_interval:
        body["step_interval"] = params.step_interval
    body.update(max_points=params.max_points, source_points=source_points, returned_points=int(steps.size),
                points=points_json(steps, values))
    return body


SERIES = {
    "type": "object", "additionalProperties": False,
    "required": ["metadata", "target", "run_id", "metric", "max_points", "source_points",
                 "returned_points", "points"],
    "properties": {
        "metadata": ref("Metadata"), "target": {"type": "string"}, "run_id": {"type": "string"},
        "metric": {"type": "string"}, "start_step": INT64, "end_step": INT64,
        "step_interval": {"type": "integer", "minimum": 1},
        "max_points": {"type": "integer", "minimum": 1, "maximum": MAX_MAX_POINTS},
        "source_points": NONNEG, "returned_points": NONNEG,
        "points": {"type": "array", "items": {
            "type": "object", "additionalProperties": False, "required": ["step", "value"],
            "properties": {"step": INT64, "value": {"type": "number"}}}},
    },
}
