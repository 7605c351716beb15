"""``LossPane(..., source="kusto")``: the pane names its source on every read and draws a run only ADX holds.

Real parts: the Portal (store + the stand-in cluster, the one part not real), the client, the pane's poller;
the browser is the pane tests' recorder.
"""

from __future__ import annotations

import pytest

from fixtures.kusto import reader_for
from fixtures.kusto_events import event, marker
from fixtures.pane import make_pane, wait_until
from fixtures.servers import ServerThread
from tau_collector.expstore import open_store
from tau_collector.projection.metric_event import encode_ndjson_many
from taunotebook.client import PortalClient
from taunotebook.pane import LossPane
from taunotebook.portal.app import create_app

TOKEN = "kusto-pane-token-0123456789"


def _events(steps, workspace: str = "default") -> bytes:
    return encode_ndjson_many([event("live", "train/loss", s, 1.0 / (1 + s), workspace=workspace) for s in steps])


def test_a_kusto_pane_draws_a_run_only_adx_holds_as_it_grows(kusto_cluster, tmp_path, monkeypatch):
    monkeypatch.delenv("JPY_PARENT_PID", raising=False)
    monkeypatch.delenv("JUPYTERHUB_SERVICE_PREFIX", raising=False)
    open_store(tmp_path / "store", create=True).close()
    kusto_cluster.ingest_ndjson(_events(range(100)))
    reader = reader_for(kusto_cluster, workspace="default", max_age_s=0.2)
    app = create_app(tmp_path / "store", token=TOKEN, kusto=reader)
    with ServerThread(app) as server, PortalClient(f"http://127.0.0.1:{server.port}", TOKEN, retries=0) as client:
        local, _ = make_pane("live", client)  # the Portal's default source, the store, has no such run
        pane, rec = make_pane("live", client, source="kusto")
        try:
            wait_until(lambda: local.status["kind"] == "not_found", "the local pane's not-found status")
            assert "not found" in local.status["message"]
            first = wait_until(lambda: rec.of("reset", "live", "train/loss"), "the first reset")[0]
            assert first["steps"] == list(range(100)) and pane.source == "kusto"
            assert "source=kusto" in pane.stellar_href
            pane._poller.on_message({"type": "hello", "width": pane.width})  # a browser has the model: no resyncs
            wait_until(lambda: len(rec.of("reset", "live", "train/loss")) >= 2, "the reset a hello asks for")
            kusto_cluster.ingest_ndjson(_events(range(100, 250)))
            wait_until(lambda: any(m["steps"] and m["steps"][-1] == 249 for m in rec.of("append", "live")),
                       "the appended tail")
            appended = [s for m in rec.of("append", "live", "train/loss") for s in m["steps"]]
            assert appended == list(range(100, 250))  # each point once, in order
            assert list(pane._poller.held[("live", "train/loss")].steps) == list(range(250))
            kusto_cluster.ingest_ndjson(encode_ndjson_many([marker("live", "succeeded", 1.0, at_step=250,
                                                                   workspace="default")]))
            wait_until(lambda: pane.state == "succeeded" and not pane.polling, "the drained succeeded state")
            assert "all points loaded (250 drawn)" in pane.status["message"]
        finally:
            pane.close()
            local.close()
    reader.connection.close()


def test_a_bad_source_is_refused_naming_the_parameter():
    with pytest.raises(ValueError, match="source must be one of local, kusto, auto"):
        LossPane("r", portal="http://127.0.0.1:9", source="adx", start=False)
    with pytest.raises(ValueError, match="source must be one of"):
        PortalClient("http://127.0.0.1:9", source="both")
    pane = LossPane("r", portal=PortalClient("http://127.0.0.1:9", source="KUSTO"), start=False)
    assert pane.source == "kusto" and pane._poller.source == "kusto"
    pane.close()
