"""Builders for MetricEvents and stores shared by the expstore tests."""

from __future__ import annotations

from tau_collector.expstore import open_store
from tau_collector.expstore.write.writer import MetricWriter
from tau_collector.projection.metric_event import MetricEvent, new_metric_event

BASE_NS = 1_760_000_000_000_000_000  # 2025-10-09T08:53:20Z


def event(step: int, value: float, *, metric: str = "train/loss", run: str = "seed-1", group: str = "baseline",
          experiment: str = "exp-a", project: str = "proj", wall_ns: int | None = None,
          tags: dict[str, str] | None = None) -> MetricEvent:
    return new_metric_event(
        project=project, experiment_id=experiment, run_group_id=group, run_id=run, metric_name=metric,
        step=step, wall_time=BASE_NS + step * 1_000_000 if wall_ns is None else wall_ns, value=value,
        exported_at=BASE_NS, source="history", tags=dict(tags or {}),
    )


def non_finite(step: int, value: float, **kw) -> MetricEvent:
    """A non-finite observation: MetricEvent-shaped, never validated (it cannot be a MetricEvent)."""
    e = event(step, 0.0, **kw)
    e.value = value
    return e


def new_store(tmp_path, **writer_kw):
    store = open_store(tmp_path / "store", create=True)
    return store, MetricWriter(store, **writer_kw)
