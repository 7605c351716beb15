"""Every v2 error path answers with TauGrid's envelope, status, code and classification, in TauGrid's check order."""

from __future__ import annotations

import shutil

import httpx
import pytest

from fixtures.portal import TOKEN, build_store, serve

from .expected import envelope

V2 = "/api/v2/stellar"
SERIES = f"{V2}/runs/run-a/series"
EXACT = {"target": "run-a", "metric": "train/loss"}
NOT_FOUND = envelope("NOT_FOUND", "requested experiment data was not found", 404)
ROUTE_NOT_FOUND = envelope("NOT_FOUND", "route was not found", 404)


def _error(r: httpx.Response, status: int, code: str, message: str | None = None) -> None:
    assert r.status_code == status, r.text
    body = r.json()
    if message is None:
        message = body["error"]["message"]
        assert message
    assert body == envelope(code, message, status)
    assert r.headers["x-content-type-options"] == "nosniff" and r.headers["x-frame-options"] == "DENY"


def test_invalid_source(api):
    _error(api.get(f"{V2}/runs/run-a", params={"source": "adx"}), 400, "INVALID_SOURCE",
           "source must be local, kusto, or auto")


def test_kusto_without_a_cluster_is_a_retryable_dependency_failure(api):
    r = api.get(f"{V2}/runs/run-a", params={"source": "KUSTO"})
    _error(r, 503, "SOURCE_UNAVAILABLE")
    assert r.json()["error"]["retryable"] is True and r.json()["error"]["classification"] == "dependency"


def test_foreign_workspace_is_forbidden(api):
    _error(api.get(f"{V2}/runs/run-a", params={"workspace": "other"}), 403, "WORKSPACE_FORBIDDEN")


@pytest.mark.parametrize("params", [{"metric": "train/loss"}, {"target": "run-a"}, {"target": " ", "metric": "m"}])
def test_series_needs_target_and_metric(api, params):
    _error(api.get(SERIES, params=params), 400, "EXACT_SERIES_REQUIRED",
           "target and metric query parameters are required")


def test_series_run_id_query_must_match_the_path(api):
    _error(api.get(SERIES, params={**EXACT, "run_id": "run-b"}), 400, "RUN_MISMATCH",
           "run_id query parameter must match the run path")


@pytest.mark.parametrize(("params", "message"), [
    ({"max_points": "0"}, "max_points must be at least 1"),
    ({"max_points": "12001"}, "max_points must be at most 12000"),
    ({"max_points": "abc"}, "max_points must be an integer"),
    ({"max_points": "1_000"}, "max_points must be an integer"),
    ({"start_step": "1.5"}, "start_step must be an integer"),
    ({"end_step": "9223372036854775808"}, "end_step must be an integer"),
    ({"start_step": "10", "end_step": "9"}, "start_step must be <= end_step"),
    ({"step_interval": "0"}, "step_interval must be at least 1"),
    ({"step_interval": "x"}, "step_interval must be an integer"),
])
def test_series_parameters_are_validated(api, params, message):
    _error(api.get(SERIES, params={**EXACT, **params}), 400, "INVALID_ARGUMENT", message)


def test_max_points_limits_are_inclusive(api):
    for value in ("1", "12000"):
        assert api.get(SERIES, params={**EXACT, "max_points": value}).status_code == 200


@pytest.mark.parametrize(("params", "message"), [
    ({"limit": "0"}, "limit must be an integer between 1 and 200"),
    ({"limit": "201"}, "limit must be an integer between 1 and 200"),
    ({"limit": "ten"}, "limit must be an integer"),
    ({"tag": "novalue"}, "tag filters must be key=value"),
    ({"since": "yesterday"}, "since must be RFC3339, Go duration, or Nd"),
    ({"since": "1h", "window": "2h"}, "since cannot be combined with window/start/end"),
    ({"start": "2025-01-01T00:00:00Z"}, "start and end must be provided together"),
])
def test_run_listing_parameters_are_validated(api, params, message):
    _error(api.get(f"{V2}/experiments/exp-1/runs", params=params), 400, "INVALID_ARGUMENT", message)


def test_run_listing_target_must_match_the_path(api):
    _error(api.get(f"{V2}/experiments/exp-1/runs", params={"target": "exp-2"}), 400, "TARGET_MISMATCH",
           "target query parameter must match the experiment path")


