"""The adx-queued-v1 sink against real Azure Storage APIs (Azurite), the real Kusto ingest client and a test ADX worker."""

from __future__ import annotations

import hashlib
import threading

import pytest
from conftest import AdxEnv
from services.ingestion_worker import Outcome

from tau_collector.metric_event import encode_ndjson_many, new_metric_event
from tau_collector.sinks import Chunk, SinkError
from tau_collector.sinks.adx_queued import AdxQueuedSink, chunk_ingest_tag

WALL_TIME_NS = 1_790_274_612_250_000_000
EXPORTED_AT_NS = 1_790_274_700_000_000_000


def make_chunk(sequence: int = 1, steps: range = range(5), run_id: str = "seed-1") -> Chunk:
    events = [
        new_metric_event(
            project="demo",
            experiment_id="sgd-demo",
            run_group_id="lr-sweep",
            run_id=run_id,
            metric_name="train/loss",
            step=step,
            wall_time=WALL_TIME_NS + step * 1_000_000,
            value=2.0 / (step + 1),
            exported_at=EXPORTED_AT_NS,
            source="jsonl",
            tags={"html": "<ok>"},
        )
        for step in steps
    ]
    ndjson = encode_ndjson_many(events)
    return Chunk(sequence, "history", hashlib.sha256(ndjson).hexdigest(), ndjson, len(events))


class RecordingSleep:
    """Records the backoff the sink asks for, and sleeps it (the fixtures' backoffs are short)."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
        threading.Event().wait(seconds)


def make_sink(env: AdxEnv, **overrides: object) -> AdxQueuedSink:
    options: dict = {
        "max_attempts": 3,
        "retry_backoff_s": 0.1,
        "final_status_timeout_s": 20.0,
        "status_poll_interval_s": 0.2,
    }
    options.update(overrides)
    return AdxQueuedSink(env.ingest_uri, env.database, **options)


def test_chunk_is_ingested_and_acknowledged_with_its_events(adx_env: AdxEnv) -> None:
    chunk = make_chunk()
    sink = make_sink(adx_env)
    try:
        sink.deliver(chunk)
    finally:
        sink.close()

    assert sink.last_ack is not None and sink.last_ack.final_status == "Succeeded"
    assert sink.last_ack.attempts == 1 and sink.last_ack.events == 5
    stored = adx_env.worker.events
    sent = {e.event_id: e for e in __import__("tau_collector.metric_event").metric_event.decode_canonical_ndjson(chunk.ndjson)}
    assert stored == sent
    [ingestion] = adx_env.worker.ingestions
    tag = chunk_ingest_tag(chunk.chunk_digest)
    assert ingestion.ingest_if_not_exists == (tag,)
    assert ingestion.ingest_by_tags == (tag,)
    assert (ingestion.data_format, ingestion.mapping_reference) == ("json", "TauExpMetricEventsV1Json")
    assert (ingestion.report_method, ingestion.report_level) == (1, 2)  # Table, FailuresAndSuccesses
