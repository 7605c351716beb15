"""Real MetricEvents (the collector's own encoder) for the ``source=kusto`` tests, and helpers to load them.

:func:`fixture_events`: in workspace ``ws-a``, run ``seed-1`` (project ``demo``, experiment ``sgd``, group
``lr``) with 5000 ``train/loss`` points (a spike at step 1234, a dip at 3210), ``eval/loss`` every 1000
steps, a ``tau/run_status`` succeeded marker; 100 of the loss events delivered twice (same event id, a
later ``exported_at``); run ``seed-2`` (same experiment, still running, 10 points); and run ``other``
in workspace ``ws-b``.
"""

from __future__ import annotations

import hashlib
import math

from tau_collector.collect.completion_file import RUN_STATUS_METRIC
from tau_collector.projection.metric_event import MetricEvent, encode_ndjson_many, new_metric_event, replace
from tau_collector.sinks import Chunk

WALL_NS = 1_790_274_612_250_000_000  # 2026-09-24T18:30:12.25Z
EXPORTED_NS = WALL_NS + 3_600_000_000_000
QUERY_NOW = "2026-10-01T00:00:00Z"
SPIKE_STEP, DIP_STEP = 1234, 3210


def loss(step: int) -> float:
    if step == SPIKE_STEP:
        return 50.0
    if step == DIP_STEP:
        return -5.0
    return 2.0 * math.exp(-step / 1500) + 0.01 * math.sin(step)


def event(run_id: str, metric: str, step: int, value: float, *, workspace: str = "ws-a", wall_ns: int | None = None,
          experiment: str = "sgd", project: str = "demo", tags: dict | None = None) -> MetricEvent:
    return new_metric_event(
        workspace_id=workspace, project=project, experiment_id=experiment, run_group_id="lr", run_id=run_id,
        metric_name=metric, step=step, wall_time=WALL_NS + step * 10_000_000 if wall_ns is None else wall_ns,
        value=value, exported_at=EXPORTED_NS, source="jsonl",
        tags={"tau_workspace": workspace, "jsonl.history_line": str(step), **(tags or {})},
    )


def marker(run_id: str, state: str, value: float, *, at_step: int, workspace: str = "ws-a") -> MetricEvent:
    at = WALL_NS + at_step * 10_000_000 + 5_000_000_000
    return new_metric_event(
        workspace_id=workspace, project="demo", experiment_id="sgd", run_group_id="lr", run_id=run_id,
        metric_name=RUN_STATUS_METRIC, step=0, wall_time=at, value=value, exported_at=at, source="jsonl-status",
        tags={"tau_workspace": workspace, "tau.status.state": state},
    )


def fixture_events() -> list[MetricEvent]:
    events = [event("seed-1", "train/loss", s, loss(s)) for s in range(5000)]
    events += [event("seed-1", "eval/loss", s, 1.0 / (1 + s)) for s in range(0, 5000, 1000)]
    redelivered = [replace(e, exported_at=EXPORTED_NS + 60_000_000_000) for e in events[:100]]
    events += [marker("seed-1", "succeeded", 1.0, at_step=5000)]
    events += [event("seed-2", "train/loss", s, 1.0 - s / 10, wall_ns=WALL_NS + 10**12 + s) for s in range(10)]
    events += [event("other", "train/loss", s, 3.0, workspace="ws-b") for s in range(10)]
    return events + redelivered


def chunk(events: list[MetricEvent], sequence: int = 1) -> Chunk:
    ndjson = encode_ndjson_many(events)
    return Chunk(sequence, "history", hashlib.sha256(ndjson).hexdigest(), ndjson, len(events))
