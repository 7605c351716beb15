"""The ``adx-streaming`` sink (ours): deliver chunks by ADX streaming ingestion, falling back to queued ingestion.

Queued ingestion batches for minutes before rows are queryable; streaming ingestion commits a chunk
within the request, so a ``source=kusto`` pane sees a point seconds after it is printed. The sink uses
``azure-kusto-ingest``'s ``ManagedStreamingIngestClient``, which decides when streaming gives up: a
permanent error (bad mapping, streaming not enabled on the table) is raised, transient errors and
throttling are retried with backoff and then fall back to queued ingestion, as does a chunk over the
4 MB streaming limit. The fallback leg is this project's ``adx-queued-v1`` delivery (same event bytes,
``ingestIfNotExists`` tag, final status read from the status table), so a chunk is acknowledged only
once it is durably ingested either way.

Dedup: the bytes are the chunk's canonical NDJSON, exactly what ``adx-queued-v1`` sends. Streaming
ingestion carries no ``ingest-by`` tags, so a chunk redelivered after a crash is ingested again; the
``TauExpMetricEventsV1Dedup`` view (one row per ``event_id``) is what removes the copy, the same
consumer-side dedup at-least-once delivery relies on. The table needs a streaming ingestion policy:
``collector/kql/05-streaming-policy.kql``.
"""

from __future__ import annotations

import hashlib
import io
import uuid
from typing import Any
from urllib.parse import urlsplit

from tau_collector.projection.metric_event import MetricEventError
from tau_collector.sinks.adx.errors import describe, is_retryable
from tau_collector.sinks.adx.queued import DEFAULT_MAPPING, DEFAULT_TABLE, AdxAck, AdxQueuedSink
from tau_collector.sinks.base import Chunk, Sink, SinkError
from tau_collector.taugrid.gojson import encode_string

__all__ = ["AdxStreamingSink", "ingest_uri_for"]

STREAMING_POLICY_ASSET = "collector/kql/05-streaming-policy.kql"


def ingest_uri_for(cluster_uri: str) -> str:
    """The data-management (``ingest-``) URI of an ADX cluster URI, as the Kusto clients derive it."""
    parts = urlsplit(cluster_uri)
    host = parts.hostname or ""
    if parts.scheme == "http" or host.startswith("ingest-"):
        return cluster_uri  # a loopback stand-in names both endpoints itself; an ingest- URI already is one
    return cluster_uri.replace("://", "://ingest-", 1)


class _QueuedFallback(Exception):
    """Raised by the managed client's queued leg: deliver the chunk with ``adx-queued-v1`` instead."""


class _HandOver:
    """Stands in for the managed client's ``QueuedIngestClient``: its queued leg becomes our queued sink."""

    def ingest_from_stream(self, *args: Any, **kwargs: Any) -> Any:
        raise _QueuedFallback

    def set_proxy(self, proxy_url: str) -> None:
        pass

    def close(self) -> None:
        pass


