"""Writes house rows into closed history chunk files, and the ``log()`` helper for training code.

A chunk ``chunk-NNNNNN-<unix_ms>.jsonl`` appears in its directory only complete: it is written
as a dotfile, flushed, fsynced and then given its name, so a collector that reads
``chunk-*.jsonl`` never sees half a chunk and never needs TauGrid's last-newline rule for them.
Chunk numbers continue after the highest one already in the directory, so a restarted writer
(or a second one in the same directory) never replaces a chunk.
"""

from __future__ import annotations

import atexit
import errno
import json
import numbers
import os
import re
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any

import orjson

from tau_collector.durable import fsync_directory
from tau_collector.normalizer import Normalizer

__all__ = ["HistoryWriter", "HistoryWriteError", "encode_row", "log", "CHUNK_NAME", "HISTORY_DIR_ENV"]

HISTORY_DIR_ENV = "TAU_HISTORY_DIR"
CHUNK_NAME = re.compile(r"^chunk-(\d+)-(\d+)\.jsonl$")
# Leftover dotfiles of a crashed writer hold numbers too; skipping past them keeps names unique.
_ANY_CHUNK = re.compile(r"^\.?chunk-(\d+)-\d+\.jsonl(?:\.tmp)?$")
# link(2) errors meaning "this filesystem has no hard links": fall back to rename(2).
_NO_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK}


class HistoryWriteError(OSError):
    """A chunk could not be written; the rows stay buffered and are retried."""


