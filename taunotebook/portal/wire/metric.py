"""The metric-catalog entry (TauGrid's ``v2Metric``): its encoder and its OpenAPI fragment.

The v2 catalog (``/runs/{run_id}/metrics``) lists one per metric; a tail (:mod:`.tails`) starts with one; a
runs-table row's metric statistics (:mod:`.run_table`) are a part of one.
"""

from __future__ import annotations

from collections.abc import Iterable

from tau_collector.taugrid.gojson import RawJSON, encode_float, encode_string

from .common import INT64, NONNEG, ref

__all__ = ["METRIC", "METRIC_CATALOG", "METRIC_KEYS", "catalog_json", "metric_json"]

# TauGrid's v2Metric, in its Go struct's key order.
METRIC_KEYS = ("name", "count", "finite_count", "non_finite_count", "min_step", "max_step", "latest_step",
               "latest_wall_time", "latest_value", "min_value", "max_value", "updated_at")


def metric_json(s) -> str:
    """One catalog entry of a metric summary (``MetricSummaryRow``), encoded: one f-string (no dict, no generic
    encoder), the keys in TauGrid's order and omitted as Go's omitempty does."""
    text = (f'{{"name":{encode_string(s.metric_name)},"count":{s.count},"finite_count":{s.finite_count},'
            f'"non_finite_count":{s.non_finite_count}')
    if s.min_step is not None:
        text += f',"min_step":{s.min_step}'
    if s.max_step is not None:
        text += f',"max_step":{s.max_step}'
    if s.latest_step is not None:
        text += f',"latest_step":{s.latest_step}'
    if s.latest_wall_time is not None:
        text += f',"latest_wall_time":{s.latest_wall_time}'
    if s.finite_count > 0:
        # Values only with a finite observation; a NULL column still reads as 0 in Go.
        text += (f',"latest_value":{encode_float(float(s.latest_value or 0.0))}'
                 f',"min_value":{encode_float(float(s.min_value or 0.0))}'
                 f',"max_value":{encode_float(float(s.max_value or 0.0))}')
    if s.updated_at:
        text += f',"updated_at":{encode_string(s.updated_at)}'
    return text + "}"


def catalog_json(summaries: Iterable) -> tuple[int, RawJSON]:
    """The ``metrics`` array of ``/runs/{id}/metrics`` (name-sorted entries), encoded, and how many it holds."""
    parts = [metric_json(s) for s in sorted(summaries, key=lambda s: s.metric_name)]
    return len(parts), RawJSON("[" + ",".join(parts) + "]")


METRIC = {
    "type": "object", "additionalProperties": False,
    "required": ["name", "count", "finite_count", "non_finite_count"],
    "properties": {
        "name": {"type": "string"}, "count": NONNEG, "finite_count": NONNEG, "non_finite_count": NONNEG,
        "min_step": INT64, "max_step": INT64, "latest_step": INT64,
        "latest_wall_time": {**INT64, "description": "microseconds since the epoch, UTC"},
        "latest_value": {"type": "number"}, "min_value": {"type": "number"},
        "max_value": {"type": "number"}, "updated_at": {"type": "string"},
    },
}

METRIC_CATALOG = {"type": "object", "additionalProperties": False, "required": ["metadata", "run_id", "metrics"],
                  "properties": {"metadata": ref("Metadata"), "run_id": {"type": "string"},
                                 "metrics": {"type": "array", "items": ref("Metric")}}}
