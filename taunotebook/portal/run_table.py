"""The runs table's data (``GET /stellar/data/runs``): every run of the workspace in one bounded answer.

Each run with its ids, state, tags and creation time, its config's flattened fields (what the table's
hyperparameter columns, the compare page's names and the parallel coordinates show), and a chosen
metric's latest, min and max from the run's metric summaries (no metric file is read). Bounds:
:data:`RUNS_LIMIT` runs (newest first; more marks the answer partial), :data:`METRICS_LIMIT` metrics,
:data:`RUN_IDS_LIMIT` ``run_id`` filters, :data:`CONFIG_FIELDS_LIMIT` fields per run and
:data:`CONFIG_TEXT_LIMIT` characters per text value (both said in a warning when cut).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from tau_collector.completion import RUN_STATUS_METRIC
from tau_collector.expstore import RunRow

from .errors import V2Error
from .params import Query
from .sources import ExperimentReader

__all__ = [
    "CONFIG_FIELDS_LIMIT",
    "CONFIG_TEXT_LIMIT",
    "METRICS_LIMIT",
    "METRIC_NAMES_LIMIT",
    "RUNS_LIMIT",
    "RUN_IDS_LIMIT",
    "default_metric",
    "run_table",
]

RUNS_LIMIT = 5000
METRICS_LIMIT = 8
RUN_IDS_LIMIT = 200
METRIC_NAMES_LIMIT = 2000
CONFIG_FIELDS_LIMIT = 256
CONFIG_TEXT_LIMIT = 256
_MARKER_PREFIX = RUN_STATUS_METRIC.split("/", 1)[0] + "/"  # tau/: the collector's markers, not metrics


def _metric_rank(name: str) -> int:
    leaf = name.rsplit("/", 1)[-1].lower()
    return 0 if leaf == "loss" else 1 if "loss" in leaf else 2


def default_metric(runs_per_metric: Mapping[str, int]) -> str | None:
    """The metric a table shows when none is asked for: ``loss``, else a ``…loss``, else any; the most runs' first."""
    names = [n for n in runs_per_metric if not n.startswith(_MARKER_PREFIX)]
    if not names:
        return None
    return min(names, key=lambda n: (_metric_rank(n), -runs_per_metric[n], n))


def _metrics_param(q: Query) -> list[str]:
    names = list(dict.fromkeys(m.strip() for m in q.all("metric") if m.strip()))
    if len(names) > METRICS_LIMIT:
        raise V2Error(400, "INVALID_ARGUMENT", f"metric may be given at most {METRICS_LIMIT} times")
    return names


def _run_ids_param(q: Query) -> list[str]:
    ids = list(dict.fromkeys(r.strip() for r in q.all("run_id") if r.strip()))
    if len(ids) > RUN_IDS_LIMIT:
        raise V2Error(400, "INVALID_ARGUMENT", f"run_id may be given at most {RUN_IDS_LIMIT} times")
    return ids


def _field_value(value: Any) -> tuple[Any, bool]:
    """A config field as JSON can carry it (non-finite numbers as text), and whether it was cut."""
    if isinstance(value, float) and not math.isfinite(value):
        return ("NaN" if math.isnan(value) else "+Inf" if value > 0 else "-Inf"), False
    if value is None or isinstance(value, bool | int | float):
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


def _configs(reader: ExperimentReader, run_ids: list[str]) -> dict[str, Any]:
    # A source without configs (TauGrid's Kusto tables carry none) answers every run's config as null.
    read = getattr(reader, "run_configs", None)
    return read(run_ids) if read is not None and run_ids else {}


def _stats(summary) -> dict[str, Any]:
    out: dict[str, Any] = {"count": summary.count, "non_finite_count": summary.non_finite_count}
    if summary.latest_step is not None:
        out["latest_step"] = summary.latest_step
    if summary.finite_count > 0:
        for key in ("latest_value", "min_value", "max_value"):
            value = getattr(summary, key)
            if value is not None and math.isfinite(value):
                out[key] = float(value)
    return out


def _selected(runs: Iterable[RunRow], q: Query, run_ids: list[str]) -> list[RunRow]:
    wanted = set(run_ids)
    experiment, group = q.get("experiment"), q.get("group")
    return [r for r in runs
            if (not wanted or r.run_id in wanted)
            and (not experiment or r.experiment_id == experiment)
            and (not group or r.run_group_id == group)]


def run_table(reader: ExperimentReader, workspace: str, q: Query) -> tuple[dict[str, Any], bool, list[str]]:
    """(the body's ``metric_names``, ``metrics``, ``run_count`` and ``runs``; partial; warnings) for a checked query."""
    metrics = _metrics_param(q)
    run_ids = _run_ids_param(q)
    matching = _selected(reader.runs(workspace, project=q.get("project") or None), q, run_ids)
    listed = matching[:RUNS_LIMIT]
    warnings: list[str] = []
    partial = len(matching) > RUNS_LIMIT
    if partial:
        warnings.append(f"the {RUNS_LIMIT} newest of {len(matching)} runs are listed; filter by project, "
                        "experiment or group to see the others")
    summaries = {r.run_id: {s.metric_name: s for s in reader.metric_summaries(r.run_id)} for r in listed}
    runs_per_metric: dict[str, int] = {}
    for by_name in summaries.values():
        for name in by_name:
            runs_per_metric[name] = runs_per_metric.get(name, 0) + 1
    if not metrics:
        chosen = default_metric(runs_per_metric)
        metrics = [chosen] if chosen else []
    names = sorted((n for n in runs_per_metric if not n.startswith(_MARKER_PREFIX)),
                   key=lambda n: (_metric_rank(n), n))
    if len(names) > METRIC_NAMES_LIMIT:
        warnings.append(f"{len(names)} metric names; the first {METRIC_NAMES_LIMIT} are listed")
        names = names[:METRIC_NAMES_LIMIT]
    configs = _configs(reader, [r.run_id for r in listed])
    cut_configs: list[str] = []
    rows = []
    for run in listed:
        row: dict[str, Any] = {"run_id": run.run_id, "project": run.project, "experiment_id": run.experiment_id,
                               "run_group_id": run.run_group_id, "state": run.state, "created_at": run.created_at,
                               "tags": dict(sorted(run.tags.items()))}
        if run.config_hash:
            row["config_hash"] = run.config_hash
        config = configs.get(run.run_id)
        if config is None:
            row["config"] = None
        else:
            row["config"], cut = _config_json(config.fields)
            if cut:
                cut_configs.append(run.run_id)
        row["metrics"] = {m: _stats(summaries[run.run_id][m]) for m in metrics if m in summaries[run.run_id]}
        rows.append(row)
    if cut_configs:
        shown = ", ".join(cut_configs[:5]) + (f" and {len(cut_configs) - 5} more" if len(cut_configs) > 5 else "")
        warnings.append(f"configs cut to {CONFIG_FIELDS_LIMIT} fields of at most {CONFIG_TEXT_LIMIT} characters: "
                        f"{shown}")
    body = {"metric_names": names, "metrics": metrics, "run_count": len(matching), "runs": rows}
    return body, partial, warnings
