"""``GET /api/v2/stellar/experiments/{experiment_id}/runs``: an experiment's runs, newest first, a page at a time.

Filters, limits, cursors and check order follow TAUGRID-REFERENCE §3; at most :data:`SCAN_LIMIT` runs are
considered per listing (more marks the page partial, as TauGrid's scan limit does). Our additions:
``config.<key>=<value>`` filters and ``include=config`` (each run's flattened config fields). Each run is
TauGrid's ``v2Run`` (:mod:`.run`).
"""

from __future__ import annotations

from starlette.responses import Response

from tau_collector.reads import ExperimentReader, RunRow

from ..context import Context
from ..errors import V2Error, json_response, metadata
from ..params import RunFilters, include_param, limit_param, run_filters
from ..run_configs import matches, read_configs
from ..sources import served_by, served_sources
from .run import classify_run, run_encoded, run_json

__all__ = ["SCAN_LIMIT", "read"]

SCAN_LIMIT = 1000  # runs considered per listing; more marks the page partial, as TauGrid's scan limit does


def read(ctx: Context) -> Response:
    q, target = ctx.query, ctx.ids["experiment_id"]
    source, workspace = ctx.source_and_workspace()
    filters = run_filters(q)
    include = include_param(q)
    if filters.target and filters.target != target:
        raise V2Error(400, "TARGET_MISMATCH", "target query parameter must match the experiment path")
    filters.target = target
    limit = limit_param(q)
    filter_hash = filters.hash(source, workspace)
    cursor = ctx.cursors.decode(q.get("cursor"), filter_hash)
    reader, served, warnings = ctx.sources.reader(source)
    ctx.known_ids(reader, workspace, ("experiment_id", target, "experiment_id"),
                  ("project", filters.project, "project"), ("group", filters.group, "run_group_id"))
    runs, truncated = _search_runs(reader, workspace, filters)
    if cursor is not None:
        sort_at, item_id = cursor
        runs = [r for r in runs if r.created_at < sort_at
                or (r.created_at == sort_at and _cursor_id(r) > item_id)]
    next_cursor = None
    if len(runs) > limit:
        runs = runs[:limit]
        last = runs[-1]
        next_cursor = ctx.cursors.encode(filter_hash, last.created_at, _cursor_id(last))
    meta = metadata(source, served_sources(reader, served, [r.run_id for r in runs]), truncated, warnings)
    if "config" in include:
        # Our addition: each run's flattened config fields, null for a run without a config.
        configs = read_configs(reader, [r.run_id for r in runs])
        items = [run_json(reader, r, served_by(reader, r.run_id, served), configs.get(r.run_id), True) for r in runs]
    else:  # each run encoded once per index change
        items = [run_encoded(reader, r, served_by(reader, r.run_id, served)) for r in runs]
    body: dict = {"metadata": meta, "target": target, "runs": items}
    if next_cursor:
        body["next_cursor"] = next_cursor
    return json_response(body)


def _search_runs(reader: ExperimentReader, workspace: str, f: RunFilters) -> tuple[list[RunRow], bool]:
    runs = [r for r in reader.runs(workspace, project=f.project or None, experiment_id=f.target,
                                   run_group_id=f.group or None)
            if r.experiment_id == f.target]
    if f.state:
        runs = [r for r in runs if r.state.strip().lower() == f.state]
    if f.since:
        runs = [r for r in runs if r.created_at >= f.since]
    if f.start:
        runs = [r for r in runs if f.start <= r.created_at < f.end]
    for key, value in f.tags.items():
        runs = [r for r in runs if r.tags.get(key) == value]
    for name in f.metric_names:
        runs = [r for r in runs if name in r.metric_names]
    if f.query:
        needle = f.query.lower()
        runs = [r for r in runs if _matches_query(r, needle)]
    if f.config:
        configs = read_configs(reader, [r.run_id for r in runs])
        runs = [r for r in runs if matches(configs.get(r.run_id), f.config)]
    if f.lifecycle:
        runs = [r for r in runs
                if classify_run(r, reader.metric_summaries(r.run_id))[0] == f.lifecycle]
    runs.sort(key=_cursor_id)
    runs.sort(key=lambda r: r.created_at, reverse=True)
    return runs[:SCAN_LIMIT], len(runs) > SCAN_LIMIT


def _cursor_id(run: RunRow) -> str:
    return run.project.strip() + "\x00" + run.run_id.strip()


def _matches_query(run: RunRow, needle: str) -> bool:
    fields = [run.run_id, run.project, run.run_group_id, run.owner or "", run.result_uri or "",
              *run.tags.keys(), *run.tags.values(), *run.metric_names]
    return any(needle in f.lower() for f in fields)
