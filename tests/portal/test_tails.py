"""``GET /stellar/data/runs/{run_id}/tails``: several metrics' new points in one answer, and PortalClient.tails."""

from __future__ import annotations

import httpx
import pytest

from fixtures.portal import LOSS_POINTS, loss_value
from taunotebook.client import NotFoundError, PortalClient

TAILS = "/stellar/data/runs/run-a/tails"


def _error(response: httpx.Response) -> tuple[int, str, str]:
    error = response.json()["error"]
    return response.status_code, error["code"], error["message"]


def test_new_points_of_several_metrics_with_their_catalog_entries_in_one_answer(api):
    body = api.get(TAILS, params=[("metric", "train/loss"), ("since", str(LOSS_POINTS - 3)),
                                  ("metric", "eval/acc"), ("since", "480")]).json()
    assert body["run_id"] == "run-a" and body["run"]["state"] == "succeeded"
    assert body["run"]["lifecycle_state"] == "succeeded" and body["run"]["project"] == "proj"
    loss, acc = body["metrics"]
    assert loss["name"] == "train/loss" and loss["since"] == LOSS_POINTS - 3 and loss["changed"] is True
    assert loss["step"] == [LOSS_POINTS - 3, LOSS_POINTS - 2, LOSS_POINTS - 1]
    assert loss["value"] == [loss_value(s) for s in loss["step"]]
    assert loss["count"] == LOSS_POINTS and loss["latest_step"] == LOSS_POINTS - 1  # the v2 catalog entry
    assert acc["step"] == [480, 490] and acc["value"] == [0.96, 0.98] and acc["count"] == 50
    assert body["catalog"]["total"] == 3 and body["catalog"]["names"] == ["eval/acc", "tau/run_status", "train/loss"]


def test_without_since_the_whole_range_comes_reduced_to_max_points(api):
    body = api.get(TAILS, params={"metric": "train/loss", "max_points": "400"}).json()
    loss = body["metrics"][0]
    assert loss["since"] is None and loss["source_points"] == LOSS_POINTS
    assert len(loss["step"]) <= 400 and loss["step"][0] == 0 and loss["step"][-1] == LOSS_POINTS - 1
    assert body["metadata"]["partial"] is True


def test_a_metric_whose_count_and_latest_step_are_held_has_no_points_read(api):
    last = str(LOSS_POINTS - 1)
    body = api.get(TAILS, params=[("metric", "train/loss"), ("since", last), ("count", str(LOSS_POINTS))]).json()
    loss = body["metrics"][0]
    assert loss["changed"] is False and loss["step"] == [] and loss["count"] == LOSS_POINTS
    moved = api.get(TAILS, params=[("metric", "train/loss"), ("since", last), ("count", "1")]).json()
    assert moved["metrics"][0]["changed"] is True and moved["metrics"][0]["step"] == [LOSS_POINTS - 1]


def test_names_come_only_when_they_changed_since_the_cursor(api):
    first = api.get(TAILS).json()
    assert first["metrics"] == [] and first["catalog"]["names"]
    again = api.get(TAILS, params={"catalog_since": first["catalog"]["cursor"]}).json()
    assert "names" not in again["catalog"] and again["catalog"]["cursor"] == first["catalog"]["cursor"]
    assert again["catalog"]["total"] == 3
    stale = api.get(TAILS, params={"catalog_since": "0000000000000000"}).json()
    assert stale["catalog"]["names"] == first["catalog"]["names"]


def test_a_metric_the_run_does_not_have_is_said_missing(api):
    body = api.get(TAILS, params={"metric": "nope"}).json()
    assert body["metrics"] == [{"name": "nope", "missing": True, "since": None, "changed": False, "step": [],
                                "value": []}]


