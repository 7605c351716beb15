"""``source=kusto`` and ``source=auto`` through a real Portal over HTTP: the v2 reads, the page data, the envelopes.

Every part is real (the Portal on uvicorn, ``azure-kusto-data``, the expstore sink and reader) but the
cluster: the stand-in engine (``services/kusto_cluster.py``) and, for faults, the canned-frame endpoint
(``services/kusto_faults.py``).
"""

from __future__ import annotations

from collections.abc import Iterator

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

from fixtures.kusto import reader_for
from fixtures.kusto_events import DIP_STEP, SPIKE_STEP, chunk, event, fixture_events
from fixtures.servers import ServerThread
from services.azurite import free_port
from services.kusto_cluster import KustoCluster
from services.kusto_faults import KustoFaultServer
from tau_collector.projection.metric_event import encode_ndjson_many
from tau_collector.sinks.expstore import ExpstoreSink
from taunotebook.portal.app import create_app
from taunotebook.portal.kusto import KustoConnection, KustoReader, KustoSettings, KustoUpstreamError
from taunotebook.portal.sources import AutoReader

TOKEN = "kusto-portal-token-0123456789"
V2 = "/api/v2/stellar"
DATA = "/stellar/data"


def client_for(server: ServerThread) -> httpx.Client:
    return httpx.Client(base_url=f"http://127.0.0.1:{server.port}", headers={"Authorization": f"Bearer {TOKEN}"},
                        timeout=30)


@pytest.fixture(scope="module")
def kusto_only(loaded_cluster: KustoCluster) -> Iterator[httpx.Client]:
    """A Portal without a store: ``source=kusto`` is its default."""
    reader = reader_for(loaded_cluster)
    with ServerThread(create_app(None, token=TOKEN, workspace="ws-a", kusto=reader)) as server, \
            client_for(server) as client:
        yield client
    reader.connection.close()


def _provenance(body: dict) -> dict:
    return body["metadata"]["provenance"]


@pytest.mark.parametrize("params", [{"source": "kusto"}, {"source": "KUSTO"}, {}])
def test_a_run_reads_from_kusto_with_its_metadata(kusto_only, params):
    r = kusto_only.get(f"{V2}/runs/seed-1", params=params)
    assert r.status_code == 200, r.text
    body = r.json()
    assert _provenance(body) == {"requested_source": "kusto", "served_sources": ["kusto"]}
    assert body["metadata"]["freshness"]["state"] == "unknown"  # TauGrid's for a Kusto answer
    assert body["metadata"]["availability"] == {"state": "available"} and body["metadata"]["partial"] is False
    run = body["run"]
    assert (run["run_id"], run["project"], run["experiment_id"], run["run_group_id"]) == ("seed-1", "demo", "sgd", "lr")
    assert run["source"] == "kusto" and run["state"] == "succeeded" and run["lifecycle_state"] == "succeeded"
    assert run["metric_names"] == ["eval/loss", "tau/run_status", "train/loss"]
    assert run["tags"]["tau_workspace"] == "ws-a"


def test_the_metric_catalog_counts_each_event_once(kusto_only):
    body = kusto_only.get(f"{V2}/runs/seed-1/metrics", params={"source": "kusto"}).json()
    loss = next(m for m in body["metrics"] if m["name"] == "train/loss")
    assert (loss["count"], loss["finite_count"], loss["non_finite_count"]) == (5000, 5000, 0)  # 100 redelivered
    assert (loss["min_step"], loss["max_step"], loss["max_value"], loss["min_value"]) == (0, 4999, 50.0, -5.0)


def test_a_series_keeps_the_extremes_and_says_how_many_points_it_read(kusto_only):
    params = {"source": "kusto", "target": "seed-1", "metric": "train/loss", "max_points": 400}
    body = kusto_only.get(f"{V2}/runs/seed-1/series", params=params).json()
    steps = [p["step"] for p in body["points"]]
    assert body["source_points"] == 5000 and body["returned_points"] == len(steps) <= 400 + 5
    assert SPIKE_STEP in steps and DIP_STEP in steps and steps[0] == 0 and steps[-1] == 4999
    # Decimated: partial and degraded by the v2 rule, without TauGrid's "display projection" warning (M4 here).
    assert body["metadata"]["partial"] is True and body["metadata"]["availability"] == {"state": "degraded"}
    assert "warnings" not in body["metadata"]
    tail = kusto_only.get(f"{V2}/runs/seed-1/series", params={**params, "start_step": 4990}).json()
    assert [p["step"] for p in tail["points"]] == list(range(4990, 5000)) and tail["start_step"] == 4990
    assert tail["metadata"]["partial"] is False and tail["metadata"]["availability"] == {"state": "available"}


