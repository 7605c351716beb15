"""The ``adx-streaming`` sink: the real ManagedStreamingIngestClient against the stand-in cluster, queued fallback via Azurite.

Streaming goes to the stand-in query engine's ``/v1/rest/ingest/{db}/{table}`` (``services/kusto_cluster.py``),
the fallback to the management stand-in + Azurite + the ingestion worker, which feeds the same engine: rows
land where the reader queries them either way.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from services.adx_env import AdxEnv, metric_chunk
from services.azurite import free_port
from services.kusto_cluster import KustoCluster
from tau_collector.sinks import SinkError
from tau_collector.sinks.adx.streaming import AdxStreamingSink, ingest_uri_for
from taunotebook.portal.kusto import KustoConnection, KustoReader, KustoSettings


@pytest.fixture
def cluster(adx_env: AdxEnv) -> Iterator[KustoCluster]:
    with KustoCluster() as cluster:
        adx_env.worker.on_ingest = cluster.ingest_ndjson
        cluster.database_aliases.add(adx_env.database)  # the sink's database name, on both legs
        yield cluster
    assert cluster.errors == []


def streaming_sink(cluster: KustoCluster, env: AdxEnv, **changes) -> AdxStreamingSink:
    options = dict(ingest_uri=env.ingest_uri, max_attempts=2, retry_backoff_s=0.1, final_status_timeout_s=10.0,
                   status_poll_interval_s=0.2)
    options.update(changes)
    # The engine's database is the stand-in's; the queued leg's worker expects env.database.
    return AdxStreamingSink(cluster.uri, env.database, **options)


def reader(cluster: KustoCluster) -> KustoReader:
    settings = KustoSettings(cluster.uri, cluster.database, auth="none", query_now=datetime(2026, 10, 1, tzinfo=UTC))
    return KustoReader(KustoConnection(settings), workspace="")


def test_a_streamed_chunk_is_queryable_when_deliver_returns(cluster, adx_env):
    sink = streaming_sink(cluster, adx_env)
    try:
        sink.deliver(metric_chunk(1, range(5)))
    finally:
        sink.close()
    assert sink.last_ack.final_status == "Streamed" and sink.streamed == 1
    series = reader(cluster).series("seed-1", "train/loss")
    assert series.step.tolist() == [0, 1, 2, 3, 4] and series.value.tolist() == [2.0 / (s + 1) for s in range(5)]
    # Nothing went through the queued path (whose ingestion is polled for), so deliver waited for nothing but
    # the streaming call: said by what was ingested where, not by a wall-clock bound that a loaded machine misses.
    assert adx_env.worker.ingestions == []


def test_a_redelivered_chunk_is_two_copies_in_the_table_and_one_in_every_read(cluster, adx_env):
    sink = streaming_sink(cluster, adx_env)
    try:
        sink.deliver(metric_chunk(1, range(5)))
        sink.deliver(metric_chunk(1, range(5)))
    finally:
        sink.close()
    assert cluster.row_count() == 10
    (summary,) = reader(cluster).metric_summaries("seed-1")
    assert summary.count == 5


def test_a_transient_streaming_failure_falls_back_to_queued_and_acks_only_the_final_status(cluster, adx_env):
    cluster.streaming_failures = ["transient"] * 3  # every streaming attempt of the managed client
    sink = streaming_sink(cluster, adx_env)
    try:
        sink.deliver(metric_chunk(1, range(5)))
    finally:
        sink.close()
    assert sink.streamed == 0 and sink.last_ack.final_status == "Succeeded"
    (ingestion,) = adx_env.worker.ingestions
    assert ingestion.ingest_if_not_exists == (sink.last_ack.ingest_by_tag,)
    assert reader(cluster).series("seed-1", "train/loss").source_points == 5


def test_a_table_without_the_streaming_policy_is_a_fatal_error_naming_the_asset(cluster, adx_env):
    cluster.streaming_enabled = False
    sink = streaming_sink(cluster, adx_env)
    try:
        with pytest.raises(SinkError, match="05-streaming-policy.kql") as caught:
            sink.deliver(metric_chunk(1, range(5)))
    finally:
        sink.close()
    assert not caught.value.retryable and "Streaming ingestion policy is not enabled" in str(caught.value)
    assert cluster.row_count() == 0 and adx_env.worker.ingestions == []


def test_an_unreachable_engine_is_retryable(adx_env):
    sink = AdxStreamingSink(f"http://127.0.0.1:{free_port()}", adx_env.database, ingest_uri=adx_env.ingest_uri)
    sink.queued  # noqa: B018 - constructed, validated
    sink._managed()._set_retry_settings(max_seconds_per_retry=0.05)
    try:
        with pytest.raises(SinkError) as caught:
            sink.deliver(metric_chunk(1, range(2)))
    finally:
        sink.close()
    assert caught.value.retryable and "retried on the next drain" in str(caught.value)


def test_identity_differs_from_the_queued_sinks_and_follows_the_endpoints(adx_env):
    a = AdxStreamingSink("https://c.westus.kusto.windows.net", "Metrics", client_id="id")
    b = AdxStreamingSink("https://d.westus.kusto.windows.net", "Metrics", client_id="id")
    assert a.identity().startswith("adx-streaming:") and a.identity() != b.identity()
    assert a.identity() != a.queued.identity()
    assert a.ingest_uri == "https://ingest-c.westus.kusto.windows.net"
    assert ingest_uri_for("https://ingest-c.westus.kusto.windows.net") == "https://ingest-c.westus.kusto.windows.net"
    with pytest.raises(ValueError, match="--adx-database"):
        AdxStreamingSink("https://c.westus.kusto.windows.net", " ")


def test_the_cli_builds_the_streaming_sink_from_flags_and_environment(tmp_path, monkeypatch):
    from tau_collector.cli import build_parser
    from tau_collector.cli.collect import resolve_options

    monkeypatch.setenv("TAU_METRICS_OFFLOAD_ADX_INGEST_URI", "https://ingest-elsewhere.westus.kusto.windows.net")
    args = build_parser().parse_args([
        "collect", "--run", "r", "--project", "p", "--experiment", "e", "--group", "g", "--out", str(tmp_path),
        "--history", str(tmp_path / "*.jsonl"), "--sink", "adx-streaming", "--adx-cluster-uri",
        "https://c.westus.kusto.windows.net", "--adx-database", "Metrics", "--adx-client-id", "id",
    ])
    _, (sink,) = resolve_options(args)
    assert isinstance(sink, AdxStreamingSink)
    assert (sink.cluster_uri, sink.ingest_uri, sink.queued.client_id) == (
        "https://c.westus.kusto.windows.net", "https://ingest-elsewhere.westus.kusto.windows.net", "id")


def test_the_cli_names_the_streaming_sink_when_a_flag_is_missing(tmp_path, capsys):
    from tau_collector.cli import main

    code = main(["collect", "--run", "r", "--project", "p", "--experiment", "e", "--group", "g", "--out",
                 str(tmp_path), "--history", str(tmp_path / "*.jsonl"), "--sink", "adx-streaming"])
    assert code == 2 and "--adx-cluster-uri is required for the adx-streaming sink" in capsys.readouterr().err


def test_a_mapping_the_table_does_not_have_is_a_fatal_error(cluster, adx_env):
    sink = streaming_sink(cluster, adx_env, mapping="NoSuchMapping")
    try:
        with pytest.raises(SinkError, match="NoSuchMapping") as caught:
            sink.deliver(metric_chunk(1, range(2)))
    finally:
        sink.close()
    assert not caught.value.retryable and cluster.row_count() == 0
