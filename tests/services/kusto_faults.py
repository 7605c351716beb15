"""A canned-frame Kusto query endpoint on 127.0.0.1 that answers with one chosen fault, for the reader's error paths.

Each answer is what Azure Data Explorer sends for that fault (HTTP error envelopes, v2 frames with an
in-band ``OneApiErrors`` row, a ``DataSetCompletion`` with ``HasErrors``), so the real
``azure-kusto-data`` client raises what it raises in production. ``mode`` picks the answer:
``ok``, ``http400``, ``http401``, ``http403``, ``http429``, ``http500``, ``http503``, ``inband``,
``has_errors`` (good rows, then a completion frame that says the result is incomplete), ``cancelled``,
``garbage`` (HTTP 200, not JSON), ``slow`` (answers after ``delay_s``).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["FAULT_MODES", "KustoFaultServer"]

FAULT_MODES = ("ok", "http400", "http401", "http403", "http429", "http500", "http503", "inband", "has_errors",
               "cancelled", "garbage", "slow")


def _error(code: str, message: str, permanent: bool = True) -> dict:
    return {"error": {"code": code, "message": "Request is invalid and cannot be executed.",
                      "@type": "Kusto.Data.Exceptions.SyntaxException", "@message": message,
                      "@permanent": permanent}}


_ONE_API = {"error": {"code": "LimitsExceeded", "message": "Request is invalid and cannot be executed.",
                      "@type": "Kusto.DataNode.Exceptions.KustoQueryRunawayException",
                      "@message": "Query execution has exceeded the allowed limits (80DA0003): "
                                  "The results of this query exceed the set limit of 500000 records.",
                      "@permanent": True}}


def _frames(rows: list, completion: dict | None = None) -> list[dict]:
    return [
        {"FrameType": "DataSetHeader", "IsProgressive": False, "Version": "v2.0", "IsFragmented": False,
         "ErrorReportingPlacement": "InData"},
        {"FrameType": "DataTable", "TableId": 0, "TableKind": "PrimaryResult", "TableName": "PrimaryResult",
         "Columns": [{"ColumnName": "run_id", "ColumnType": "string"}, {"ColumnName": "step", "ColumnType": "long"}],
         "Rows": rows},
        completion or {"FrameType": "DataSetCompletion", "HasErrors": False, "Cancelled": False},
    ]


@dataclass
class KustoFaultServer:
    mode: str = "ok"
    delay_s: float = 5.0
    requests: list[dict] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = field(default=None, init=False, repr=False)

    @property
    def uri(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> KustoFaultServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                owner.requests.append({"path": self.path, "headers": dict(self.headers), "body": json.loads(body)})
                mode = owner.mode
                if mode == "slow":
                    time.sleep(owner.delay_s)
                    mode = "ok"
                if mode == "ok":
                    self._json(200, _frames([["seed-1", 1], ["seed-1", 2]]))
                elif mode.startswith("http"):
                    status = int(mode[4:])
                    self._json(status, _error("General_BadRequest" if status == 400 else f"HTTP{status}",
                                              f"injected HTTP {status}", permanent=status < 500))
                elif mode == "inband":
                    self._json(200, _frames([["seed-1", 1], {"OneApiErrors": [_ONE_API]}]))
                elif mode == "has_errors":
                    self._json(200, _frames([["seed-1", 1]], {"FrameType": "DataSetCompletion", "HasErrors": True,
                                                             "Cancelled": False, "OneApiErrors": [_ONE_API]}))
                elif mode == "cancelled":
                    self._json(200, _frames([["seed-1", 1]], {"FrameType": "DataSetCompletion", "HasErrors": False,
                                                             "Cancelled": True}))
                elif mode == "garbage":
                    self._raw(200, b"<html>proxy error</html>", "text/html")
                else:
                    self._json(500, _error("Internal", f"unknown fault mode {mode!r}", permanent=False))

            def _json(self, status: int, payload: object) -> None:
                self._raw(status, json.dumps(payload).encode(), "application/json; charset=utf-8")

            def _raw(self, status: int, data: bytes, content_type: str) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (the timeout test)
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> KustoFaultServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
