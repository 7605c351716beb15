"""A stand-in Kusto cluster on 127.0.0.1: duckdb-kql's REST server running the shipped assets over DuckDB.

**Not Azure Data Explorer.** No Kusto engine runs on this machine (Kustainer is Docker-only), so the
query endpoint is ``duckdb_kql.server.KustoRestServer`` (PyPI ``duckdb-kql``: KQL translated to
DuckDB SQL), which the real ``azure-kusto-data`` client talks to unchanged. What it is built from is
the project's own: the table from ``01-table.kql``, the dedup view from the body of
``03-dedup-view.kql`` (a DuckDB view, so it is always current, as ADX answers a materialized view
with its materialized part plus the delta), and every ``.create-or-alter function`` asset verbatim.
Rows arrive as ADX would ingest them: canonical MetricEvent NDJSON through the JSON mapping of
``02-mapping.kql`` (column ← ``$.column``), from the queued-ingestion worker (``ingestion_worker``)
or from a streaming-ingest POST to ``/v1/rest/ingest/{db}/{table}`` (``ManagedStreamingIngestClient``).

Four adaptations, all at the boundary:

* **The properties shim.** ``azure-kusto-data`` sends the request's ``properties`` as a JSON *string*
  (real ADX accepts it); duckdb-kql reads only an object and would silently drop every option
  (``query_now``, ``servertimeout``) and every query parameter. The handler parses the string first.
* **Identity casts are elided.** The dedup view's columns already have the table's types, so
  ``TauExpMetricEventRows()``'s ``tolong(step)``, ``todouble(value)`` and ``todatetime(...)`` are the
  identity (nulls included) over it. duckdb-kql cannot know that when it translates (it dispatches on
  ``typeof`` at run time), and DuckDB then evaluates a per-row lambda over every row before any filter:
  a 50-row tail read of a 10M-row table took 27 s. The stand-in registers the function with those
  casts written as the bare column (:func:`elide_identity_casts`; ``tostring`` stays: it turns a null
  into ``''``); ``typed_casts=False`` runs the shipped text verbatim, and a test compares the two.
* **Streaming ingestion** is answered here, since duckdb-kql has no ingestion endpoint; it honours
  the table's streaming policy flag (``streaming_enabled``) as ADX does, refusing when it is off.
* **Ingestion does not wait for queries.** duckdb-kql's server holds one lock around each query
  (translation included, 0.3-0.7 s); ingestion writes on its own DuckDB connection under its own lock,
  as ADX ingests while it answers. Under the query lock a live pane's polls starved the streamed
  chunks (print -> drawn p95 17.7 s instead of 1.8 s in ``bench_kusto.py --pane``).

What it does not model (keep in mind when reading a test): materialized-view lag, ADX's query limits
(500k rows / 64 MB truncation), throttling, 100 ns datetime precision (DuckDB keeps µs), and which row
``arg_max`` keeps on ties.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import tempfile
import threading
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl

import duckdb_kql
import pyarrow as pa
from duckdb_kql import server as kql_server

from .kusto_assets import Assets, load_assets

__all__ = ["KustoCluster", "elide_identity_casts", "parse_kusto_datetime"]

_DUCK_TYPES = {"string": "VARCHAR", "long": "BIGINT", "int": "INTEGER", "real": "DOUBLE", "datetime": "TIMESTAMP",
               "dynamic": "JSON", "bool": "BOOLEAN"}
_ARROW_TYPES = {"string": pa.string(), "long": pa.int64(), "int": pa.int32(), "real": pa.float64(),
                "datetime": pa.timestamp("us"), "dynamic": pa.string(), "bool": pa.bool_()}


_IDENTITY_CASTS = {"long": "tolong", "real": "todouble", "datetime": "todatetime"}


def elide_identity_casts(command: str, columns: Iterable[tuple[str, str]]) -> str:
    """``name = tolong(name)`` → ``name = name`` for a ``long`` column (``todouble``/real, ``todatetime``/datetime)."""
    for name, kind in columns:
        cast = _IDENTITY_CASTS.get(kind)
        if cast is not None:
            command = re.sub(rf"\b{re.escape(name)} = {cast}\({re.escape(name)}\)", f"{name} = {name}", command)
    return command


def parse_kusto_datetime(text: str) -> datetime:
    """An RFC3339 time with up to 9 fractional digits, as ADX parses a MetricEvent's times (µs kept here)."""
    head, _, rest = text.rstrip("Zz").partition(".")
    fraction = (rest + "000000")[:6]
    return datetime.fromisoformat(f"{head}.{fraction}").replace(tzinfo=UTC).replace(tzinfo=None)


