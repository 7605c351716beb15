"""The ``adx-queued-v1`` sink: deliver chunks by ADX queued ingestion and wait for their final status.

TauGrid's semantics (``metrics/experiment-metrics-collector/adx_queued.go``): JSON format with a
mapping reference, ``ingestIfNotExists`` and ``ingest-by`` tag ``taugrid-metric-chunk-<digest>``
so a re-delivered chunk is skipped by ADX instead of ingested twice, status reported to the
ingestion status table (``ReportResultToTable``) and polled immediately, then every poll
interval, until the attempt deadline (= the final-status timeout, covering submit and wait).
``Succeeded``/``Skipped`` acknowledge; anything else is classified retryable or fatal, and a
retryable failure is retried after ``backoff·2^(n−1)``.

The Python ``azure-kusto-ingest`` client has no table report method (its ``ReportMethod`` knows only
the queue), so this module does what the Go, Java, .NET and Node clients do for it: insert a
``Pending`` row keyed by the source id into the status table from ``.get ingestion resources``,
name it in the queued message (``IngestionStatusInTable``), and read that row. Resource discovery,
the identity token and the message body come from ``QueuedIngestClient``'s own resource manager and
``IngestionBlobInfo`` (hence the ``<7`` pin: ``_resource_manager`` is not public API); the storage
calls are made here so that their retries and timeouts stay inside the attempt deadline.
"""

from __future__ import annotations

import gzip
import hashlib
import math
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from tau_collector.collect.completion_file import TERMINAL_DRAIN_GRACE
from tau_collector.projection.metric_event import MetricEventError
from tau_collector.sinks.adx.errors import describe, is_retryable, redact_url
from tau_collector.sinks.base import Chunk, Sink, SinkError
from tau_collector.taugrid.gojson import encode_string

__all__ = [
    "DEFAULT_ATTEMPTS",
    "DEFAULT_FINAL_STATUS_TIMEOUT_S",
    "DEFAULT_MAPPING",
    "DEFAULT_RETRY_BACKOFF_S",
    "DEFAULT_STATUS_POLL_INTERVAL_S",
    "DEFAULT_TABLE",
    "MAX_ATTEMPTS",
    "AdxAck",
    "AdxQueuedSink",
    "chunk_ingest_tag",
    "terminal_drain_timeout_s",
]

DEFAULT_TABLE = "TauExpMetricEventsV1"
DEFAULT_MAPPING = "TauExpMetricEventsV1Json"
MAX_ATTEMPTS = 10
DEFAULT_ATTEMPTS = 3
DEFAULT_RETRY_BACKOFF_S = 1.0
DEFAULT_FINAL_STATUS_TIMEOUT_S = 600.0
DEFAULT_STATUS_POLL_INTERVAL_S = 5.0
MAX_TERMINAL_DRAIN_TIMEOUT_S = 2 * 3600.0

# TauGrid hashes this constant as the credential kind; keeping it makes our identity equal theirs.
_IDENTITY_KIND = "azidentity-token-credential-v1"
# Kusto wire values the Python client does not define (it knows only ReportMethod.Queue = 0).
_REPORT_METHOD_TABLE = 1
_ACKNOWLEDGED = frozenset({"Succeeded", "Skipped"})
_NOT_FINAL = frozenset({"Pending", "Queued"})


def chunk_ingest_tag(chunk_digest: str) -> str:
    """The ``ingestIfNotExists``/``ingest-by`` value that makes ADX ingest a chunk at most once."""
    return "taugrid-metric-chunk-" + chunk_digest


def _resolve(value: float, default: float, what: str, flag: str) -> float:
    if value < 0 or math.isnan(value):
        raise ValueError(f"{flag} must not be negative (got {value}); use 0 for the default {default:g}s")
    value = value or default
    if value > MAX_TERMINAL_DRAIN_TIMEOUT_S:
        raise ValueError(
            f"ADX delivery budget exceeds maximum terminal drain timeout 2h: "
            f"{what} is {value:g}s; lower {flag}"
        )
    return value