@pytest.mark.parametrize(("params", "expected"), [
    ([("metric", "")], (400, "INVALID_ARGUMENT", "metric must not be empty")),
    ([("metric", "a"), ("metric", "a")], (400, "INVALID_ARGUMENT", "each metric may be named once")),
    ([("metric", "a"), ("since", "1"), ("since", "2")],
     (400, "INVALID_ARGUMENT", "since is given 2 times for 1 metric parameters")),
    ([("metric", "a"), ("metric", "b"), ("since", ""), ("since", "x")],
     (400, "INVALID_ARGUMENT", "since[1] must be an integer")),
    ([("metric", "a"), ("count", "1.5")], (400, "INVALID_ARGUMENT", "count[0] must be an integer")),
    ([("metric", "a"), ("max_points", "0")], (400, "INVALID_ARGUMENT", "max_points must be between 1 and 12000")),
    ([("metric", "a"), ("max_points", "12001")],
     (400, "INVALID_ARGUMENT", "max_points must be between 1 and 12000")),
    ([("metric", f"m{i}") for i in range(257)],
     (400, "INVALID_ARGUMENT", "at most 256 metric parameters per request, got 257")),
    ([("metric", "a"), ("source", "bogus")], (400, "INVALID_SOURCE", None)),
    ([("metric", "a"), ("workspace", "other")], (403, "WORKSPACE_FORBIDDEN", None)),
    ([("metric", "a"), ("project", "other-proj")], (404, "NOT_FOUND", None)),
])
def test_bad_requests_are_v2_envelopes_naming_the_parameter(api, params, expected):
    status, code, message = _error(api.get(TAILS, params=params))
    assert (status, code) == expected[:2]
    if expected[2] is not None:
        assert message == expected[2]


def test_another_workspaces_run_is_not_found(api):
    assert _error(api.get("/stellar/data/runs/run-other/tails", params={"metric": "train/loss"}))[:2] == (
        404, "NOT_FOUND")
    assert _error(api.post(TAILS))[:2] == (405, "METHOD_NOT_ALLOWED")


def test_client_tails_reads_the_answer_into_columns(portal_server):
    with PortalClient(portal_server.base_url, portal_server.token, retries=0) as client:
        answer = client.tails("run-b", {"train/loss": None, "nope": None})
        loss = answer["train/loss"]
        assert list(loss.steps) == [0, 1, 2, 4, 5, 6, 8, 9] and loss.values[4] == 0.55  # finite, last wins
        assert loss.summary.non_finite_count == 2 and loss.changed
        assert answer["nope"].summary is None
        assert answer.names == ("train/loss",) and answer.total == 1 and answer.state == "running"
        quiet = client.tails("run-b", {"train/loss": (9, loss.summary.count)}, catalog_since=answer.cursor)
        assert quiet.names is None and not quiet["train/loss"].changed and len(quiet["train/loss"].steps) == 0
        with pytest.raises(NotFoundError):
            client.tails("no-such-run", {"train/loss": None})


def test_the_store_reads_only_the_named_summaries_and_the_names(tmp_path, monkeypatch):
    from fixtures.portal import event
    from tau_collector.expstore import StoreReader, open_store
    from tau_collector.expstore.write.writer import MetricWriter
    from taunotebook.portal.context import Portal
    from taunotebook.portal.dispatch import respond
    from taunotebook.portal.params import Query
    from taunotebook.portal.routes import data_routes
    from taunotebook.portal.sources import Sources

    store = open_store(tmp_path / "s", create=True)
    names = [f"layer_{i:04d}/norm" for i in range(1200)]
    MetricWriter(store).write_chunk("c0", [event("wide", n, 0, float(i)) for i, n in enumerate(names)], [],
                                    request_hash="c0")
    reader = StoreReader(tmp_path / "s")
    every = {s.metric_name: s for s in reader.metric_summaries("wide")}
    got_names, rows = reader.metric_summaries_named("wide", [*names[::2], "nope"])  # > 500: read in parts
    assert got_names == tuple(sorted(names)) and set(rows) == set(names[::2])
    assert all(rows[n] == every[n] for n in rows)
    assert reader.metric_summaries_named("wide", []) == (tuple(sorted(names)), {})
    # A running run's poll never reads the whole catalog.
    monkeypatch.setattr(StoreReader, "metric_summaries", lambda *a: pytest.fail("read every summary"))
    api = Portal(Sources(reader))
    response = respond(data_routes(api), "/stellar/data/runs/wide/tails", "GET",
                       Query([("metric", names[7]), ("metric", names[9])]))
    body = httpx.Response(200, content=response.body).json()
    assert [m["name"] for m in body["metrics"]] == [names[7], names[9]] and body["run"]["state"] == "running"
    assert body["metrics"][0]["latest_value"] == 7.0 and body["catalog"]["total"] == 1200
    store.close()
