"""``GET /api/v2/stellar/runs/{run_id}/series``: one metric's finite points in range, thinned and M4-reduced.

Parameters, defaults, limits and check order follow TAUGRID-REFERENCE §3. Where TauGrid's local path has
quirks that would lose data (LTTB instead of M4; non-finite values that Go cannot encode) we keep the wire
shape and say so below. The answer is encoded by :mod:`..wire.series`. Many panes polling one run
ask the same tail: a local store's answer is kept while its index and the second its metadata names are
unchanged (:mod:`..answer_cache`).
"""

from __future__ import annotations

import numpy as np
from starlette.responses import Response

from tau_collector.reads import ExperimentReader, HasGeneration

from ..context import Context
from ..errors import V2Error, json_response, metadata_json, rfc3339_now
from ..params import SeriesParams, series_params
from ..wire.series import points_json, series_json

__all__ = ["points_json", "read"]


def _points(reader: ExperimentReader, run_id: str, metric: str,
            p: SeriesParams) -> tuple[np.ndarray, np.ndarray, int, bool]:
    """(steps, values, source_points, partial) of the finite points in range, thinned and M4-reduced.

    JSON has no NaN/Inf and TauGrid's encoder would fail on them, so non-finite observations are
    left out before counting (they stay visible in the metric catalog's counts and the page data).
    """
    if reader.metric_summary(run_id, metric) is None:
        return np.empty(0, np.int64), np.empty(0, np.float64), 0, False
    series = reader.series(run_id, metric, p.start_step, p.end_step, p.max_points,
                           step_interval=p.step_interval or None, finite_only=True)
    return series.step, series.value, series.source_points, series.partial


def _truncation_warning(reader: ExperimentReader, workspace: str, target: str) -> str | None:
    """TauGrid's local series path (``expcockpit.BuildSeries``) loads at most one run of its target and warns
    ``runs truncated to 1 of N matching runs`` when the workspace holds two or more of them.

    As TauGrid's ``Store.Status``: a run group of that id wins over a run, a run over an experiment; a run
    target never truncates; ``project`` does not narrow. One difference: TauGrid's N counts the target's
    runs in every workspace, ours only the served workspace's (another workspace's runs stay invisible).
    """
    runs = reader.runs(workspace)
    grouped = [r for r in runs if r.run_group_id == target]
    if grouped:
        matching = grouped
    elif any(r.run_id == target for r in runs):
        return None
    else:
        matching = [r for r in runs if r.experiment_id == target]
    return f"runs truncated to 1 of {len(matching)} matching runs" if len(matching) > 1 else None


def _has_non_finite(reader: ExperimentReader, run_id: str, metric: str, p: SeriesParams) -> bool:
    """Whether NaN/±Inf rows lie in range: TauGrid counts them as matched points (we leave them out of ``points``)."""
    if reader.metric_summary(run_id, metric) is None:
        return False
    count, _ = reader.non_finite(run_id, metric, p.start_step, p.end_step, limit=0)
    return count > 0


def read(ctx: Context) -> Response:
    source, workspace = ctx.source_and_workspace()
    local = ctx.sources.local
    if source != "local" or not isinstance(local, HasGeneration):
        return _series(ctx, source, workspace)
    epoch, key = (local.generation(), rfc3339_now()), (ctx.run_id, tuple(ctx.query.pairs))
    hit = ctx.answers.get(epoch, key)
    if hit is not None:
        return hit
    return ctx.answers.put(epoch, key, _series(ctx, source, workspace))


def _series(ctx: Context, source: str, workspace: str) -> Response:
    q, run_id = ctx.query, ctx.run_id
    target, metric = q.get("target"), q.get("metric")
    if not target or not metric:
        raise V2Error(400, "EXACT_SERIES_REQUIRED", "target and metric query parameters are required")
    query_run = q.get("run_id")
    if query_run and query_run != run_id:
        raise V2Error(400, "RUN_MISMATCH", "run_id query parameter must match the run path")
    found = ctx.exact_run(source, workspace)
    run, reader, warnings = found.run, found.reader, found.warnings
    params = series_params(q)
    if target != run.run_id:
        truncated = _truncation_warning(reader, workspace, target)
        if truncated:
            warnings = [*warnings, truncated]
    steps, values, source_points, partial = _points(reader, run.run_id, metric, params)
    if source_points == 0 and not _has_non_finite(reader, run.run_id, metric, params):
        warnings = [*warnings, "no scalar metric points matched the series query"]
    return json_response(series_json(metadata_json(source, [found.served], partial, warnings), target, run_id,
                                     metric, params, source_points, steps, values))
