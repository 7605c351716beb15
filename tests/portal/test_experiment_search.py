"""TauGrid's /experiments/search over the local store: shape, filters, limit and cursor, errors; our config filters and
include=config (expectations from TAUGRID-REFERENCE §3.3 and expapi/v2.go's v2Experiment, not the Portal's output)."""

from __future__ import annotations

import httpx
import pytest

from .expected import RFC3339_SECONDS, envelope, expected_metadata

SEARCH = "/api/v2/stellar/experiments/search"
STARTED = "2025-10-09T08:53:20Z"  # every run's first point (config_store.BASE_NS)
# v2Experiment's JSON key order.
EXPERIMENT_KEYS = ["experiment_id", "project", "name", "description", "created_at", "updated_at", "run_count",
                   "run_group_count", "state_counts", "lifecycle_counts", "latest_run_at", "metric_names"]


def _ok(r: httpx.Response) -> dict:
    assert r.status_code == 200, r.text
    return r.json()


def _ids(body: dict) -> list[str]:
    return [e["experiment_id"] for e in body["experiments"]]


def _error(r: httpx.Response) -> tuple[int, str, str]:
    body = r.json()
    assert body == envelope(body["error"]["code"], body["error"]["message"], r.status_code)
    return r.status_code, body["error"]["code"], body["error"]["message"]


def test_search_lists_the_workspaces_experiments_with_taugrids_summary(capi):
    body = _ok(capi.get(SEARCH))
    assert list(body) == ["metadata", "experiments"]
    assert body["metadata"] == expected_metadata(body["metadata"]["generated_at"])
    plain, sweep = body["experiments"]  # same latest run time: by experiment id
    for e in (plain, sweep):
        assert RFC3339_SECONDS.match(e["created_at"]) and RFC3339_SECONDS.match(e["updated_at"])
        assert [k for k in EXPERIMENT_KEYS if k in e] == list(e)
    assert sweep == {
        "experiment_id": "sweep", "project": "proj", "name": "sweep",
        "created_at": sweep["created_at"], "updated_at": sweep["updated_at"],
        "run_count": 4, "run_group_count": 1, "state_counts": {"running": 4}, "lifecycle_counts": {"running": 4},
        "latest_run_at": STARTED, "metric_names": ["train/loss"],
    }
    assert plain["run_count"] == 1 and plain["metric_names"] == ["eval/acc"]
    # hidden-1's experiment lives in workspace "other" only: not listed.
    assert "hidden" not in _ids(body)


@pytest.mark.parametrize(("params", "expected"), [
    ({"q": "PLAIN"}, ["plain"]),
    ({"q": "eval/"}, ["plain"]),  # a metric name of its runs
    ({"q": "arm"}, ["sweep"]),  # a tag key of its runs
    ({"q": "base"}, ["sweep"]),  # a tag value
    ({"q": "proj"}, ["plain", "sweep"]),
    ({"q": "nothing-like-it"}, []),
    ({"project": "proj"}, ["plain", "sweep"]),
    ({"project": "zzz"}, []),
    ({"tag": "arm=base"}, ["sweep"]),
    ({"tag": "arm=other"}, []),
    ({"metric_name": "eval/acc"}, ["plain"]),
    ({"metric": "train/loss"}, ["sweep"]),
    ({"lifecycle": "running"}, ["plain", "sweep"]),
    ({"lifecycle": "failed"}, []),
    ({"since": STARTED}, ["plain", "sweep"]),
    ({"since": "2999-01-01T00:00:00Z"}, []),
    ({"start": "2025-10-09T00:00:00Z", "end": "2025-10-10T00:00:00Z"}, ["plain", "sweep"]),
    ({"start": "2024-01-01T00:00:00Z", "end": "2024-01-02T00:00:00Z"}, []),
    ({"config.lr": "0.1"}, ["sweep"]),  # hidden-1 has lr 0.1 too, in another workspace
    ({"config.optimizer.name": "sgd"}, ["sweep"]),
    ({"config.lr": "0.1", "config.optimizer.name": "sgd"}, []),  # one run must match every config filter
    ({"config.lr": "0.5"}, []),
])
def test_search_filters(capi, params, expected):
    assert _ids(_ok(capi.get(SEARCH, params=params))) == expected


