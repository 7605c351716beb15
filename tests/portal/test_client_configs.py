"""PortalClient against a real Portal over runs with configs: run_config, config= filters and include_config on the
run listing, search_experiments and iter_experiments, and their error paths."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fixtures.config_store import sweep_config
from fixtures.portal import TOKEN
from taunotebook.client import (
    ClientError,
    ExperimentSummary,
    NotFoundError,
    PortalClient,
    Run,
    RunConfiguration,
)


@pytest.fixture
def client(capi) -> Iterator[PortalClient]:
    with PortalClient(str(capi.base_url), TOKEN, project="proj", retries=0) as c:
        yield c


def test_run_config_reads_the_runs_configuration(client):
    config = client.run_config("lr-0.1")
    assert isinstance(config, RunConfiguration) and config.available
    stored = sweep_config("lr-0.1")
    assert (config.config_hash, config.format, config.uri) == (stored.config_hash, "json", "/sweeps/lr-0.1/params.json")
    assert config.config == stored.values and config.fields == stored.fields
    assert config.metadata.availability.state == "available"


def test_run_config_of_a_run_without_one_says_so(client):
    config = client.run_config("no-config")
    assert not config.available and config.config == {} and config.fields == {}
    assert config.metadata.availability.state == "unavailable"
    assert config.metadata.availability.reasons == ("no configuration is stored for this run",)


def test_run_config_errors_are_typed(client):
    with pytest.raises(NotFoundError):
        client.run_config("nope")
    with pytest.raises(NotFoundError):
        client.run_config("lr-0.1", project="other")
    with pytest.raises(ClientError) as info:
        client.run_config("lr-0.1", source="bogus")
    assert info.value.code == "INVALID_SOURCE"


@pytest.mark.parametrize(("config", "expected"), [
    ({"lr": 0.1}, ["lr-0.1"]),
    ({"lr": 1e-05}, ["lr-1e-05"]),  # sent as 1e-05, matched as a number
    ({"batch": 32, "optimizer.name": "sgd"}, ["lr-1e-05"]),
    ({"optimizer.name": ["adam", "sgd"]}, ["lr-0.03", "lr-0.1", "lr-1e-05"]),
    ({"layers": "[64,64]"}, ["lr-0.03", "lr-0.1", "lr-1e-05"]),
    ({"lr": True}, []),
    ({"lr": None}, []),
])
def test_config_filters_on_the_run_listing(client, config, expected):
    assert sorted(r.run_id for r in client.experiment_runs("sweep", config=config)) == expected


def test_include_config_fills_each_runs_config(client):
    runs = {r.run_id: r for r in client.iter_experiment_runs("sweep", limit=1, include_config=True)}
    assert set(runs) == {"lr-0.1", "lr-0.03", "lr-1e-05", "no-config"}
    assert isinstance(runs["lr-0.03"], Run)
    assert runs["lr-0.03"].config == {"batch": 32, "layers": "[64,64]", "lr": 0.03, "optimizer.name": "adam"}
    assert runs["no-config"].config is None and "config" not in runs["no-config"].extra
    assert all(r.config is None for r in client.experiment_runs("sweep"))  # not asked for


@pytest.mark.parametrize(("config", "error"), [({"lr": {"a": 1}}, TypeError), ({"lr": [[1]]}, TypeError),
                                               ({" ": 1}, ValueError)])
def test_bad_config_filters_are_refused_before_a_request(client, config, error):
    with pytest.raises(error):
        client.experiment_runs("sweep", config=config)


def test_search_experiments_reads_taugrids_search(client):
    page = client.search_experiments()
    assert [e.experiment_id for e in page] == ["plain", "sweep"] and page.next_cursor is None
    sweep = page.experiments[1]
    assert isinstance(sweep, ExperimentSummary)
    assert (sweep.run_count, sweep.run_group_count, sweep.state_counts) == (4, 1, {"running": 4})
    assert sweep.metric_names == ("train/loss",) and sweep.config is None
    assert [e.experiment_id for e in client.search_experiments(config={"lr": 0.1})] == ["sweep"]
    assert [e.experiment_id for e in client.search_experiments(q="eval", tag=None)] == ["plain"]
    assert [e.experiment_id for e in client.search_experiments(metric_name=["eval/acc"])] == ["plain"]


def test_search_experiments_with_configs_and_pages(client):
    found = {e.experiment_id: e for e in client.iter_experiments(limit=1, include_config=True)}
    assert set(found) == {"plain", "sweep"}
    assert found["sweep"].config == {"batch": (32,), "layers": ("[64,64]",), "lr": (0.00001, 0.03, 0.1),
                                     "optimizer.name": ("adam", "sgd")}
    assert found["plain"].config == {}


def test_search_experiments_errors_are_typed(client):
    with pytest.raises(ClientError) as info:
        client.search_experiments(limit=0)
    assert info.value.code == "INVALID_ARGUMENT" and "limit" in info.value.message
    with pytest.raises(ClientError) as info:
        client.search_experiments(cursor="forged")
    assert info.value.code == "INVALID_CURSOR"
