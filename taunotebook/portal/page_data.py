"""The local Portal's page data: what TauGrid's v2 reads do not carry but the Stellar pages and the pane show.

- ``GET /stellar/data/experiments``: the served workspace's experiments (v2 lists runs per
  experiment, so a runs listing needs their ids first);
- ``GET /stellar/data/runs``: every run of the workspace with its config fields and a chosen metric's
  latest/min/max, in one bounded answer (:mod:`.run_table`: the runs table, the compare page's names);
- ``GET /stellar/data/runs/{run_id}/points?metric=``: where a metric's non-finite values sit (v2
  points are finite by contract) and (step, wall time) samples for a wall-time axis;
- ``GET /stellar/data/runs/{run_id}/tails?metric=&since=&count=``: several metrics' new points in one
  answer, with the run's state and those metrics' catalog entries (:mod:`.tails`: a live pane's poll).

The same checks as the v2 reads, in the same order, with the same envelope: ``source``,
``workspace``, the path id read once (:mod:`.identity`), the workspace filter, ``int64`` step
bounds. Answers carry the v2 ``metadata`` block. TauGrid's Portal has no such routes (it answers
404); clients draw without them.
"""

from __future__ import annotations

import math

import numpy as np
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from tau_collector.taugrid.gojson import dumps_fast

from .errors import SECURITY_HEADERS, V2Error, json_response, metadata, metadata_json
from .identity import decode_path_id, raw_segments
from .params import Query, parse_query, step_range
from .run_table import run_table
from .serving import serve
from .sources import served_sources
from .tails import tails
from .v2 import SCAN_LIMIT, StellarV2, require_get

__all__ = ["NON_FINITE_LIMIT", "PAGE_DATA_BASE", "WALL_TIME_SAMPLES", "PageData"]

PAGE_DATA_BASE = "/stellar/data"
WALL_TIME_SAMPLES = 2000  # the page interpolates wall times of its drawn steps from these
NON_FINITE_LIMIT = 1000  # marks listed per answer; non_finite_count counts them all


def _kind(value: float) -> str:
    return "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")


class PageData:
    """The page-data handlers, sharing the v2 handlers' sources, workspace and checks."""

    def __init__(self, api: StellarV2) -> None:
        self.api = api

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI app for everything under ``/stellar/data/``."""
        parts = raw_segments(scope, PAGE_DATA_BASE)
        method, q = scope["method"], Query(parse_query(scope))

        def handle() -> Response:
            with self.api.sources.pinned():
                return self.dispatch(parts, method, q)

        # Listings read every run's summaries: a worker thread, never the event loop.
        await serve(scope, receive, send, handle, inline=parts not in ([b"experiments"], [b"runs"]))

    def dispatch(self, parts: list[bytes] | None, method: str, q: Query) -> Response:
        if parts == [b"experiments"]:
            require_get(method)
            return self.experiments(q)
        if parts == [b"runs"]:
            require_get(method)
            return self.runs(q)
        if parts and len(parts) == 3 and parts[0] == b"runs" and parts[2] == b"points":
            run_id = decode_path_id(parts[1])
            require_get(method)
            return self.points(q, run_id)
        if parts and len(parts) == 3 and parts[0] == b"runs" and parts[2] == b"tails":
            run_id = decode_path_id(parts[1])
            require_get(method)
            return tails(self.api, q, run_id)
        raise V2Error(404, "NOT_FOUND", "route was not found")

    def experiments(self, q: Query) -> Response:
        source, workspace = self.api.source_and_workspace(q)
        reader, served, warnings = self.api.sources.reader(source)
        project = q.get("project")
        self.api.known_ids(reader, workspace, ("project", project, "project"))
        runs = reader.runs(workspace, project=project or None)
        # A Kusto listing stops at the v2 scan limit (one run more says more matched): counts of the
        # latest runs only, and said so.
        partial = served == "kusto" and len(runs) > SCAN_LIMIT
        if partial:
            runs = runs[:SCAN_LIMIT]
            warnings = [*warnings, f"experiments of the latest {SCAN_LIMIT} runs only; name a project to narrow"]
        counts: dict[tuple[str, str], int] = {}
        for run in runs:
            key = (run.experiment_id, run.project)
            counts[key] = counts.get(key, 0) + 1
        experiments = [{"experiment_id": e, "project": p, "run_count": n} for (e, p), n in sorted(counts.items())]
        served_list = served_sources(reader, served, [r.run_id for r in runs])
        return json_response({"metadata": metadata_json(source, served_list, partial, warnings),
                              "experiments": experiments})

    def runs(self, q: Query) -> Response:
        source, workspace = self.api.source_and_workspace(q)
        reader, served, warnings = self.api.sources.reader(source)
        self.api.known_ids(reader, workspace, ("project", q.get("project"), "project"),
                           ("experiment_id", q.get("experiment"), "experiment_id"),
                           ("group", q.get("group"), "run_group_id"))
        body, partial, more = run_table(reader, workspace, q)
        # Thousands of rows: encoded by orjson in Go's bytes (the metadata as a dict: orjson splices no RawJSON).
        payload = {"metadata": metadata(source, [served], partial, warnings + more), **body}
        return Response(dumps_fast(payload), media_type="application/json", headers=SECURITY_HEADERS)

    def points(self, q: Query, run_id: str) -> Response:
        source, workspace = self.api.source_and_workspace(q)
        metric = q.get("metric")
        if not metric:
            raise V2Error(400, "EXACT_SERIES_REQUIRED", "metric query parameter is required")
        found = self.api.exact_run(q, source, workspace, run_id)
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
