"""Waking the collector when watched directories change: inotify through watchfiles' public API.

The loop drains, then waits here: until something under the roots changes (only those paths are
read next), or the interval passes (everything is rescanned, TauGrid's polling). Directories that
do not exist yet cannot be watched; while any is missing the wait falls back to polling every
250 ms, which keeps the "seen within 250 ms of the rename" promise. Writers that replace files
atomically create and fill a dotfile first; only the rename is news, so dotfiles are ignored.

News is one set of changed paths, merged as it comes: a collector that drains for a long time (a job that
writes faster than it is read) finds the paths that changed meanwhile, never a backlog of notifications.

What the collector writes itself is not news: changes under ``ignore`` (its spool and its store, when they
live under a watched directory) are dropped as they come, so a drain's own spool record, Parquet file, index
and checkpoint never wake the next one. A single file whose appearance is news (the completion file) is
looked for at each tick of the wait (a ``stat`` every 250 ms) instead of watching its whole directory tree,
which often holds the job's output, the spool and the store.
"""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tau_collector.collect.signal_stop import StopFlag

__all__ = ["ChangeWatcher"]


class ChangeWatcher:
    POLL = 0.25
    # How often the watching thread looks at its stop flag while nothing changes (and the longest
    # the first, synchronous step takes).
    _TICK_MS = 250

    def __init__(self, roots: list[str], *, ignore: list[str] | None = None, files: list[str] | None = None) -> None:
        self._roots = sorted({os.path.abspath(r) for r in roots})
        # Changes at or below these directories are dropped (``str.startswith`` with a tuple: one C call a path).
        self._ignored = tuple(sorted({os.path.abspath(d) for d in ignore or ()}))
        self._ignored_below = tuple(d.rstrip(os.sep) + os.sep for d in self._ignored)
        self._files = sorted({os.path.abspath(f) for f in files or ()})
        self._lock = threading.Lock()
        self._changed: set[str] = set()  # paths changed since the last wait took them
        self._news = threading.Event()  # set with the first change (or a watcher failure) after a take
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None
        self._complete = False
        self._start()

    def _start(self) -> None:
        existing = [r for r in self._roots if os.path.isdir(r)]
        self._complete = len(existing) == len(self._roots)
        if not existing:
            return
        try:
            from watchfiles import watch
        except ImportError:  # without the native watcher the loop polls
            self._complete = False
            return
        changes = watch(*existing, watch_filter=None, debounce=50, step=50, stop_event=self._closing,
                        rust_timeout=self._TICK_MS, yield_on_timeout=True, raise_interrupt=False,
                        force_polling=False, ignore_permission_denied=True)
        # The first step registers the watches, here and now, so that nothing written after the
        # first drain can be missed while a thread is still setting up (the generator is lazy).
        try:
            first = next(changes)
        except (StopIteration, OSError, RuntimeError):
            self._complete = False
            return
        self._put(first)
        self._thread = threading.Thread(target=self._run, args=(changes,), daemon=True, name="tau-watch")
        self._thread.start()

    def _put(self, raw: set) -> None:
        ignored, below = self._ignored, self._ignored_below
        paths = {path for _change, path in raw if not os.path.basename(path).startswith(".")
                 and not (ignored and (path.startswith(below) or path in ignored))}
        if paths:
            with self._lock:
                self._changed |= paths
                self._news.set()

    def _run(self, changes) -> None:
        try:
            for raw in changes:
                self._put(raw)
        except Exception:  # a broken watcher degrades to polling, never kills a run
            self._complete = False
            self._news.set()
        finally:
            changes.close()

    def _take(self) -> set[str]:
        with self._lock:
            changed, self._changed = self._changed, set()
            self._news.clear()
        return changed

    def wait(self, interval: float, stop: StopFlag, *, not_before: float = 0.0) -> set[str] | None:
        """The paths that changed, or None when the loop should rescan everything.

        Everything is rescanned when the interval passes without news (TauGrid's polling),
        while directories cannot be watched, and after a watcher failure. News is not returned
        before ``not_before`` (``time.monotonic()``): what arrives until then joins the same drain,
        so a job writing ten times a second is read as one batch per batch wait, while a change
        after a quiet spell is returned at once.
        """
        timeout = interval if self._complete else min(interval, self.POLL)
        deadline = time.monotonic() + timeout
        news = False
        appeared: set[str] = set()
        while not stop.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            if self._news.wait(min(remaining, 0.25)):
                news = True
                break
            appeared = {path for path in self._files if os.path.exists(path)}
            if appeared:
                news = True
                break
        while not stop.is_set() and time.monotonic() < not_before:
            stop.wait(min(0.05, not_before - time.monotonic()))
        # Taken after the wait for not_before: a burst of changes is one drain.
        changed: set[str] | None = ((self._take() | appeared) or None) if news else None
        if not self._complete:
            changed = None
            if self._thread is None and all(os.path.isdir(r) for r in self._roots):
                self._start()
        return changed

    def close(self) -> None:
        self._closing.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
