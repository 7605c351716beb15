"""The Portals the notebook starts itself read ADX where the environment (or the jobs' offload settings) say.

Real parts: the on-demand local Portal (a detached ``taunotebook portal``), the stand-in cluster behind it.
"""

from __future__ import annotations

import json

import httpx
import pytest

from fixtures.kusto_events import event
from services.kusto_cluster import KustoCluster
from tau_collector.projection.metric_event import encode_ndjson_many
from taunotebook.kusto_env import engine_uri, portal_kusto_env
from taunotebook.local_portal import ensure_portal, record_file, stop_portal
from taunotebook.portal.jupyter_proxy import setup_tau_portal

KUSTO_VARS = ("TAU_PORTAL_KUSTO_CLUSTER", "TAU_PORTAL_KUSTO_DATABASE", "TAU_PORTAL_KUSTO_AUTH",
              "TAU_METRICS_OFFLOAD_ADX_CLUSTER_URI", "TAU_METRICS_OFFLOAD_ADX_DATABASE")


@pytest.mark.parametrize(("environ", "expected"), [
    ({}, {}),
    ({"TAU_PORTAL_KUSTO_CLUSTER": "https://c.westus.kusto.windows.net/"},
     {"cluster": "https://c.westus.kusto.windows.net", "database": "Metrics", "auth": "default"}),
    ({"TAU_PORTAL_KUSTO_CLUSTER": "https://c.kusto.windows.net", "TAU_PORTAL_KUSTO_DATABASE": "Exp",
      "TAU_PORTAL_KUSTO_AUTH": "cli", "TAU_METRICS_OFFLOAD_ADX_CLUSTER_URI": "https://ingest-other.kusto.windows.net"},
     {"cluster": "https://c.kusto.windows.net", "database": "Exp", "auth": "cli"}),
    # Where the jobs offload to, read at its engine URI.
    ({"TAU_METRICS_OFFLOAD_ADX_CLUSTER_URI": "https://ingest-c.westus.kusto.windows.net",
      "TAU_METRICS_OFFLOAD_ADX_DATABASE": "Runs"},
     {"cluster": "https://c.westus.kusto.windows.net", "database": "Runs", "auth": "default"}),
    ({"TAU_METRICS_OFFLOAD_ADX_CLUSTER_URI": "http://127.0.0.1:8080"},
     {"cluster": "http://127.0.0.1:8080", "database": "Metrics", "auth": "none"}),
])
def test_the_portal_settings_come_from_the_portal_variables_else_the_offload_ones(environ, expected):
    got = portal_kusto_env(environ)
    assert got == {f"TAU_PORTAL_KUSTO_{k.upper()}": v for k, v in expected.items()}


def test_an_ingest_uri_becomes_its_engine_uri():
    assert engine_uri("https://ingest-c.kusto.windows.net/") == "https://c.kusto.windows.net"
    assert engine_uri("https://c.kusto.windows.net") == "https://c.kusto.windows.net"


def test_the_jupyter_proxy_portal_gets_the_kusto_settings(monkeypatch):
    for name in KUSTO_VARS:
        monkeypatch.delenv(name, raising=False)
    assert not any(k.startswith("TAU_PORTAL_KUSTO_") for k in setup_tau_portal()["environment"])
    monkeypatch.setenv("TAU_METRICS_OFFLOAD_ADX_CLUSTER_URI", "https://ingest-c.kusto.windows.net")
    env = setup_tau_portal()["environment"]
    assert env["TAU_PORTAL_KUSTO_CLUSTER"] == "https://c.kusto.windows.net"
    assert env["TAU_PORTAL_KUSTO_DATABASE"] == "Metrics" and env["TAU_PORTAL_KUSTO_AUTH"] == "default"


def test_the_local_portal_serves_kusto_from_the_offload_settings_and_is_replaced_when_they_change(
        tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("TAU_HOME", str(home))
    for name in KUSTO_VARS:
        monkeypatch.delenv(name, raising=False)
    with KustoCluster() as cluster:
        cluster.ingest_ndjson(encode_ndjson_many([event("seed-1", "train/loss", s, 1.0 / (s + 1), workspace="default")
                                                  for s in range(20)]))
        try:
            plain = ensure_portal(home=home)
            assert plain.kusto == ""
            monkeypatch.setenv("TAU_METRICS_OFFLOAD_ADX_CLUSTER_URI", cluster.uri)
            monkeypatch.setenv("TAU_METRICS_OFFLOAD_ADX_DATABASE", cluster.database)
            portal = ensure_portal(home=home)
            assert portal.pid != plain.pid and portal.kusto == f"{cluster.database} at {cluster.uri}"
            assert json.loads(record_file(home=home).read_text())["kusto"] == portal.kusto
            assert ensure_portal(home=home) == portal  # the same settings: reused
            r = httpx.get(f"{portal.url}/api/v2/stellar/runs/seed-1/series",
                          params={"source": "kusto", "target": "seed-1", "metric": "train/loss"},
                          headers={"Authorization": f"Bearer {portal.token}"}, timeout=30)
            assert r.status_code == 200, r.text
            assert r.json()["source_points"] == 20 and r.json()["metadata"]["provenance"]["served_sources"] == ["kusto"]
        finally:
            stop_portal(home=home)
        assert cluster.errors == []
