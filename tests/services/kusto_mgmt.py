"""A stand-in for the Kusto ingestion endpoint's management API, serving Azurite resources to the real client.

Of Azure Data Explorer's queued-ingestion path, only this endpoint (and the ingestion service behind
it, see ``ingestion_worker``) cannot run on this machine; the queues, blob container and status
table are real Azure Storage APIs served by Azurite. The real ``azure-kusto-ingest``
``QueuedIngestClient`` talks to this server unchanged: it POSTs ``/v1/rest/mgmt`` with
``.get ingestion resources`` and ``.get kusto identity token`` and gets the v1 table shape ADX
returns, with path-style Azurite URLs and service SAS tokens signed with the emulator's key — so
SAS handling is exercised as in production (Azurite rejects bad signatures).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from azure.core.credentials import AzureNamedKeyCredential
from azure.data.tables import TableSasPermissions, TableServiceClient, generate_table_sas
from azure.storage.blob import BlobServiceClient, ContainerSasPermissions, generate_container_sas
from azure.storage.queue import QueueSasPermissions, QueueServiceClient, generate_queue_sas

from .azurite import ACCOUNT_KEY, ACCOUNT_NAME, Azurite

__all__ = ["IngestionResources", "KustoMgmtServer"]

# ADX's own resource names have a random suffix; any valid names do here.
READY_QUEUE = "readyforaggregation-secured"
SUCCESS_QUEUE = "successfulingestions"
FAILURE_QUEUE = "failedingestions"
TEMP_CONTAINER = "tempstorage"
STATUS_TABLE = "ingestionsstatus"
AUTHORIZATION_CONTEXT = "taunotebook-test-authorization-context"


@dataclass(frozen=True)
class IngestionResources:
    """The five ``.get ingestion resources`` rows as (ResourceTypeName, StorageRoot with SAS)."""

    rows: tuple[tuple[str, str], ...]

    def url(self, resource_type: str) -> str:
        return next(root for kind, root in self.rows if kind == resource_type)


def create_ingestion_resources(
    azurite: Azurite, *, sas_lifetime: timedelta = timedelta(days=2)
) -> IngestionResources:
    """Create the queues, container and status table in Azurite and sign a SAS for each."""
    credential = AzureNamedKeyCredential(ACCOUNT_NAME, ACCOUNT_KEY)
    expiry = datetime.now(UTC) + sas_lifetime
    with QueueServiceClient.from_connection_string(azurite.connection_string) as queues:
        for name in (READY_QUEUE, SUCCESS_QUEUE, FAILURE_QUEUE):
            if not any(q.name == name for q in queues.list_queues(name_starts_with=name)):
                queues.create_queue(name)
    with BlobServiceClient.from_connection_string(azurite.connection_string) as blobs:
        if not blobs.get_container_client(TEMP_CONTAINER).exists():
            blobs.create_container(TEMP_CONTAINER)
    with TableServiceClient.from_connection_string(azurite.connection_string) as tables:
        tables.create_table_if_not_exists(STATUS_TABLE)

    def queue_url(name: str) -> str:
        sas = generate_queue_sas(
            ACCOUNT_NAME, name, ACCOUNT_KEY,
            permission=QueueSasPermissions(read=True, add=True, update=True, process=True),
            expiry=expiry,
        )  # fmt: skip
        return f"{azurite.queue_endpoint}/{name}?{sas}"

    container_sas = generate_container_sas(
        ACCOUNT_NAME, TEMP_CONTAINER, ACCOUNT_KEY,
        permission=ContainerSasPermissions(read=True, add=True, create=True, write=True, list=True),
        expiry=expiry,
    )  # fmt: skip
    table_sas = generate_table_sas(
        credential, STATUS_TABLE,
        permission=TableSasPermissions(read=True, add=True, update=True),
        expiry=expiry,
    )  # fmt: skip
    return IngestionResources(
        rows=(
            ("SecuredReadyForAggregationQueue", queue_url(READY_QUEUE)),
            ("SuccessfulIngestionsQueue", queue_url(SUCCESS_QUEUE)),
            ("FailedIngestionsQueue", queue_url(FAILURE_QUEUE)),
            ("TempStorage", f"{azurite.blob_endpoint}/{TEMP_CONTAINER}?{container_sas}"),
            ("IngestionsStatusTable", f"{azurite.table_endpoint}/{STATUS_TABLE}?{table_sas}"),
        )
    )


def _v1_table(columns: list[str], rows: list[list[str]]) -> bytes:
    table = {
        "TableName": "Table_0",
        "Columns": [{"ColumnName": c, "DataType": "String", "ColumnType": "string"} for c in columns],
        "Rows": rows,
    }
    return json.dumps({"Tables": [table]}).encode()


@dataclass
class KustoMgmtServer:
    """``POST /v1/rest/mgmt`` on 127.0.0.1; ``uri`` is the ingest URI the client is given.

    ``fail_with_status`` makes every management call answer that HTTP status (e.g. 401, 503), to
    test how the sink classifies endpoint errors. ``requests`` records each command received.
    """

    resources: IngestionResources
    fail_with_status: int | None = None
    requests: list[str] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = field(default=None, init=False, repr=False)
    _thread: threading.Thread | None = field(default=None, init=False, repr=False)

    @property
    def uri(self) -> str:
        if self._server is None:
            raise RuntimeError("KustoMgmtServer is not started; call start() first.")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> None:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep pytest output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                if self.path.split("?", 1)[0] != "/v1/rest/mgmt":
                    self._answer(404, b'{"error":{"code":"NotFound","message":"only /v1/rest/mgmt"}}')
                    return
                try:
                    csl = str(json.loads(body).get("csl", "")).strip()
                except (ValueError, AttributeError):
                    self._answer(400, b'{"error":{"code":"BadRequest","message":"body is not JSON"}}')
                    return
                owner.requests.append(csl)
                if owner.fail_with_status is not None:
                    message = {"error": {"code": "Injected", "message": f"injected {owner.fail_with_status}"}}
                    self._answer(owner.fail_with_status, json.dumps(message).encode())
                elif csl == ".get ingestion resources":
                    rows = [[kind, root] for kind, root in owner.resources.rows]
                    self._answer(200, _v1_table(["ResourceTypeName", "StorageRoot"], rows))
                elif csl == ".get kusto identity token":
                    self._answer(200, _v1_table(["AuthorizationContext"], [[AUTHORIZATION_CONTEXT]]))
                else:
                    message = {"error": {"code": "BadRequest", "message": f"unsupported command {csl!r}"}}
                    self._answer(400, json.dumps(message).encode())

            def _answer(self, status: int, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="kusto-mgmt", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def __enter__(self) -> KustoMgmtServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
