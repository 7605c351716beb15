"""The store reader's caches: decoded data by bytes (LRU), index reads per store change, and the no-blocking mode.

- :class:`LRU`: file slices and merged series, bounded by bytes; files are immutable, so an entry
  never goes stale (a changed file list makes a new key).
- :class:`IndexCache`: what ``index.sqlite`` said, kept while SQLite's ``PRAGMA data_version`` (on
  a connection of its own) says no other connection has committed. :meth:`IndexCache.pinned` makes
  one request check once.
- :func:`no_blocking`: inside it, reads that would touch files or many points raise
  :class:`WouldBlock` (:func:`may_block` marks those places).
"""

from __future__ import annotations

import contextlib
import contextvars
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator

from .store import BUSY_TIMEOUT_MS, ExpStore

__all__ = ["QUICK_POINTS", "IndexCache", "LRU", "WouldBlock", "may_block", "no_blocking"]

QUICK_POINTS = 50_000  # points a read may touch inside no_blocking(): well under a millisecond of numpy


class WouldBlock(Exception):
    """Raised inside :func:`no_blocking` where a read would do slow work; run it again outside."""


_NO_BLOCKING: contextvars.ContextVar[bool] = contextvars.ContextVar("expstore_no_blocking", default=False)


@contextlib.contextmanager
def no_blocking() -> Iterator[None]:
    """Within: reads that would touch files or more than :data:`QUICK_POINTS` points raise :class:`WouldBlock`."""
    token = _NO_BLOCKING.set(True)
    try:
        yield
    finally:
        _NO_BLOCKING.reset(token)


def may_block(points: int | None = None) -> None:
    if (points is None or points > QUICK_POINTS) and _NO_BLOCKING.get():
        raise WouldBlock


class LRU:
    """A byte-bounded LRU shared by the file slices and the merged series (thread-safe)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.used = 0
        self._items: OrderedDict[object, tuple[object, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: object) -> object | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0]

    def put(self, key: object, value: object, size: int) -> None:
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.used -= old[1]
            if size > self.budget:
                return
            self._items[key] = (value, size)
            self.used += size
            while self.used > self.budget:
                _, (_, evicted) = self._items.popitem(last=False)
                self.used -= evicted


# The index cache a request has pinned (see StoreReader.pinned): its gets skip the change check.
_PINNED: contextvars.ContextVar[IndexCache | None] = contextvars.ContextVar("expstore_pinned", default=None)


class IndexCache:
    """What the index said, kept while ``PRAGMA data_version`` (on a connection of its own) stays the same."""

    def __init__(self, store: ExpStore) -> None:
        self._conn = sqlite3.connect(store.index_path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                     check_same_thread=False)
        self._lock = threading.Lock()
        self._version: int | None = None
        self._items: dict[tuple, object] = {}

    def check(self) -> None:
        """Forget everything if another connection committed since the last check."""
        with self._lock:
            version = self._conn.execute("PRAGMA data_version").fetchone()[0]
            if version != self._version:
                self._version, self._items = version, {}

    def get(self, key: tuple, compute):
        if _PINNED.get() is not self:
            self.check()
        with self._lock:
            items = self._items
            if key in items:
                return items[key]
        value = compute()  # outside the lock: a slow query must not stall readers of other keys
        with self._lock:
            if self._items is items:  # the store did not change meanwhile (else the next call recomputes)
                items[key] = value
        return value

    @contextlib.contextmanager
    def pinned(self) -> Iterator[None]:
        """Within: gets skip the change check; it is made once, on entry."""
        self.check()
        token = _PINNED.set(self)
        try:
            yield
        finally:
            _PINNED.reset(token)

    def forget(self, key: tuple) -> None:
        with self._lock:
            self._items.pop(key, None)

    def close(self) -> None:
        self._conn.close()
