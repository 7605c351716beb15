"""A source that carries no configurations and no experiments table (TauGrid's Kusto tables have neither): the config
route says so, config filters match nothing, include=config is null, and the search names experiments by their runs."""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest

from fixtures.config_store import RunsOnlyReader
from tau_collector.expstore import StoreReader
from taunotebook.portal.context import Portal
from taunotebook.portal.dispatch import respond
from taunotebook.portal.params import Query
from taunotebook.portal.routes import data_routes
from taunotebook.portal.sources import Sources


@pytest.fixture(scope="module")
def api(config_store) -> Portal:
    return Portal(Sources(RunsOnlyReader(StoreReader(config_store))))


def _get(api: Portal, path: str, pairs=()) -> dict:
    response = respond(data_routes(api), "/api/v2/stellar/" + path, "GET", Query(list(pairs)))
    assert response.status_code == 200, response.body
    return json.loads(response.body)


def test_the_config_route_says_the_source_has_no_configurations(api):
    body = _get(api, "runs/lr-0.1/config")
    assert body["metadata"]["availability"] == {"state": "unavailable",
                                                "reasons": ["the local source carries no run configurations"]}
    assert body["config_hash"]  # the run row still names it
    assert (body["config"], body["fields"]) == ({}, {})


def test_config_filters_match_nothing_and_include_config_is_null(api):
    assert _get(api, "experiments/sweep/runs", [("config.lr", "0.1")])["runs"] == []
    runs = _get(api, "experiments/sweep/runs", [("include", "config")])["runs"]
    assert len(runs) == 4 and all(r["config"] is None for r in runs)
    assert _get(api, "experiments/search", [("config.lr", "0.1")])["experiments"] == []


def test_the_search_names_experiments_by_their_runs(api, config_store):
    experiments = {e["experiment_id"]: e for e in _get(api, "experiments/search", [("include", "config")])["experiments"]}
    assert set(experiments) == {"plain", "sweep"}
    sweep = experiments["sweep"]
    created = sorted(r.created_at for r in StoreReader(config_store).runs("default", project="proj")
                     if r.experiment_id == "sweep")
    assert (sweep["name"], sweep["created_at"], sweep["updated_at"]) == ("sweep", created[0], created[-1])
    assert sweep["run_count"] == 4 and sweep["config"] == {}


def test_a_config_hash_without_its_configs_row_is_said(config_store, tmp_path):
    # A store whose runs row names a config the configs table does not hold (e.g. copied without it).
    copy = tmp_path / "store"
    shutil.copytree(config_store, copy)
    with sqlite3.connect(copy / "index.sqlite") as conn:
        conn.execute("DELETE FROM configs WHERE run_id = 'lr-0.1'")
    api = Portal(Sources(StoreReader(copy)))
    body = _get(api, "runs/lr-0.1/config")
    stored_hash = StoreReader(copy).run("lr-0.1").config_hash
    assert body["metadata"]["availability"] == {
        "state": "unavailable", "reasons": [f"config_hash {stored_hash} names no stored configuration"]}
    assert (body["config_hash"], body["config"], body["fields"]) == (stored_hash, {}, {})
    assert "format" not in body and "uri" not in body
