"""The runs table's answer (``GET /stellar/data/runs``, local Portal page data) as typed, frozen objects."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .models import Metadata, _obj, _opt_int, _rest, _strs

__all__ = ["MetricStats", "RunTable", "RunTableRow"]


def _opt_float(data: Mapping[str, Any], key: str) -> float | None:
    return None if data.get(key) is None else float(data[key])


@dataclass(frozen=True, slots=True)
class MetricStats:
    """A metric's summary for one run: counts, and latest/min/max of its finite values (None without any)."""

    count: int
    non_finite_count: int
    latest_step: int | None = None
    latest_value: float | None = None
    min_value: float | None = None
    max_value: float | None = None

    @classmethod
    def from_json(cls, data: Any) -> MetricStats:
        d = _obj(data, "metrics{}")
        return cls(count=int(d.get("count") or 0), non_finite_count=int(d.get("non_finite_count") or 0),
                   latest_step=_opt_int(d, "latest_step"), latest_value=_opt_float(d, "latest_value"),
                   min_value=_opt_float(d, "min_value"), max_value=_opt_float(d, "max_value"))


@dataclass(frozen=True, slots=True)
class RunTableRow:
    """One run of the table: ids, state, tags, its config's flattened fields (None without a config), metrics."""

    run_id: str
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

    @classmethod
    def from_json(cls, data: Any) -> RunTableRow:
        d = _obj(data, "runs[]")
        config = d.get("config")
        known = ("run_id", "project", "experiment_id", "run_group_id", "state", "created_at", "tags", "config",
                 "metrics", "config_hash")
        return cls(
            run_id=str(d["run_id"]), project=str(d.get("project", "")), experiment_id=str(d.get("experiment_id", "")),
            run_group_id=str(d.get("run_group_id", "")), state=str(d.get("state", "")),
            created_at=str(d.get("created_at", "")),
            tags={str(k): str(v) for k, v in _obj(d.get("tags") or {}, "tags").items()},
            config=None if config is None else dict(_obj(config, "config")),
            metrics={str(k): MetricStats.from_json(v) for k, v in _obj(d.get("metrics") or {}, "metrics").items()},
            config_hash=d.get("config_hash") or None, extra=_rest(d, known))


@dataclass(frozen=True, slots=True)
class RunTable:
    """Every listed run (newest first), the metric names they have, and the metrics each row carries."""

    metadata: Metadata
    metric_names: tuple[str, ...]
    metrics: tuple[str, ...]
    run_count: int
    runs: tuple[RunTableRow, ...]
    extra: dict[str, Any] = field(default_factory=dict)

    def __iter__(self) -> Iterator[RunTableRow]:
        return iter(self.runs)

    def __len__(self) -> int:
        return len(self.runs)

    @property
    def run_ids(self) -> list[str]:
        return [r.run_id for r in self.runs]

    @classmethod
    def from_json(cls, data: Any) -> RunTable:
        d = _obj(data, "runs response")
        return cls(metadata=Metadata.from_json(d.get("metadata")), metric_names=_strs(d.get("metric_names")),
                   metrics=_strs(d.get("metrics")), run_count=int(d.get("run_count") or 0),
                   runs=tuple(RunTableRow.from_json(r) for r in d.get("runs") or ()),
                   extra=_rest(d, ("metadata", "metric_names", "metrics", "run_count", "runs")))
