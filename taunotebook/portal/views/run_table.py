"""``GET /stellar/data/runs`` (page data): the runs table, any window of the workspace's runs, the total always true.

Each run with its ids, state, tags and creation time, its config's flattened fields (what the table's
hyperparameter columns, the compare page's names and the parallel coordinates show), and a chosen
metric's latest, min and max from the run's metric summaries (no metric file is read).

The rows are a window (``offset``, ``limit`` up to :data:`RUNS_LIMIT`, newest first unless ``sort``/``order`` say
otherwise) of the runs that pass the filters (``project``, ``experiment``, ``group``, ``run_id``, ``state``,
``tag``, ``note``: a note's text, ``q``: ids, state, tags, config fields and notes); ``run_count`` counts every
matching run, so a client pages through all of them. A store with run listings (``expstore/listing.py``) filters,
sorts and windows in SQL and reads summaries and configs for the window only; other sources (Kusto, ``source=auto``)
do the same in Python over their runs. Bounds: :data:`METRICS_LIMIT` metrics, :data:`RUN_IDS_LIMIT` ``run_id``
filters, :data:`CONFIG_FIELDS_LIMIT` fields per run and :data:`CONFIG_TEXT_LIMIT` characters per text value (both
said in a warning when cut). A row is encoded by :func:`..wire.run_table.run_table_row`; the answer is written by
orjson in Go's bytes (``gojson.dumps_fast``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from starlette.responses import Response

from tau_collector.collect.completion_file import RUN_STATUS_METRIC
from tau_collector.reads import RUN_SORTS, ExperimentReader, HasListings, ReadsNotes, RunRow
from tau_collector.taugrid.gojson import dumps_fast

from ..context import Context
from ..errors import SECURITY_HEADERS, V2Error, metadata
from ..params import Query, limit_param, parse_int
from ..run_configs import read_configs
from ..wire.run_table import (
    CONFIG_FIELDS_LIMIT,
    CONFIG_TEXT_LIMIT,
    METRIC_NAMES_LIMIT,
    METRICS_LIMIT,
    RUNS_LIMIT,
    configs_cut_warning,
    run_table_row,
)

__all__ = [
    "CONFIG_FIELDS_LIMIT",
    "CONFIG_TEXT_LIMIT",
    "METRICS_LIMIT",
    "METRIC_NAMES_LIMIT",
    "RUNS_LIMIT",
    "RUN_IDS_LIMIT",
    "RUN_SORTS",
    "default_metric",
    "read",
    "run_table",
]

RUN_IDS_LIMIT = 200
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


def _window_params(q: Query) -> tuple[int, int, bool, str, bool]:
    """(offset, limit, whether a window was asked for, sort column, descending) with their checks."""
    offset = parse_int(q.get("offset"), "offset") if q.get("offset") else 0
    if offset < 0:
        raise V2Error(400, "INVALID_ARGUMENT", "offset must be a non-negative integer")
    limit = limit_param(q, default=RUNS_LIMIT, maximum=RUNS_LIMIT)
    sort = q.get("sort") or "created_at"
    if sort not in RUN_SORTS:
        raise V2Error(400, "INVALID_ARGUMENT", f"sort must be one of {', '.join(RUN_SORTS)}")
    order = q.get("order").lower()
    if order not in ("", "asc", "desc"):
        raise V2Error(400, "INVALID_ARGUMENT", "order must be asc or desc")
    descending = order == "desc" or (not order and sort == "created_at")
    return offset, limit, bool(q.get("offset") or q.get("limit")), sort, descending


def _tag_param(q: Query) -> tuple[str, str] | None:
    raw = q.get("tag")
    if not raw:
        return None
    key, sep, value = raw.partition("=")
    if not sep or not key.strip():
        raise V2Error(400, "INVALID_ARGUMENT", "tag filters must be key=value")
    return key.strip(), value.strip()


def _stat(summary, sort: str) -> float | None:
    """The value a run sorts by for a metric statistic: finite values only."""
    if summary is None or summary.finite_count <= 0:
        return None
    value = getattr(summary, {"metric:latest": "latest_value", "metric:min": "min_value",
                              "metric:max": "max_value"}[sort])
    return value if value is not None and math.isfinite(value) else None


def _matches_text(run: RunRow, config, needle: str) -> bool:
    fields = [run.run_id, run.project, run.experiment_id, run.run_group_id, run.state,
              *(f"{k}={v}" for k, v in run.tags.items())]
    if config is not None:
        fields.append(config.indexed_fields or "")
    return any(needle in f.lower() for f in fields)


def _window_python(reader: ExperimentReader, runs: list[RunRow], q: Query, metric: str | None, offset: int,
                   limit: int, sort: str, descending: bool) -> tuple[int, list[RunRow]]:
    """The window by the listings' rules, over a source's runs (newest first, then run id)."""
    state, tag, needle = q.get("state"), _tag_param(q), q.get("q").lower()
    runs = [r for r in runs if (not state or r.state == state) and (tag is None or r.tags.get(tag[0]) == tag[1])]
    note = q.get("note")
    if note:
        noted = reader.runs_with_note([r.run_id for r in runs], note) if isinstance(reader, ReadsNotes) else set()
        runs = [r for r in runs if r.run_id in noted]
    if needle:
        configs = read_configs(reader, [r.run_id for r in runs])
        noted = (reader.runs_with_note([r.run_id for r in runs], needle) if isinstance(reader, ReadsNotes)
                 else set())
        runs = [r for r in runs if r.run_id in noted or _matches_text(r, configs.get(r.run_id), needle)]
    if sort == "created_at":
        if not descending:
            runs = sorted(runs, key=lambda r: r.run_id)
            runs.sort(key=lambda r: r.created_at)
    else:
        if sort.startswith("metric:"):
            values = {r.run_id: _stat(reader.metric_summary(r.run_id, metric) if metric else None, sort) for r in runs}
            value_of = lambda r: values[r.run_id]  # noqa: E731
        else:
            value_of = lambda r: getattr(r, sort) or None  # noqa: E731
        have = [r for r in runs if value_of(r) is not None]
        have.sort(key=value_of, reverse=descending)  # stable: ties stay newest first, then run id
        runs = have + [r for r in runs if value_of(r) is None]
    return len(runs), runs[offset:offset + limit]


def _selected(runs: Iterable[RunRow], q: Query, run_ids: list[str]) -> list[RunRow]:
    wanted = set(run_ids)
    experiment, group = q.get("experiment"), q.get("group")
    return [r for r in runs
            if (not wanted or r.run_id in wanted)
            and (not experiment or r.experiment_id == experiment)
            and (not group or r.run_group_id == group)]


def _listings(reader: ExperimentReader) -> HasListings | None:
    """The reader's listings when it has them and they cover every run, else None (list from ``runs``)."""
    return reader if isinstance(reader, HasListings) and reader.has_listings() else None


