"""A webhook receiver on 127.0.0.1 for the notification tests: records each POST and answers as scripted."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

__all__ = ["Receiver", "receiver", "refused_url"]


class Receiver:
    """``statuses`` are answered in turn (then 200); while ``hold`` is set, every request waits on ``release``."""

    def __init__(self) -> None:
        self.posts: list[dict] = []
        self.statuses: list[int] = []
        self.hold = False
        self.release = threading.Event()
        self.arrived = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver.arrived:
                    receiver.posts.append({"path": self.path, "content_type": self.headers.get("Content-Type"),
                                           "body": json.loads(body)})
                    status = receiver.statuses.pop(0) if receiver.statuses else 200
                    receiver.arrived.notify_all()
                if receiver.hold:
                    receiver.release.wait()
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/secret-path"

    def wait_for(self, count: int, timeout: float = 300.0) -> list[dict]:
        with self.arrived:
            if not self.arrived.wait_for(lambda: len(self.posts) >= count, timeout):
                raise AssertionError(f"the receiver got {len(self.posts)} POST(s), not {count}")
            return list(self.posts)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    thread = threading.Thread(target=r.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield r
    finally:
        r.release.set()
        r.server.shutdown()
        r.server.server_close()


def refused_url() -> str:
    """A loopback URL nothing listens on: a connection to it is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/hook"