def test_an_experiments_runs_are_this_workspaces_only(kusto_only):
    body = kusto_only.get(f"{V2}/experiments/sgd/runs", params={"source": "kusto"}).json()
    assert [(r["run_id"], r["state"], r["source"]) for r in body["runs"]] == [
        ("seed-2", "running", "kusto"), ("seed-1", "succeeded", "kusto")]
    assert _provenance(body)["served_sources"] == ["kusto"] and body["metadata"]["partial"] is False
    other = kusto_only.get(f"{V2}/runs/other", params={"source": "kusto"})
    assert other.status_code == 404 and other.json()["error"]["code"] == "NOT_FOUND"  # workspace ws-b's


def test_page_data_reads_kusto_too(kusto_only):
    body = kusto_only.get(f"{DATA}/experiments", params={"source": "kusto"}).json()
    assert body["experiments"] == [{"experiment_id": "sgd", "project": "demo", "run_count": 2}]
    assert _provenance(body) == {"requested_source": "kusto", "served_sources": ["kusto"]}
    points = kusto_only.get(f"{DATA}/runs/seed-1/points", params={"source": "kusto", "metric": "train/loss"}).json()
    assert points["non_finite_count"] == 0 and points["non_finite"] == []
    samples = points["wall_time"]
    assert 0 < len(samples["step"]) == len(samples["wall_time"]) <= 2000 and samples["step"][-1] == 4999


def test_a_portal_without_a_store_refuses_source_local_in_words(kusto_only):
    r = kusto_only.get(f"{V2}/runs/seed-1", params={"source": "local"})
    assert r.status_code == 503 and r.json()["error"]["code"] == "SOURCE_UNAVAILABLE"
    assert "--store" in r.json()["error"]["message"] and r.json()["error"]["retryable"] is True
    auto = kusto_only.get(f"{V2}/runs/seed-1", params={"source": "auto"}).json()
    assert _provenance(auto) == {"requested_source": "auto", "served_sources": ["kusto"]}


def test_one_run_id_in_two_projects_is_a_conflict_until_the_project_is_named(kusto_cluster):
    kusto_cluster.ingest_ndjson(encode_ndjson_many([event("r", "m", 0, 1.0, project="p1"),
                                                    event("r", "m", 0, 2.0, project="p2")]))
    reader = reader_for(kusto_cluster)
    with ServerThread(create_app(None, token=TOKEN, workspace="ws-a", kusto=reader)) as server, \
            client_for(server) as client:
        r = client.get(f"{V2}/runs/r")
        assert r.status_code == 409 and r.json()["error"]["code"] == "CONFLICT"
        assert "p1, p2" in r.json()["error"]["message"] and "project=" in r.json()["error"]["message"]
        assert client.get(f"{V2}/runs/r", params={"project": "p2"}).json()["run"]["project"] == "p2"


# -- faults: each is TauGrid's envelope, never part of an answer ----------------------------------------------


@pytest.fixture(scope="module")
def faults() -> Iterator[KustoFaultServer]:
    with KustoFaultServer() as server:
        yield server


@pytest.fixture(scope="module")
def faulty_portal(faults: KustoFaultServer) -> Iterator[httpx.Client]:
    settings = KustoSettings(faults.uri, "Metrics", auth="none", timeout_s=0.5, client_grace_s=0.5)
    reader = KustoReader(KustoConnection(settings), workspace="ws-a")
    with ServerThread(create_app(None, token=TOKEN, workspace="ws-a", kusto=reader)) as server, \
            client_for(server) as client:
        yield client


@pytest.mark.parametrize(("mode", "status", "code", "words"), [
    ("http400", 502, "UPSTREAM_FAILURE", "HTTP 400"),
    ("http401", 502, "UPSTREAM_FAILURE", "HTTP 401"),
    ("http429", 502, "UPSTREAM_FAILURE", "throttled by the cluster (HTTP 429)"),
    ("http500", 502, "UPSTREAM_FAILURE", "HTTP 500"),
    ("http503", 502, "UPSTREAM_FAILURE", "HTTP 503"),
    ("inband", 502, "UPSTREAM_FAILURE", "exceeded the allowed limits"),
    ("has_errors", 502, "UPSTREAM_FAILURE", "reported errors (DataSetCompletion)"),
    ("cancelled", 502, "UPSTREAM_FAILURE", "was cancelled"),
    ("slow", 504, "UPSTREAM_TIMEOUT", "no answer within"),
])
@pytest.mark.parametrize("path", [f"{V2}/runs/seed-1", f"{V2}/experiments/sgd/runs", f"{DATA}/experiments"])
def test_an_upstream_fault_is_an_envelope(faults, faulty_portal, mode, status, code, words, path):
    faults.mode, faults.delay_s = mode, 3.0
    try:
        r = faulty_portal.get(path, params={"source": "kusto"})
    finally:
        faults.mode = "ok"
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert error["code"] == code and words in error["message"] and faults.uri in error["message"]
    assert error["classification"] == "dependency" and error["retryable"] is True
    assert set(r.json()) == {"error"}  # no rows beside the error


