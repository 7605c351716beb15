"""A test ingestion worker: the part of Azure Data Explorer that would ingest queued blobs and report status.

It drains the ready-for-aggregation queue in Azurite, downloads and gunzips each blob, checks the
target (database, table, mapping, format) and every line with TauGrid's canonical MetricEvent
decoder, appends the rows to an in-memory table, honours ``ingestIfNotExists`` against the
``ingest-by:`` tags already ingested into that table (a repeat is ``Skipped``, as ADX reports it),
and then reports: to the status-table row named by ``IngestionStatusInTable`` (TauGrid's
``ReportResultToTable``) and/or to the success/failure queues (the default queue method), as the
message's ``ReportMethod``/``ReportLevel`` ask. Tests inject outcomes for the next ingestions:
a permanent failure, a transient failure, or no answer at all.
"""

from __future__ import annotations

import enum
import gzip
import json
import threading
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from azure.core.exceptions import AzureError
from azure.data.tables import TableClient, UpdateMode
from azure.storage.blob import BlobClient
from azure.storage.queue import QueueClient, TextBase64DecodePolicy, TextBase64EncodePolicy

from tau_collector.projection.metric_event import MetricEvent, MetricEventError, decode_canonical_ndjson

from .kusto_mgmt import IngestionResources

__all__ = ["Ingestion", "IngestionWorker", "Outcome"]

# Kusto's ReportMethod / ReportLevel wire values.
REPORT_METHOD_QUEUE, REPORT_METHOD_TABLE, REPORT_METHOD_QUEUE_AND_TABLE = 0, 1, 2
REPORT_LEVEL_FAILURES_ONLY, REPORT_LEVEL_NONE, REPORT_LEVEL_FAILURES_AND_SUCCESSES = 0, 1, 2
# The SDKs' default storage retries back off for 15 s and more; while Azurite is down the worker
# would then still be asleep when it comes back. The worker's own loop retries instead.
_NO_SDK_RETRY = {"retry_total": 0, "connection_timeout": 5, "read_timeout": 10}


class Outcome(enum.Enum):
    """What the worker does with an ingestion, instead of ingesting it, when a test injects it."""

    PERMANENT_FAILURE = "permanent"
    TRANSIENT_FAILURE = "transient"
    NEVER_ANSWER = "never"


@dataclass(frozen=True)
class Ingestion:
    """One processed ingestion request, for assertions."""

    source_id: str
    status: str  # Succeeded | Skipped | Failed | (no answer: "Unanswered")
    event_count: int
    ingest_by_tags: tuple[str, ...]
    ingest_if_not_exists: tuple[str, ...]
    mapping_reference: str
    data_format: str
    report_method: int
    report_level: int
    error_code: str = ""


