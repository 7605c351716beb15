"""Through a real Jupyter server and jupyter-server-proxy: ids read back as themselves, and a Jupyter server
reached by a public name still reaches the Portal behind it (whose Host allow-list sees only loopback)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from fixtures.jupyter import JupyterServer, running_jupyter
from fixtures.portal import BASE_NS
from tau_collector.expstore import open_store
from tau_collector.expstore.write.writer import MetricWriter
from tau_collector.projection.metric_event import new_metric_event
from taunotebook.client.links import path_segment

RUNS = {"pctax": 1.0, "pct%61x": 2.0, "a b": 3.0, "été": 4.0, "run-a": 5.0}
PUBLIC_NAME = "jupyter.example"
API = "tau-portal/api/v2/stellar"


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[JupyterServer]:
    tmp = tmp_path_factory.mktemp("proxy")
    store = open_store(tmp / "store", create=True)
    writer = MetricWriter(store)
    for i, (run, value) in enumerate(RUNS.items()):
        writer.write_chunk(f"k{i}", [new_metric_event(
            project="proj", experiment_id="exp-1", run_group_id="g1", run_id=run, metric_name="loss", step=1,
            wall_time=BASE_NS, value=value, exported_at=BASE_NS, source="history", tags={})], [], request_hash="h")
    store.close()
    # Jupyter answers its public name (as a JupyterHub or a remote server does); the Portal behind it never sees it.
    with running_jupyter(tmp / "jupyter", {"TAU_STORE": str(tmp / "store")}, "server", base_url="/jbase/",
                         token="jupyter-test-token",
                         config=f"c.ServerApp.local_hostnames = ['localhost', '{PUBLIC_NAME}']\n") as s:
        # The first request starts the Portal (imports, opening the store): give it time.
        first = httpx.get(f"{s.base}{API}/runs/run-a", headers=s.auth, timeout=90)
        assert first.status_code == 200, first.text
        yield s


def _get(server: JupyterServer, path: str, **params: str) -> httpx.Response:
    headers = {**server.auth, "Host": f"{PUBLIC_NAME}:{server.port}"}
    return httpx.get(f"{server.base}{path}", headers=headers, params=params, timeout=30)


def test_a_jupyter_server_reached_by_its_public_name_reaches_the_portal(server):
    response = _get(server, f"{API}/runs/run-a")
    assert response.status_code == 200, response.text
    assert response.json()["run"]["run_id"] == "run-a"


@pytest.mark.parametrize("run", sorted(RUNS))
def test_every_id_reads_back_as_itself_through_the_proxy(server, run):
    segment = path_segment(run, "run_id")
    assert _get(server, f"{API}/runs/{segment}").json()["run"]["run_id"] == run
    series = _get(server, f"{API}/runs/{segment}/series", target=run, metric="loss")
    assert series.status_code == 200, series.text
    assert series.json()["points"] == [{"step": 1, "value": RUNS[run]}]
    points = _get(server, f"tau-portal/stellar/data/runs/{segment}/points", metric="loss")
    assert points.status_code == 200 and points.json()["run_id"] == run


def test_a_double_escaped_id_is_not_another_run_through_the_proxy(server):
    series = _get(server, f"{API}/runs/pct%2561x/series", target="pct%61x", metric="loss")
    assert series.json()["points"] == [{"step": 1, "value": RUNS["pct%61x"]}]


def test_an_escaped_slash_never_reads_a_run(server):
    # Tornado decodes %2F before the proxy forwards the path, so the Portal sees two segments: route not found.
    response = _get(server, f"{API}/runs/run%2Fa")
    assert response.status_code == 404 and response.json()["error"]["message"] == "route was not found"
