"""The runs table's answer (``GET /stellar/data/runs``, local Portal page data) as typed, frozen objects."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .decode import WireModel, wire
from .models import Metadata

__all__ = ["MetricStats", "RunTable", "RunTableRow"]


@dataclass(frozen=True, slots=True)
class MetricStats(WireModel):
    """A metric's summary for one run: counts, and latest/min/max of its finite values (None without any)."""

    count: int
    non_finite_count: int
    latest_step: int | None = None
    latest_value: float | None = None
    min_value: float | None = None
    max_value: float | None = None


@dataclass(frozen=True, slots=True)
class RunTableRow(WireModel):
    """One run of the table: ids, state, tags, its config's flattened fields (None without a config), metrics."""

    run_id: str = field(metadata=wire(required=True))
    project: str
    experiment_id: str
    run_group_id: str
    state: str
    created_at: str
    tags: dict[str, str]
    config: dict[str, Any] | None
    metrics: dict[str, MetricStats]
    config_hash: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RunTable(WireModel):
    """A window of the matching runs (newest first unless sorted), the metric names they have, the metrics each
    row carries; ``run_count`` counts every matching run, ``offset`` is the window's first row."""

    metadata: Metadata
    metric_names: tuple[str, ...]
    metrics: tuple[str, ...]
    run_count: int
    runs: tuple[RunTableRow, ...]
    offset: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def __iter__(self) -> Iterator[RunTableRow]:
        return iter(self.runs)

    def __len__(self) -> int:
        return len(self.runs)

    @property
    def run_ids(self) -> list[str]:
        return [r.run_id for r in self.runs]
