"""``GET /api/v2/stellar/runs/{run_id}/metrics``: a run's metric catalog, one TauGrid ``v2Metric`` per metric.

Each entry is encoded by :mod:`..wire.metric` (:func:`catalog_json`); the tails answer carries the same entries.
"""

from __future__ import annotations

from starlette.responses import Response

from tau_collector.reads import CachesDerived

from ..context import Context
from ..errors import json_response, metadata
from ..wire.metric import catalog_json

__all__ = ["catalog_json", "read"]


def read(ctx: Context) -> Response:
    source, workspace = ctx.source_and_workspace()
    found = ctx.exact_run(source, workspace)
    reader, stored_id = found.reader, found.run.run_id
    # The encoded catalog is built once per change of the index (a run of 10,000 metrics costs its
    # encoding once, not on every request); a reader that keeps nothing derived (Kusto) builds it each time.
    build = lambda: catalog_json(reader.metric_summaries(stored_id))  # noqa: E731
    count, metrics = (reader.derived(("v2 metric catalog", stored_id), build) if isinstance(reader, CachesDerived)
                      else build())
    meta = metadata(source, [found.served], False, found.warnings)
    if not count:
        meta["availability"] = {"state": "unavailable",
                                "reasons": ["no indexed scalar metrics are available for this run"]}
    return json_response({"metadata": meta, "run_id": ctx.run_id, "metrics": metrics})
