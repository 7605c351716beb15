"""The test ingestion worker also reports through the status queues, for the client's default queue method."""

from __future__ import annotations

import io
import threading

from azure.kusto.data import KustoConnectionStringBuilder
from azure.kusto.data.data_format import DataFormat, IngestionMappingKind
from azure.kusto.ingest import IngestionProperties, QueuedIngestClient, ReportLevel
from azure.kusto.ingest.status import KustoIngestStatusQueues

from services.adx_env import AdxEnv, metric_chunk


def _pop_one(queue, deadline_s: float = 30.0) -> list:
    """Poll a status queue until a message arrives (a liveness wait; the assertions follow)."""
    stop = threading.Event()
    timer = threading.Timer(deadline_s, stop.set)
    timer.start()
    try:
        while not stop.is_set():
            messages = queue.pop(1)
            if messages:
                return messages
            stop.wait(0.1)
        return []
    finally:
        timer.cancel()


def _properties(env: AdxEnv, mapping: str) -> IngestionProperties:
    return IngestionProperties(
        env.database,
        "TauExpMetricEventsV1",
        data_format=DataFormat.JSON,
        ingestion_mapping_reference=mapping,
        ingestion_mapping_kind=IngestionMappingKind.JSON,
        report_level=ReportLevel.FailuresAndSuccesses,
    )


def test_queue_report_method_posts_a_success_message(adx_env: AdxEnv) -> None:
    chunk = metric_chunk()
    client = QueuedIngestClient(KustoConnectionStringBuilder.with_no_authentication(adx_env.ingest_uri))
    try:
        result = client.ingest_from_stream(io.BytesIO(chunk.ndjson), _properties(adx_env, "TauExpMetricEventsV1Json"))
        [message] = _pop_one(KustoIngestStatusQueues(client).success)
    finally:
        client.close()

    assert message.IngestionSourceId == str(result.source_id)
    assert (message.Database, message.Table) == (adx_env.database, "TauExpMetricEventsV1")
    assert len(adx_env.worker.rows) == chunk.event_count


def test_queue_report_method_posts_a_failure_message(adx_env: AdxEnv) -> None:
    client = QueuedIngestClient(KustoConnectionStringBuilder.with_no_authentication(adx_env.ingest_uri))
    try:
        result = client.ingest_from_stream(io.BytesIO(metric_chunk().ndjson), _properties(adx_env, "Missing"))
        [message] = _pop_one(KustoIngestStatusQueues(client).failure)
    finally:
        client.close()

    assert message.IngestionSourceId == str(result.source_id)
    assert message.ErrorCode == "BadRequest_MappingReferenceWasNotFound"
    assert message.FailureStatus == "Permanent" and message.ShouldRetry is False
    assert adx_env.worker.rows == []