def encode_row(row: Mapping[str, Any]) -> bytes:
    """One compact JSON line (with ``\\n``) for a house row, keeping its key order.

    orjson is the fast path; integers beyond 64 bits and lone surrogates take the stdlib encoder.
    Non-finite values are strings already (the normalizer's job), so orjson never nulls them.
    """
    try:
        return orjson.dumps(row, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError:
        text = json.dumps(row, separators=(",", ":"), ensure_ascii=False)
        try:
            return text.encode("utf-8") + b"\n"
        except UnicodeEncodeError:  # a lone surrogate: \u-escapes keep the line valid UTF-8
            return json.dumps(row, separators=(",", ":")).encode("ascii") + b"\n"


def highest_chunk_number(directory: str) -> int:
    """The highest chunk number used in ``directory`` (closed or dotfile), 0 when none."""
    highest = 0
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return 0
    for name in names:
        match = _ANY_CHUNK.match(name)
        if match:
            highest = max(highest, int(match.group(1)))
    return highest


class HistoryWriter:
    """Buffers house rows and writes them as closed chunk files in ``out_dir``.

    A chunk closes when it holds ``max_rows`` rows, when its first row is ``max_delay`` seconds
    old (a background thread closes it even if no more rows come) and on :meth:`close`.
    ``write`` is thread-safe.
    """

    def __init__(self, out_dir: str | os.PathLike[str], *, max_rows: int = 10000, max_delay: float = 0.1):
        if max_rows < 1:
            raise ValueError(f"max_rows must be at least 1, got {max_rows}")
        if not max_delay > 0:
            raise ValueError(f"max_delay must be a positive number of seconds, got {max_delay}")
        self.out_dir = os.fspath(out_dir)
        os.makedirs(self.out_dir, exist_ok=True)
        self.max_rows = max_rows
        self.max_delay = max_delay
        self.chunk_paths: list[str] = []
        self.rows_written = 0
        self._next_number = highest_chunk_number(self.out_dir) + 1
        self._lines: list[bytes] = []
        self._first_at = 0.0  # monotonic time of the buffered chunk's first row
        self._error: BaseException | None = None
        self._closed = False
        # _io_lock orders chunk writes (numbers follow row order); _lock guards the buffer only,
        # so write() does not wait for an fsync unless it fills a chunk itself.
        self._io_lock = threading.Lock()
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._timer = threading.Thread(target=self._close_when_due, name="tau-history-writer", daemon=True)
        self._timer.start()

    def __enter__(self) -> HistoryWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def write(self, row: Mapping[str, Any]) -> None:
        """Buffer one house row; closes the chunk in this thread when it reaches ``max_rows``."""
        line = encode_row(row)
        with self._lock:
            if self._closed:
                raise ValueError(f"history writer for {self.out_dir} is closed; create a new one")
            self._raise_error()
            if not self._lines:
                self._first_at = time.monotonic()
                self._wake.notify()
            self._lines.append(line)
            full = len(self._lines) >= self.max_rows
        if full:
            self._flush(when_full=True)

    def flush(self) -> None:
        """Close the buffered chunk now, whatever its size and age."""
        self._flush()
        with self._lock:
            self._raise_error()

    def close(self) -> None:
        """Write what is buffered and stop the background thread; safe to call twice."""
        with self._lock:
            already = self._closed
            self._closed = True
            self._wake.notify()
        if not already and self._timer is not threading.current_thread():
            self._timer.join()
        self._flush()
        with self._lock:
            self._raise_error()

    # -- internals ------------------------------------------------------------------------

    def _raise_error(self) -> None:
        error, self._error = self._error, None
        if error is not None:
            raise HistoryWriteError(
                f"cannot write a history chunk in {self.out_dir}: {error}; the rows are kept and "
                "retried — free space or fix the directory's permissions") from error

    def _close_when_due(self) -> None:
        while True:
            with self._wake:
                while True:
                    if self._closed:
                        return
                    if self._lines:
                        remaining = self._first_at + self.max_delay - time.monotonic()
                        if remaining <= 0:
                            break
                        self._wake.wait(remaining)
                    else:
                        self._wake.wait()
            self._flush(when_due=True)

    def _flush(self, *, when_full: bool = False, when_due: bool = False) -> None:
        with self._io_lock:
            with self._lock:
                if not self._lines:
                    return
                # another thread may have closed the chunk between the check and this lock
                if when_full and len(self._lines) < self.max_rows:
                    return
                if when_due and self._first_at + self.max_delay > time.monotonic():
                    return
                lines = self._lines[: self.max_rows]
                del self._lines[: self.max_rows]
                if self._lines:
                    self._first_at = time.monotonic()
            try:
                path = self._write_chunk(lines)
            except OSError as err:
                with self._lock:
                    self._lines[:0] = lines
                    self._first_at = time.monotonic()  # retry after another max_delay
                    self._error = err
                return
            self.chunk_paths.append(path)
            self.rows_written += len(lines)

    def _write_chunk(self, lines: list[bytes]) -> str:
        unix_ms = time.time_ns() // 1_000_000
        while True:
            name = f"chunk-{self._next_number:06d}-{unix_ms}.jsonl"
            temporary = os.path.join(self.out_dir, f".{name}.tmp")
            try:
                fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
            except FileExistsError:
                self._skip_used_numbers()
                continue
            break
        try:
            view = memoryview(b"".join(lines))
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            os.unlink(temporary)
            raise
        os.close(fd)
        while True:
            final = os.path.join(self.out_dir, name)
            try:
                # link(2), unlike rename(2), fails instead of replacing another writer's chunk
                os.link(temporary, final)
            except FileExistsError:
                self._skip_used_numbers()
                name = f"chunk-{self._next_number:06d}-{unix_ms}.jsonl"
                continue
            except OSError as err:
                if err.errno not in _NO_LINKS:
                    raise
                os.rename(temporary, final)
            else:
                os.unlink(temporary)
            break
        self._next_number += 1
        fsync_directory(self.out_dir)
        return final

    def _skip_used_numbers(self) -> None:
        self._next_number = max(self._next_number + 1, highest_chunk_number(self.out_dir) + 1)


# ---------------------------------------------------------------------------------------
# log(): the helper training code calls


_log_lock = threading.Lock()
# Per (process id, directory): a forked DataLoader worker gets its own writer and thread.
_log_writers: dict[tuple[int, str], tuple[HistoryWriter, Normalizer]] = {}


def _plain(name: str, value: Any) -> Any:
    """A JSON-ready Python value from a number, numpy scalar or 0-d tensor (without importing them)."""
    if value is None or type(value) in (int, float, bool, str):
        return value
    item = getattr(value, "item", None)
    if callable(item):
        try:
            return _plain(name, item())
        except (ValueError, RuntimeError) as err:
            raise TypeError(
                f"log(): {name} holds more than one value ({err}); log a scalar such as "
                f"{name}=t.mean().item()") from None
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    raise TypeError(
        f"log(): {name} is a {type(value).__name__}, not a number; log ints, floats, numpy scalars "
        "or one-element tensors")


def log(step: Any = None, **metrics: Any) -> None:
    """Log one history row: ``log(3, loss=0.5)`` or ``log(**{"train/loss": 0.5})`` (auto step).

    With ``TAU_HISTORY_DIR`` set, the row goes straight into chunk files in that directory;
    otherwise it is printed to stdout as one JSON line for the job's normalizer to pick up.
    A mapping as first argument is taken as the metrics (``log({"train/loss": 0.5})``).
    """
    if isinstance(step, Mapping):
        metrics = {**step, **metrics}
        step = metrics.pop("step", None)
    row: dict[str, Any] = {}
    if step is not None:
        row["step"] = _plain("step", step)
    for name, value in metrics.items():
        row[name] = _plain(name, value)
    directory = os.environ.get(HISTORY_DIR_ENV)
    if not directory:
        sys.stdout.write(json.dumps(row) + "\n")  # NaN stays a token: the normalizer accepts it
        sys.stdout.flush()
        return
    with _log_lock:
        key = (os.getpid(), os.path.abspath(directory))
        entry = _log_writers.get(key)
        if entry is None:
            entry = (HistoryWriter(directory), Normalizer())
            _log_writers[key] = entry
        writer, normalizer = entry
        house = normalizer.normalize_row(row, now=time.time())
    writer.write(house)


@atexit.register
def _close_log_writers() -> None:
    with _log_lock:
        entries = [entry for key, entry in _log_writers.items() if key[0] == os.getpid()]
        _log_writers.clear()
    for writer, _ in entries:
        writer.close()