def test_include_config_adds_each_experiments_config_space(capi):
    body = _ok(capi.get(SEARCH, params={"include": "config"}))
    spaces = {e["experiment_id"]: e["config"] for e in body["experiments"]}
    assert spaces == {
        "plain": {},
        "sweep": {"batch": [32], "layers": ["[64,64]"], "lr": [0.00001, 0.03, 0.1], "optimizer.name": ["adam", "sgd"]},
    }
    assert "config" not in _ok(capi.get(SEARCH))["experiments"][0]


def test_search_pages_by_a_cursor_bound_to_its_query(capi):
    first = _ok(capi.get(SEARCH, params={"limit": 1}))
    assert _ids(first) == ["plain"]
    cursor = first["next_cursor"]
    second = _ok(capi.get(SEARCH, params={"limit": 1, "cursor": cursor}))
    assert _ids(second) == ["sweep"] and "next_cursor" not in second
    assert _error(capi.get(SEARCH, params={"limit": 1, "cursor": cursor, "q": "p"})) == (
        400, "INVALID_CURSOR", "cursor does not match this query")
    assert _error(capi.get(SEARCH, params={"cursor": cursor, "config.lr": "0.1"}))[1] == "INVALID_CURSOR"
    # A run listing's cursor is not a search cursor.
    run_cursor = _ok(capi.get("/api/v2/stellar/experiments/sweep/runs", params={"limit": 1}))["next_cursor"]
    assert _error(capi.get(SEARCH, params={"cursor": run_cursor}))[1] == "INVALID_CURSOR"
    assert _error(capi.get(SEARCH, params={"cursor": "!!"})) == (400, "INVALID_CURSOR", "cursor is malformed")


@pytest.mark.parametrize(("method", "params", "expected"), [
    ("GET", {"limit": "0"}, (400, "INVALID_ARGUMENT", "limit must be an integer between 1 and 200")),
    ("GET", {"limit": "201"}, (400, "INVALID_ARGUMENT", "limit must be an integer between 1 and 200")),
    ("GET", {"limit": "ten"}, (400, "INVALID_ARGUMENT", "limit must be an integer")),
    ("GET", {"metric_filter": "loss<1"}, (400, "INVALID_ARGUMENT", "metric_filter is not supported by the local Portal")),
    ("GET", {"since": "yesterday"}, (400, "INVALID_ARGUMENT", "since must be RFC3339, Go duration, or Nd")),
    ("GET", {"since": "1h", "window": "1h"}, (400, "INVALID_ARGUMENT", "since cannot be combined with window/start/end")),
    ("GET", {"start": STARTED}, (400, "INVALID_ARGUMENT", "start and end must be provided together")),
    ("GET", {"tag": "novalue"}, (400, "INVALID_ARGUMENT", "tag filters must be key=value")),
    ("GET", {"config.": "1"}, (400, "INVALID_ARGUMENT", "config filters must be config.<key>=<value>")),
    ("GET", {"include": "runs"}, (400, "INVALID_ARGUMENT", "include must be one of: config")),
    ("GET", {"source": "nope"}, (400, "INVALID_SOURCE", "source must be local, kusto, or auto")),
    ("GET", {"workspace": "other"}, (403, "WORKSPACE_FORBIDDEN", None)),
    ("GET", {"source": "kusto"}, (503, "SOURCE_UNAVAILABLE", None)),
    ("POST", {}, (405, "METHOD_NOT_ALLOWED", "method not allowed")),
])
def test_search_answers_bad_requests_with_taugrids_errors(capi, method, params, expected):
    status, code, message = _error(capi.request(method, SEARCH, params=params))
    assert (status, code) == expected[:2]
    if expected[2] is not None:
        assert message == expected[2]


def test_search_is_a_route_of_its_own(capi):
    assert _error(capi.get(SEARCH + "/more")) == (404, "NOT_FOUND", "route was not found")
