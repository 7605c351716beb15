"""``GET /stellar/data/export/{run_id}?metric=M&format=csv|json[&start_step=&end_step=&project=&source=]``:
every stored point of one metric of one run as CSV or JSON, streamed.

The same checks as the v2 series read, in the same order and with the same envelope (``source``,
``workspace``, ``metric``, the path id, the run lookup, ``int64`` step bounds), then ``format``
(default ``csv``). Unlike the v2 series nothing is reduced and nothing is left out: every stored
point in the window, non-finite values spelled ``NaN``/``Infinity``/``-Infinity``, in step order.
The answer streams batch by batch from a reader that exports series
(:class:`~tau_collector.reads.ExportsSeries`: the local store), so memory holds one group of files of the
metric whatever the series' length; the CSV and JSON bodies are written by
:mod:`tau_collector.expstore.read.series_export`. A Kusto-served run is read through the v2 series.
"""

from __future__ import annotations

from collections.abc import Iterator

from starlette.responses import Response, StreamingResponse

from tau_collector.expstore.read.series_export import FORMATS, csv_chunks, json_chunks
from tau_collector.reads import ExportsSeries

from ..context import Context
from ..errors import V2Error
from ..params import step_range

__all__ = ["read"]

_MEDIA = {"csv": "text/csv; charset=utf-8", "json": "application/json"}


def read(ctx: Context) -> Response:
    q = ctx.query
    source, workspace = ctx.source_and_workspace()
    metric = q.get("metric")
    if not metric:
        raise V2Error(400, "EXACT_SERIES_REQUIRED", "metric query parameter is required")
    found = ctx.exact_run(source, workspace)
    start, end = step_range(q)
    fmt = (q.get("format") or "csv").strip().lower()
    if fmt not in FORMATS:
        raise V2Error(400, "INVALID_ARGUMENT", "format must be csv or json")
    reader = ctx.sources.local if found.served == "local" else None
    if not isinstance(reader, ExportsSeries):
        raise V2Error(400, "INVALID_ARGUMENT", "export reads runs of the local store; this run is served by "
                                               f"{found.served}: read it with the v2 series instead")
    run = found.run
    batches = reader.export_series(run.run_id, metric, start, end)
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