def terminal_drain_timeout_s(
    max_attempts: int = 0, retry_backoff_s: float = 0.0, final_status_timeout_s: float = 0.0
) -> float:
    """TauGrid's finite drain budget covering every attempt, its backoff and a 30 s grace.

    ``attempts·timeout + (2^(attempts−1) − 1)·backoff + 30 s``; zero values take the defaults (3 attempts,
    1 s, 10 min). A budget above 2 h is refused, as TauGrid refuses it, rather than silently cut.
    """
    if not 0 <= max_attempts <= MAX_ATTEMPTS:
        raise ValueError(f"adx_max_attempts must be between 0 and {MAX_ATTEMPTS} (got {max_attempts})")
    attempts = max_attempts or DEFAULT_ATTEMPTS
    backoff = _resolve(retry_backoff_s, DEFAULT_RETRY_BACKOFF_S, "retry backoff", "adx_retry_backoff")
    timeout = _resolve(
        final_status_timeout_s,
        DEFAULT_FINAL_STATUS_TIMEOUT_S,
        "final status timeout",
        "adx_final_status_timeout",
    )
    budget = attempts * timeout + ((1 << (attempts - 1)) - 1) * backoff + TERMINAL_DRAIN_GRACE
    if budget > MAX_TERMINAL_DRAIN_TIMEOUT_S:
        raise ValueError(
            f"ADX delivery budget {budget:g}s exceeds maximum terminal drain timeout 2h; "
            "lower adx_max_attempts, adx_retry_backoff or adx_final_status_timeout"
        )
    return budget


@dataclass(frozen=True)
class AdxAck:
    """How the last acknowledged chunk was delivered (TauGrid's ``DeliveryAck`` metadata)."""

    sequence: int
    events: int
    attempts: int
    final_status: str  # Succeeded | Skipped | Empty (nothing to ingest)
    source_id: str
    ingest_by_tag: str


class _Failure(Exception):
    """One attempt's failure, already classified."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


def _with_object(url: str, name: str) -> str:
    """``https://acct/container?sas`` + blob name → ``https://acct/container/name?sas``."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/") + "/" + name, parts.query, ""))


