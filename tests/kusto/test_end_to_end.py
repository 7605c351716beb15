"""Collector → ADX sink (queued and streaming) → stand-in engine → ``KustoReader``: every part real but the cluster.

The queued path: Azurite, the Kusto management stand-in, the ingestion worker (which applies the shipped
mapping into the stand-in engine). The streaming path: ``ManagedStreamingIngestClient`` POSTing to the
stand-in engine. The reader queries through the real ``azure-kusto-data`` client.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.kusto import reader_for
from fixtures.servers import ServerThread
from services.adx_env import AdxEnv
from services.kusto_cluster import KustoCluster
from tau_collector.collect.loop import Collector, CollectorOptions
from tau_collector.collect.options import CollectorError
from tau_collector.sinks.adx.queued import AdxQueuedSink
from tau_collector.sinks.adx.streaming import AdxStreamingSink
from taunotebook.client import PortalClient
from taunotebook.portal.app import create_app

from ..polling import DEADLINE

NOW = "2026-12-31T00:00:00Z"


@pytest.fixture
def cluster(adx_env: AdxEnv) -> Iterator[KustoCluster]:
    with KustoCluster() as cluster:
        adx_env.worker.on_ingest = cluster.ingest_ndjson
        cluster.database_aliases.add(adx_env.database)
        yield cluster
    assert cluster.errors == []


def write_chunk(directory: Path, index: int, steps: range, base: float = 1_790_000_000.0) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    name = f"chunk-{index:06d}-{1_790_000_000_000 + index}.jsonl"
    lines = "".join(json.dumps({"_step": s, "_timestamp": base + s / 4, "loss": 1.0 / (s + 1)}) + "\n"
                    for s in steps)
    (directory / f".{name}.tmp").write_text(lines)
    os.rename(directory / f".{name}.tmp", directory / name)


def options(tmp_path: Path, sink, **changes) -> CollectorOptions:
    base = dict(run="seed-1", project="demo", experiment="adx", group="g", out=str(tmp_path / "out"), sinks=[sink],
                history=[str(tmp_path / "hist" / "*.jsonl")], completion_file=str(tmp_path / "completion.json"),
                done_file=str(tmp_path / "done"), retry_backoff=0.2, tags={"tau_workspace": "ws-a"})
    base.update(changes)
    return CollectorOptions(**base)


def queued(env: AdxEnv) -> AdxQueuedSink:
    return AdxQueuedSink(env.ingest_uri, env.database, max_attempts=2, retry_backoff_s=0.1,
                         final_status_timeout_s=10.0, status_poll_interval_s=0.2)


def streaming(cluster: KustoCluster, env: AdxEnv) -> AdxStreamingSink:
    return AdxStreamingSink(cluster.uri, env.database, ingest_uri=env.ingest_uri, max_attempts=2,
                            retry_backoff_s=0.1, final_status_timeout_s=10.0, status_poll_interval_s=0.2)


@pytest.mark.parametrize("kind", ["queued", "streaming"])
def test_a_finished_run_reads_back_whole_once_and_succeeded(tmp_path, adx_env, cluster, kind):
    write_chunk(tmp_path / "hist", 0, range(0, 600))
    write_chunk(tmp_path / "hist", 1, range(600, 1000))
    (tmp_path / "completion.json").write_text("")
    sink = queued(adx_env) if kind == "queued" else streaming(cluster, adx_env)
    try:
        result = Collector(options(tmp_path, sink)).run()
        Collector(options(tmp_path, sink)).run()  # a second run delivers nothing new
    finally:
        sink.close()
    assert (result.events, result.completed) == (1001, True)
    reader = reader_for(cluster, "ws-a", query_now=NOW)
    run = reader.run("seed-1")
    assert (run.state, run.experiment_id, run.metric_names) == ("succeeded", "adx", ("loss", "tau/run_status"))
    series = reader.series("seed-1", "loss", max_points=400)
    assert series.source_points == 1000 and series.partial and {0, 999} <= set(series.step.tolist())
    (summary,) = [s for s in reader.metric_summaries("seed-1") if s.metric_name == "loss"]
    assert (summary.count, summary.latest_step, summary.latest_value) == (1000, 999, 0.001)
    if kind == "streaming":
        assert sink.streamed == result.chunks and adx_env.worker.ingestions == []  # nothing fell back
    # ... and through the Portal's HTTP routes to the client a pane reads with.
    with ServerThread(create_app(None, token="t" * 24, workspace="ws-a", kusto=reader)) as server, \
            PortalClient(f"http://127.0.0.1:{server.port}", "t" * 24, source="kusto") as client:
        assert client.run("seed-1").state == "succeeded"
        whole = client.series("seed-1", "loss", max_points=12000)
        assert list(whole.steps) == list(range(1000)) and whole.values[999] == 0.001
        assert whole.metadata.provenance.served_sources == ("kusto",)


def test_a_live_pane_polling_the_tail_sees_streamed_points_within_seconds(tmp_path, adx_env, cluster):
    """What a ``source=kusto`` pane does: poll the steps after the last one it has, one small query a poll."""
    sink = streaming(cluster, adx_env)
    collector = Collector(options(tmp_path, sink, watch=True, interval=0.2))
    ended: list[BaseException] = []

    def run() -> None:
        try:
            collector.run()
        except CollectorError as exc:
            ended.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    reader = reader_for(cluster, "ws-a", query_now=NOW)
    latencies, seen, polls, queries_before = [], -1, 0, len(cluster.requests)
    thread.start()
    try:
        for batch in range(3):
            steps = range(batch * 10, batch * 10 + 10)
            written = time.monotonic()
            write_chunk(tmp_path / "hist", batch, steps, base=time.time())
            deadline = written + DEADLINE  # only a broken build meets it; the latencies are printed, not asserted
            while seen < steps[-1]:
                assert time.monotonic() < deadline, f"step {steps[-1]} not readable within {DEADLINE:.0f} s"
                polls += 1
                tail = reader.series("seed-1", "loss", start_step=seen + 1)
                if tail.step.size:
                    assert tail.step.tolist() == list(range(seen + 1, int(tail.step[-1]) + 1))  # no gaps
                    seen = int(tail.step[-1])
                else:
                    time.sleep(0.1)
            latencies.append(time.monotonic() - written)
    finally:
        # The job ends as a job does, with its completion file (a stop would wait TauGrid's 30 s for one first).
        (tmp_path / "completion.json").write_text("")
        thread.join(timeout=DEADLINE)
        if thread.is_alive():
            collector.stop()
            thread.join(timeout=DEADLINE)
        sink.close()
    assert seen == 29 and len(cluster.requests) - queries_before == polls  # one query per poll
    assert not thread.is_alive() and ended == [] and collector.result.completed
    assert sink.streamed >= 3 and adx_env.worker.ingestions == []
    print(f"print -> queryable latencies (s): {[round(x, 2) for x in latencies]}")
