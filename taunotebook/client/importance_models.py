"""The parameter-importance answer as the local Portal gives it (our addition to TauGrid's v2 API), typed and
frozen."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .decode import WireModel, decode, wire
from .models import Metadata

__all__ = ["ParameterImportance", "ParameterScore"]


@dataclass(frozen=True, slots=True)
class ParameterScore(WireModel):
    """One hyperparameter against the metric: its random-forest importance and its correlations."""

    name: str = field(metadata=wire(required=True))
    kind: str = ""
    runs: int = 0
    importance: float = 0.0
    correlation: float | None = None
    spearman: float | None = None
    correlation_value: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ParameterImportance(WireModel):
    """``GET /api/v2/stellar/parameter-importance``: the parameters, most important first (none when too few runs
    have a value: the reason is in ``metadata.availability``)."""

    metadata: Metadata
    metric: str = ""
    reduction: str = ""
    goal: str = ""
    run_count: int = 0
    valued_run_count: int = 0
    limits: dict[str, int] = field(default_factory=dict)
    parameters: tuple[ParameterScore, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> ParameterImportance:
        return decode(cls, data, "parameter importance")
