"""Expected v2 shapes written from TAUGRID-REFERENCE §3 (not from the Portal's output), for the contract tests."""

from __future__ import annotations

import re

RFC3339_SECONDS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")

# JSON key order of TauGrid's Go structs (v2Run, v2Metric, v2SeriesResponse, ...).
RUN_KEYS = ["run_id", "experiment_id", "project", "run_group_id", "parent_run_id", "state", "lifecycle_state",
            "successful", "success_reasons", "owner", "created_at", "started_at", "completed_at", "config_hash",
            "code_sha", "image_digest", "result_uri", "tags", "metric_names", "source"]
METRIC_KEYS = ["name", "count", "finite_count", "non_finite_count", "min_step", "max_step", "latest_step",
               "latest_wall_time", "latest_value", "min_value", "max_value", "updated_at"]
SERIES_KEYS = ["metadata", "target", "run_id", "metric", "start_step", "end_step", "step_interval", "max_points",
               "source_points", "returned_points", "points"]
METADATA_KEYS = ["generated_at", "provenance", "freshness", "availability", "partial", "warnings"]


def in_order(keys, reference: list[str]) -> bool:
    """Keys appear in the reference's order (omitted optional keys allowed)."""
    positions = [reference.index(k) for k in keys]
    return positions == sorted(positions)


def expected_metadata(generated_at: str, *, requested: str = "local", served: list[str] | None = None,
                      partial: bool = False, warnings: list[str] | None = None) -> dict:
    """§3.1 metadata: freshness immediate iff served == [local]; degraded iff partial or warnings."""
    served = served or [requested]
    availability = {"state": "degraded" if partial or warnings else "available"}
    if warnings:
        availability["reasons"] = warnings
    out = {
        "generated_at": generated_at,
        "provenance": {"requested_source": requested, "served_sources": served},
        "freshness": {"state": "immediate" if served == ["local"] else "unknown", "as_of": generated_at},
        "availability": availability,
        "partial": partial,
    }
    if warnings:
        out["warnings"] = warnings
    return out


def envelope(code: str, message: str, status: int) -> dict:
    """§3.4: 401/403 authorization, 404 not_found, 502/503/504 dependency (retryable), ≥500 internal, else client."""
    if status in (401, 403):
        classification, retryable = "authorization", False
    elif status == 404:
        classification, retryable = "not_found", False
    elif status in (502, 503, 504):
        classification, retryable = "dependency", True
    elif status >= 500:
        classification, retryable = "internal", True
    else:
        classification, retryable = "client", False
    return {"error": {"code": code, "message": message, "classification": classification, "retryable": retryable}}
