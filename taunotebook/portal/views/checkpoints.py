"""``GET /api/v2/stellar/runs/{run_id}/checkpoints`` (our addition): the run's checkpoints and its retries.

Checkpoints are the run's ``checkpoint`` rows of TauGrid's ``artifacts`` table (registered by the collector,
:mod:`tau_collector.collect.checkpoints`), in step order; retries are its ``retry`` run events. A source
without an artifacts table answers empty lists with the reason in ``availability``.
"""

from __future__ import annotations

from starlette.responses import Response

from tau_collector.reads import ReadsArtifacts

from ..context import Context
from ..errors import json_response, metadata
from ..wire.checkpoints import run_checkpoints_json

__all__ = ["MAX_CHECKPOINTS", "read"]

MAX_CHECKPOINTS = 10_000  # a run saving more is answered its first ones, and says so
CHECKPOINT_TYPE = "checkpoint"
RETRY_EVENT = "retry"


def read(ctx: Context) -> Response:
    source, workspace = ctx.source_and_workspace()
    found = ctx.exact_run(source, workspace)
    run_id = found.run.run_id
    if not isinstance(found.reader, ReadsArtifacts):
        meta = metadata(source, [found.served], False, found.warnings)
        meta["availability"] = {"state": "unavailable",
                                "reasons": [*found.warnings, f"the {found.served} source carries no checkpoints"]}
        return json_response(run_checkpoints_json(meta, ctx.run_id, [], []))
    rows: list = []
    after = None
    while len(rows) < MAX_CHECKPOINTS:
        page = found.reader.artifacts(run_id, type=CHECKPOINT_TYPE, after_id=after,
                                      limit=MAX_CHECKPOINTS - len(rows))
        if not page:
            break
        rows.extend(page)
        after = page[-1].artifact_id
    partial = len(rows) >= MAX_CHECKPOINTS
    warnings = [*found.warnings, f"only the first {MAX_CHECKPOINTS} checkpoints of the run"] if partial \
        else found.warnings
    meta = metadata(source, [found.served], partial, warnings)
    retries = found.reader.run_events(run_id, type=RETRY_EVENT)
    return json_response(run_checkpoints_json(meta, ctx.run_id, rows, retries))