@dataclass
class KustoCluster:
    """The stand-in query endpoint (``uri``), its DuckDB tables, and the ingestion paths into them."""

    assets: Assets = field(default_factory=load_assets)
    database: str = "memory"
    streaming_enabled: bool = True
    # Other names streaming ingestion accepts for this database (a sink names its ADX database; the
    # engine's is DuckDB's). Queries use ``database``.
    database_aliases: set[str] = field(default_factory=set)
    # Injected answers for the next streaming requests: "transient" (HTTP 503, not permanent).
    streaming_failures: list[str] = field(default_factory=list)
    on_streaming_ingest: Callable[[str, str, bytes], None] | None = None
    typed_casts: bool = True  # elide the function's identity casts over the typed view (module doc)
    requests: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # tracebacks of requests the server failed to answer
    _server: Any = field(default=None, init=False, repr=False)
    _thread: threading.Thread | None = field(default=None, init=False, repr=False)

    @property
    def uri(self) -> str:
        if self._server is None:
            raise RuntimeError("KustoCluster is not started")
        return self._server.url

    @property
    def connection(self):
        return self._con

    # ---- lifecycle

    def start(self) -> KustoCluster:
        # DuckDB spills large operations to disk, by default into ./.tmp of the working directory.
        self._spill = tempfile.TemporaryDirectory(prefix="kusto-cluster-")
        self._con = duckdb_kql.connect(config={"temp_directory": self._spill.name})
        self.database = str(self._con.execute("SELECT current_database()").fetchall()[0][0])
        columns = ", ".join(f'"{name}" {_DUCK_TYPES[kind]}' for name, kind in self.assets.columns)
        self._con.execute(f'CREATE TABLE "{self.assets.table}" ({columns})')
        for view in self.assets.views:
            self._con.execute(f'CREATE VIEW "{view.name}" AS {duckdb_kql.to_sql(view.query)}')
        self._server = kql_server.KustoRestServer(
            self._con, port=0, quiet=True, allow_write=False,
            functions=[elide_identity_casts(f.command, self.assets.columns) if self.typed_casts else f.command
                       for f in self.assets.functions],
        )  # fmt: skip
        self._server.RequestHandlerClass = _handler_for(self)
        # ADX ingests while it answers queries. The server holds one lock around each query (translation and
        # all), so writers use their own DuckDB connection to the same database (safe across threads) and
        # their own lock: a live run's streamed chunks do not queue behind a poll's queries.
        self._ingest_con = self._con.cursor()
        self._ingest_lock = threading.Lock()
        self._server.handle_error = lambda request, address: self.errors.append(traceback.format_exc())
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="kusto-cluster", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        if getattr(self, "_con", None) is not None:
            self._ingest_con.close()
            self._con.close()
            self._con = None
            self._spill.cleanup()

    def __enter__(self) -> KustoCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- ingestion: the mapping of 02-mapping.kql, column <- $.column

    def ingest_ndjson(self, data: bytes) -> int:
        """Append NDJSON records through the JSON mapping, as ADX ingests a blob or a stream. Returns the row count."""
        kinds = dict(self.assets.columns)
        columns: dict[str, list[Any]] = {column: [] for column, _ in self.assets.mapping}
        for line in data.splitlines():
            if not line.strip():
                continue
            record = json.loads(line)
            for column, path in self.assets.mapping:
                columns[column].append(_convert(record.get(path.removeprefix("$.")), kinds[column]))
        count = len(next(iter(columns.values()), []))
        if count:
            batch = pa.table({column: pa.array(values, type=_ARROW_TYPES[kinds[column]])
                              for column, values in columns.items()})
            names = ", ".join(f'"{column}"' for column in columns)
            with self._ingest_lock:  # writers one at a time, on their own connection (start())
                cursor = self._ingest_con
                try:
                    cursor.register("_ingest_batch", batch)
                    cursor.execute(f'INSERT INTO "{self.assets.table}" ({names}) SELECT {names} FROM _ingest_batch')
                finally:
                    cursor.unregister("_ingest_batch")
        return count

    def materialize_views(self) -> None:
        """Replace each view by a table of its current rows: ADX's *materialized part* of a materialized view.

        Until this is called a view is computed on every query (always current, but at the cost of
        deduplicating the whole table each time, which ADX does not pay). A benchmark calls it after
        loading, and again after appending, so queries cost what they would over a materialized view.
        """
        with self._server._lock:
            cursor = self._con.cursor()
            try:
                for view in self.assets.views:
                    sql = duckdb_kql.to_sql(view.query)
                    kind = cursor.execute("SELECT table_type FROM information_schema.tables WHERE table_name = ?",
                                          [view.name]).fetchall()
                    if kind and kind[0][0] == "VIEW":
                        cursor.execute(f'DROP VIEW "{view.name}"')
                    cursor.execute(f'CREATE OR REPLACE TABLE "{view.name}" AS {sql}')
            finally:
                cursor.close()

    def row_count(self) -> int:
        with self._server._lock:
            cursor = self._con.cursor()
            try:
                return int(cursor.execute(f'SELECT count(*) FROM "{self.assets.table}"').fetchall()[0][0])
            finally:
                cursor.close()