@pytest.mark.parametrize("path", ["/runs/nope", "/runs/nope/metrics", "/runs/nope/series?target=nope&metric=m"])
def test_unknown_run_is_not_found(api, path):
    r = api.get(V2 + path)
    assert r.status_code == 404 and r.json() == NOT_FOUND


@pytest.mark.parametrize("params", [{"target": "exp-9", "metric": "train/loss"},
                                    {**EXACT, "project": "other-project"}])
def test_a_target_or_project_the_run_does_not_belong_to_is_not_found(api, params):
    r = api.get(SERIES, params=params)
    assert r.status_code == 404 and r.json() == NOT_FOUND


@pytest.mark.parametrize("path", ["/api/v2/stellar/runs/run-a/bogus", "/api/v2/stellar/runs/run-a/series/x",
                                  "/api/v2/stellar/experiments/exp-1", "/api/v2/stellar/experiments/exp-1/runs/x",
                                  "/api/v2/stellar/nothing", "/api/v2/stellar", "/api/v1/stellar/series",
                                  "/no/such/page"])
def test_unknown_routes_are_not_found(api, path):
    r = api.get(path)
    assert r.status_code == 404 and r.json() == ROUTE_NOT_FOUND


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
@pytest.mark.parametrize("path", ["/runs/run-a", "/runs/run-a/series", "/experiments/exp-1/runs"])
def test_only_get_is_allowed(api, method, path):
    _error(api.request(method, V2 + path), 405, "METHOD_NOT_ALLOWED", "method not allowed")


def test_a_bad_run_path_id_is_reported_before_the_method(api):
    # TauGrid's run routes decode the id first; the experiment route checks the method first.
    _error(api.post(f"{V2}/runs/%2e%2e"), 400, "INVALID_PATH")
    _error(api.post(f"{V2}/experiments/%2e%2e/runs"), 405, "METHOD_NOT_ALLOWED")


def test_check_order_source_workspace_target_run_id_lookup_params(api):
    bad = {"source": "x", "workspace": "other", "max_points": "0", "run_id": "zzz"}
    _error(api.get(f"{V2}/runs/nope/series", params=bad), 400, "INVALID_SOURCE")
    bad.pop("source")
    _error(api.get(f"{V2}/runs/nope/series", params=bad), 403, "WORKSPACE_FORBIDDEN")
    bad.pop("workspace")
    _error(api.get(f"{V2}/runs/nope/series", params=bad), 400, "EXACT_SERIES_REQUIRED")
    bad.update(target="nope", metric="m")
    _error(api.get(f"{V2}/runs/nope/series", params=bad), 400, "RUN_MISMATCH")
    bad.pop("run_id")
    _error(api.get(f"{V2}/runs/nope/series", params=bad), 404, "NOT_FOUND")
    bad["target"] = "run-a"
    _error(api.get(f"{V2}/runs/run-a/series", params=bad), 400, "INVALID_ARGUMENT")


def test_kusto_failure_comes_after_the_request_checks(api):
    _error(api.get(SERIES, params={"source": "kusto"}), 400, "EXACT_SERIES_REQUIRED")
    _error(api.get(SERIES, params={**EXACT, "source": "kusto"}), 503, "SOURCE_UNAVAILABLE")


def test_without_a_cluster_kusto_is_unavailable_in_words_and_auto_is_the_store(api):
    r = api.get(f"{V2}/runs/run-a", params={"source": "kusto"})
    _error(r, 503, "SOURCE_UNAVAILABLE")
    assert "--kusto-cluster" in r.json()["error"]["message"]
    body = api.get(f"{V2}/runs/run-a", params={"source": "auto"}).json()
    assert body["metadata"]["provenance"] == {"requested_source": "auto", "served_sources": ["local"]}
    assert body["metadata"]["availability"] == {"state": "available"} and "warnings" not in body["metadata"]


def test_a_store_failure_is_an_internal_retryable_error_not_a_trace(tmp_path):
    store = build_store(tmp_path / "store")
    with serve(store) as server, httpx.Client(
            base_url=f"http://127.0.0.1:{server.port}", headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        shutil.rmtree(store / "metrics")  # the index still names the files
        r = client.get(f"{V2}/runs/run-b/series", params={"target": "run-b", "metric": "train/loss"})
        _error(r, 500, "INTERNAL", "experiment data request failed")
        assert r.json()["error"]["classification"] == "internal" and r.json()["error"]["retryable"] is True
