"""TauGrid's ``experimentFaultResponse`` (``GET /api/portal/experiments/{id}/fault-events``): encoder and schema.

TauGrid's Portal (``portal/internal/portalapi/experiment_faults.go``) answers node conditions correlated
with an experiment's runs; its events are ``faultevents.Event`` (``portal/internal/portal/faultevents``)
with a ``nodes.Condition`` as ``rawCondition``. It writes them through ``writeScopedJSON``, which
marshals the struct, decodes it into a ``map[string]any``, adds ``scope`` and ``state`` and encodes
the map again: every object's keys come out sorted, and ``omitempty`` fields are absent when empty.
We build the same values as :class:`~tau_collector.taugrid.gojson.GoMap` s, so the bytes are Go's.

Our events are the run's ``fault`` events (:mod:`tau_collector.job.faults`): each is node-scoped as
TauGrid's frontend requires (``scope: "node"``), on the node the payload names, ``healthState``
``unhealthy``, ``status`` ``True`` and ``evidenceStatus`` ``fresh`` (recorded when it happened, not a
snapshot of current state), ``category`` / ``checkType`` from the fault's kind (memory/OOMKilled,
process/Signal, node/WorkerLost, job/Retry).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tau_collector.job.faults import KINDS
from tau_collector.reads import RunEvent, RunRow
from tau_collector.taugrid.gojson import GoMap, format_time, parse_time

__all__ = ["COVERAGE_STATES", "EXPERIMENT_FAULTS", "PROVENANCE", "fault_event_json", "fault_response", "scoped_error",
           "unavailable_response"]

COVERAGE_STATES = ("exact", "partial", "current-only", "unknown", "stale", "unavailable")
PROVENANCE = {
    "allocation": "expstore events type=fault (the node each fault names)",
    "evidence": "expstore events type=fault: the job wrapper's record of a signal, a kill for memory, a lost "
                "wrapper or a retry",
    "limitation": "faults the job wrapper saw; GPU and InfiniBand node conditions are not read",
}


def _time(text: str) -> str | None:
    """An RFC3339 time as Go's ``time.Time`` marshals it in UTC (RFC3339Nano), None for none or a bad one."""
    text = (text or "").strip()
    if not text:
        return None
    try:
        return format_time(parse_time(text))
    except ValueError:
        return None


def _omit_empty(mapping: Mapping[str, Any], *names: str) -> GoMap:
    return GoMap({k: v for k, v in mapping.items() if not (k in names and v in ("", None, [], {}))})


def fault_event_json(event: RunEvent) -> GoMap:
    """One ``fault`` run event as TauGrid's ``faultevents.Event`` (its ``rawCondition`` a ``nodes.Condition``)."""
    payload = event.payload or {}
    category, check = KINDS.get(str(payload.get("kind", "")), ("process", "Fault"))
    node = str(payload.get("node") or "unknown")
    at = _time(event.time)
    reason = str(payload.get("signal") or check)
    condition = _omit_empty({"type": check, "category": category, "status": "True", "reason": reason,
                             "message": event.message, "lastHeartbeatTime": at or "",
                             "lastTransitionTime": at or ""},
                            "reason", "message", "lastHeartbeatTime", "lastTransitionTime")
    key = hashlib.sha256(f"{event.run_id}\x00{event.event_id}".encode()).hexdigest()
    return _omit_empty({
        "dedupKey": f"run-fault:v1:{key}", "node": node, "scope": "node", "category": category,
        "checkType": check, "healthState": "unhealthy", "status": "True", "evidenceStatus": "fresh",
        "reason": reason, "message": event.message, "observedAt": at, "transitionAt": at, "rawCondition": condition,
    }, "reason", "message", "observedAt", "transitionAt")


def _bounds(runs: Sequence[RunRow]) -> tuple[GoMap, str]:
    """``experimentBounds``: the earliest start (else creation), the latest completion, active while one runs."""
    started: str | None = None
    completed: str | None = None
    active, complete_starts, complete_ends = False, True, True
    for run in runs:
        start = _time(run.started_at or run.created_at)
        if start is None:
            complete_starts = False
        elif started is None or parse_time(start) < parse_time(started):
            started = start
        if not (run.completed_at or "").strip():
            active, complete_ends = True, False
            continue
        end = _time(run.completed_at)
        if end is None:
            complete_ends = False
        elif completed is None or parse_time(end) > parse_time(completed):
            completed = end
    bounds = _omit_empty({"startedAt": started, "completedAt": completed, "active": active},
                         "startedAt", "completedAt")
    if started is None:
        return bounds, "unknown"
    return bounds, "exact" if complete_starts and (active or complete_ends) else "partial"


