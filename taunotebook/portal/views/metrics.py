"""``GET /api/v2/stellar/runs/{run_id}/metrics``: a run's metric catalog, one TauGrid ``v2Metric`` per metric.

The catalog entry is encoded here (:func:`catalog_json`); the tails answer carries the same entries.
"""

from __future__ import annotations

from starlette.responses import Response

from tau_collector.reads import CachesDerived
from tau_collector.taugrid.gojson import encode_string

from ..context import Context
from ..errors import RawJSON, go_float, json_response, metadata

__all__ = ["catalog_json", "read"]


def catalog_json(summaries) -> tuple[int, RawJSON]:
    """The ``metrics`` array of ``/runs/{id}/metrics``, encoded, and how many metrics it holds: one f-string a
    metric (no dict, no generic encoder), the keys in TauGrid's order and omitted as Go's omitempty does."""
    parts = []
    for s in sorted(summaries, key=lambda s: s.metric_name):
        text = (f'{{"name":{encode_string(s.metric_name)},"count":{s.count},"finite_count":{s.finite_count},'
                f'"non_finite_count":{s.non_finite_count}')
        if s.min_step is not None:
            text += f',"min_step":{s.min_step}'
        if s.max_step is not None:
            text += f',"max_step":{s.max_step}'
        if s.latest_step is not None:
            text += f',"latest_step":{s.latest_step}'
        if s.latest_wall_time is not None:
            text += f',"latest_wall_time":{s.latest_wall_time}'
        if s.finite_count > 0:
            # Values only with a finite observation; a NULL column still reads as 0 in Go.
            text += (f',"latest_value":{go_float(float(s.latest_value or 0.0))}'
                     f',"min_value":{go_float(float(s.min_value or 0.0))}'
                     f',"max_value":{go_float(float(s.max_value or 0.0))}')
        if s.updated_at:
            text += f',"updated_at":{encode_string(s.updated_at)}'
        parts.append(text + "}")
    return len(parts), RawJSON("[" + ",".join(parts) + "]")


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
