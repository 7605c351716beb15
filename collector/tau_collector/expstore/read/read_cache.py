"""The store reader's caches: decoded data by bytes (LRU) and index reads per store change.

- :class:`LRU`: file slices and merged series, bounded by bytes; files are immutable, so an entry
  never goes stale (a changed file list makes a new key).
- :class:`IndexCache`: what ``index.sqlite`` said, kept while SQLite's ``PRAGMA data_version`` says
  no other connection has committed. :meth:`IndexCache.pinned` makes one request check once.

The no-blocking rule the reader keeps (:func:`~tau_collector.reads.no_blocking`) is the read
contract's, in :mod:`tau_collector.reads.blocking`.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator

from tau_collector.expstore.store import ExpStore

__all__ = ["IndexCache", "LRU"]


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
    """What the index said, kept while ``PRAGMA data_version`` says no other connection has committed.

    Each thread asks a connection of its own (``data_version`` counts per connection, and only other
    connections' commits: so not the store's own, which may be writing), so no thread waits for
    another; the first thread to see a change starts an empty cache for everyone.
    A thread's first look cannot tell what it missed, so it starts one too. No lock: swapping the
    dict and setting or reading one key are single steps, and a value computed while the store
    changed goes into the dict that was already dropped.
    """

    def __init__(self, store: ExpStore) -> None:
        self._store = store
        self._local = threading.local()  # this thread's connection, and the data_version it last said
        self._items: dict[tuple, object] = {}

    def check(self) -> None:
        """Forget everything if another connection committed since this thread last looked."""
        local = self._local
        if getattr(local, "pid", None) != os.getpid():  # a forked child opens its own
            local.conn = self._store.reading_connection()
            local.pid, local.version = os.getpid(), None
        version = local.conn.execute("PRAGMA data_version").fetchone()[0]
        if version != local.version:
            local.version = version
            self._items = {}

    def get(self, key: tuple, compute):
        if _PINNED.get() is not self:
            self.check()
        items = self._items
        try:
            return items[key]
        except KeyError:
            pass
        value = compute()
        if self._items is items:  # the store did not change meanwhile (else the next look recomputes)
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
        self._items.pop(key, None)
