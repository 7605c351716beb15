"""``GET /stellar/data/runs/{run_id}/points?metric=`` (page data): where a metric's non-finite values sit, and
(step, wall time) samples for a wall-time axis.

v2 points are finite by contract; the Stellar pages and the pane mark NaN/±Inf from this answer (at most
:data:`NON_FINITE_LIMIT` marks; ``non_finite_count`` counts them all) and interpolate the wall times of their
drawn steps from :data:`WALL_TIME_SAMPLES` samples. Same checks, order and envelope as the v2 reads;
TauGrid's Portal has no such route (it answers 404) and clients draw without it.
"""

from __future__ import annotations

from starlette.responses import Response

from ..context import Context
from ..errors import V2Error, json_response, metadata_json
from ..params import step_range
from ..wire.point_details import NON_FINITE_LIMIT, point_details_json

__all__ = ["NON_FINITE_LIMIT", "WALL_TIME_SAMPLES", "read"]

WALL_TIME_SAMPLES = 2000  # the page interpolates wall times of its drawn steps from these


def read(ctx: Context) -> Response:
    q, run_id = ctx.query, ctx.run_id
    source, workspace = ctx.source_and_workspace()
    metric = q.get("metric")
    if not metric:
        raise V2Error(400, "EXACT_SERIES_REQUIRED", "metric query parameter is required")
    found = ctx.exact_run(source, workspace)
    start, end = step_range(q)
    reader, run = found.reader, found.run
    meta = metadata_json(source, [found.served], False, found.warnings)
    if reader.metric_summary(run.run_id, metric) is None:
        return json_response(point_details_json(meta, run_id, metric))
    count, marks = reader.non_finite(run.run_id, metric, start, end, limit=NON_FINITE_LIMIT)
    # An M4 pick spreads the samples over the whole range cheaply, even for millions of points.
    sample = reader.series(run.run_id, metric, start, end, WALL_TIME_SAMPLES)
    return json_response(point_details_json(meta, run_id, metric, count, marks, sample))