def _window_names(reader: ExperimentReader, window: list[RunRow]) -> dict[str, int]:
    """Runs per metric name among the window's runs (a source without listings)."""
    counts: dict[str, int] = {}
    for run in window:
        for s in reader.metric_summaries(run.run_id):
            counts[s.metric_name] = counts.get(s.metric_name, 0) + 1
    return counts


def run_table(reader: ExperimentReader, workspace: str, q: Query) -> tuple[dict[str, Any], bool, list[str]]:
    """(the body's ``metric_names``, ``metrics``, ``run_count``, ``offset`` and ``runs``; partial; warnings)."""
    metrics = _metrics_param(q)
    run_ids = _run_ids_param(q)
    offset, limit, windowed, sort, descending = _window_params(q)
    tag = _tag_param(q)
    listings = _listings(reader)
    warnings: list[str] = []
    if listings is not None and not metrics:
        chosen = default_metric(listings.runs_per_metric(workspace, q.get("experiment")))
        metrics = [chosen] if chosen else []
    if sort.startswith("metric:") and not metrics:
        raise V2Error(400, "INVALID_ARGUMENT", "sort by a metric statistic needs a metric")
    if listings is not None:
        total, listed = listings.run_window(
            workspace, project=q.get("project"), experiment=q.get("experiment"), group=q.get("group"),
            run_ids=run_ids, state=q.get("state"), tag=tag, query=q.get("q"), note=q.get("note"), sort=sort,
            descending=descending,
            metric=metrics[0] if metrics else None, offset=offset, limit=limit)
        # Of the workspace's runs (of the experiment, when one is named).
        runs_per_metric = listings.runs_per_metric(workspace, q.get("experiment"))
    else:
        matching = _selected(reader.runs(workspace, project=q.get("project") or None), q, run_ids)
        if not metrics:
            # Without listings the default metric comes from the first window's runs, as it always did.
            first = matching[:RUNS_LIMIT]
            chosen = default_metric(_window_names(reader, first))
            metrics = [chosen] if chosen else []
        total, listed = _window_python(reader, matching, q, metrics[0] if metrics else None, offset, limit, sort,
                                       descending)
        runs_per_metric = _window_names(reader, listed)
    partial = offset + len(listed) < total or (offset > 0 and total > 0)
    if partial and not windowed:
        warnings.append(f"the first {len(listed)} of {total} runs are listed; ask with offset= and limit= for "
                        "the others, or filter by project, experiment or group")
    if listings is not None:
        found = listings.summaries_of([r.run_id for r in listed], metrics)
        summaries = {r.run_id: {m: found.get((r.run_id, m)) for m in metrics} for r in listed}
    else:
        summaries = {r.run_id: {m: reader.metric_summary(r.run_id, m) for m in metrics} for r in listed}
    names = sorted((n for n in runs_per_metric if not n.startswith(_MARKER_PREFIX)),
                   key=lambda n: (_metric_rank(n), n))
    if len(names) > METRIC_NAMES_LIMIT:
        warnings.append(f"{len(names)} metric names; the first {METRIC_NAMES_LIMIT} are listed")
        names = names[:METRIC_NAMES_LIMIT]
    configs = read_configs(reader, [r.run_id for r in listed])
    cut_configs: list[str] = []
    rows = []
    for run in listed:
        config = configs.get(run.run_id)
        row, cut = run_table_row(run, config.fields if config is not None else None, summaries[run.run_id])
        if cut:
            cut_configs.append(run.run_id)
        rows.append(row)
    if cut_configs:
        warnings.append(configs_cut_warning(cut_configs))
    body = {"metric_names": names, "metrics": metrics, "run_count": total, "offset": offset, "runs": rows}
    return body, partial, warnings


def read(ctx: Context) -> Response:
    source, workspace = ctx.source_and_workspace()
    reader, served, warnings = ctx.sources.reader(source)
    q = ctx.query
    ctx.known_ids(reader, workspace, ("project", q.get("project"), "project"),
                  ("experiment_id", q.get("experiment"), "experiment_id"), ("group", q.get("group"), "run_group_id"))
    body, partial, more = run_table(reader, workspace, q)
    # Thousands of rows: encoded by orjson in Go's bytes (the metadata as a dict: orjson splices no RawJSON).
    payload = {"metadata": metadata(source, [served], partial, warnings + more), **body}
    return Response(dumps_fast(payload), media_type="application/json", headers=SECURITY_HEADERS)
