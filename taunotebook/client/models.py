"""The client's response models: TauGrid's v2 answers (and the local Portal's page data) as typed, frozen objects.

Each model's fields carry the wire's names; :func:`~taunotebook.client.decode.decode` builds it from the JSON.
Every model keeps the fields it does not know in ``extra``, so nothing a newer Portal adds is lost.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .decode import WireModel, decode, nan_for_null, points, wire

__all__ = [
    "Availability",
    "Experiment",
    "ExperimentList",
    "Freshness",
    "Metadata",
    "MetricSummary",
    "NonFinitePoint",
    "PointDetails",
    "Provenance",
    "Run",
    "RunMetrics",
    "RunPage",
    "Series",
]


@dataclass(frozen=True, slots=True)
class Provenance(WireModel):
    requested_source: str
    served_sources: tuple[str, ...]
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Freshness(WireModel):
    state: str
    as_of: datetime | None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Availability(WireModel):
    state: str
    reasons: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Metadata(WireModel):
    """TauGrid's per-response ``metadata`` block: when, from which source, how fresh, how complete.

    A timestamp this Python cannot parse is ``None`` here and kept, as sent, in ``extra``.
    """

    generated_at: datetime | None
    provenance: Provenance
    freshness: Freshness
    availability: Availability
    partial: bool = False
    warnings: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Run(WireModel):
    """One run as TauGrid's ``run`` object. Timestamps stay the server's RFC 3339 strings.

    ``metadata`` is set for :meth:`PortalClient.run` and ``None`` for the runs inside a :class:`RunPage`
    (the page carries it); ``response_extra`` keeps unknown top-level fields of the single-run answer.
    """

    run_id: str = field(metadata=wire(required=True))
    project: str = ""
    run_group_id: str = ""
    state: str = ""
    lifecycle_state: str = ""
    successful: bool = False
    success_reasons: tuple[str, ...] = ()
    created_at: str = ""
    source: str = ""
    tags: dict[str, str] = field(default_factory=dict)
    metric_names: tuple[str, ...] = ()
    experiment_id: str | None = None
    parent_run_id: str | None = None
    owner: str | None = None
    started_at: str | None = None
    completed_at: str | None = None
    config_hash: str | None = None
    code_sha: str | None = None
    image_digest: str | None = None
    result_uri: str | None = None
    config: dict[str, Any] | None = None  # the local Portal's include=config: flattened fields
    extra: dict[str, Any] = field(default_factory=dict)
    metadata: Metadata | None = field(default=None, metadata=wire(given=True))
    response_extra: dict[str, Any] = field(default_factory=dict, metadata=wire(given=True))

    @classmethod
    def from_response(cls, data: Any) -> Run:
        """The single-run answer ``{"metadata", "run"}``."""
        d = decode(RunResponse, data, "run response")
        return decode(cls, d.run, "run", metadata=d.metadata, response_extra=d.extra)


@dataclass(frozen=True, slots=True)
class RunResponse(WireModel):
    """``GET /runs/{run_id}`` as sent: the metadata block and the run object (read by :meth:`Run.from_response`)."""

    metadata: Metadata
    run: Any
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class MetricSummary(WireModel):
    """One metric of a run: counts, step range and (only when finite_count > 0) values.

    ``latest_wall_time`` is microseconds since the epoch, as TauGrid sends it. A value sent as ``null`` (a
    server that cannot write a non-finite number) is NaN.
    """

    name: str
    count: int = 0
    finite_count: int = 0
    non_finite_count: int = 0
    min_step: int | None = None
    max_step: int | None = None
    latest_step: int | None = None
    latest_wall_time: int | None = None
    latest_value: float | None = field(default=None, metadata=wire(null=math.nan))
    min_value: float | None = field(default=None, metadata=wire(null=math.nan))
    max_value: float | None = field(default=None, metadata=wire(null=math.nan))
    updated_at: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RunMetrics(WireModel):
    """The name-sorted metric summaries of one run."""

    metadata: Metadata
    run_id: str
    metrics: tuple[MetricSummary, ...]
    extra: dict[str, Any] = field(default_factory=dict)

    def __iter__(self) -> Iterator[MetricSummary]:
        return iter(self.metrics)

    def __len__(self) -> int:
        return len(self.metrics)

    def __getitem__(self, name: str) -> MetricSummary:
        for m in self.metrics:
            if m.name == name:
                return m
        raise KeyError(f"run {self.run_id!r} has no metric {name!r}; it has {[m.name for m in self.metrics]}")

    def names(self) -> list[str]:
        return [m.name for m in self.metrics]


def _points(d: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    raw = d.get("points") or ()
    if isinstance(raw, Mapping | str):
        raise TypeError(f"points: expected a JSON array, got {type(raw).__name__}")
    for p in raw:
        if not isinstance(p, Mapping):
            raise TypeError(f"points[]: expected a JSON object, got {type(p).__name__}")
    return raw


def _point_steps(d: Mapping[str, Any]) -> array:
    return array("q", (int(p["step"]) for p in _points(d)))


def _point_values(d: Mapping[str, Any]) -> array:
    return array("d", (nan_for_null(p.get("value")) for p in _points(d)))


def _point_extra(d: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
    out = tuple({k: v for k, v in p.items() if k not in ("step", "value")} for p in _points(d))
    return out if any(out) else ()


def _returned_points(d: Mapping[str, Any]) -> int:
    n = d.get("returned_points")
    return int(n) if n is not None else len(_points(d))


@dataclass(frozen=True, slots=True)
class Series(WireModel):
    """One metric of one run as two compact columns: ``steps`` (int64) and ``values`` (float64).

    ``partial`` is true when the server returned fewer points than the series holds (reduced or thinned).
    ``point_extra`` keeps, per point, any field besides step/value (empty when the server sends none).
    """

    metadata: Metadata
    target: str
    run_id: str
    metric: str
    max_points: int
    source_points: int
    returned_points: int = field(metadata=wire(decode=_returned_points, sent=int | None))
    steps: array = field(metadata=wire(key="points", decode=_point_steps, sent=list[dict[str, Any]]))
    values: array = field(metadata=wire(key="points", decode=_point_values, sent=list[dict[str, Any]]))
    start_step: int | None = None
    end_step: int | None = None
    step_interval: int | None = None
    point_extra: tuple[dict[str, Any], ...] = field(default=(), metadata=wire(key="points", decode=_point_extra,
                                                                              sent=list[dict[str, Any]]))
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def partial(self) -> bool:
        return self.metadata.partial

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self) -> Iterator[tuple[int, float]]:
        return zip(self.steps, self.values, strict=True)


@dataclass(frozen=True, slots=True)
class RunPage(WireModel):
    """One page of an experiment's runs, newest first; ``next_cursor`` is ``None`` on the last page."""

    metadata: Metadata
    target: str
    runs: tuple[Run, ...]
    next_cursor: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __iter__(self) -> Iterator[Run]:
        return iter(self.runs)

    def __len__(self) -> int:
        return len(self.runs)


