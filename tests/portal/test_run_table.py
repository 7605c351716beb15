"""The runs table's page data (``GET /stellar/data/runs``): every run in one bounded answer, its filters and
limits, v2's checks and envelope, and ``PortalClient.run_table``."""

from __future__ import annotations

import httpx
import pytest

from fixtures.portal import LOSS_POINTS, NOTE, PAGE_RUNS, TOKEN, loss_value, serve
from fixtures.sweep_store import build_sweep_store, final_loss
from taunotebook.client import NotFoundError, PortalClient
from taunotebook.portal.views import run_table
from taunotebook.portal.wire import run_table as row_wire

RUNS = "/stellar/data/runs"


def _error(response: httpx.Response) -> tuple[int, str]:
    return response.status_code, response.json()["error"]["code"]


def test_every_run_of_the_workspace_is_listed_newest_first(api):
    body = api.get(RUNS).json()
    ids = [r["run_id"] for r in body["runs"]]
    assert set(ids) == {"run-a", "run-b", *PAGE_RUNS}  # run-other is another workspace's
    assert body["run_count"] == len(ids)
    created = [r["created_at"] for r in body["runs"]]
    assert created == sorted(created, reverse=True)
    assert body["metadata"]["partial"] is False


def test_a_row_carries_ids_state_tags_and_no_config_when_the_run_has_none(api):
    row = next(r for r in api.get(RUNS).json()["runs"] if r["run_id"] == "run-a")
    assert {k: row[k] for k in ("project", "experiment_id", "run_group_id", "state")} == {
        "project": "proj", "experiment_id": "exp-1", "run_group_id": "g1", "state": "succeeded"}
    assert row["tags"] == {"tau_workspace": "default"}
    assert row["config"] is None


def test_without_a_metric_the_loss_is_chosen_and_each_row_has_its_latest_min_and_max(api):
    body = api.get(RUNS).json()
    assert body["metrics"] == ["train/loss"]
    row = next(r for r in body["runs"] if r["run_id"] == "run-a")
    values = [loss_value(s) for s in range(LOSS_POINTS)]
    assert row["metrics"]["train/loss"] == {
        "count": LOSS_POINTS, "non_finite_count": 0, "latest_step": LOSS_POINTS - 1,
        "latest_value": values[-1], "min_value": min(values), "max_value": max(values)}


def test_non_finite_observations_are_counted_and_left_out_of_the_values(api):
    row = next(r for r in api.get(RUNS).json()["runs"] if r["run_id"] == "run-b")
    stats = row["metrics"]["train/loss"]
    assert stats["non_finite_count"] == 2 and stats["max_value"] == 0.9 and stats["min_value"] == 0.0


def test_metric_names_list_every_metric_loss_first_without_tau_markers(api):
    names = api.get(RUNS).json()["metric_names"]
    assert names == ["train/loss", "eval/acc"]


def test_asked_metrics_are_carried_and_a_run_without_one_has_no_entry(api):
    body = api.get(RUNS, params=[("metric", "eval/acc"), ("metric", "train/loss")]).json()
    assert body["metrics"] == ["eval/acc", "train/loss"]
    rows = {r["run_id"]: r for r in body["runs"]}
    assert rows["run-a"]["metrics"]["eval/acc"]["max_value"] == 49 / 50
    assert set(rows["run-b"]["metrics"]) == {"train/loss"}


def test_filters_narrow_by_experiment_group_project_and_run_ids(api):
    def ids(**params):
        return sorted(r["run_id"] for r in api.get(RUNS, params=params).json()["runs"])

    assert ids(experiment="exp-1") == ["run-a", "run-b"]
    assert ids(group="gp") == sorted(PAGE_RUNS)
    assert ids(experiment="exp-1", group="gp") == []
    assert ids(project="nope") == []
    assert ids(run_id=["run-b", "page-03", "zzz"]) == ["page-03", "run-b"]


def test_more_runs_than_the_limit_list_the_newest_and_say_so(api, monkeypatch):
    monkeypatch.setattr(run_table, "RUNS_LIMIT", 3)
    body = api.get(RUNS).json()
    assert len(body["runs"]) == 3 and body["run_count"] == 9
    assert body["metadata"]["partial"] is True
    assert body["metadata"]["warnings"] == [
        "the first 3 of 9 runs are listed; ask with offset= and limit= for the others, or filter by project, "
        "experiment or group"]