class AdxQueuedSink(Sink):
    """Deliver chunks to ``TauExpMetricEventsV1`` through queued ingestion, acknowledging only a final status.

    ``cluster_uri`` is the cluster's (or its ``ingest-``) URI; the client derives the ingestion
    endpoint. An ``http://`` URI is used with **no authentication** — only Azurite-backed test
    environments and local stand-ins answer plain HTTP; every ADX cluster is ``https://``. For
    ``https://``: workload identity when ``AZURE_FEDERATED_TOKEN_FILE`` is set, else managed
    identity with ``client_id``, else (no client id) azure-identity's default chain — TauGrid's order.
    Zero for ``max_attempts``, ``retry_backoff_s``, ``final_status_timeout_s``,
    ``status_poll_interval_s`` means TauGrid's default (3, 1 s, 10 min, 5 s).
    """

    name = "adx-queued-v1"

    def __init__(
        self,
        cluster_uri: str,
        database: str,
        *,
        table: str = DEFAULT_TABLE,
        mapping: str = DEFAULT_MAPPING,
        client_id: str = "",
        max_attempts: int = 0,
        retry_backoff_s: float = 0.0,
        final_status_timeout_s: float = 0.0,
        status_poll_interval_s: float = 0.0,
        credential: Any = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.cluster_uri = cluster_uri.strip().rstrip("/")
        self.database = database.strip()
        self.table = table.strip()
        self.mapping = mapping.strip()
        self.client_id = client_id.strip()
        for label, flag, value in (
            ("cluster URI", "--adx-cluster-uri", self.cluster_uri),
            ("database", "--adx-database", self.database),
            ("table", "--adx-table", self.table),
            ("ingestion mapping", "--adx-mapping", self.mapping),
        ):
            if not value:
                raise ValueError(f"ADX {label} is required: set {flag}")
        scheme = urlsplit(self.cluster_uri).scheme
        if scheme not in ("http", "https"):
            raise ValueError(
                f"ADX cluster URI must be https://<cluster>.kusto.windows.net "
                f"(or http:// for a local test stand-in); got {self.cluster_uri!r}"
            )
        if status_poll_interval_s < 0:
            raise ValueError("ADX status poll interval must not be negative")
        # Refuse a configuration whose drain budget TauGrid would refuse.
        terminal_drain_timeout_s(max_attempts, retry_backoff_s, final_status_timeout_s)
        self.max_attempts = max_attempts or DEFAULT_ATTEMPTS
        self.retry_backoff_s = retry_backoff_s or DEFAULT_RETRY_BACKOFF_S
        self.final_status_timeout_s = final_status_timeout_s or DEFAULT_FINAL_STATUS_TIMEOUT_S
        self.status_poll_interval_s = status_poll_interval_s or DEFAULT_STATUS_POLL_INTERVAL_S
        self._insecure_http = scheme == "http"
        self._credential = credential
        self._sleep = sleep
        self._client: Any = None
        self.last_ack: AdxAck | None = None

    # ---- identity and budget

    def identity(self) -> str:
        """TauGrid's ``ConfigIdentity``: ``adx-queued-v1:`` + sha256 of the Go-encoded resolved config."""
        fields = (
            ("version", encode_string(self.name, escape_html=True)),
            ("cluster_uri", encode_string(self.cluster_uri, escape_html=True)),
            ("database", encode_string(self.database, escape_html=True)),
            ("table", encode_string(self.table, escape_html=True)),
            ("ingestion_mapping", encode_string(self.mapping, escape_html=True)),
            ("client_id", encode_string(self.client_id, escape_html=True)),
            ("identity", encode_string(_IDENTITY_KIND, escape_html=True)),
            ("max_attempts", str(self.max_attempts)),
            ("retry_backoff_ns", str(round(self.retry_backoff_s * 1e9))),
            ("final_timeout_ns", str(round(self.final_status_timeout_s * 1e9))),
            ("status_poll_interval_ns", str(round(self.status_poll_interval_s * 1e9))),
        )
        raw = "{" + ",".join(f'"{key}":{value}' for key, value in fields) + "}"
        return self.name + ":" + hashlib.sha256(raw.encode()).hexdigest()

    def terminal_drain_timeout_s(self) -> float:
        return terminal_drain_timeout_s(self.max_attempts, self.retry_backoff_s, self.final_status_timeout_s)

    # ---- delivery

    def deliver(self, chunk: Chunk) -> None:
        if hashlib.sha256(chunk.ndjson).hexdigest() != chunk.chunk_digest:
            raise SinkError(
                f"ADX chunk {chunk.sequence}: digest does not match its NDJSON; "
                "the pending manifest is corrupt",
                retryable=False,
            )
        try:
            events = chunk.decoded_events()
        except MetricEventError as error:
            message = f"ADX chunk {chunk.sequence}: canonical NDJSON: {error}"
            raise SinkError(message, retryable=False) from error
        # TauGrid: "ack count must equal events" — checked on what we send, since ADX's status row
        # carries no record count (see _wait_for_status).
        if len(events) != chunk.event_count:
            raise SinkError(
                f"ADX chunk {chunk.sequence}: event count mismatch: manifest says {chunk.event_count}, "
                f"NDJSON holds {len(events)}",
                retryable=False,
            )
        tag = chunk_ingest_tag(chunk.chunk_digest)
        if chunk.event_count == 0:
            self.last_ack = AdxAck(chunk.sequence, 0, 0, "Empty", "", tag)
            return
        last: _Failure | None = None
        for attempt in range(1, self.max_attempts + 1):
            deadline = time.monotonic() + self.final_status_timeout_s
            source_id = str(uuid.uuid4())
            try:
                status_row = self._submit(chunk, tag, source_id, deadline)
                status = self._wait_for_status(status_row, source_id, deadline)
                self.last_ack = AdxAck(chunk.sequence, chunk.event_count, attempt, status, source_id, tag)
                return
            except _Failure as failure:
                last = failure
            if not last.retryable or attempt == self.max_attempts:
                break
            self._sleep(self.retry_backoff_s * (1 << (attempt - 1)))
        assert last is not None
        what_next = (
            "the chunk stays pending and is retried on the next drain"
            if last.retryable
            else "fix the configuration or the data named above; retrying will not help"
        )
        raise SinkError(
            f"ADX ingestion of chunk {chunk.sequence} ({self.database}.{self.table} at {self.cluster_uri}) "
            f"failed after {attempt} attempt(s): {last}; {what_next}",
            retryable=last.retryable,
        )

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()

    # ---- one attempt

    def _ingest_client(self) -> Any:
        if self._client is None:
            try:
                from azure.kusto.data import KustoConnectionStringBuilder
                from azure.kusto.ingest import QueuedIngestClient
            except ImportError as error:
                raise _Failure(
                    f"the adx-queued-v1 sink needs the Azure client libraries ({error}); "
                    "install them with: pip install 'tau-collector[adx]'",
                    retryable=False,
                ) from error

            if self._insecure_http:
                # Azurite-backed tests and local stand-ins only: plain HTTP carries no credentials.
                kcsb = KustoConnectionStringBuilder.with_no_authentication(self.cluster_uri)
            else:
                kcsb = KustoConnectionStringBuilder.with_azure_token_credential(
                    self.cluster_uri, self._credential or self._default_credential()
                )
            self._client = QueuedIngestClient(kcsb)
        return self._client

    def _default_credential(self) -> Any:
        from azure import identity

        if not self.client_id:
            return identity.DefaultAzureCredential()
        if os.environ.get("AZURE_FEDERATED_TOKEN_FILE", "").strip():
            return identity.WorkloadIdentityCredential(client_id=self.client_id)
        return identity.ManagedIdentityCredential(client_id=self.client_id)

    def _timeouts(self, deadline: float) -> dict[str, float]:
        remaining = max(1.0, deadline - time.monotonic())
        return {"connection_timeout": min(20.0, remaining), "read_timeout": min(60.0, remaining)}

    def _submit(self, chunk: Chunk, tag: str, source_id: str, deadline: float) -> tuple[str, str, str]:
        """Upload the gzipped chunk, insert the Pending status row, enqueue the ingestion message."""
        from azure.data.tables import TableClient
        from azure.kusto.data.data_format import DataFormat, IngestionMappingKind
        from azure.kusto.ingest import BlobDescriptor, IngestionProperties, ReportLevel
        from azure.kusto.ingest.ingestion_blob_info import IngestionBlobInfo
        from azure.storage.blob import BlobClient
        from azure.storage.blob import LinearRetry as BlobRetry
        from azure.storage.queue import LinearRetry as QueueRetry
        from azure.storage.queue import QueueClient, TextBase64EncodePolicy

        step = "discover ingestion resources"
        try:
            client = self._ingest_client()
            resources = client._resource_manager
            containers = resources.get_containers()
            queues = resources.get_ingestion_queues()
            tables = resources.get_ingestions_status_tables()
            step = "get the Kusto identity token"
            auth_context = resources.get_authorization_context()
            if not (containers and queues and tables):
                raise _Failure(
                    "`.get ingestion resources` returned no temp storage, ingestion queue or status table; "
                    "check the cluster URI points at an ADX cluster with queued ingestion",
                    retryable=False,
                )
            # One quick storage-level retry per call; the attempt loop in deliver() owns real backoff,
            # and the SDK defaults (15 s and up) would outlast short attempt deadlines.
            timeouts = self._timeouts(deadline)
            blob_name = f"{self.database}__{self.table}__{source_id}__{tag}.json.gz"
            step = "upload the chunk blob"
            blob_url = _with_object(containers[0].url, blob_name)
            blob_retry = BlobRetry(backoff=1, retry_total=1, random_jitter_range=0)
            with BlobClient.from_blob_url(blob_url, retry_policy=blob_retry, **timeouts) as blob:
                blob.upload_blob(gzip.compress(chunk.ndjson, mtime=0), overwrite=True)
            status_row = (tables[0].url, source_id, source_id)
            step = "insert the Pending status row"
            with TableClient.from_table_url(
                tables[0].url, retry_total=1, retry_backoff_factor=0.5, **timeouts
            ) as status_table:
                status_table.create_entity(
                    {
                        "PartitionKey": source_id,
                        "RowKey": source_id,
                        "Status": "Pending",
                        "IngestionSourceId": source_id,
                        "IngestionSourcePath": redact_url(blob_url),
                        "Database": self.database,
                        "Table": self.table,
                        "UpdatedOn": datetime.now(UTC),
                        "Details": "",
                    }
                )
            properties = IngestionProperties(
                database=self.database,
                table=self.table,
                data_format=DataFormat.JSON,
                ingestion_mapping_reference=self.mapping,
                ingestion_mapping_kind=IngestionMappingKind.JSON,
                ingest_if_not_exists=[tag],
                ingest_by_tags=[tag],
                report_level=ReportLevel.FailuresAndSuccesses,
            )
            message = IngestionBlobInfo(
                BlobDescriptor(blob_url, len(chunk.ndjson), source_id),
                properties,
                auth_context=auth_context,
                application_for_tracing=client.application_for_tracing,
                client_version_for_tracing=client.client_version_for_tracing,
            )
            message.properties["ReportMethod"] = _REPORT_METHOD_TABLE
            message.properties["IngestionStatusInTable"] = {
                "TableConnectionString": tables[0].url,
                "PartitionKey": source_id,
                "RowKey": source_id,
            }
            step = "enqueue the ingestion message"
            queue_retry = QueueRetry(backoff=1, retry_total=1, random_jitter_range=0)
            with QueueClient.from_queue_url(
                queues[0].url, message_encode_policy=TextBase64EncodePolicy(), retry_policy=queue_retry, **timeouts
            ) as queue:
                queue.send_message(message.to_json())
            return status_row
        except _Failure:
            raise
        except Exception as error:
            raise _Failure(f"{step}: {describe(error)}", retryable=is_retryable(error)) from error

    def _wait_for_status(self, status_row: tuple[str, str, str], source_id: str, deadline: float) -> str:
        """Poll the status row now, then every poll interval, until a final status or the deadline.

        The status table reports per ingestion, not per record: it has no ingested-record count.
        What is verified instead: the row is the one for this source id, names our database and
        table, and says ``Succeeded`` (all records of the blob, which is exactly the chunk whose event
        count was checked before upload) or ``Skipped`` (the chunk's ingest-by tag already exists).
        """
        from azure.data.tables import TableClient

        table_url, partition_key, row_key = status_row
        status = "Pending"
        timeouts = {"connection_timeout": 20.0, "read_timeout": 30.0}
        with TableClient.from_table_url(table_url, retry_total=1, retry_backoff_factor=0.5, **timeouts) as table:
            while True:
                try:
                    row = table.get_entity(partition_key, row_key)
                except Exception as error:
                    message = f"read the ingestion status row: {describe(error)}"
                    raise _Failure(message, retryable=is_retryable(error)) from error
                status = str(row.get("Status", ""))
                if status not in _NOT_FINAL:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise _Failure(
                        f"no final ingestion status within {self.final_status_timeout_s:g}s "
                        f"(status {status}, source id {source_id})",
                        retryable=True,
                    )
                time.sleep(min(self.status_poll_interval_s, remaining))
        if str(row.get("IngestionSourceId", source_id)) != source_id or (
            row.get("Database", self.database) != self.database or row.get("Table", self.table) != self.table
        ):
            raise _Failure(
                f"status row {partition_key} names another ingestion "
                f"({row.get('Database')}.{row.get('Table')}, source {row.get('IngestionSourceId')})",
                retryable=False,
            )
        if status in _ACKNOWLEDGED:
            return status
        failure_status = str(row.get("FailureStatus", ""))
        description = (
            f"ingestion status={status} failure={failure_status or '-'} code={row.get('ErrorCode') or '-'} "
            f"details={str(row.get('Details') or '-')[:300]}"
        )
        # Transient failures are ADX's "retryable status record"; Permanent/Exhausted are final.
        return_retryable = failure_status == "Transient" or bool(row.get("ShouldRetry"))
        raise _Failure(description, retryable=return_retryable)
