"""The KQL the ``source=kusto`` reader sends: TauGrid's query shapes over ``TauExpMetricEventRows()``.

Shapes follow TauGrid's typed generation (``core/expkusto/query.go`` ``BuildTypedMetricsQuery``, see
``KUSTO-READS.md`` §1.3): a look-back window and the workspace inside the query, a ``materialize``d
scope, milestone steps from the run's ``eval/``, ``validation/``, ``val/``, ``test/`` and ``final/``
metrics. What differs, on purpose (``collector/kql/README.md`` says why):

* **Values are query parameters**, never text: every string a request carries is declared in
  ``declare query_parameters(...)`` and sent in the request's properties, so no quoting rule has to
  hold (KQL's single-quoted literals treat ``\\`` as an escape, and ``'a''b'`` is two literals
  concatenated, so TauGrid's doubled-quote ``kqlString`` would turn ``o'brien`` into ``obrien``).
  Integers and durations are the only values written into the text, after validation.
* **Runs and metric summaries are read straight from ``TauExpMetricEventRows()``** with one
  ``summarize``, instead of TauGrid's catalog views: exact counts, no catalog to deploy, and the same
  reads work on a database TauGrid's chart manages.
* **The series is reduced by M4** (first, last, min and max of every step bucket, the buckets of
  ``tau_collector.expstore.read.m4.bucket_edges``) instead of TauGrid's min/max per bin, so the pane is
  pixel-exact over ADX as it is over the local store; milestone steps are kept as TauGrid keeps them.
  Points are one per step, the latest ``wall_time`` winning, as the local store dedupes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = [
    "DEFAULT_LOOKBACK",
    "MILESTONE_PREFIXES",
    "RUN_LIMIT",
    "RUN_STATUS_METRIC",
    "KqlQuery",
    "MAX_RUNS_PER_QUERY",
    "run_metrics_query",
    "runs_query",
    "series_query",
]

EVENTS_FUNCTION = "TauExpMetricEventRows()"
RUN_STATUS_METRIC = "tau/run_status"
DEFAULT_LOOKBACK = "365d"  # TauGrid's TargetSince for run and series reads
MILESTONE_PREFIXES = ("eval/", "validation/", "val/", "test/", "final/")
TERMINAL_STATES = ("succeeded", "failed", "cancelled")
RUN_LIMIT = 1000  # TauGrid's run-catalog batch; one more row is asked for to tell "more" from "exactly"
MAX_RUNS_PER_QUERY = 200  # run ids one run_metrics_query names (a page of a run listing)
MAX_METRIC_NAMES = 10000  # names listed per run (bounds make_set and the answer's size)
_INT64_MAX = 2**63 - 1
_DURATION = re.compile(r"[1-9][0-9]{0,5}[dhm]")


@dataclass(frozen=True, slots=True)
class KqlQuery:
    """Query text plus the string values of its declared parameters (sent as request properties)."""

    text: str
    parameters: dict[str, str] = field(default_factory=dict)


def _lookback(value: str) -> str:
    # Only KQL timespan literals like 365d/12h/90m reach the text.
    if not _DURATION.fullmatch(value):
        raise ValueError(f"look-back must be a number of days, hours or minutes such as 365d, not {value!r}")
    return value


def _int(value: int, name: str) -> str:
    if isinstance(value, bool) or not isinstance(value, int) or not -(2**63) <= value <= _INT64_MAX:
        raise ValueError(f"{name} must be a 64-bit integer, not {value!r}")
    return str(value)


def _declare(parameters: dict[str, str]) -> str:
    return "declare query_parameters(" + ", ".join(f"{name}:string" for name in parameters) + ");\n"


def _scope(lookback: str, extra: list[str]) -> str:
    lines = [EVENTS_FUNCTION, f"| where wall_time > ago({_lookback(lookback)})", "| where workspace_id == p_workspace"]
    return "\n".join(lines + extra)


def _markers(keys: str) -> str:
    """``let markers``: per run, the latest ``tau/run_status`` marker whose ``tau.status.state`` is terminal."""
    states = ", ".join(f"'{s}'" for s in TERMINAL_STATES)
    return (
        "let markers = scoped\n"
        f"| where metric_name == '{RUN_STATUS_METRIC}'\n"
        "| extend terminal_state = tolower(tostring(tags['tau.status.state']))\n"
        f"| where terminal_state in ({states})\n"
        "| extend terminal_reason = tostring(tags['tau.status.reason']), "
        "terminal_message = tostring(tags['tau.status.message'])\n"
        f"| summarize arg_max(wall_time, terminal_state, terminal_reason, terminal_message) by {keys}\n"
        f"| project {keys}, terminal_at = wall_time, terminal_state, terminal_reason, terminal_message;\n"
    )


def runs_query(
    workspace: str,
    *,
    run_id: str | None = None,
    experiment_id: str | None = None,
    project: str | None = None,
    run_group_id: str | None = None,
    lookback: str = DEFAULT_LOOKBACK,
    limit: int = RUN_LIMIT,
) -> KqlQuery:
    """One row per run in the workspace matching the filters, newest first (``limit + 1`` rows at most).

    Columns: ``project, experiment_id, run_group_id, run_id, first_metric_at, latest_metric_at,
    latest_exported_at, metric_names, tags, terminal_state, terminal_at, terminal_reason, terminal_message``
    (at most ``MAX_METRIC_NAMES`` names per run). The state comes from the latest ``tau/run_status`` marker whose
    ``tau.status.state`` tag is terminal (TauGrid's ``TauExpTypedMetricRunCatalogV1`` rule); ``tags``
    are the run's latest event's.
    """
    params = {"p_workspace": workspace}
    extra = []
    for column, name, value in (
        ("run_id", "p_run", run_id),
        ("experiment_id", "p_experiment", experiment_id),
        ("['project']", "p_project", project),
        ("run_group_id", "p_group", run_group_id),
    ):
        if value is not None:
            params[name] = value
            extra.append(f"| where {column} == {name}")
    keys = "['project'], experiment_id, run_group_id, run_id"
    text = (
        _declare(params)
        + "let scoped = materialize(\n" + _scope(lookback, extra) + "\n);\n"
        + _markers(keys)
        + "scoped\n"
        "| summarize first_metric_at = min(wall_time), latest_metric_at = max(wall_time), "
        "latest_exported_at = max(exported_at), "
        f"metric_names = make_set(metric_name, {MAX_METRIC_NAMES}), "
        f"arg_max(wall_time, tags) by {keys}\n"
        f"| join kind=leftouter markers on {keys}\n"
        f"| project {keys}, first_metric_at, latest_metric_at, latest_exported_at, metric_names, "
        "tags, terminal_state = coalesce(terminal_state, ''), terminal_at, "
        "terminal_reason = coalesce(terminal_reason, ''), terminal_message = coalesce(terminal_message, '')\n"
        "| order by first_metric_at desc, ['project'] asc, run_id asc\n"
        f"| take {_int(limit + 1, 'limit')}"
    )
    return KqlQuery(text, params)


def run_metrics_query(
    workspace: str,
    run_ids: Sequence[str],
    *,
    project: str | None = None,
    lookback: str = DEFAULT_LOOKBACK,
) -> KqlQuery:
    """Runs and their metric summaries in one query: one row per (run, metric), the run's columns repeated.

    What an exact read of a run needs (``/runs/{id}``, ``/metrics``, ``/series``), and the summaries of
    a page of listed runs, at most ``MAX_RUNS_PER_QUERY`` ids at a time. Columns: ``project,
    experiment_id, run_group_id, run_id, first_metric_at, tags, terminal_state, terminal_at,
    terminal_reason, terminal_message`` (as :func:`runs_query`), then ``metric_name, count, min_step,
    max_step, min_value, max_value, latest_step, latest_wall_time, latest_value, updated_at``: the latest
    point is the one at the highest step (the latest ``wall_time`` there); events are finite by contract,
    so ``count`` is also the finite count.
    """
    if not 1 <= len(run_ids) <= MAX_RUNS_PER_QUERY:
        raise ValueError(f"between 1 and {MAX_RUNS_PER_QUERY} run ids per query, not {len(run_ids)}")
    params = {"p_workspace": workspace}
    names = []
    for i, run_id in enumerate(run_ids):
        params[f"p_run{i}"] = run_id
        names.append(f"p_run{i}")
    extra = [f"| where run_id in ({', '.join(names)})"]
    if project is not None:
        params["p_project"] = project
        extra.append("| where ['project'] == p_project")
    extra.append("| where isnotnull(step) and isnotnull(value)")
    keys = "['project'], experiment_id, run_group_id, run_id"
    text = (
        _declare(params)
        + "let scoped = materialize(\n" + _scope(lookback, extra) + "\n);\n"
        + _markers(keys)
        + "let runs = scoped\n"
        f"| summarize first_metric_at = min(wall_time), arg_max(wall_time, tags) by {keys}\n"
        f"| join kind=leftouter markers on {keys}\n"
        f"| project {keys}, first_metric_at, tags, terminal_state = coalesce(terminal_state, ''), terminal_at, "
        "terminal_reason = coalesce(terminal_reason, ''), terminal_message = coalesce(terminal_message, '');\n"
        "let latest_points = scoped\n"
        f"| summarize step = max(step) by {keys}, metric_name\n"
        f"| join kind=inner scoped on {keys}, metric_name, step\n"
        f"| summarize arg_max(wall_time, value) by {keys}, metric_name, step\n"
        f"| project {keys}, metric_name, latest_step = step, latest_wall_time = wall_time, latest_value = value;\n"
        "let metrics = scoped\n"
        "| summarize ['count'] = count(), min_step = min(step), max_step = max(step), min_value = min(value), "
        f"max_value = max(value), updated_at = max(exported_at) by {keys}, metric_name\n"
        f"| join kind=inner latest_points on {keys}, metric_name\n"
        f"| project {keys}, metric_name, ['count'], min_step, max_step, min_value, max_value, latest_step, "
        "latest_wall_time, latest_value, updated_at;\n"
        "runs\n"
        f"| join kind=inner metrics on {keys}\n"
        f"| project {keys}, first_metric_at, tags, terminal_state, terminal_at, terminal_reason, terminal_message, "
        "metric_name, ['count'], min_step, max_step, min_value, max_value, latest_step, latest_wall_time, "
        "latest_value, updated_at\n"
        "| order by ['project'] asc, run_id asc, experiment_id asc, run_group_id asc, metric_name asc"
    )
    return KqlQuery(text, params)


def series_query(
    workspace: str,
    run_id: str,
    metric: str,
    *,
    max_points: int,
    project: str | None = None,
    start_step: int | None = None,
    end_step: int | None = None,
    step_interval: int | None = None,
    lookback: str = DEFAULT_LOOKBACK,
) -> KqlQuery:
    """The series reduced on the server: M4 per step bucket plus milestone steps, one row per kept point.

    Columns: ``step, wall_time, value, source_points, milestone``. ``source_points`` (on every row) is
    the number of points in range before thinning. With at most ``max_points`` points after
    ``step_interval`` thinning every point is kept; otherwise ``max(1, max_points // 4)`` buckets keep
    their first, last, minimum and maximum (ties: the earliest step), as the local store's M4 does. For
    ``max_points`` below 4 the caller picks from the one bucket's points (``m4_indices``' rule).
    A tail read (``start_step`` set) is the same query, over the tail's few rows.
    """
    if max_points < 1:
        raise ValueError("max_points must be at least 1")
    if step_interval is not None and step_interval < 1:
        raise ValueError("step_interval must be at least 1")
    params = {"p_workspace": workspace, "p_run": run_id, "p_metric": metric}
    extra = ["| where run_id == p_run"]
    if project is not None:
        params["p_project"] = project
        extra.append("| where ['project'] == p_project")
    extra.append("| where isnotnull(step) and isnotnull(value)")
    if start_step is not None:
        extra.append(f"| where step >= {_int(start_step, 'start_step')}")
    if end_step is not None:
        extra.append(f"| where step <= {_int(end_step, 'end_step')}")
    milestone = " or ".join(f"metric_name startswith '{p}'" for p in MILESTONE_PREFIXES)
    buckets = max(1, max_points // 4)
    interval = step_interval if step_interval and step_interval > 1 else 1
    text = (
        _declare(params)
        + "let scoped = materialize(\n"
        + _scope(lookback, [*extra, "| project metric_name, step, wall_time, value"])
        + "\n);\n"
        "let milestone_steps = scoped\n"
        f"| where {milestone}\n"
        "| distinct step;\n"
        # One point per step, the latest wall_time winning (the local store's dedupe).
        "let points = materialize(scoped\n"
        "| where metric_name == p_metric\n"
        "| summarize arg_max(wall_time, value) by step);\n"
        "let bounds = points\n"
        "| summarize source_points = count(), first_step = min(step), last_step = max(step)\n"
        "| extend k = 1;\n"
        # step_interval thinning: the first step, every interval-th step from it, and the last.
        "let kept = materialize(points\n"
        "| extend k = 1\n"
        "| join kind=inner bounds on k\n"
        + (f"| where (step - first_step) % {_int(interval, 'step_interval')} == 0 or step == last_step\n"
           if interval > 1 else "")
        + "| project step, wall_time, value, source_points, first_step, last_step);\n"
        "let sizes = kept\n"
        "| summarize kept_points = count()\n"
        "| extend k = 1;\n"
        "let bucketed = kept\n"
        "| extend k = 1\n"
        "| join kind=inner sizes on k\n"
        "| extend span = last_step - first_step + 1\n"
        # Few enough points: one bucket per step keeps them all. Otherwise M4's buckets, in the exact
        # integer form while (step - first) * buckets fits in a long.
        f"| extend bucket = case(kept_points <= {_int(max_points, 'max_points')}, step - first_step, "
        f"span <= 9223372036854775807 / {buckets}, (step - first_step) * {buckets} / span, "
        f"tolong(todouble(step - first_step) / todouble(span) * {buckets}.0))\n"
        "| project step, wall_time, value, source_points, bucket;\n"
        "let extremes = bucketed\n"
        "| summarize low = min(value), high = max(value), first_at = min(step), last_at = max(step) by bucket;\n"
        "let chosen = bucketed\n"
        "| join kind=inner extremes on bucket\n"
        "| summarize first_at = take_any(first_at), last_at = take_any(last_at), "
        "low_at = min(iff(value == low, step, long(null))), high_at = min(iff(value == high, step, long(null))) "
        "by bucket\n"
        "| mv-expand step = pack_array(first_at, last_at, low_at, high_at) to typeof(long)\n"
        "| distinct step\n"
        "| extend milestone = 0;\n"
        "let milestones = milestone_steps\n"
        "| extend milestone = 1;\n"
        "union chosen, milestones\n"
        "| summarize milestone = max(milestone) by step\n"
        "| join kind=inner (points | extend k = 1 | join kind=inner bounds on k "
        "| project step, wall_time, value, source_points) on step\n"
        "| project step, wall_time, value, source_points, milestone = milestone == 1\n"
        "| order by step asc"
    )
    return KqlQuery(text, params)