def test_windows_reach_every_run_and_the_count_stays_true(api):
    everything = [r["run_id"] for r in api.get(RUNS).json()["runs"]]
    seen = []
    for offset in range(0, 9, 4):
        body = api.get(RUNS, params={"offset": offset, "limit": 4}).json()
        assert body["run_count"] == 9 and body["offset"] == offset
        assert "warnings" not in body["metadata"]  # a window asked for is not a surprise
        assert body["metadata"]["partial"] is True
        seen += [r["run_id"] for r in body["runs"]]
    assert seen == everything and len(everything) == 9
    past = api.get(RUNS, params={"offset": 50, "limit": 4}).json()
    assert past["runs"] == [] and past["run_count"] == 9


def test_sort_and_order_are_applied_before_the_window(api):
    asc = api.get(RUNS, params={"sort": "run_id", "order": "asc", "limit": 3}).json()
    assert [r["run_id"] for r in asc["runs"]] == ["page-00", "page-01", "page-02"]
    desc = api.get(RUNS, params={"sort": "metric:latest", "order": "desc", "metric": "train/loss", "limit": 2})
    rows = desc.json()["runs"]
    assert [r["run_id"] for r in rows] == ["page-06", "page-05"]  # latest loss 6.0, 5.0 beat run-a's ~0.7
    oldest = api.get(RUNS, params={"order": "asc", "limit": 1}).json()["runs"][0]
    newest = api.get(RUNS, params={"limit": 1}).json()["runs"][0]
    assert oldest["created_at"] <= newest["created_at"]


def test_filters_by_state_tag_and_text_count_what_they_keep(api):
    assert api.get(RUNS, params={"state": "succeeded"}).json()["run_count"] == 1
    tagged = api.get(RUNS, params={"tag": "note=" + NOTE}).json()
    assert [r["run_id"] for r in tagged["runs"]] == ["run-b"] and tagged["run_count"] == 1
    found = api.get(RUNS, params={"q": "PAGE-0"}).json()
    assert found["run_count"] == 7 and all(r["run_id"].startswith("page-") for r in found["runs"])


@pytest.mark.parametrize(("params", "message"), [
    ({"offset": "-1"}, "offset must be a non-negative integer"),
    ({"offset": "x"}, "offset must be an integer"),
    ({"limit": "0"}, "limit must be an integer between 1 and 5000"),
    ({"limit": "5001"}, "limit must be an integer between 1 and 5000"),
    ({"sort": "color"}, "sort must be one of created_at, run_id, state, project, experiment_id, run_group_id, "
                        "metric:latest, metric:min, metric:max"),
    ({"order": "up"}, "order must be asc or desc"),
    ({"tag": "novalue"}, "tag filters must be key=value"),
])
def test_bad_window_parameters_are_400_in_words(api, params, message):
    r = api.get(RUNS, params=params)
    assert r.status_code == 400 and r.json()["error"]["message"] == message


@pytest.mark.parametrize(("params", "expected"), [
    ([("metric", f"m{i}") for i in range(run_table.METRICS_LIMIT + 1)], (400, "INVALID_ARGUMENT")),
    ([("run_id", f"r{i}") for i in range(run_table.RUN_IDS_LIMIT + 1)], (400, "INVALID_ARGUMENT")),
    ([("experiment", "Exp One")], (400, "INVALID_ARGUMENT")),
    ([("group", "G/1")], (400, "INVALID_ARGUMENT")),
    ([("source", "bogus")], (400, "INVALID_SOURCE")),
    ([("workspace", "other")], (403, "WORKSPACE_FORBIDDEN")),
    ([("source", "kusto")], (503, "SOURCE_UNAVAILABLE")),
])
def test_bad_requests_are_answered_as_v2_does(api, params, expected):
    assert _error(api.get(RUNS, params=params)) == expected


def test_too_many_metrics_are_refused_in_words(api):
    r = api.get(RUNS, params=[("metric", f"m{i}") for i in range(9)])
    assert r.json()["error"]["message"] == "metric may be given at most 8 times"


def test_the_table_is_get_only_and_token_protected(portal_server, api):
    assert _error(api.post(RUNS)) == (405, "METHOD_NOT_ALLOWED")
    assert _error(httpx.get(portal_server.base_url + RUNS)) == (401, "UNAUTHORIZED")


def test_the_client_reads_the_table_as_typed_rows(portal_server):
    with PortalClient(portal_server.base_url, TOKEN, project="proj") as client:
        table = client.run_table(experiment="exp-1", metrics=["train/loss"])
        assert sorted(table.run_ids) == ["run-a", "run-b"]
        row = next(r for r in table if r.run_id == "run-a")
        assert row.config is None and row.metrics["train/loss"].latest_step == LOSS_POINTS - 1
        assert table.metric_names == ("train/loss", "eval/acc")
        assert client.run_table(run_ids=["page-01"]).run_ids == ["page-01"]


