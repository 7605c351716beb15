"""Every upstream fault becomes a typed error that the v2 layer maps to TauGrid's envelope; nothing partial comes back.

The faults come from a canned-frame endpoint (``services/kusto_faults.py``) answering the real client.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from services.azurite import free_port
from services.kusto_faults import KustoFaultServer
from taunotebook.portal.kusto import (
    KustoConnection,
    KustoReader,
    KustoSettings,
    KustoTimeout,
    KustoUpstreamError,
)
from taunotebook.portal.kusto.queries import runs_query


@pytest.fixture
def faults() -> Iterator[KustoFaultServer]:
    with KustoFaultServer() as server:
        yield server


def connection(uri: str, **settings) -> KustoConnection:
    return KustoConnection(KustoSettings(uri, "Metrics", auth="none", **settings))


QUERY = runs_query("ws-a", run_id="seed-1")


def test_a_good_answer_reads_and_sends_options_and_parameters(faults):
    rows = connection(faults.uri, timeout_s=30).execute(QUERY)
    assert rows == [{"run_id": "seed-1", "step": 1}, {"run_id": "seed-1", "step": 2}]
    (request,) = faults.requests
    assert request["path"] == "/v2/rest/query" and "Authorization" not in request["headers"]
    properties = json.loads(request["body"]["properties"])
    assert properties["Parameters"] == {"p_workspace": "ws-a", "p_run": "seed-1"}
    assert properties["Options"]["servertimeout"] == "0:00:30"
    assert properties["Options"]["deferpartialqueryfailures"] is False
    assert "ws-a" not in request["body"]["csl"]


@pytest.mark.parametrize(("mode", "error", "kind", "words"), [
    ("http400", KustoUpstreamError, "query", "HTTP 400 General_BadRequest: injected HTTP 400"),
    ("http401", KustoUpstreamError, "unauthorized", "HTTP 401, the identity of --kusto-auth none may not read"),
    ("http403", KustoUpstreamError, "query", "HTTP 403"),
    ("http429", KustoUpstreamError, "throttled", "throttled by the cluster (HTTP 429)"),
    ("http500", KustoUpstreamError, "query", "HTTP 500"),
    ("http503", KustoUpstreamError, "query", "HTTP 503"),
    ("inband", KustoUpstreamError, "in-band", "exceeded the allowed limits (80DA0003)"),
    ("has_errors", KustoUpstreamError, "in-band", "reported errors (DataSetCompletion): Query execution has exceeded"),
    ("cancelled", KustoUpstreamError, "in-band", "was cancelled"),
    ("garbage", KustoUpstreamError, "", "Kusto query on Metrics at http://127.0.0.1:"),
])
def test_each_fault_is_a_typed_error_naming_the_cluster(faults, mode, error, kind, words):
    faults.mode = mode
    with pytest.raises(error) as caught:
        connection(faults.uri).execute(QUERY)
    assert type(caught.value) is error and caught.value.status == 502 and caught.value.code == "UPSTREAM_FAILURE"
    assert words in str(caught.value) and f"Metrics at {faults.uri}" in str(caught.value)
    if kind:
        assert caught.value.kind == kind


def test_a_slow_cluster_is_an_upstream_timeout(faults):
    faults.mode, faults.delay_s = "slow", 4.0
    with pytest.raises(KustoTimeout) as caught:
        connection(faults.uri, timeout_s=0.5, client_grace_s=0.5).execute(QUERY)
    assert (caught.value.status, caught.value.code) == (504, "UPSTREAM_TIMEOUT")
    assert "no answer within 1s" in str(caught.value)


def test_a_refused_connection_is_an_upstream_failure():
    uri = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(KustoUpstreamError, match="cannot reach the cluster") as caught:
        connection(uri).execute(QUERY)
    assert caught.value.kind == "network" and caught.value.status == 502


def test_the_reader_raises_rather_than_returning_part_of_an_answer(faults):
    faults.mode = "has_errors"
    reader = KustoReader(connection(faults.uri), workspace="ws-a")
    with pytest.raises(KustoUpstreamError):
        reader.runs()


@pytest.mark.parametrize(("settings", "message"), [
    ({"cluster": ""}, "--kusto-cluster is required"),
    ({"cluster": "https://c.kusto.windows.net", "database": " "}, "--kusto-database is required"),
    ({"cluster": "https://c.kusto.windows.net", "auth": "token"}, "--kusto-auth must be one of default, cli, none"),
    ({"cluster": "http://c.example", "auth": "none"}, "only a loopback test cluster"),
    ({"cluster": "http://127.0.0.1:1", "auth": "default"}, "only a loopback test cluster with --kusto-auth none"),
    ({"cluster": "https://c.kusto.windows.net", "auth": "none"}, "--kusto-auth none is only for a loopback"),
    ({"cluster": "c.kusto.windows.net"}, "must be an https:// URI"),
])
def test_bad_settings_are_refused_with_the_flag_named(settings, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        KustoSettings(**settings)


def test_settings_come_from_the_environment_and_flags_override_them():
    env = {"TAU_PORTAL_KUSTO_CLUSTER": "https://c.westus.kusto.windows.net/", "TAU_PORTAL_KUSTO_DATABASE": "Exp"}
    settings = KustoSettings.from_env(env)
    assert (settings.cluster, settings.database, settings.auth) == ("https://c.westus.kusto.windows.net", "Exp",
                                                                    "default")
    assert KustoSettings.from_env(env, auth="cli", database=None).auth == "cli"
    assert KustoSettings.from_env({}) is None
