"""The page-data API (``/stellar/data/...``): its answers, v2's checks and envelope, and PortalClient's methods."""

from __future__ import annotations

import math

import httpx
import pytest

from fixtures.portal import BASE_NS, LOSS_POINTS, TOKEN, serve
from taunotebook.client import ClientError, DependencyError, NotFoundError, PortalClient
from taunotebook.client.models import Experiment

POINTS = "/stellar/data/runs/run-b/points"


def _error(response: httpx.Response) -> tuple[int, str]:
    return response.status_code, response.json()["error"]["code"]


def test_points_say_where_non_finite_values_sit_with_wall_times(api):
    body = api.get(POINTS, params={"metric": "train/loss"}).json()
    assert body["run_id"] == "run-b" and body["metric"] == "train/loss"
    assert body["non_finite_count"] == 2
    assert body["non_finite"] == [{"step": 3, "value": "NaN", "wall_time": (BASE_NS + 3_000_000) // 1000},
                                  {"step": 7, "value": "+Inf", "wall_time": (BASE_NS + 7_000_000) // 1000}]
    assert body["wall_time"]["step"] == list(range(10))
    assert body["metadata"]["provenance"] == {"requested_source": "local", "served_sources": ["local"]}


def test_points_in_a_step_range_count_only_that_range(api):
    body = api.get(POINTS, params={"metric": "train/loss", "start_step": 4, "end_step": 9}).json()
    assert body["non_finite_count"] == 1 and [m["step"] for m in body["non_finite"]] == [7]
    assert body["wall_time"]["step"] == [4, 5, 6, 7, 8, 9]


def test_wall_time_samples_of_a_long_series_are_bounded(api):
    body = api.get("/stellar/data/runs/run-a/points", params={"metric": "train/loss"}).json()
    assert body["non_finite_count"] == 0 and body["non_finite"] == []
    steps = body["wall_time"]["step"]
    assert steps[0] == 0 and steps[-1] == LOSS_POINTS - 1 and len(steps) <= 2000


def test_a_metric_the_run_does_not_have_has_empty_page_data(api):
    body = api.get(POINTS, params={"metric": "nope"}).json()
    assert (body["non_finite_count"], body["non_finite"], body["wall_time"]) == (0, [], {"step": [], "wall_time": []})


@pytest.mark.parametrize(("path", "params", "expected"), [
    (POINTS, {}, (400, "EXACT_SERIES_REQUIRED")),
    (POINTS, {"metric": "train/loss", "start_step": "5", "end_step": "4"}, (400, "INVALID_ARGUMENT")),
    (POINTS, {"metric": "train/loss", "start_step": "x"}, (400, "INVALID_ARGUMENT")),
    (POINTS, {"metric": "train/loss", "source": "bogus"}, (400, "INVALID_SOURCE")),
    (POINTS, {"metric": "train/loss", "workspace": "other"}, (403, "WORKSPACE_FORBIDDEN")),
    (POINTS, {"metric": "train/loss", "source": "kusto"}, (503, "SOURCE_UNAVAILABLE")),
    (POINTS, {"metric": "train/loss", "project": "other-proj"}, (404, "NOT_FOUND")),
    (POINTS, {"metric": "train/loss", "target": "exp-9"}, (404, "NOT_FOUND")),
    ("/stellar/data/runs/run-other/points", {"metric": "train/loss"}, (404, "NOT_FOUND")),
    ("/stellar/data/runs/run-b/nope", {}, (404, "NOT_FOUND")),
    ("/stellar/data/nope", {}, (404, "NOT_FOUND")),
    ("/stellar/data/experiments", {"workspace": "other"}, (403, "WORKSPACE_FORBIDDEN")),
    ("/stellar/data/experiments", {"source": "kusto"}, (503, "SOURCE_UNAVAILABLE")),
])
def test_page_data_answers_bad_requests_as_v2_does(api, path, params, expected):
    assert _error(api.get(path, params=params)) == expected


def test_page_data_is_get_only_and_token_protected(portal_server, api):
    assert _error(api.post(POINTS, params={"metric": "train/loss"})) == (405, "METHOD_NOT_ALLOWED")
    assert _error(httpx.get(portal_server.base_url + POINTS, params={"metric": "train/loss"})) == (401, "UNAUTHORIZED")


def test_experiments_list_the_workspaces_experiments_with_run_counts(api):
    body = api.get("/stellar/data/experiments").json()
    # run-other (workspace "other") is not counted; run-b (untagged) is.
    assert body["experiments"] == [{"experiment_id": "exp-1", "project": "proj", "run_count": 2},
                                   {"experiment_id": "exp-page", "project": "proj", "run_count": 7}]
    assert api.get("/stellar/data/experiments", params={"project": "zzz"}).json()["experiments"] == []


def test_the_client_reads_page_data_as_typed_models(portal_server):
    with PortalClient(portal_server.base_url, TOKEN, project="proj") as client:
        details = client.point_details("run-b", "train/loss")
        assert details.non_finite_count == 2
        (nan, inf) = details.non_finite
        assert (nan.step, inf.step) == (3, 7) and math.isnan(nan.value) and inf.value == math.inf
        assert list(details.wall_time_steps) == list(range(10)) and len(details.wall_times) == 10
        ranged = client.point_details("run-b", "train/loss", start_step=5)
        assert [p.step for p in ranged.non_finite] == [7]
        experiments = client.experiments()
        assert list(experiments) == [Experiment("exp-1", "proj", 2), Experiment("exp-page", "proj", 7)]
        with pytest.raises(ClientError) as info:
            client.point_details("run-b", "train/loss", start_step=2**63)
        assert info.value.code == "INVALID_ARGUMENT" and "start_step" in info.value.message
        with pytest.raises(NotFoundError):
            client.point_details("run-zzz", "train/loss")


def test_the_client_says_when_page_data_is_unavailable(portal_store):
    with serve(portal_store, default_source="kusto") as server, PortalClient(
            f"http://127.0.0.1:{server.port}", TOKEN, retries=0) as client:
        with pytest.raises(DependencyError) as info:
            client.point_details("run-b", "train/loss")
        assert info.value.code == "SOURCE_UNAVAILABLE" and info.value.retryable
