"""The client's models for run configurations and TauGrid's experiment search.

:class:`RunConfiguration` is the local Portal's ``/runs/{run_id}/config`` (an addition: TauGrid's
Portal answers 404, route not found); :class:`ExperimentPage` is TauGrid's ``/experiments/search``.
Unknown fields are kept in ``extra``, as in :mod:`.models`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .models import Metadata, _obj, _rest, _strs

__all__ = ["ExperimentPage", "ExperimentSummary", "RunConfiguration"]

_CONFIG_KEYS = ("metadata", "run_id", "config_hash", "format", "uri", "config", "fields")
_EXPERIMENT_KEYS = ("experiment_id", "project", "name", "description", "created_at", "updated_at", "run_count",
                    "run_group_count", "state_counts", "lifecycle_counts", "latest_run_at", "metric_names", "config")


def _counts(value: Any, what: str) -> dict[str, int]:
    return {str(k): int(v) for k, v in _obj(value or {}, what).items()}


@dataclass(frozen=True, slots=True)
class RunConfiguration:
    """A run's configuration: ``config`` the normalized values, ``fields`` the flattened scalars (dotted keys).

    ``config_hash``, ``format`` and ``uri`` are ``None`` for a run without a configuration (then
    ``available`` is False and ``metadata.availability.reasons`` says why).
    """

    metadata: Metadata
    run_id: str
    config: dict[str, Any]
    fields: dict[str, str | int | float | bool | None]
    config_hash: str | None = None
    format: str | None = None
    uri: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def available(self) -> bool:
        return self.config_hash is not None and self.format is not None

    @classmethod
    def from_json(cls, data: Any) -> RunConfiguration:
        d = _obj(data, "config response")
        return cls(
            metadata=Metadata.from_json(d.get("metadata")),
            run_id=str(d.get("run_id", "")),
            config=dict(_obj(d.get("config") or {}, "config")),
            fields=dict(_obj(d.get("fields") or {}, "fields")),
            config_hash=None if d.get("config_hash") is None else str(d["config_hash"]),
            format=None if d.get("format") is None else str(d["format"]),
            uri=None if d.get("uri") is None else str(d["uri"]),
            extra=_rest(d, _CONFIG_KEYS),
        )


@dataclass(frozen=True, slots=True)
class ExperimentSummary:
    """One experiment of TauGrid's search, counted over the served workspace's runs.

    ``config`` (the local Portal's ``include=config``): each config key of its runs with the distinct
    values; ``None`` when not asked for.
    """

    experiment_id: str
    project: str = ""
    name: str = ""
    description: str = ""
    created_at: str = ""
    updated_at: str = ""
    run_count: int = 0
    run_group_count: int = 0
    state_counts: dict[str, int] = field(default_factory=dict)
    lifecycle_counts: dict[str, int] = field(default_factory=dict)
    latest_run_at: str | None = None
    metric_names: tuple[str, ...] = ()
    config: dict[str, tuple[Any, ...]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> ExperimentSummary:
        d = _obj(data, "experiments[]")
        config = d.get("config")
        return cls(
            experiment_id=str(d["experiment_id"]),
            project=str(d.get("project", "")),
            name=str(d.get("name", "")),
            description=str(d.get("description", "")),
            created_at=str(d.get("created_at", "")),
            updated_at=str(d.get("updated_at", "")),
            run_count=int(d.get("run_count") or 0),
            run_group_count=int(d.get("run_group_count") or 0),
            state_counts=_counts(d.get("state_counts"), "state_counts"),
            lifecycle_counts=_counts(d.get("lifecycle_counts"), "lifecycle_counts"),
            latest_run_at=d.get("latest_run_at") or None,
            metric_names=_strs(d.get("metric_names")),
            config=None if config is None else {str(k): tuple(v) for k, v in _obj(config, "config").items()},
            extra=_rest(d, _EXPERIMENT_KEYS),
        )


@dataclass(frozen=True, slots=True)
class ExperimentPage:
    """One page of TauGrid's experiment search, latest run first; ``next_cursor`` is ``None`` on the last."""

    metadata: Metadata
    experiments: tuple[ExperimentSummary, ...]
    next_cursor: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __iter__(self) -> Iterator[ExperimentSummary]:
        return iter(self.experiments)

    def __len__(self) -> int:
        return len(self.experiments)

    @classmethod
    def from_json(cls, data: Any) -> ExperimentPage:
        d = _obj(data, "experiments response")
        return cls(
            metadata=Metadata.from_json(d.get("metadata")),
            experiments=tuple(ExperimentSummary.from_json(e) for e in d.get("experiments") or ()),
            next_cursor=d.get("next_cursor") or None,
            extra=_rest(d, ("metadata", "experiments", "next_cursor")),
        )