@dataclass
class IngestionWorker:
    """Background thread that plays ADX's ingestion service against Azurite."""

    resources: IngestionResources
    database: str
    table: str = "TauExpMetricEventsV1"
    mapping: str = "TauExpMetricEventsV1Json"
    poll_interval_s: float = 0.05
    rows: list[MetricEvent] = field(default_factory=list)
    ingestions: list[Ingestion] = field(default_factory=list)
    _extent_tags: set[str] = field(default_factory=set)
    _injected: deque[Outcome] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _processed: threading.Condition = field(default_factory=threading.Condition)
    storage_errors: int = 0
    errors: list[str] = field(default_factory=list)
    # Called with each ingested blob's NDJSON (not for Skipped/failed ingestions), e.g. to feed the
    # stand-in query engine (``kusto_cluster.KustoCluster.ingest_ndjson``) so ingested rows are queryable.
    on_ingest: Callable[[bytes], object] | None = None

    # ---- what tests read

    @property
    def events(self) -> dict[str, MetricEvent]:
        """Ingested events by event_id — what ``TauExpMetricEventsV1Dedup`` would show."""
        with self._lock:
            return {e.event_id: e for e in self.rows}

    def inject(self, *outcomes: Outcome) -> None:
        """The next ``len(outcomes)`` ingestions end this way instead of being ingested."""
        with self._lock:
            self._injected.extend(outcomes)

    def wait_for_ingestions(self, count: int, timeout_s: float = 30.0) -> list[Ingestion]:
        """Block until at least ``count`` ingestions were processed (a liveness wait, not an assertion)."""
        with self._processed:
            if not self._processed.wait_for(lambda: len(self.ingestions) >= count, timeout=timeout_s):
                raise TimeoutError(f"only {len(self.ingestions)} of {count} ingestions were processed")
        with self._lock:
            return list(self.ingestions)

    # ---- lifecycle

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="adx-ingestion-worker", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def __enter__(self) -> IngestionWorker:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- the service

    def _run(self) -> None:
        ready_url = self.resources.url("SecuredReadyForAggregationQueue")
        ready = QueueClient.from_queue_url(
            ready_url, message_decode_policy=TextBase64DecodePolicy(), **_NO_SDK_RETRY
        )
        while not self._stop.is_set():
            try:
                messages = list(ready.receive_messages(max_messages=16, visibility_timeout=30, timeout=5))
            except AzureError:
                # Storage down (a fault test stops Azurite): keep polling until it is back.
                self.storage_errors += 1
                self._stop.wait(self.poll_interval_s * 4)
                continue
            for message in messages:
                try:
                    self._process(json.loads(message.content))
                except AzureError:
                    # Leave the message; it becomes visible again and is processed once storage is back.
                    self.storage_errors += 1
                    continue
                except Exception as error:  # a malformed message must not kill the worker thread
                    self.errors.append(f"message {message.id}: {error!r}")
                try:
                    ready.delete_message(message)
                except AzureError:
                    self.storage_errors += 1
            if not messages:
                self._stop.wait(self.poll_interval_s)

    def _process(self, request: dict) -> None:
        source_id = str(request["Id"])
        props = request.get("AdditionalProperties") or {}
        tags = tuple(json.loads(props.get("tags") or "[]"))
        if_not_exists = tuple(json.loads(props.get("ingestIfNotExists") or "[]"))
        ingest_by = tuple(t.removeprefix("ingest-by:") for t in tags if t.startswith("ingest-by:"))
        mapping = str(props.get("ingestionMappingReference", ""))
        data_format = str(props.get("format", ""))
        with self._lock:
            injected = self._injected.popleft() if self._injected else None

        events: list[MetricEvent] = []
        status, error_code, details, failure_status = "Succeeded", "", "", "NoFailure"
        if injected is Outcome.NEVER_ANSWER:
            status = "Unanswered"
        elif injected is Outcome.PERMANENT_FAILURE:
            status, failure_status = "Failed", "Permanent"
            error_code, details = "BadRequest_InjectedPermanentFailure", "injected permanent failure"
        elif injected is Outcome.TRANSIENT_FAILURE:
            status, failure_status = "Failed", "Transient"
            error_code, details = "General_InjectedTransientFailure", "injected transient failure"
        else:
            problem = self._check_target(request, mapping, data_format)
            if problem is None:
                try:
                    blob = BlobClient.from_blob_url(request["BlobPath"], **_NO_SDK_RETRY).download_blob().readall()
                    ndjson = gzip.decompress(blob)
                    events = decode_canonical_ndjson(ndjson)
                except MetricEventError as error:
                    problem = ("BadRequest_InvalidBlob", f"blob is not canonical MetricEvent NDJSON: {error}")
                except (OSError, EOFError) as error:
                    problem = ("BadRequest_InvalidBlob", f"blob is not gzip: {error}")
            if problem is not None:
                status, failure_status = "Failed", "Permanent"
                error_code, details = problem
            else:
                with self._lock:
                    if any(tag in self._extent_tags for tag in if_not_exists):
                        # ADX reports an ingest-if-not-exists hit as Skipped, ingesting nothing.
                        status, error_code = "Skipped", "Skipped_IngestByTagAlreadyExists"
                        details, events = "an extent with this ingest-by tag already exists", []
                    else:
                        self.rows.extend(events)
                        self._extent_tags.update(ingest_by)
                        if self.on_ingest is not None:
                            self.on_ingest(ndjson)

        if status != "Unanswered":
            self._report(request, status, error_code, details, failure_status)
        with self._lock:
            self.ingestions.append(
                Ingestion(
                    source_id=source_id, status=status, event_count=len(events), ingest_by_tags=ingest_by,
                    ingest_if_not_exists=if_not_exists, mapping_reference=mapping, data_format=data_format,
                    report_method=int(request.get("ReportMethod", 0)),
                    report_level=int(request.get("ReportLevel", 1)), error_code=error_code,
                )
            )  # fmt: skip
        with self._processed:
            self._processed.notify_all()

    def _check_target(self, request: dict, mapping: str, data_format: str) -> tuple[str, str] | None:
        if request.get("DatabaseName") != self.database:
            return "BadRequest_DatabaseNotExist", f"database {request.get('DatabaseName')!r} does not exist"
        if request.get("TableName") != self.table:
            return "BadRequest_TableNotExist", f"table {request.get('TableName')!r} does not exist"
        if data_format != "json":
            return "BadRequest_FormatNotSupported", f"format {data_format!r} is not the mapping's json"
        if mapping != self.mapping:
            return "BadRequest_MappingReferenceWasNotFound", f"mapping {mapping!r} was not found"
        return None

    def _report(self, request: dict, status: str, error_code: str, details: str, failure_status: str) -> None:
        method = int(request.get("ReportMethod", REPORT_METHOD_QUEUE))
        level = int(request.get("ReportLevel", REPORT_LEVEL_NONE))
        failed = status == "Failed"
        now = datetime.now(UTC)
        common = {
            "OperationId": str(uuid.uuid4()),
            "Database": request.get("DatabaseName"),
            "Table": request.get("TableName"),
            "IngestionSourceId": str(request["Id"]),
            "IngestionSourcePath": str(request["BlobPath"]).split("?", 1)[0],
            "RootActivityId": str(uuid.uuid4()),
        }
        in_table = request.get("IngestionStatusInTable")
        if method in (REPORT_METHOD_TABLE, REPORT_METHOD_QUEUE_AND_TABLE) and in_table:
            with TableClient.from_table_url(in_table["TableConnectionString"], **_NO_SDK_RETRY) as table:
                table.upsert_entity(
                    {
                        "PartitionKey": in_table["PartitionKey"],
                        "RowKey": in_table["RowKey"],
                        **common,
                        "ActivityId": common["RootActivityId"],
                        "Status": status,
                        "UpdatedOn": now,
                        "ErrorCode": error_code,
                        "FailureStatus": failure_status,
                        "Details": details,
                        "OriginatesFromUpdatePolicy": False,
                    },
                    mode=UpdateMode.MERGE,
                )
        if method in (REPORT_METHOD_QUEUE, REPORT_METHOD_QUEUE_AND_TABLE) and level != REPORT_LEVEL_NONE:
            if failed or status == "Skipped":
                message = {
                    **common,
                    "FailedOn": now.isoformat(),
                    "Details": details,
                    "ErrorCode": error_code,
                    "FailureStatus": failure_status if failed else "Permanent",
                    "OriginatesFromUpdatePolicy": False,
                    "ShouldRetry": failure_status == "Transient",
                }
                queue = "FailedIngestionsQueue"
            elif level == REPORT_LEVEL_FAILURES_AND_SUCCESSES:
                message, queue = {**common, "SucceededOn": now.isoformat()}, "SuccessfulIngestionsQueue"
            else:
                return
            with QueueClient.from_queue_url(
                self.resources.url(queue), message_encode_policy=TextBase64EncodePolicy(), **_NO_SDK_RETRY
            ) as client:
                client.send_message(json.dumps(message))