# -- the local Portal's page data (``/stellar/data/...``) ------------------------------------------------

_NON_FINITE = {"NaN": math.nan, "+Inf": math.inf, "-Inf": -math.inf}


def _non_finite_value(d: Mapping[str, Any]) -> float:
    value = d.get("value")
    if value not in _NON_FINITE:
        raise ValueError(f"non_finite[].value must be NaN, +Inf or -Inf, got {value!r}")
    return _NON_FINITE[value]


@dataclass(frozen=True, slots=True)
class NonFinitePoint(WireModel):
    """A non-finite observation: ``value`` is NaN, +inf or -inf; ``wall_time`` in µs since the epoch, UTC."""

    step: int = field(metadata=wire(required=True))
    value: float = field(metadata=wire(decode=_non_finite_value, sent=str))
    wall_time: int | None = None


@dataclass(frozen=True, slots=True)
class PointDetails(WireModel):
    """What a v2 series cannot carry, for one metric of one run and a step range.

    ``non_finite`` lists where NaN/±Inf observations sit (the first 1000 in range; ``non_finite_count``
    counts them all); ``wall_time_steps``/``wall_times`` sample (step, wall time µs) pairs over the range
    for a wall-time axis.
    """

    metadata: Metadata
    run_id: str
    metric: str
    non_finite_count: int
    non_finite: tuple[NonFinitePoint, ...]
    wall_time_steps: array = field(metadata=wire(key="wall_time", decode=lambda d: _wall(d, "step"),
                                              sent=dict[str, list[int]]))
    wall_times: array = field(metadata=wire(key="wall_time", decode=lambda d: _wall(d, "wall_time"),
                                         sent=dict[str, list[int]]))
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.wall_time_steps) != len(self.wall_times):
            raise ValueError(f"wall_time: {len(self.wall_time_steps)} steps but {len(self.wall_times)} wall times")


def _wall(d: Mapping[str, Any], key: str) -> array:
    wall = d.get("wall_time") or {}
    if not isinstance(wall, Mapping):
        raise TypeError(f"wall_time: expected a JSON object, got {type(wall).__name__}")
    return points("q", key, "wall_time")(wall)


@dataclass(frozen=True, slots=True)
class Experiment(WireModel):
    """An experiment of the served workspace, with how many of its runs the Portal holds."""

    experiment_id: str = field(metadata=wire(required=True))
    project: str
    run_count: int
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ExperimentList(WireModel):
    """The experiments of the served workspace, sorted by (experiment id, project)."""

    metadata: Metadata
    experiments: tuple[Experiment, ...]
    extra: dict[str, Any] = field(default_factory=dict)

    def __iter__(self) -> Iterator[Experiment]:
        return iter(self.experiments)

    def __len__(self) -> int:
        return len(self.experiments)
