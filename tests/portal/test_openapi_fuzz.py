"""Schemathesis against /openapi.json: generated requests never get a 5xx, and answers match the document."""

from __future__ import annotations

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

V2_READS = ["/api/v2/stellar/runs/{run_id}", "/api/v2/stellar/runs/{run_id}/metrics",
            "/api/v2/stellar/runs/{run_id}/series", "/api/v2/stellar/experiments/{experiment_id}/runs"]


@pytest.fixture(scope="session")
def portal_schema(portal_server):
    return schemathesis.openapi.from_url(f"{portal_server.base_url}/openapi.json")


@pytest.mark.parametrize("path", V2_READS)
def test_generated_requests_never_get_a_server_error(portal_schema, portal_server, path):
    operation = portal_schema[path]["GET"]
    headers = {"Authorization": f"Bearer {portal_server.token}"}

    @given(case=operation.as_strategy())
    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    def check(case):
        response = case.call(base_url=portal_server.base_url, headers=headers)
        checks = [status_code_conformance, content_type_conformance, response_schema_conformance]
        if str((case.query or {}).get("source", "")).strip().lower() == "kusto":
            # The one 5xx by contract: Kusto is a dependency this Portal does not have (retryable 503).
            assert response.status_code in (400, 403, 404, 503), response.text
        else:
            checks.append(not_a_server_error)
        case.validate_response(response, checks=checks)

    check()


def test_the_document_names_every_v2_read_and_the_error_envelope(portal_server):


    doc = httpx.get(f"{portal_server.base_url}/openapi.json").json()
    assert set(doc["paths"]) == {
        "/api/v2/stellar/runs/{run_id}", "/api/v2/stellar/runs/{run_id}/metrics",
        "/api/v2/stellar/runs/{run_id}/series", "/api/v2/stellar/experiments/{experiment_id}/runs",
    }
    series = {p["name"]: p for p in doc["paths"]["/api/v2/stellar/runs/{run_id}/series"]["get"]["parameters"]}
    assert series["max_points"]["schema"] == {"type": "integer", "minimum": 1, "maximum": 12000, "default": 8000}
    listing = doc["paths"]["/api/v2/stellar/experiments/{experiment_id}/runs"]["get"]
    limit = next(p for p in listing["parameters"] if p["name"] == "limit")
    assert limit["schema"] == {"type": "integer", "minimum": 1, "maximum": 200, "default": 50}
    error = doc["components"]["schemas"]["ErrorEnvelope"]["properties"]["error"]
    assert error["required"] == ["code", "message", "classification", "retryable"]
