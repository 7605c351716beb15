"""``GET /stellar/data/experiments`` (page data): the served workspace's experiments with their run counts.

v2 lists runs per experiment, so a runs listing needs the experiments' ids first. Same checks and envelope
as the v2 reads; a Kusto listing stops at the v2 scan limit and says so.
"""

from __future__ import annotations

from starlette.responses import Response

from ..context import Context
from ..errors import json_response, metadata_json
from ..sources import served_sources
from ..wire.experiment_list import experiment_list_json
from .experiment_runs import SCAN_LIMIT

__all__ = ["read"]


def read(ctx: Context) -> Response:
    source, workspace = ctx.source_and_workspace()
    reader, served, warnings = ctx.sources.reader(source)
    project = ctx.query.get("project")
    ctx.known_ids(reader, workspace, ("project", project, "project"))
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
    served_list = served_sources(reader, served, [r.run_id for r in runs])
    return json_response(experiment_list_json(metadata_json(source, served_list, partial, warnings), counts))