def _convert(value: Any, kind: str) -> Any:
    if value is None:
        return None
    if kind == "datetime":
        return parse_kusto_datetime(str(value))
    if kind == "dynamic":
        return json.dumps(value)
    if kind == "long":
        return int(value)
    if kind == "real":
        return float(value)
    return str(value) if not isinstance(value, str) else value


def _handler_for(cluster: KustoCluster) -> type:
    class Handler(kql_server._Handler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            route = self.path.split("?", 1)[0]
            if route.startswith("/v1/rest/ingest/"):
                self._streaming_ingest(route, body)
                return
            try:
                request = json.loads(body)
            except ValueError:
                request = None
            if isinstance(request, dict):
                if isinstance(request.get("properties"), str):
                    # The shim: azure-kusto-data sends properties as a JSON string.
                    request["properties"] = json.loads(request["properties"])
                    body = json.dumps(request).encode()
                cluster.requests.append(request)
            # The parent reads the body from rfile; the connection's own rfile must come back after, or
            # the next keep-alive request would read the exhausted copy and the server would hang up.
            connection_rfile, self.rfile = self.rfile, io.BytesIO(body)
            del self.headers["Content-Length"]
            self.headers["Content-Length"] = str(len(body))
            try:
                super().do_POST()
            finally:
                self.rfile = connection_rfile

        def _streaming_ingest(self, route: str, body: bytes) -> None:
            database, _, table = route.removeprefix("/v1/rest/ingest/").partition("/")
            if self.headers.get("Content-Encoding", "").lower() == "gzip":
                body = gzip.decompress(body)
            if cluster.streaming_failures:
                cluster.streaming_failures.pop(0)
                error = kql_server.error_response("injected transient streaming failure", code="ServiceUnavailable")
                error["error"]["@permanent"] = False
                self._send(503, error)
                return
            if table != cluster.assets.table or database not in {cluster.database, "default", *cluster.database_aliases}:
                self._send(404, kql_server.error_response(f"table {database}.{table} does not exist",
                                                          code="BadRequest_EntityNotFound"))
                return
            if not cluster.streaming_enabled:
                # ADX's answer when the table (or database) has no streaming ingestion policy: permanent.
                error = kql_server.error_response(
                    f"Streaming ingestion policy is not enabled for table {table}",
                    code="BadRequest_StreamingIngestionPolicyNotEnabled")
                error["error"]["@permanent"] = True
                self._send(400, error)
                return
            query = dict(parse_qsl(self.path.partition("?")[2]))
            if query.get("streamFormat", "").lower() != "json" or query.get("mappingName") != cluster.assets.mapping_name:
                error = kql_server.error_response(
                    f"stream format {query.get('streamFormat')!r} with mapping {query.get('mappingName')!r}: "
                    f"only json with {cluster.assets.mapping_name} exists", code="BadRequest_MappingReferenceWasNotFound")
                error["error"]["@permanent"] = True
                self._send(400, error)
                return
            try:
                count = cluster.ingest_ndjson(body)
            except (ValueError, KeyError) as exc:
                error = kql_server.error_response(f"stream is not valid JSON for the mapping: {exc}",
                                                  code="BadRequest_InvalidStream")
                error["error"]["@permanent"] = True
                self._send(400, error)
                return
            if cluster.on_streaming_ingest is not None:
                cluster.on_streaming_ingest(database, table, body)
            self._send(200, {"Tables": [{
                "TableName": "Table_0",
                "Columns": [{"ColumnName": "ConsumedRecordsCount", "DataType": "Int64", "ColumnType": "long"}],
                "Rows": [[count]],
            }]})

    return Handler
