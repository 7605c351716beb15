"""``GET /stellar/data/runs/{run_id}/points?metric=`` (page data): where a metric's non-finite values sit, and
(step, wall time) samples for a wall-time axis.

v2 points are finite by contract; the Stellar pages and the pane mark NaN/±Inf from this answer (at most
:data:`NON_FINITE_LIMIT` marks; ``non_finite_count`` counts them all) and interpolate the wall times of their
drawn steps from :data:`WALL_TIME_SAMPLES` samples. Same checks, order and envelope as the v2 reads;
TauGrid's Portal has no such route (it answers 404) and clients draw without it.
"""

from __future__ import annotations

import math

import numpy as np
from starlette.responses import Response

from ..context import Context
from ..errors import V2Error, json_response, metadata_json
from ..params import step_range

__all__ = ["NON_FINITE_LIMIT", "WALL_TIME_SAMPLES", "read"]

WALL_TIME_SAMPLES = 2000  # the page interpolates wall times of its drawn steps from these
NON_FINITE_LIMIT = 1000  # marks listed per answer; non_finite_count counts them all


def _kind(value: float) -> str:
    return "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")


def read(ctx: Context) -> Response:
    q, run_id = ctx.query, ctx.run_id
    source, workspace = ctx.source_and_workspace()
    metric = q.get("metric")
    if not metric:
        raise V2Error(400, "EXACT_SERIES_REQUIRED", "metric query parameter is required")
    found = ctx.exact_run(source, workspace)
    start, end = step_range(q)
    reader, run = found.reader, found.run
    body: dict = {"metadata": metadata_json(source, [found.served], False, found.warnings),
                  "run_id": run_id, "metric": metric}
    if reader.metric_summary(run.run_id, metric) is None:
        body.update(non_finite_count=0, non_finite=[], wall_time={"step": [], "wall_time": []})
        return json_response(body)
    count, rows = reader.non_finite(run.run_id, metric, start, end, limit=NON_FINITE_LIMIT)
    marks = [{"step": s, "value": _kind(v), "wall_time": w}
             for s, v, w in zip(rows.step.tolist(), rows.value.tolist(), rows.wall_time.tolist(), strict=True)]
    # An M4 pick spreads the samples over the whole range cheaply, even for millions of points.
    sample = reader.series(run.run_id, metric, start, end, WALL_TIME_SAMPLES)
    body.update(non_finite_count=count, non_finite=marks,
                wall_time={"step": sample.step.tolist(), "wall_time": sample.wall_time.astype(np.int64).tolist()})
    return json_response(body)
