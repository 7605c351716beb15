"""A store of many small runs in every lifecycle state, written by the real writer: the listings' test data.

``build_listing_store(root)`` writes :data:`RUNS` runs ``r00`` … over experiments ``e0`` … ``e4``
(projects ``p0``/``p1``), groups ``g0`` … ``g2``, workspaces ``default``, ``other`` and untagged,
a ``team`` tag, and per run a ``loss`` (some with a NaN), sometimes an ``errors`` metric above 0 and
a ``max_step`` tag above the run's last step; states from ``tau/run_status`` (succeeded, failed),
:meth:`MetricWriter.mark_completed` (completed), or none (running).
"""

from __future__ import annotations

from pathlib import Path

from tau_collector.collect.completion_file import RUN_STATUS_METRIC
from tau_collector.expstore import open_store
from tau_collector.expstore.write.writer import MetricWriter
from tau_collector.projection.metric_event import new_metric_event

BASE_NS = 1_760_000_000_000_000_000
RUNS = 30
WORKSPACES = ["default", "other", None]


def _event(i: int, metric: str, step: int, value: float, tags: dict[str, str]):
    return new_metric_event(project=f"p{i % 2}", experiment_id=f"e{i % 5}", run_group_id=f"g{i % 3}",
                            run_id=f"r{i:02d}", metric_name=metric, step=step,
                            wall_time=BASE_NS + (i * 97 % 31) * 10**9 + step * 10**6, value=value,
                            exported_at=BASE_NS, source="history", tags=dict(tags))


def build_listing_store(root: Path) -> Path:
    store = open_store(root, create=True)
    writer = MetricWriter(store)
    for i in range(RUNS):
        tags = {"team": "ab"[i % 2]}
        workspace = WORKSPACES[i % 3]
        if workspace:
            tags["tau_workspace"] = workspace
        if i % 7 == 3:
            tags["max_step"] = "50"
        events = [_event(i, "loss", s, 1.0 / (s + 1 + i), tags) for s in range(10)]
        bad = []
        if i % 4 == 1:
            e = _event(i, "loss", 10, 0.0, tags)
            e.value = float("nan")
            bad.append(e)
        if i % 6 == 2:
            events.append(_event(i, "errors", 9, 2.0, tags))
        if i % 5 in (0, 1):
            events.append(_event(i, RUN_STATUS_METRIC, 10, 1.0 if i % 5 == 0 else -1.0, tags))
        writer.write_chunk(f"k-{i}", events, bad, request_hash="h")
        if i % 5 == 2:
            writer.mark_completed(f"r{i:02d}")
    store.close()
    return root
