"""A live pane's poll answer (``GET /stellar/data/runs/{run_id}/tails``, local Portal page data) as typed,
frozen objects."""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .decode import WireModel, decode, nan_for_null, points, wire
from .models import Metadata, MetricSummary

__all__ = ["Tail", "Tails"]


def _summary(d: Mapping[str, Any]) -> MetricSummary | None:
    """The catalog entry the tail carries (its own keys left out), or None for a metric the run does not have."""
    if d.get("missing"):
        return None
    return decode(MetricSummary, {k: v for k, v in d.items() if k not in _TAIL_KEYS}, "metrics[]")


@dataclass(frozen=True, slots=True)
class Tail(WireModel):
    """One metric of a :class:`Tails` answer: its catalog entry (``summary``; ``None`` when the run has no such
    metric) and its finite points from ``since`` on (the whole range, M4-reduced, when ``since`` was not given).

    ``changed`` is false when the count and latest step were what the request said it held: then no points
    were read and ``steps``/``values`` are empty.
    """

    name: str
    summary: MetricSummary | None = field(metadata=wire(key="missing", decode=_summary, sent=bool))
    since: int | None
    changed: bool = field(metadata=wire(decode=lambda d: bool(d.get("changed", True)), sent=bool))
    source_points: int
    steps: array = field(metadata=wire(key="step", decode=points("q", "step", "metrics[]"), sent=list[int]))
    values: array = field(metadata=wire(key="value", decode=points("d", "value", "metrics[]", nan_for_null),
                                     sent=list[float]))

    def __post_init__(self) -> None:
        if len(self.steps) != len(self.values):
            raise ValueError(f"metrics[] {self.name!r}: {len(self.steps)} steps but {len(self.values)} values")

    @property
    def returned_points(self) -> int:
        return len(self.steps)


# The keys of a tail besides its catalog entry's.
_TAIL_KEYS = frozenset({"missing", "since", "changed", "source_points", "returned_points", "step", "value"})


@dataclass(frozen=True, slots=True)
class Tails(WireModel):
    """``GET /stellar/data/runs/{run_id}/tails``: the run's state, and per named metric its catalog entry and
    new points. ``names`` (every metric of the run, by name) is ``None`` when it is the one ``catalog_since``
    named; ``cursor`` names this one for the next request; ``total`` counts the run's metrics."""

    metadata: Metadata
    run_id: str
    state: str = field(metadata=wire(at=("run", "state")))
    lifecycle_state: str = field(metadata=wire(at=("run", "lifecycle_state")))
    project: str = field(metadata=wire(at=("run", "project")))
    status_message: str = field(metadata=wire(at=("run", "status_message")))
    cursor: str = field(metadata=wire(at=("catalog", "cursor")))
    total: int = field(metadata=wire(at=("catalog", "total")))
    names: tuple[str, ...] | None = field(metadata=wire(at=("catalog", "names")))
    metrics: tuple[Tail, ...]
    extra: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Tail:
        for t in self.metrics:
            if t.name == name:
                return t
        raise KeyError(f"the answer has no metric {name!r}")
