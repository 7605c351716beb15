"""The client's models for run configurations and TauGrid's experiment search.

:class:`RunConfiguration` is the local Portal's ``/runs/{run_id}/config`` (an addition: TauGrid's
Portal answers 404, route not found); :class:`ExperimentPage` is TauGrid's ``/experiments/search``.
Unknown fields are kept in ``extra``, as in :mod:`.models`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .decode import WireModel, wire
from .models import Metadata

__all__ = ["ExperimentPage", "ExperimentSummary", "RunConfiguration"]


@dataclass(frozen=True, slots=True)
class RunConfiguration(WireModel):
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


@dataclass(frozen=True, slots=True)
class ExperimentSummary(WireModel):
    """One experiment of TauGrid's search, counted over the served workspace's runs.

    ``config`` (the local Portal's ``include=config``): each config key of its runs with the distinct
    values; ``None`` when not asked for.
    """

    experiment_id: str = field(metadata=wire(required=True))
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


@dataclass(frozen=True, slots=True)
class ExperimentPage(WireModel):
    """One page of TauGrid's experiment search, latest run first; ``next_cursor`` is ``None`` on the last."""

    metadata: Metadata
    experiments: tuple[ExperimentSummary, ...]
    next_cursor: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __iter__(self) -> Iterator[ExperimentSummary]:
        return iter(self.experiments)

    def __len__(self) -> int:
        return len(self.experiments)
