"""The non-blocking rule every reader keeps: inside :func:`no_blocking`, slow reads raise :class:`WouldBlock`.

A server answers what a reader has at hand on its event loop and hands the rest to a worker thread
(``taunotebook/portal/serving.py``). Readers mark each place that would do slow work with
:func:`may_block`: the store before reading a Parquet file or touching more than :data:`QUICK_POINTS`
points (``tau_collector.expstore.read.reader``), the Kusto reader before every network round trip
(``taunotebook/portal/kusto/reader.py``).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

__all__ = ["QUICK_FILE_ROWS", "QUICK_POINTS", "WouldBlock", "may_block", "no_blocking"]

QUICK_POINTS = 50_000  # points a read may touch inside no_blocking(): well under a millisecond of numpy
QUICK_FILE_ROWS = 10_000  # rows of a Parquet file read inside no_blocking(): a live run's new chunk, ~1 ms


class WouldBlock(Exception):
    """Raised inside :func:`no_blocking` where a read would do slow work; run it again outside."""


_NO_BLOCKING: contextvars.ContextVar[bool] = contextvars.ContextVar("expstore_no_blocking", default=False)


@contextlib.contextmanager
def no_blocking() -> Iterator[None]:
    """Within: reads of large files, or touching more than :data:`QUICK_POINTS` points, raise :class:`WouldBlock`."""
    token = _NO_BLOCKING.set(True)
    try:
        yield
    finally:
        _NO_BLOCKING.reset(token)


def may_block(amount: int | None = None, quick: int = QUICK_POINTS) -> None:
    """Inside :func:`no_blocking`, raise :class:`WouldBlock` unless ``amount`` is known and at most ``quick``."""
    if (amount is None or amount > quick) and _NO_BLOCKING.get():
        raise WouldBlock
