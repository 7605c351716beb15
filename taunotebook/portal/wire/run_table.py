"""The runs table's answer (``/stellar/data/runs``): the row encoder (a run, its config fields, its metrics'
statistics) and the OpenAPI fragments of the row and the answer.

The answer is encoded by orjson in Go's bytes (``gojson.dumps_fast``), so a row is a dict of plain values:
floats already in Go's spelling (``go_number``), non-finite config numbers as text.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from tau_collector.reads import RunRow
from tau_collector.taugrid.gojson import go_number

from .common import NONNEG, SCALAR, STRINGS, ref
from .metric import METRIC

__all__ = [
    "CONFIG_FIELDS_LIMIT",
    "CONFIG_TEXT_LIMIT",
    "METRICS_LIMIT",
    "METRIC_NAMES_LIMIT",
    "METRIC_STATS",
    "RUNS_LIMIT",
    "RUN_TABLE",
    "RUN_TABLE_ROW",
    "configs_cut_warning",
    "metric_stats",
    "run_table_row",
]

RUNS_LIMIT = 5000  # rows per answer
METRICS_LIMIT = 8  # metrics whose statistics each row carries
METRIC_NAMES_LIMIT = 2000  # names listed in metric_names
CONFIG_FIELDS_LIMIT = 256  # config fields per row
CONFIG_TEXT_LIMIT = 256  # characters per config text value
METRIC_STATS_KEYS = ("count", "non_finite_count", "latest_step", "latest_value", "min_value", "max_value")


def metric_stats(summary) -> dict[str, Any]:
    """A metric's statistics in a row: the catalog entry's counts, latest step and finite values."""
    out: dict[str, Any] = {"count": summary.count, "non_finite_count": summary.non_finite_count}
    if summary.latest_step is not None:
        out["latest_step"] = summary.latest_step
    if summary.finite_count > 0:
        for key in ("latest_value", "min_value", "max_value"):
            value = getattr(summary, key)
            if value is not None and math.isfinite(value):
                out[key] = go_number(float(value))
    return out


def _field_value(value: Any) -> tuple[Any, bool]:
    """A config field as JSON can carry it (non-finite numbers as text), and whether it was cut."""
    if isinstance(value, float) and not math.isfinite(value):
        return ("NaN" if math.isnan(value) else "+Inf" if value > 0 else "-Inf"), False
    if isinstance(value, float):
        return go_number(value), False
    if value is None or isinstance(value, bool | int):
        return value, False
    text = value if isinstance(value, str) else str(value)
    if len(text) > CONFIG_TEXT_LIMIT:
        return text[:CONFIG_TEXT_LIMIT - 1] + "…", True
    return text, False


def _config_json(fields: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    out: dict[str, Any] = {}
    cut = len(fields) > CONFIG_FIELDS_LIMIT
    for key in sorted(fields)[:CONFIG_FIELDS_LIMIT]:
        out[key], was_cut = _field_value(fields[key])
        cut = cut or was_cut
    return out, cut


def run_table_row(run: RunRow, config_fields: Mapping[str, Any] | None,
                  summaries: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """(a run's row, whether its config was cut to the limits); ``summaries`` maps the metrics to their summary
    (``None``: the run does not have it, left out)."""
    row: dict[str, Any] = {"run_id": run.run_id, "project": run.project, "experiment_id": run.experiment_id,
                           "run_group_id": run.run_group_id, "state": run.state, "created_at": run.created_at,
                           "tags": dict(sorted(run.tags.items()))}
    if run.config_hash:
        row["config_hash"] = run.config_hash
    cut = False
    if config_fields is None:
        row["config"] = None
    else:
        row["config"], cut = _config_json(config_fields)
    row["metrics"] = {m: metric_stats(s) for m, s in summaries.items() if s is not None}
    return row, cut


def configs_cut_warning(run_ids: list[str]) -> str:
    """The warning for rows whose config :func:`run_table_row` cut (the first five runs named)."""
    shown = ", ".join(run_ids[:5]) + (f" and {len(run_ids) - 5} more" if len(run_ids) > 5 else "")
    return f"configs cut to {CONFIG_FIELDS_LIMIT} fields of at most {CONFIG_TEXT_LIMIT} characters: {shown}"


METRIC_STATS = {
    "type": "object", "additionalProperties": False, "required": ["count", "non_finite_count"],
    "description": "a part of the metric's catalog entry",
    "properties": {k: METRIC["properties"][k] for k in METRIC_STATS_KEYS},
}

RUN_TABLE_ROW = {
    "type": "object", "additionalProperties": False,
    "required": ["run_id", "project", "experiment_id", "run_group_id", "state", "created_at", "tags",
                 "config", "metrics"],
    "properties": {
        **{k: {"type": "string"} for k in ("run_id", "project", "experiment_id", "run_group_id", "state",
                                           "created_at", "config_hash")},
        "tags": {"type": "object", "additionalProperties": {"type": "string"}},
        "config": {"type": "object", "nullable": True, "description": "flattened fields (dotted keys)",
                   "additionalProperties": SCALAR},
        "metrics": {"type": "object", "additionalProperties": ref("MetricStats")},
    },
}

RUN_TABLE = {
    "type": "object", "additionalProperties": False,
    "required": ["metadata", "metric_names", "metrics", "run_count", "runs"],
    "properties": {
        "metadata": ref("Metadata"),
        "metric_names": {**STRINGS, "maxItems": METRIC_NAMES_LIMIT},
        "metrics": {**STRINGS, "maxItems": METRICS_LIMIT},
        "run_count": NONNEG,
        "offset": NONNEG,
        "runs": {"type": "array", "maxItems": RUNS_LIMIT, "items": ref("RunTableRow")},
    },
}
