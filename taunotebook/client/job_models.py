"""The client's models for a run's job (our page data ``/runs/{run_id}/job``) and TauGrid's experiment fault events.

:class:`RunJob` is what the run page shows on a run's card: the resources the job asked for and its
lifecycle in words. :class:`ExperimentFaultEvents` is TauGrid's Portal ``/api/portal/experiments/{id}/
fault-events`` (camelCase keys, as TauGrid writes them). Unknown fields are kept in ``extra``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .decode import WireModel, wire
from .models import Metadata

__all__ = ["ExperimentFaultEvents", "FaultCondition", "FaultCoverage", "FaultEvent", "FaultProvenance",
           "FaultTimeBounds", "JobFault", "JobLifecycle", "RunJob"]


@dataclass(frozen=True, slots=True)
class JobLifecycle(WireModel):
    """``phase`` (queued, admitted, running, succeeded ...), the backend's ``reason``, ``retries``, and ``text``."""

    phase: str = ""
    reason: str = ""
    retries: int = 0
    text: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class JobFault(WireModel):
    time: str = ""
    kind: str = ""
    message: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RunJob(WireModel):
    """A run's job: its backend, the resources it asked for, its lifecycle and its faults."""

    metadata: Metadata
    run_id: str
    backend: str = ""
    resources: dict[str, Any] = field(default_factory=dict)
    lifecycle: JobLifecycle = field(default_factory=JobLifecycle)
    faults: tuple[JobFault, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class FaultCondition(WireModel):
    """TauGrid's ``nodes.Condition``."""

    type: str = ""
    category: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""
    last_heartbeat_time: str = field(default="", metadata=wire(key="lastHeartbeatTime"))
    last_transition_time: str = field(default="", metadata=wire(key="lastTransitionTime"))
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class FaultEvent(WireModel):
    """TauGrid's ``faultevents.Event``: one node-scoped fault."""

    dedup_key: str = field(default="", metadata=wire(key="dedupKey"))
    node: str = ""
    scope: str = ""
    category: str = ""
    check_type: str = field(default="", metadata=wire(key="checkType"))
    health_state: str = field(default="", metadata=wire(key="healthState"))
    status: str = ""
    evidence_status: str = field(default="", metadata=wire(key="evidenceStatus"))
    reason: str = ""
    message: str = ""
    observed_at: str | None = field(default=None, metadata=wire(key="observedAt"))
    transition_at: str | None = field(default=None, metadata=wire(key="transitionAt"))
    raw_condition: FaultCondition = field(default_factory=FaultCondition, metadata=wire(key="rawCondition"))
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class FaultCoverage(WireModel):
    correlation: str = ""
    allocation: str = ""
    time_bounds: str = field(default="", metadata=wire(key="timeBounds"))
    evidence: str = ""
    reasons: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class FaultProvenance(WireModel):
    allocation: str = ""
    evidence: str = ""
    limitation: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class FaultTimeBounds(WireModel):
    started_at: str | None = field(default=None, metadata=wire(key="startedAt"))
    completed_at: str | None = field(default=None, metadata=wire(key="completedAt"))
    active: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ExperimentFaultEvents(WireModel):
    """TauGrid's ``experimentFaultResponse`` with ``writeScopedJSON``'s ``scope`` and ``state``."""

    experiment_id: str = field(default="", metadata=wire(key="experimentId"))
    generated_at: str = field(default="", metadata=wire(key="generatedAt"))
    allocated_nodes: tuple[str, ...] = field(default=(), metadata=wire(key="allocatedNodes"))
    missing_nodes: tuple[str, ...] = field(default=(), metadata=wire(key="missingNodes"))
    time_bounds: FaultTimeBounds = field(default_factory=FaultTimeBounds, metadata=wire(key="timeBounds"))
    coverage: FaultCoverage = field(default_factory=FaultCoverage)
    provenance: FaultProvenance = field(default_factory=FaultProvenance)
    events: tuple[FaultEvent, ...] = ()
    scope: dict[str, Any] = field(default_factory=dict)
    state: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