class AdxStreamingSink(Sink):
    """Stream chunks to ``TauExpMetricEventsV1``; fall back to ``adx-queued-v1`` delivery when streaming gives up.

    ``cluster_uri`` is the engine (query) URI streaming goes to; ``ingest_uri`` the data-management
    URI for the fallback (default: ``ingest-`` + the cluster's host). Authentication as
    :class:`~.adx_queued.AdxQueuedSink` (an ``http://`` URI only for loopback stand-ins, no credentials).
    The fallback's attempts, backoff and final-status timeout are ``adx-queued-v1``'s parameters.
    """

    name = "adx-streaming"

    def __init__(
        self,
        cluster_uri: str,
        database: str,
        *,
        ingest_uri: str = "",
        table: str = DEFAULT_TABLE,
        mapping: str = DEFAULT_MAPPING,
        client_id: str = "",
        credential: Any = None,
        **queued_options: Any,
    ) -> None:
        self.cluster_uri = cluster_uri.strip().rstrip("/")
        self.ingest_uri = (ingest_uri.strip() or ingest_uri_for(self.cluster_uri)).rstrip("/")
        # Validates every shared parameter (URIs, names, budget) with the queued sink's messages.
        self.queued = AdxQueuedSink(self.ingest_uri, database, table=table, mapping=mapping, client_id=client_id,
                                    credential=credential, **queued_options)
        if urlsplit(self.cluster_uri).scheme not in ("http", "https"):
            raise ValueError(f"ADX cluster URI must be https://<cluster>.kusto.windows.net; got {self.cluster_uri!r}")
        self.database, self.table, self.mapping = self.queued.database, self.queued.table, self.queued.mapping
        self._credential = credential
        self._client: Any = None
        self.last_ack: AdxAck | None = None
        self.streamed = 0  # chunks committed by streaming (the rest went through the queued fallback)

    def identity(self) -> str:
        raw = "{" + ",".join(
            f'"{key}":{encode_string(value, escape_html=True)}'
            for key, value in (("version", self.name), ("cluster_uri", self.cluster_uri),
                               ("fallback", self.queued.identity()))
        ) + "}"
        return self.name + ":" + hashlib.sha256(raw.encode()).hexdigest()

    def terminal_drain_timeout_s(self) -> float:
        return self.queued.terminal_drain_timeout_s()

    def _managed(self) -> Any:
        if self._client is None:
            try:
                from azure.kusto.data import KustoConnectionStringBuilder
                from azure.kusto.ingest import ManagedStreamingIngestClient
            except ImportError as error:
                raise SinkError(
                    f"the adx-streaming sink needs the Azure client libraries ({error}); "
                    "install them with: pip install 'tau-collector[adx]'",
                    retryable=False,
                ) from error
            if urlsplit(self.cluster_uri).scheme == "http":
                # Loopback stand-ins only: plain HTTP carries no credentials.
                kcsb = KustoConnectionStringBuilder.with_no_authentication(self.cluster_uri)
            else:
                # The queued leg's credential choice (workload, managed identity, or the default chain).
                credential = self._credential or self.queued._default_credential()
                kcsb = KustoConnectionStringBuilder.with_azure_token_credential(self.cluster_uri, credential)
            client = ManagedStreamingIngestClient(kcsb, kcsb)
            client.queued_client.close()
            client.queued_client = _HandOver()
            self._client = client
        return self._client

    def deliver(self, chunk: Chunk) -> None:
        if hashlib.sha256(chunk.ndjson).hexdigest() != chunk.chunk_digest:
            raise SinkError(f"ADX chunk {chunk.sequence}: digest does not match its NDJSON; "
                            "the pending manifest is corrupt", retryable=False)
        try:
            count = len(chunk.decoded_events())
        except MetricEventError as error:
            raise SinkError(f"ADX chunk {chunk.sequence}: canonical NDJSON: {error}", retryable=False) from error
        if count != chunk.event_count:
            raise SinkError(f"ADX chunk {chunk.sequence}: event count mismatch: manifest says {chunk.event_count}, "
                            f"NDJSON holds {count}", retryable=False)
        if count == 0:
            self.last_ack = AdxAck(chunk.sequence, 0, 0, "Empty", "", "")
            return
        from azure.kusto.data.data_format import DataFormat, IngestionMappingKind
        from azure.kusto.ingest import IngestionProperties, StreamDescriptor

        source_id = uuid.uuid4()
        properties = IngestionProperties(
            database=self.database, table=self.table, data_format=DataFormat.JSON,
            ingestion_mapping_reference=self.mapping, ingestion_mapping_kind=IngestionMappingKind.JSON,
        )  # fmt: skip
        try:
            self._managed().ingest_from_stream(StreamDescriptor(io.BytesIO(chunk.ndjson), source_id), properties)
        except _QueuedFallback:
            self.queued.deliver(chunk)
            self.last_ack = self.queued.last_ack
            return
        except SinkError:
            raise
        except Exception as error:
            raise self._failure(chunk, error) from error
        self.streamed += 1
        self.last_ack = AdxAck(chunk.sequence, chunk.event_count, 1, "Streamed", str(source_id), "")

    def _failure(self, chunk: Chunk, error: BaseException) -> SinkError:
        retryable = is_retryable(error)
        text = describe(error)
        hint = ("the chunk stays pending and is retried on the next drain" if retryable
                else "fix the configuration or the data named above; retrying will not help")
        if "streaming" in text.lower() and "polic" in text.lower():
            hint = f"enable streaming ingestion on the table ({STREAMING_POLICY_ASSET}) or use --sink adx-queued-v1"
        return SinkError(
            f"ADX streaming ingestion of chunk {chunk.sequence} ({self.database}.{self.table} at {self.cluster_uri}) "
            f"failed: {text}; {hint}",
            retryable=retryable,
        )

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()
        self.queued.close()
