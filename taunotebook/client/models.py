"""The client's response models: TauGrid's v2 answers (and the local Portal's page data) as typed, frozen objects.

Every model keeps the fields it does not know in ``extra``, so nothing a newer Portal adds is lost.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

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


def _rest(data: Mapping[str, Any], known: Sequence[str]) -> dict[str, Any]:
    """Fields the server sent that this client does not model; kept so nothing the Portal adds is lost."""
    return {k: v for k, v in data.items() if k not in known}


def _obj(data: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise TypeError(f"{what}: expected a JSON object, got {type(data).__name__}")
    return data


def _strs(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value or ())


def _time(d: Mapping[str, Any], key: str, extra: dict[str, Any]) -> datetime | None:
    """An RFC 3339 field as a datetime; a form this Python cannot parse stays, as sent, in ``extra``."""
    value = d.get(key)
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value))
    except ValueError:
        # A timestamp quirk of a newer server must not make a whole read fail.
        extra[key] = value
        return None


def _opt_int(data: Mapping[str, Any], key: str) -> int | None:
    return None if data.get(key) is None else int(data[key])


def _float(value: Any) -> float:
    # Go cannot encode NaN/Inf in JSON: a server may send null or a string for a non-finite value.
    if value is None:
        return math.nan
    return float(value)


@dataclass(frozen=True, slots=True)
class Provenance:
    requested_source: str
    served_sources: tuple[str, ...]
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> Provenance:
        d = _obj(data or {}, "metadata.provenance")
        return cls(
            requested_source=str(d.get("requested_source", "")),
            served_sources=_strs(d.get("served_sources")),
            extra=_rest(d, ("requested_source", "served_sources")),
        )


@dataclass(frozen=True, slots=True)
class Freshness:
    state: str
    as_of: datetime | None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> Freshness:
        d = _obj(data or {}, "metadata.freshness")
        extra = _rest(d, ("state", "as_of"))
        return cls(state=str(d.get("state", "")), as_of=_time(d, "as_of", extra), extra=extra)


@dataclass(frozen=True, slots=True)
class Availability:
    state: str
    reasons: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> Availability:
        d = _obj(data or {}, "metadata.availability")
        return cls(state=str(d.get("state", "")), reasons=_strs(d.get("reasons")), extra=_rest(d, ("state", "reasons")))


@dataclass(frozen=True, slots=True)
class Metadata:
    """TauGrid's per-response ``metadata`` block: when, from which source, how fresh, how complete."""

    generated_at: datetime | None
    provenance: Provenance
    freshness: Freshness
    availability: Availability
    partial: bool = False
    warnings: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    _KEYS = ("generated_at", "provenance", "freshness", "availability", "partial", "warnings")

    @classmethod
    def from_json(cls, data: Any) -> Metadata:
        d = _obj(data or {}, "metadata")
        extra = _rest(d, cls._KEYS)
        return cls(
            generated_at=_time(d, "generated_at", extra),
            provenance=Provenance.from_json(d.get("provenance")),
            freshness=Freshness.from_json(d.get("freshness")),
            availability=Availability.from_json(d.get("availability")),
            partial=bool(d.get("partial", False)),
            warnings=_strs(d.get("warnings")),
            extra=extra,
        )


_RUN_KEYS = (
    "run_id",
    "experiment_id",
    "project",
    "run_group_id",
    "parent_run_id",
    "state",
    "lifecycle_state",
    "successful",
    "success_reasons",
    "owner",
    "created_at",
    "started_at",
    "completed_at",
    "config_hash",
    "code_sha",
    "image_digest",
    "result_uri",
    "tags",
    "metric_names",
    "source",
    "config",
)