def test_a_refused_cluster_is_an_upstream_failure_envelope():
    settings = KustoSettings(f"http://127.0.0.1:{free_port()}", "Metrics", auth="none")
    reader = KustoReader(KustoConnection(settings), workspace="ws-a")
    with ServerThread(create_app(None, token=TOKEN, workspace="ws-a", kusto=reader)) as server, \
            client_for(server) as client:
        r = client.get(f"{V2}/runs/seed-1/series", params={"target": "seed-1", "metric": "train/loss"})
    assert r.status_code == 502 and r.json()["error"]["code"] == "UPSTREAM_FAILURE"
    assert "cannot reach the cluster" in r.json()["error"]["message"]


# -- source=auto: TauGrid's merge of the local store and Kusto ------------------------------------------------


@pytest.fixture(scope="module")
def store_events() -> list:
    """The local store holds seed-1 (as Kusto does) and ``local-only``; Kusto alone holds seed-2."""
    seed_1 = [e for e in fixture_events() if e.run_id == "seed-1"][:200]
    return [*seed_1, *(event("local-only", "train/loss", s, 0.5) for s in range(5))]


@pytest.fixture(scope="module")
def store_path(tmp_path_factory, store_events):
    root = tmp_path_factory.mktemp("auto") / "store"
    sink = ExpstoreSink(root, source_id="auto")
    sink.deliver(chunk(store_events))
    sink.close()
    return root


def test_auto_merges_kusto_only_runs_and_keeps_local_records(loaded_cluster, store_path):
    reader = reader_for(loaded_cluster)
    with ServerThread(create_app(store_path, token=TOKEN, workspace="ws-a", kusto=reader)) as server, \
            client_for(server) as client:
        body = client.get(f"{V2}/experiments/sgd/runs", params={"source": "auto"}).json()
        sources = {r["run_id"]: r["source"] for r in body["runs"]}
        assert sources == {"seed-1": "local", "seed-2": "kusto", "local-only": "local"}
        assert _provenance(body) == {"requested_source": "auto", "served_sources": ["kusto", "local"]}
        assert body["metadata"]["warnings"] == [
            "source=auto merged 1 Kusto-backed runs with local expstore runs",
            "source=auto kept local records for 1 duplicate Kusto run IDs",
        ]
        assert body["metadata"]["availability"]["state"] == "degraded"
        # A run's reads come from the source that holds it.
        series = client.get(f"{V2}/runs/seed-2/series",
                            params={"source": "auto", "target": "seed-2", "metric": "train/loss"}).json()
        assert series["source_points"] == 10 and _provenance(series)["served_sources"] == ["kusto"]
        local = client.get(f"{V2}/runs/seed-1/metrics", params={"source": "auto"}).json()
        assert _provenance(local)["served_sources"] == ["local"]
        assert next(m for m in local["metrics"] if m["name"] == "train/loss")["count"] == 200  # the store's copy
        # The default of a Portal with a store stays local.
        assert _provenance(client.get(f"{V2}/runs/seed-1").json())["served_sources"] == ["local"]
        assert client.get(f"{V2}/runs/seed-2").status_code == 404
    reader.connection.close()


def test_auto_skips_a_failing_kusto_with_a_warning_but_never_hides_a_run_behind_404(faults, store_path):
    faults.mode = "http500"
    reader = KustoReader(KustoConnection(KustoSettings(faults.uri, "Metrics", auth="none")), workspace="ws-a")
    try:
        with ServerThread(create_app(store_path, token=TOKEN, workspace="ws-a", kusto=reader)) as server, \
                client_for(server) as client:
            body = client.get(f"{V2}/experiments/sgd/runs", params={"source": "auto"}).json()
            assert sorted(r["run_id"] for r in body["runs"]) == ["local-only", "seed-1"]
            (warning,) = body["metadata"]["warnings"]
            assert warning.startswith("source=auto skipped Kusto run search because it failed: ")
            assert "HTTP 500" in warning and body["metadata"]["availability"]["state"] == "degraded"
            # Only Kusto could say whether seed-2 exists: its failure, not a 404.
            r = client.get(f"{V2}/runs/seed-2", params={"source": "auto"})
            assert r.status_code == 502 and r.json()["error"]["code"] == "UPSTREAM_FAILURE"
    finally:
        faults.mode = "ok"


