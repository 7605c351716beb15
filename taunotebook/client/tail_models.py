"""A live pane's poll answer (``GET /stellar/data/runs/{run_id}/tails``, local Portal page data) as typed,
frozen objects."""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Any

from .models import Metadata, MetricSummary, _float, _obj, _opt_int, _rest, _strs

__all__ = ["Tail", "Tails"]


@dataclass(frozen=True, slots=True)
class Tail:
    """One metric of a :class:`Tails` answer: its catalog entry (``summary``; ``None`` when the run has no such
    metric) and its finite points from ``since`` on (the whole range, M4-reduced, when ``since`` was not given).

    ``changed`` is false when the count and latest step were what the request said it held: then no points
    were read and ``steps``/``values`` are empty.
    """

    name: str
    summary: MetricSummary | None
    since: int | None
    changed: bool
    source_points: int
    steps: array
    values: array

    @classmethod
    def from_json(cls, data: Any) -> Tail:
        d = _obj(data, "metrics[]")
        steps, values = array("q", (int(s) for s in d.get("step") or ())), array("d")
        values.extend(_float(v) for v in d.get("value") or ())
        if len(steps) != len(values):
            raise ValueError(f"metrics[] {d.get('name')!r}: {len(steps)} steps but {len(values)} values")
        return cls(name=str(d.get("name", "")), summary=None if d.get("missing") else MetricSummary.from_json(d),
                   since=_opt_int(d, "since"), changed=bool(d.get("changed", True)),
                   source_points=int(d.get("source_points") or 0), steps=steps, values=values)


@dataclass(frozen=True, slots=True)
class Tails:
    """``GET /stellar/data/runs/{run_id}/tails``: the run's state, and per named metric its catalog entry and
    new points. ``names`` (every metric of the run, by name) is ``None`` when it is the one ``catalog_since``
    named; ``cursor`` names this one for the next request; ``total`` counts the run's metrics."""

    metadata: Metadata
    run_id: str
    state: str
    lifecycle_state: str
    project: str
    status_message: str
    cursor: str
    total: int
    names: tuple[str, ...] | None
    metrics: tuple[Tail, ...]
    extra: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Tail:
        for t in self.metrics:
            if t.name == name:
                return t
        raise KeyError(f"the answer has no metric {name!r}")

    @classmethod
    def from_json(cls, data: Any) -> Tails:
        d = _obj(data, "tails response")
        run = _obj(d.get("run") or {}, "run")
        catalog = _obj(d.get("catalog") or {}, "catalog")
        names = catalog.get("names")
        return cls(
            metadata=Metadata.from_json(d.get("metadata")),
            run_id=str(d.get("run_id", "")),
            state=str(run.get("state", "")),
            lifecycle_state=str(run.get("lifecycle_state", "")),
            project=str(run.get("project", "")),
            status_message=str(run.get("status_message", "")),
            cursor=str(catalog.get("cursor", "")),
            total=int(catalog.get("total") or 0),
            names=None if names is None else _strs(names),
            metrics=tuple(Tail.from_json(m) for m in d.get("metrics") or ()),
            extra=_rest(d, ("metadata", "run_id", "run", "catalog", "metrics")),
        )
