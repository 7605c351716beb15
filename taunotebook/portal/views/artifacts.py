"""``GET /api/v2/stellar/runs/{run_id}/artifacts`` and ``…/artifacts/{artifact_id}`` (our additions): a run's files.

The listing pages TauGrid's ``artifacts`` table for the run (``type``, ``after``, ``limit``) and says of each row
whether its bytes are here (``file``: ``present``, ``gone`` when a job deleted the file after it was registered,
``remote``); the download streams one present file (never read whole into memory), with its content type and,
when the row has one, its digest as ETag. Same checks as every read of a run (source, workspace, path id, run
lookup); a run served by Kusto lists nothing, saying its files live with the run's store.
"""

from __future__ import annotations

from urllib.parse import quote

from starlette.responses import Response, StreamingResponse

from tau_collector.reads import ReadsArtifacts

from ..context import Context
from ..errors import SECURITY_HEADERS, V2Error, json_response
from ..identity import decode_path_id
from ..params import limit_param
from ..serving import open_for_streaming
from ..wire.artifacts import artifact_json, artifact_list_json
from ..wire.metadata import metadata

__all__ = ["MAX_ARTIFACTS", "download", "read"]

DEFAULT_ARTIFACTS = 200
MAX_ARTIFACTS = 1000


def read(ctx: Context) -> Response:
    q = ctx.query
    source, workspace = ctx.source_and_workspace()
    found = ctx.exact_run(source, workspace)
    limit = limit_param(q, default=DEFAULT_ARTIFACTS, maximum=MAX_ARTIFACTS)
    after = decode_path_id(q.get("after")) if q.get("after") else None
    kind = q.get("type") or None
    meta = metadata(source, [found.served], False, found.warnings)
    reader = found.reader
    if not isinstance(reader, ReadsArtifacts):
        meta["availability"] = {"state": "unavailable", "reasons": [
            *found.warnings, f"the {found.served} source holds metrics only: the run's files, images and "
                             "histograms live with the run's store"]}
        return json_response(artifact_list_json(meta, ctx.run_id, [], None))
    rows = reader.artifacts(found.run.run_id, type=kind, after_id=after, limit=limit)
    items = [artifact_json(row, reader.artifact_file(row)[0]) for row in rows]
    next_after = rows[-1].artifact_id if len(rows) == limit else None
    return json_response(artifact_list_json(meta, ctx.run_id, items, next_after))


def download(ctx: Context) -> Response:
    source, workspace = ctx.source_and_workspace()
    found = ctx.exact_run(source, workspace)
    reader = found.reader
    artifact_id = ctx.ids["artifact_id"]
    row = reader.artifact(found.run.run_id, artifact_id) if isinstance(reader, ReadsArtifacts) else None
    if row is None:
        raise V2Error(404, "NOT_FOUND", f"run {found.run.run_id} has no artifact {artifact_id}")
    state, path = reader.artifact_file(row)
    if path is None:
        why = ("its file was deleted after it was registered" if state == "gone"
               else f"it lives at {row.uri}, which this Portal does not serve")
        raise V2Error(404, "NOT_FOUND", f"artifact {artifact_id} of run {found.run.run_id} cannot be downloaded: "
                                        f"{why}")
    blocks, size = open_for_streaming(path, f"artifact {artifact_id} of run {found.run.run_id} cannot be "
                                            "downloaded: its file was deleted after it was registered")
    name = row.name.rsplit("/", 1)[-1] or artifact_id
    headers = dict(SECURITY_HEADERS)
    headers["Content-Length"] = str(size)
    headers["Content-Disposition"] = f"attachment; filename*=UTF-8''{quote(name, safe='')}"
    if row.digest:
        headers["ETag"] = f'"{row.digest}"'
    return StreamingResponse(blocks, media_type=row.content_type or "application/octet-stream",
                             headers=headers)