# -- parity through HTTP ----------------------------------------------------------------------------------------


def test_the_same_events_give_the_same_v2_answers_apart_from_documented_differences(tmp_path, store_events):
    local_root = tmp_path / "store"
    sink = ExpstoreSink(local_root, source_id="parity")
    sink.deliver(chunk(store_events))
    sink.close()
    with KustoCluster() as cluster:
        cluster.ingest_ndjson(encode_ndjson_many(store_events))
        reader = reader_for(cluster)
        with ServerThread(create_app(local_root, token=TOKEN, workspace="ws-a")) as a, client_for(a) as local, \
                ServerThread(create_app(None, token=TOKEN, workspace="ws-a", kusto=reader)) as b, \
                client_for(b) as kusto:
            for path, params, differ in [
                (f"{V2}/runs/seed-1", {}, {"created_at", "source"}),
                (f"{V2}/runs/seed-1/metrics", {}, {"updated_at"}),
                (f"{V2}/runs/seed-1/series", {"target": "seed-1", "metric": "train/loss", "max_points": 8000}, set()),
                (f"{V2}/runs/seed-1/series", {"target": "seed-1", "metric": "train/loss", "start_step": 150}, set()),
                (f"{V2}/experiments/sgd/runs", {}, {"created_at", "source"}),
                (f"{DATA}/experiments", {}, set()),
                (f"{DATA}/runs/local-only/points", {"metric": "train/loss"}, set()),
            ]:
                x, y = local.get(path, params=params).json(), kusto.get(path, params=params).json()
                assert _strip(x, differ) == _strip(y, differ), path
        reader.connection.close()
        assert cluster.errors == []


def _strip(body: object, differ: set[str]) -> object:
    """``body`` without its metadata block (served source, freshness) and the documented differing fields."""
    if isinstance(body, dict):
        return {k: _strip(v, differ) for k, v in body.items() if k != "metadata" and k not in differ}
    if isinstance(body, list):
        return [_strip(v, differ) for v in body]
    return body


# -- the OpenAPI document holds for kusto answers -----------------------------------------------------------------


@pytest.mark.parametrize("path", ["/api/v2/stellar/runs/{run_id}", "/api/v2/stellar/runs/{run_id}/metrics",
                                  "/api/v2/stellar/runs/{run_id}/series",
                                  "/api/v2/stellar/experiments/{experiment_id}/runs",
                                  "/stellar/data/runs/{run_id}/points", "/stellar/data/experiments"])
def test_generated_requests_to_a_kusto_portal_match_the_document(kusto_only, path):
    base_url = str(kusto_only.base_url).rstrip("/")
    operation = schemathesis.openapi.from_url(f"{base_url}/openapi.json")[path]["GET"]

    @given(case=operation.as_strategy())
    @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    def check(case):
        response = case.call(base_url=base_url, headers={"Authorization": f"Bearer {TOKEN}"})
        checks = [status_code_conformance, content_type_conformance, response_schema_conformance]
        if str((case.query or {}).get("source", "")).strip().lower() == "local":
            assert response.status_code in (400, 403, 404, 503), response.text  # no store: 503 by contract
        else:
            checks.append(not_a_server_error)
        case.validate_response(response, checks=checks)

    check()


class _UnreadableStore:
    """A local store that cannot be read (a stand-in for a vanished disk: the failure is what is tested)."""

    def runs(self, *args, **kwargs):
        raise OSError("store is gone")

    def run(self, *args, **kwargs):
        raise OSError("store is gone")


def test_auto_falls_back_to_kusto_when_the_store_cannot_be_read_and_names_both_when_both_fail(
        loaded_cluster, faults):
    auto = AutoReader(_UnreadableStore(), reader_for(loaded_cluster))
    assert [r.run_id for r in auto.runs("ws-a", experiment_id="sgd")] == ["seed-2", "seed-1"]
    assert auto.source_of("seed-1") == "kusto" and auto.run("seed-1").run_id == "seed-1"
    assert auto.warnings[0] == "source=auto fell back to Kusto because local run search failed: store is gone"
    faults.mode = "http500"
    try:
        failing = KustoReader(KustoConnection(KustoSettings(faults.uri, "Metrics", auth="none")), workspace="ws-a")
        with pytest.raises(KustoUpstreamError) as caught:
            AutoReader(_UnreadableStore(), failing).runs("ws-a")
    finally:
        faults.mode = "ok"
    assert str(caught.value).startswith("local run search: store is gone; Kusto run search: ")
    assert caught.value.status == 502