@dataclass(frozen=True, slots=True)
class Run:
    """One run as TauGrid's ``run`` object. Timestamps stay the server's RFC 3339 strings.

    ``metadata`` is set for :meth:`PortalClient.run` and ``None`` for the runs inside a :class:`RunPage`
    (the page carries it); ``response_extra`` keeps unknown top-level fields of the single-run answer.
    """

    run_id: str
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
    metadata: Metadata | None = None
    response_extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any, metadata: Metadata | None = None, response_extra: Mapping[str, Any] = ()) -> Run:
        d = _obj(data, "run")
        if "run_id" not in d:
            raise TypeError("run: the object has no run_id")
        opt = {k: (None if d.get(k) is None else str(d[k])) for k in _OPTIONAL_RUN_KEYS}
        return cls(
            run_id=str(d["run_id"]),
            project=str(d.get("project", "")),
            run_group_id=str(d.get("run_group_id", "")),
            state=str(d.get("state", "")),
            lifecycle_state=str(d.get("lifecycle_state", "")),
            successful=bool(d.get("successful", False)),
            success_reasons=_strs(d.get("success_reasons")),
            created_at=str(d.get("created_at", "")),
            source=str(d.get("source", "")),
            tags={str(k): v for k, v in (d.get("tags") or {}).items()},
            metric_names=_strs(d.get("metric_names")),
            config=dict(_obj(d["config"], "run.config")) if d.get("config") is not None else None,
            extra=_rest(d, _RUN_KEYS),
            metadata=metadata,
            response_extra=dict(response_extra),
            **opt,
        )

    @classmethod
    def from_response(cls, data: Any) -> Run:
        """The single-run answer ``{"metadata", "run"}``."""
        d = _obj(data, "run response")
        return cls.from_json(d.get("run"), metadata=Metadata.from_json(d.get("metadata")),
                             response_extra=_rest(d, ("metadata", "run")))


_OPTIONAL_RUN_KEYS = frozenset(
    (
        "experiment_id",
        "parent_run_id",
        "owner",
        "started_at",
        "completed_at",
        "config_hash",
        "code_sha",
        "image_digest",
        "result_uri",
    )
)

_SUMMARY_KEYS = (
    "name",
    "count",
    "finite_count",
    "non_finite_count",
    "min_step",
    "max_step",
    "latest_step",
    "latest_wall_time",
    "latest_value",
    "min_value",
    "max_value",
    "updated_at",
)


@dataclass(frozen=True, slots=True)
class MetricSummary:
    """One metric of a run: counts, step range and (only when finite_count > 0) values.

    ``latest_wall_time`` is microseconds since the epoch, as TauGrid sends it.
    """

    name: str
    count: int = 0
    finite_count: int = 0
    non_finite_count: int = 0
    min_step: int | None = None
    max_step: int | None = None
    latest_step: int | None = None
    latest_wall_time: int | None = None
    latest_value: float | None = None
    min_value: float | None = None
    max_value: float | None = None
    updated_at: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> MetricSummary:
        d = _obj(data, "metrics[]")

        def opt_float(key: str) -> float | None:
            return None if key not in d else _float(d[key])

        return cls(
            name=str(d.get("name", "")),
            count=int(d.get("count") or 0),
            finite_count=int(d.get("finite_count") or 0),
            non_finite_count=int(d.get("non_finite_count") or 0),
            min_step=_opt_int(d, "min_step"),
            max_step=_opt_int(d, "max_step"),
            latest_step=_opt_int(d, "latest_step"),
            latest_wall_time=_opt_int(d, "latest_wall_time"),
            latest_value=opt_float("latest_value"),
            min_value=opt_float("min_value"),
            max_value=opt_float("max_value"),
            updated_at=None if d.get("updated_at") is None else str(d["updated_at"]),
            extra=_rest(d, _SUMMARY_KEYS),
        )


@dataclass(frozen=True, slots=True)
class RunMetrics:
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

    @classmethod
    def from_json(cls, data: Any) -> RunMetrics:
        d = _obj(data, "metrics response")
        return cls(
            metadata=Metadata.from_json(d.get("metadata")),
            run_id=str(d.get("run_id", "")),
            metrics=tuple(MetricSummary.from_json(m) for m in d.get("metrics") or ()),
            extra=_rest(d, ("metadata", "run_id", "metrics")),
        )


_SERIES_KEYS = (
    "metadata",
    "target",
    "run_id",
    "metric",
    "start_step",
    "end_step",
    "step_interval",
    "max_points",
    "source_points",
    "returned_points",
    "points",
)


