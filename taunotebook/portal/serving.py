"""How a route's handler runs: on the event loop when its answer is at hand, else in a worker thread.

A live pane's poll is answered from what the store reader has cached, in a fraction of a
millisecond: handing it to a thread would cost more than the answer. So a handler first runs on
the event loop inside :func:`~tau_collector.reads.no_blocking`; where it would read a
file or reduce a large range the reader raises ``WouldBlock`` and the handler runs again, from the
start, in a worker thread (reads have no side effects, so running twice is safe). Either way the
answer is a TauGrid envelope on error, never a stack trace. A stored file is answered by
:func:`open_for_streaming`: opened before answering, sent in blocks, never read whole.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio.to_thread
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from tau_collector.reads import WouldBlock, no_blocking

from .errors import V2Error, error_response
from .kusto.errors import AmbiguousRunError, KustoError

__all__ = ["STREAM_BLOCK", "answer", "open_for_streaming", "serve"]

log = logging.getLogger("taunotebook.portal")
STREAM_BLOCK = 256 * 1024  # bytes per read of a streamed file


def answer(handle: Callable[[], Response]) -> Response:
    """``handle()``, with a :class:`V2Error` (or a Kusto source's typed failure) as its envelope and anything
    unexpected as ``500 INTERNAL``."""
    try:
        return handle()
    except V2Error as err:
        return error_response(err.status, err.code, err.message)
    except (KustoError, AmbiguousRunError) as err:
        if err.status >= 500:
            log.warning("%s", err)  # the cluster's fault, in words, for whoever runs the Portal
        return error_response(err.status, err.code, str(err))
    except WouldBlock:
        raise
    except Exception:
        log.exception("experiment data request failed")  # the traceback goes to the log, never the wire
        return error_response(500, "INTERNAL", "experiment data request failed")


async def serve(scope: Scope, receive: Receive, send: Send, handle: Callable[[], Response], *,
                inline: bool = True) -> None:
    """Answer with ``handle()``: first on the event loop (when ``inline``), in a worker thread if it would block."""
    response = None
    if inline:
        try:
            with no_blocking():
                response = answer(handle)
        except WouldBlock:
            response = None
    if response is None:
        response = await anyio.to_thread.run_sync(answer, handle)
    await response(scope, receive, send)


def open_for_streaming(path: Path | str, gone_message: str) -> tuple[Iterator[bytes], int]:
    """The file at ``path`` opened now, as its blocks and its size: a file deleted before the answer starts is
    ``404 NOT_FOUND`` saying ``gone_message``, never a broken stream. The blocks close the file when done."""
    try:
        handle = open(path, "rb")
    except OSError:
        raise V2Error(404, "NOT_FOUND", gone_message) from None
    try:
        size = os.fstat(handle.fileno()).st_size
    except OSError:
        handle.close()
        raise V2Error(404, "NOT_FOUND", gone_message) from None
    return _blocks(handle), size


def _blocks(handle) -> Iterator[bytes]:
    with handle:
        while block := handle.read(STREAM_BLOCK):
            yield block
