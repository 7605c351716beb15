"""A store's file lists, decoded file slices and their caches: one object the reader and its level reads share.

A run's file list (its registered metric files, :func:`~..write.index_rows.run_files`) is kept in the
:class:`~.read_cache.IndexCache` until the index changes; one metric's slice of a file (decoded by
:func:`~.series_merge.read_slice`) is kept in the byte-bounded :class:`~.read_cache.LRU`, keyed by the
immutable file's id. What the reader and :mod:`.level_reads` derive from them (merged series, level
records) is kept in the same two caches, through :attr:`FileSlices.cache` and :attr:`FileSlices.index`.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator

from tau_collector.expstore.read.read_cache import LRU, IndexCache
from tau_collector.expstore.read.series_merge import EMPTY_F, EMPTY_I, FileList, Merged, read_slice
from tau_collector.expstore.store import ExpStore
from tau_collector.expstore.write.index_rows import file_metric_range, run_file_metric_ranges, run_files
from tau_collector.reads.blocking import QUICK_FILE_ROWS, may_block

__all__ = ["FileSlices"]

# Files' metric ranges kept (a file's range never changes: files are immutable, ids never reused); past this
# many the kept ones are dropped and asked again (~200 bytes each).
_KEPT_RANGES = 65_536


class FileSlices:
    """The registered files of a store's runs and their decoded slices, cached (thread-safe).

    ``cache`` holds decoded data by bytes (slices, merged series, level records); ``index`` what the index
    said, until another connection commits. Both are shared: whoever derives a value from the files keeps it
    there, under a key of its own.
    """

    def __init__(self, store: ExpStore, cache_bytes: int) -> None:
        self.store = store
        self.cache = LRU(cache_bytes)
        self.index = IndexCache(store)
        self._loading: dict[tuple, threading.Lock] = {}  # file slices being read, one lock each
        self._loading_lock = threading.Lock()
        self._ranges: dict[str, tuple[str, str]] = {}  # file_id -> its first and last metric, as the index said

    @contextlib.contextmanager
    def pinned(self) -> Iterator[None]:
        """Within: the index is checked for changes once, on entry (:meth:`.read_cache.IndexCache.pinned`)."""
        with self.index.pinned():
            yield

    def files(self, run_id: str) -> FileList:
        """The run's registered files in registration order (kept until the index changes)."""
        return self.index.get(("files", run_id), lambda: self._list(run_id))

    def _list(self, run_id: str) -> FileList:
        conn = self.store.connection()
        files = FileList(run_files(conn, run_id))
        # The files' metric ranges in one query, not one per file when a metric is read (a wide run's cold read
        # skips most of its files by them).
        try:
            ranges = run_file_metric_ranges(conn, run_id)
        except sqlite3.OperationalError:
            ranges = {}  # a store written before the table, opened read-only
        if len(self._ranges) + len(ranges) > _KEPT_RANGES:
            self._ranges = {}
        self._ranges.update(ranges)
        return files

    def forget_files(self, run_id: str) -> None:
        """Drop the run's kept file list: compaction retired a file listed in it, and the next look lists anew."""
        self.index.forget(("files", run_id))

    def slices(self, files: list[tuple], metric: str) -> list[Merged]:
        """:meth:`slice` of each file row ``(file_id, path, min_step, max_step, row_count)``."""
        return [self.slice(file_id, path, metric, rows) for file_id, path, _, _, rows in files]

    def slice(self, file_id: str, path: str, metric: str, row_count: int | None = None) -> Merged:
        """The rows of ``metric`` in the file, sorted by unique step (decoded once, then kept)."""
        key = ("file", file_id, metric)
        cached = self.cache.get(key)
        if cached is not None:
            return cached  # type: ignore[return-value]
        held = self.file_metrics(file_id)
        if held is not None and not held[0] <= metric <= held[1]:
            return Merged(EMPTY_I, EMPTY_I, EMPTY_F)  # the index says the file holds no row of it
        may_block(row_count, QUICK_FILE_ROWS)  # a live run's new chunk is small: read it where it is asked for
        # One reader per file: when a new chunk lands, every pane polling the tail asks for it at once.
        with self._loading_lock:
            lock = self._loading.setdefault(key, threading.Lock())
        with lock:
            cached = self.cache.get(key)
            if cached is None:
                cached = self.read(path, metric)
                self.cache.put(key, cached, cached.nbytes)
        with self._loading_lock:
            if self._loading.get(key) is lock:
                del self._loading[key]
        return cached  # type: ignore[return-value]

    def read(self, path: str, metric: str) -> Merged:
        """The rows of ``metric`` in the file at the store-relative ``path``, decoded now (not cached)."""
        return read_slice(self.store.absolute(path), metric)

    def file_metrics(self, file_id: str) -> tuple[str, str] | None:
        """The first and last metric name the file holds; None when not known."""
        known = self._ranges.get(file_id)
        if known is not None:
            return known

        def load() -> tuple[str, str] | None:
            try:
                return file_metric_range(self.store.connection(), file_id)
            except sqlite3.OperationalError:
                return None  # a store written before the table, opened read-only

        return self.index.get(("file_metrics", file_id), load)