@dataclass(frozen=True, slots=True)
class Series:
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
    returned_points: int
    steps: array
    values: array
    start_step: int | None = None
    end_step: int | None = None
    step_interval: int | None = None
    point_extra: tuple[dict[str, Any], ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def partial(self) -> bool:
        return self.metadata.partial

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self) -> Iterator[tuple[int, float]]:
        return zip(self.steps, self.values, strict=True)

    @classmethod
    def from_json(cls, data: Any) -> Series:
        d = _obj(data, "series response")
        steps = array("q")
        values = array("d")
        point_extra: list[dict[str, Any]] = []
        for p in d.get("points") or ():
            p = _obj(p, "points[]")
            steps.append(int(p["step"]))
            values.append(_float(p.get("value")))
            point_extra.append({k: v for k, v in p.items() if k not in ("step", "value")})
        if not any(point_extra):
            point_extra = []

        return cls(
            metadata=Metadata.from_json(d.get("metadata")),
            target=str(d.get("target", "")),
            run_id=str(d.get("run_id", "")),
            metric=str(d.get("metric", "")),
            max_points=int(d.get("max_points") or 0),
            source_points=int(d.get("source_points") or 0),
            returned_points=int(d.get("returned_points") if d.get("returned_points") is not None else len(steps)),
            steps=steps,
            values=values,
            start_step=_opt_int(d, "start_step"),
            end_step=_opt_int(d, "end_step"),
            step_interval=_opt_int(d, "step_interval"),
            point_extra=tuple(point_extra),
            extra=_rest(d, _SERIES_KEYS),
        )


@dataclass(frozen=True, slots=True)
class RunPage:
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

    @classmethod
    def from_json(cls, data: Any) -> RunPage:
        d = _obj(data, "runs response")
        return cls(
            metadata=Metadata.from_json(d.get("metadata")),
            target=str(d.get("target", "")),
            runs=tuple(Run.from_json(r) for r in d.get("runs") or ()),
            next_cursor=d.get("next_cursor") or None,
            extra=_rest(d, ("metadata", "target", "runs", "next_cursor")),
        )


# -- the local Portal's page data (``/stellar/data/...``) ------------------------------------------------

_NON_FINITE = {"NaN": math.nan, "+Inf": math.inf, "-Inf": -math.inf}


@dataclass(frozen=True, slots=True)
class NonFinitePoint:
    """A non-finite observation: ``value`` is NaN, +inf or -inf; ``wall_time`` in µs since the epoch, UTC."""

    step: int
    value: float
    wall_time: int | None = None

    @classmethod
    def from_json(cls, data: Any) -> NonFinitePoint:
        d = _obj(data, "non_finite[]")
        value = d.get("value")
        if value not in _NON_FINITE:
            raise ValueError(f"non_finite[].value must be NaN, +Inf or -Inf, got {value!r}")
        return cls(step=int(d["step"]), value=_NON_FINITE[value], wall_time=_opt_int(d, "wall_time"))


@dataclass(frozen=True, slots=True)
class PointDetails:
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
    wall_time_steps: array
    wall_times: array
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> PointDetails:
        d = _obj(data, "points response")
        wall = _obj(d.get("wall_time") or {}, "wall_time")
        steps, times = array("q", (int(s) for s in wall.get("step") or ())), array("q")
        times.extend(int(t) for t in wall.get("wall_time") or ())
        if len(steps) != len(times):
            raise ValueError(f"wall_time: {len(steps)} steps but {len(times)} wall times")
        return cls(
            metadata=Metadata.from_json(d.get("metadata")),
            run_id=str(d.get("run_id", "")),
            metric=str(d.get("metric", "")),
            non_finite_count=int(d.get("non_finite_count") or 0),
            non_finite=tuple(NonFinitePoint.from_json(p) for p in d.get("non_finite") or ()),
            wall_time_steps=steps,
            wall_times=times,
            extra=_rest(d, ("metadata", "run_id", "metric", "non_finite_count", "non_finite", "wall_time")),
        )


@dataclass(frozen=True, slots=True)
class Experiment:
    """An experiment of the served workspace, with how many of its runs the Portal holds."""

    experiment_id: str
    project: str
    run_count: int
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> Experiment:
        d = _obj(data, "experiments[]")
        return cls(experiment_id=str(d["experiment_id"]), project=str(d.get("project", "")),
                   run_count=int(d.get("run_count") or 0), extra=_rest(d, ("experiment_id", "project", "run_count")))


@dataclass(frozen=True, slots=True)
class ExperimentList:
    """The experiments of the served workspace, sorted by (experiment id, project)."""

    metadata: Metadata
    experiments: tuple[Experiment, ...]
    extra: dict[str, Any] = field(default_factory=dict)

    def __iter__(self) -> Iterator[Experiment]:
        return iter(self.experiments)

    def __len__(self) -> int:
        return len(self.experiments)

    @classmethod
    def from_json(cls, data: Any) -> ExperimentList:
        d = _obj(data, "experiments response")
        return cls(metadata=Metadata.from_json(d.get("metadata")),
                   experiments=tuple(Experiment.from_json(e) for e in d.get("experiments") or ()),
                   extra=_rest(d, ("metadata", "experiments")))
