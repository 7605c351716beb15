"""The local Portal's series download: every stored point of one metric of one run as CSV or JSON, streamed.

``GET /stellar/data/export/{run_id}?metric=M&format=csv|json[&start_step=&end_step=&project=&source=]``

The same checks as the v2 series read, in the same order and with the same envelope (``source``,
``workspace``, ``metric``, the path id, the run lookup, ``int64`` step bounds), then ``format``
(default ``csv``). Unlike the v2 series nothing is reduced and nothing is left out: every stored
point in the window, non-finite values spelled ``NaN``/``Infinity``/``-Infinity``, in step order.
The answer streams batch by batch (:mod:`tau_collector.expstore.read.series_export`), so memory holds
one group of files of the metric whatever the series' length. Local runs only: a Kusto-served run
is read through the v2 series.
"""

from __future__ import annotations

from collections.abc import Iterator

from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from tau_collector.expstore.read.series_export import FORMATS, csv_chunks, json_chunks

from .errors import V2Error
from .identity import decode_path_id, raw_segments
from .params import Query, parse_query, step_range
from .serving import serve
from .v2 import StellarV2, require_get

__all__ = ["EXPORT_BASE", "SeriesExport"]

EXPORT_BASE = "/stellar/data/export"
_MEDIA = {"csv": "text/csv; charset=utf-8", "json": "application/json"}


class SeriesExport:
    """The ASGI app for ``/stellar/data/export/{run_id}``."""

    def __init__(self, api: StellarV2) -> None:
        self.api = api

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        parts = raw_segments(scope, EXPORT_BASE)
        method, q = scope["method"], Query(parse_query(scope))

        def handle() -> Response:
            with self.api.sources.pinned():
                return self.export(parts, method, q)

        await serve(scope, receive, send, handle, inline=False)  # reads files: a worker thread

    def export(self, parts: list[bytes] | None, method: str, q: Query) -> Response:
        if not parts or len(parts) != 1:
            raise V2Error(404, "NOT_FOUND", "route was not found")
        run_id = decode_path_id(parts[0])
        require_get(method)
        source, workspace = self.api.source_and_workspace(q)
        metric = q.get("metric")
        if not metric:
            raise V2Error(400, "EXACT_SERIES_REQUIRED", "metric query parameter is required")
        found = self.api.exact_run(q, source, workspace, run_id)
        start, end = step_range(q)
        fmt = (q.get("format") or "csv").strip().lower()
        if fmt not in FORMATS:
            raise V2Error(400, "INVALID_ARGUMENT", "format must be csv or json")
        export = getattr(self.api.sources.local, "export_series", None)  # the store reader's
        if found.served != "local" or export is None:
            raise V2Error(400, "INVALID_ARGUMENT", "export reads runs of the local store; this run is served by "
                                                   f"{found.served}: read it with the v2 series instead")
        run = found.run
        batches = export(run.run_id, metric, start, end)
        body: Iterator[bytes]
        if fmt == "csv":
            body = csv_chunks(batches)
        else:
            head = {"run_id": run.run_id, "project": run.project, "metric": metric}
            if start is not None:
                head["start_step"] = start
            if end is not None:
                head["end_step"] = end
            body = json_chunks(batches, head)
        name = f"{run.run_id}-{metric}".replace("/", "_").replace('"', "_")
        headers = {"Content-Disposition": f'attachment; filename="{name}.{fmt}"'}
        return StreamingResponse(body, media_type=_MEDIA[fmt], headers=headers)