def _sorted(value: Any) -> Any:
    """Every object a map, as Go's decode into ``map[string]any`` leaves it: keys sorted at every depth."""
    if isinstance(value, Mapping):
        return GoMap({k: _sorted(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return [_sorted(v) for v in value]
    return value


def _envelope(body: Mapping[str, Any], scope: Mapping[str, Any], state: str) -> GoMap:
    return _sorted({**body, "scope": scope, "state": state})


def scoped_error(reason: str, scope: Mapping[str, Any]) -> GoMap:
    """``writeScopedError``: ``{"reason", "scope", "state": "unavailable"}``, keys sorted at every depth."""
    return _envelope({"reason": reason}, scope, "unavailable")


def unavailable_response(experiment_id: str, generated_at: str, scope: Mapping[str, Any],
                         reasons: Iterable[str]) -> GoMap:
    """``unavailableExperimentFaultResponse`` with ``reasons``: a source that has no fault information."""
    coverage = _omit_empty({"correlation": "unavailable", "allocation": "unavailable", "timeBounds": "unknown",
                            "evidence": "unavailable", "reasons": list(reasons)}, "reasons")
    body = {"experimentId": experiment_id, "generatedAt": generated_at, "allocatedNodes": [],
            "timeBounds": GoMap({"active": False}), "coverage": coverage, "provenance": GoMap(PROVENANCE),
            "events": []}
    return _envelope(body, scope, "unavailable")


def fault_response(experiment_id: str, generated_at: str, scope: Mapping[str, Any], runs: Sequence[RunRow],
                   events: Sequence[RunEvent]) -> GoMap:
    """The experiment's runs' ``fault`` events in TauGrid's shape. ``allocatedNodes`` are the nodes the faults
    name; the allocation is ``exact`` when every run has a fault naming its node, ``partial`` when some do,
    ``unavailable`` when none does (the store records no node allocation of its own)."""
    items = sorted((fault_event_json(e) for e in events),
                   key=lambda e: (e["node"], e["category"], e["checkType"], e["dedupKey"]))
    nodes = sorted({e["node"] for e in items})
    with_node = {e.run_id for e in events if (e.payload or {}).get("node")}
    reasons: list[str] = []
    if not nodes:
        allocation = "unavailable"
        reasons.append("no run of this experiment recorded a fault naming its node")
    elif any(r.run_id not in with_node for r in runs):
        allocation = "partial"
        reasons.append("one or more experiment runs recorded no fault, so their node is not known")
    else:
        allocation = "exact"
    bounds, bounds_state = _bounds(runs)
    coverage = _omit_empty({"correlation": "exact", "allocation": allocation, "timeBounds": bounds_state,
                            "evidence": "exact", "reasons": reasons}, "reasons")
    body = {"experimentId": experiment_id, "generatedAt": generated_at, "allocatedNodes": nodes,
            "timeBounds": bounds, "coverage": coverage, "provenance": GoMap(PROVENANCE), "events": items}
    return _envelope(body, scope, "exact")


_STATE = {"type": "string", "enum": list(COVERAGE_STATES)}
_CONDITION = {
    "type": "object", "required": ["type", "category", "status"],
    "properties": {k: {"type": "string"} for k in ("type", "category", "status", "reason", "message",
                                                    "lastHeartbeatTime", "lastTransitionTime")},
}
EXPERIMENT_FAULTS = {
    "type": "object",
    "description": "TauGrid's experimentFaultResponse plus writeScopedJSON's scope and state; keys sorted.",
    "required": ["allocatedNodes", "coverage", "events", "experimentId", "generatedAt", "provenance", "scope",
                 "state", "timeBounds"],
    "properties": {
        "allocatedNodes": {"type": "array", "items": {"type": "string"}},
        "missingNodes": {"type": "array", "items": {"type": "string"}},
        "coverage": {"type": "object", "required": ["allocation", "correlation", "evidence", "timeBounds"],
                     "properties": {"allocation": _STATE, "correlation": _STATE, "evidence": _STATE,
                                    "timeBounds": _STATE, "reasons": {"type": "array", "items": {"type": "string"}}}},
        "events": {"type": "array", "items": {
            "type": "object",
            "required": ["category", "checkType", "dedupKey", "evidenceStatus", "healthState", "node",
                         "rawCondition", "scope", "status"],
            "properties": {
                **{k: {"type": "string"} for k in ("category", "checkType", "dedupKey", "node", "status", "reason",
                                                    "message", "observedAt", "transitionAt")},
                "scope": {"type": "string", "enum": ["node"]},
                "healthState": {"type": "string", "enum": ["healthy", "unhealthy", "unknown"]},
                "evidenceStatus": {"type": "string", "enum": ["fresh", "stale", "future", "malformed", "duplicate"]},
                "rawCondition": _CONDITION,
            }}},
        "experimentId": {"type": "string"},
        "generatedAt": {"type": "string", "format": "date-time"},
        "provenance": {"type": "object", "required": ["allocation", "evidence", "limitation"],
                       "properties": {k: {"type": "string"} for k in ("allocation", "evidence", "limitation")}},
        "scope": {"type": "object", "description": "the served workspace, as /api/portal/workspaces names it"},
        "state": {"type": "string", "description": "the coverage's correlation (unavailable without fault data)"},
        "timeBounds": {"type": "object", "required": ["active"],
                       "properties": {"startedAt": {"type": "string"}, "completedAt": {"type": "string"},
                                      "active": {"type": "boolean"}}},
    },
}
