"""Appends house rows to history chunk files, and the ``log()`` helper for training code.

A writer appends its rows to one file ``chunk-NNNNNN-<unix_ms>.jsonl`` until the file holds
``max_rows`` rows, then starts the next. Rows are written whole lines at a time, each write
fsynced, at most ``max_delay`` after they were logged: a collector reads such a file as it reads
a W&B or TensorBoard file that its job appends to, up to the last newline while the job runs.
One growing file, rather than a closed file per write, is what keeps the collector cheap beside
a job logging all the time: every new file costs it a chunk, a delivery and a checkpoint entry
that stays for the run's life (TauGrid's checkpoint lists every file read), so closed files made
ten times a second grew its work with the job's age.

A writer creates its file under a fresh number (``O_EXCL``: chunk numbers continue after the
highest one in the directory, so a restarted writer, or a second one in the same directory,
never writes into another's file) and never reopens it after a restart.
"""

from __future__ import annotations

import atexit
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

from tau_collector.collect.signal_stop import leave_stop_signals_to_main_thread
from tau_collector.job.normalizer import Normalizer
from tau_collector.spool.durable import fsync_directory

__all__ = ["HistoryWriter", "HistoryWriteError", "encode_row", "log", "plain_value", "write_row", "CHUNK_NAME",
           "HISTORY_DIR_ENV"]

HISTORY_DIR_ENV = "TAU_HISTORY_DIR"
CHUNK_NAME = re.compile(r"^chunk-(\d+)-(\d+)\.jsonl$")
# Dotfiles of writers before appending (closed chunks were written as .chunk-*.tmp, then linked) hold
# numbers too; skipping past them keeps names unique.
_ANY_CHUNK = re.compile(r"^\.?chunk-(\d+)-\d+\.jsonl(?:\.tmp)?$")


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
    """Buffers house rows and appends them to chunk files in ``out_dir``, ``max_rows`` rows a file.

    Buffered rows are written (and fsynced) when the oldest is ``max_delay`` seconds old (a
    background thread writes them even if no more rows come), when ``max_rows`` are buffered and
    on :meth:`flush` and :meth:`close`. ``write`` is thread-safe.
    """

    def __init__(self, out_dir: str | os.PathLike[str], *, max_rows: int = 100_000, max_delay: float = 0.1):
        if max_rows < 1:
            raise ValueError(f"max_rows must be at least 1, got {max_rows}")
        if not max_delay > 0:
            raise ValueError(f"max_delay must be a positive number of seconds, got {max_delay}")
        self.out_dir = os.fspath(out_dir)
        os.makedirs(self.out_dir, exist_ok=True)
        self.max_rows = max_rows
        self.max_delay = max_delay
        self.chunk_paths: list[str] = []  # every file this writer made, in order
        self.rows_written = 0
        self._next_number = highest_chunk_number(self.out_dir) + 1
        self._fd = -1  # the file rows are appended to; -1 until the first write and after it is full
        self._file_rows = 0
        self._lines: list[bytes] = []
        self._first_at = 0.0  # monotonic time of the oldest buffered row
        self._error: BaseException | None = None
        self._closed = False
        # _io_lock orders file writes (rows land in the order they were logged); _lock guards the
        # buffer only, so write() does not wait for an fsync unless it fills the buffer itself.
        self._io_lock = threading.Lock()
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._timer = threading.Thread(target=self._write_when_due, name="tau-history-writer", daemon=True)
        self._timer.start()

    def __enter__(self) -> HistoryWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def write(self, row: Mapping[str, Any]) -> None:
        """Buffer one house row; writes the buffer in this thread when it holds ``max_rows`` rows."""
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
        """Write the buffered rows now, however few and however new."""
        self._flush()
        with self._lock:
            self._raise_error()

    def close(self) -> None:
        """Write what is buffered, close the file and stop the background thread; safe to call twice."""
        with self._lock:
            already = self._closed
            self._closed = True
            self._wake.notify()
        if not already and self._timer is not threading.current_thread():
            self._timer.join()
        self._flush()
        with self._io_lock:
            self._close_file()
        with self._lock:
            self._raise_error()

    # -- internals ------------------------------------------------------------------------

    def _raise_error(self) -> None:
        error, self._error = self._error, None
        if error is not None:
            raise HistoryWriteError(
                f"cannot write history rows in {self.out_dir}: {error}; the rows are kept and "
                "retried — free space or fix the directory's permissions") from error

    def _write_when_due(self) -> None:
        leave_stop_signals_to_main_thread()
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
            while True:
                with self._lock:
                    if not self._lines:
                        return
                    # another thread may have written the rows between the check and this lock
                    if when_full and len(self._lines) < self.max_rows:
                        return
                    if when_due and self._first_at + self.max_delay > time.monotonic():
                        return
                    # what fits in the current file (a full one is closed below: this starts the next)
                    room = self.max_rows - self._file_rows if self._fd >= 0 else self.max_rows
                    lines = self._lines[:room]
                    del self._lines[:room]
                    if self._lines:
                        self._first_at = time.monotonic()
                try:
                    self._append(lines)
                except OSError as err:
                    with self._lock:
                        self._lines[:0] = lines
                        self._first_at = time.monotonic()  # retry after another max_delay
                        self._error = err
                    return
                self.rows_written += len(lines)
                when_full = when_due = False  # the rest is written now too

    def _append(self, lines: list[bytes]) -> None:
        if self._fd < 0:
            self._open_next()
        fd = self._fd
        size = os.lseek(fd, 0, os.SEEK_END)
        try:
            view = memoryview(b"".join(lines))
            while view:
                view = view[os.write(fd, view):]
            os.fdatasync(fd)
        except OSError:
            # Leave no part of a row behind (a reader would take a torn line for a bad row); when even
            # that fails, the file is left as it is and the rows go to a new one.
            try:
                os.ftruncate(fd, size)
            except OSError:
                self._close_file()
            raise
        self._file_rows += len(lines)
        if self._file_rows >= self.max_rows:
            self._close_file()

    def _open_next(self) -> None:
        unix_ms = time.time_ns() // 1_000_000
        while True:
            path = os.path.join(self.out_dir, f"chunk-{self._next_number:06d}-{unix_ms}.jsonl")
            try:
                # O_EXCL: a second writer in this directory that picked the same number moves on
                self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC, 0o644)
            except FileExistsError:
                self._next_number = max(self._next_number + 1, highest_chunk_number(self.out_dir) + 1)
                continue
            break
        self._next_number += 1
        self._file_rows = 0
        self.chunk_paths.append(path)
        fsync_directory(self.out_dir)  # the name is durable before rows are acknowledged in it

    def _close_file(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)


# ---------------------------------------------------------------------------------------
# log(): the helper training code calls


_log_lock = threading.Lock()
# Per (process id, directory): a forked DataLoader worker gets its own writer and thread.
_log_writers: dict[tuple[int, str], tuple[HistoryWriter, Normalizer]] = {}


def plain_value(name: str, value: Any) -> Any:
    """A JSON-ready Python value from a number, numpy scalar or 0-d tensor (without importing them)."""
    if value is None or type(value) in (int, float, bool, str):
        return value
    item = getattr(value, "item", None)
    if callable(item):
        try:
            return plain_value(name, item())
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
        row["step"] = plain_value("step", step)
    for name, value in metrics.items():
        row[name] = plain_value(name, value)
    write_row(row)


def write_row(row: dict[str, Any]) -> None:
    """Write one row of JSON values as :func:`log` does (``step`` optional): into the chunk files of
    ``$TAU_HISTORY_DIR`` when it is set, else printed on stdout as one JSON line for the job's normalizer."""
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