def test_the_client_says_when_the_portal_has_no_table(portal_server):
    # A TauGrid Portal has no page data: the route is not found.
    with PortalClient(portal_server.base_url + "/nowhere", TOKEN, retries=0) as client:
        with pytest.raises(NotFoundError) as info:
            client.run_table()
        assert info.value.message == "route was not found"


def test_the_default_metric_rule():
    assert run_table.default_metric({"acc": 9, "train/loss": 2, "loss": 2}) == "loss"
    assert run_table.default_metric({"acc": 9, "train/loss": 2, "loss": 1}) == "train/loss"  # more runs have it
    assert run_table.default_metric({"acc": 9, "val_loss": 2, "train/loss": 3}) == "train/loss"
    assert run_table.default_metric({"acc": 9, "reward": 10, "tau/run_status": 12}) == "reward"
    assert run_table.default_metric({"tau/run_status": 1}) is None


# -- a sweep: configs ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    root = build_sweep_store(tmp_path_factory.mktemp("sweep") / "store", trials=8)
    with serve(root) as server, httpx.Client(base_url=f"http://127.0.0.1:{server.port}",
                                            headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        yield client


def test_each_run_carries_its_config_fields_and_hash(sweep):
    rows = {r["run_id"]: r for r in sweep.get(RUNS).json()["runs"]}
    assert rows["trial-001"]["config"] == {"batch": 32, "lr": 0.03, "optimizer.name": "sgd", "seed": 1}
    assert rows["trial-004"]["config"] == {"batch": 32, "lr": 0.1, "optimizer.name": "adam", "seed": 1}
    assert len(rows["trial-001"]["config_hash"]) == 64
    assert rows["ref-0"]["config"] is None and "config_hash" not in rows["ref-0"]


def test_the_sweeps_metric_values_come_from_the_summaries(sweep):
    rows = {r["run_id"]: r for r in sweep.get(RUNS, params={"experiment": "sweep"}).json()["runs"]}
    assert len(rows) == 8
    assert rows["trial-002"]["metrics"]["loss"]["latest_value"] == pytest.approx(final_loss(2))
    assert rows["trial-003"]["metrics"]["loss"]["non_finite_count"] == 1


def test_a_config_beyond_the_limits_is_cut_and_said_so(sweep, monkeypatch):
    monkeypatch.setattr(row_wire, "CONFIG_FIELDS_LIMIT", 2)
    body = sweep.get(RUNS, params={"experiment": "sweep"}).json()
    assert all(len(r["config"]) == 2 for r in body["runs"])
    assert body["metadata"]["warnings"][0].startswith("configs cut to 2 fields of at most 256 characters: trial-")
    assert body["metadata"]["warnings"][0].endswith("and 3 more")


def test_a_long_text_value_is_cut_to_the_limit():
    text, cut = row_wire._field_value("x" * 1000)
    assert cut and len(text) == row_wire.CONFIG_TEXT_LIMIT and text.endswith("…")
    assert row_wire._field_value(float("nan")) == ("NaN", False)
    assert row_wire._field_value(0.5) == (0.5, False)


# -- the same windows without run listings (a store TauGrid wrote, Kusto, source=auto) -------------------


@pytest.fixture(scope="module")
def unlisted(portal_store, tmp_path_factory):
    import shutil
    import sqlite3

    root = tmp_path_factory.mktemp("unlisted") / "store"
    shutil.copytree(portal_store, root)
    with sqlite3.connect(root / "index.sqlite") as db:
        for table in ("run_listing", "experiment_listing", "experiment_metrics"):
            db.execute(f"DROP TABLE {table}")
        db.execute("DELETE FROM schema_meta WHERE key = 'listing_version'")
    with serve(root) as server, httpx.Client(base_url=f"http://127.0.0.1:{server.port}",
                                            headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        yield client


@pytest.mark.parametrize("params", [
    {}, {"offset": 2, "limit": 3}, {"sort": "run_id", "order": "desc"}, {"sort": "state", "limit": 4},
    {"sort": "metric:max", "metric": "train/loss"}, {"sort": "metric:min", "order": "desc", "metric": "eval/acc"},
    {"order": "asc"}, {"state": "running", "limit": 2}, {"q": "note"}, {"tag": "tau_workspace=default"},
    {"experiment": "exp-page", "offset": 5}, {"metric": "eval/acc", "sort": "experiment_id"},
])
def test_without_listings_the_windows_are_the_same(api, unlisted, params):
    def window(client):
        body = client.get(RUNS, params=params).json()
        return body["run_count"], body["offset"], body["metrics"], body["runs"], body["metadata"]["partial"]

    assert window(unlisted) == window(api)
