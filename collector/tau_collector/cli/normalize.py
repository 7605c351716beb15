"""``tau-collector normalize``: a stdin filter that turns a job's JSON rows into history chunks.

Every stdin line that is one JSON object (``{"step": 3, "loss": 1.25}``; ``NaN`` allowed)
becomes a house row appended to a chunk file in ``--out``; every other line (log text, progress
bars, warnings) goes to stdout unchanged, byte for byte, and at once, so the job log stays live.
A row whose ``step`` is not a non-negative integer is logged as a warning on stderr and passed
to stdout. EOF writes the last rows; exit 0. Usage errors exit 2; rows that cannot be written
(a full disk, a read-only ``--out``) exits 1. There is no progress line: stdout is the progress.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time
from typing import BinaryIO

from tau_collector.cli import logging_setup as logs
from tau_collector.cli.common import subcommand_parser
from tau_collector.cli.durations import duration_type
from tau_collector.job.history_writer import HistoryWriteError, HistoryWriter
from tau_collector.job.normalizer import Normalizer, StepError, classify_line

log = logging.getLogger("tau_collector.normalize")

_EPILOG = """\
examples:
  python train.py | tau-collector normalize --out runs/seed-1/metrics-history-attempt-0
  # then collect: tau-collector collect --history 'runs/seed-1/metrics-history-attempt-0/chunk-*.jsonl' ...
  # bigger chunk files, rows written once a second, a summary (rows, files, passed lines) on stderr
  python train.py | tau-collector normalize -v --out run/history --max-rows 500000 --max-delay 1
"""

_READ_SIZE = 1 << 16
# A line that starts like a row is held until its newline; past this size it cannot be a row
# worth keeping and is let through so the log never stalls.
_MAX_HELD_LINE = 16 << 20


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _configure(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="directory for chunk-NNNNNN-<unix_ms>.jsonl files (created if missing)")
    parser.add_argument("--max-rows", type=_positive_int, default=100_000, metavar="N",
                        help="start the next chunk file after N rows (default: 100000)")
    parser.add_argument("--max-delay", type=duration_type(), default=0.1, metavar="DURATION",
                        help="write (append and fsync) rows at most this long after they came (default: 100ms)")
    logs.add_arguments(parser)
    return parser


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    return _configure(subcommand_parser(
        subparsers, "normalize", run,
        help="stdin filter: JSON rows to history chunk files, other lines to stdout",
        description=__doc__, epilog=_EPILOG,
    ))


class Passthrough:
    """stdout for the job log; if the reader goes away, rows are still collected."""

    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        self.open = True

    def write(self, data: bytes) -> None:
        if self.open and data:
            try:
                self.out.write(data)
            except BrokenPipeError:
                self.open = False

    def flush(self) -> None:
        if self.open:
            try:
                self.out.flush()
            except BrokenPipeError:
                self.open = False


class HistoryFilter:
    def __init__(self, writer: HistoryWriter, out: Passthrough) -> None:
        self.writer = writer
        self.out = out
        self.normalizer = Normalizer()
        self.line_number = 0
        self.rows = 0
        self.passed = 0  # lines (or line pieces) passed through as log text
        self.held = bytearray()  # start of a line that may be a row, waiting for its newline
        self.streaming = False  # the current line is log text already being passed through

    def feed(self, data: bytes) -> None:
        start = 0
        while start < len(data):
            newline = data.find(b"\n", start)
            if newline == -1:
                self._partial(data[start:])
                return
            self._line_end(data[start : newline + 1])
            start = newline + 1

    def finish(self) -> None:
        """EOF: a held line without newline is still a row or log text."""
        if self.held:
            line = bytes(self.held)
            self.held.clear()
            self._complete(line)
        self.streaming = False

    def _partial(self, piece: bytes) -> None:
        if self.streaming:
            self.out.write(piece)
            return
        self.held += piece
        # a progress bar or prompt without newline: pass it through now unless it may be a row
        stripped = self.held.lstrip(b" \t\r\n")
        if (stripped and stripped[:1] != b"{") or len(self.held) > _MAX_HELD_LINE:
            self.out.write(bytes(self.held))
            self.held.clear()
            self.streaming = True

    def _line_end(self, piece: bytes) -> None:
        if self.streaming:
            self.line_number += 1
            self.out.write(piece)
            self.streaming = False
            return
        if self.held:
            self.held += piece
            line = bytes(self.held)
            self.held.clear()
        else:
            line = piece
        self._complete(line)

    def _complete(self, line: bytes) -> None:
        self.line_number += 1
        value = classify_line(line)
        if isinstance(value, bytes):
            self.passed += 1
            self.out.write(value)
            return
        try:
            row = self.normalizer.normalize_row(value, now=time.time())
        except StepError as err:
            log.warning(f"stdin line {self.line_number}: {err}; the line was passed to stdout unchanged and not "
                        "recorded as a row: give each row an integer step >= 0", extra={"line": self.line_number})
            self.passed += 1
            self.out.write(line)
            return
        self.writer.write(row)
        self.rows += 1


def _terminate(signum: int, frame: object) -> None:
    # SystemExit unwinds through run()'s finally, which writes the buffered rows.
    raise SystemExit(128 + signum)


def run(args: argparse.Namespace) -> int:
    logs.configure_from(args)
    out = Passthrough(sys.stdout.buffer)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    stdin = sys.stdin.buffer.fileno()
    try:
        writer = HistoryWriter(args.out, max_rows=args.max_rows, max_delay=args.max_delay)
    except OSError as exc:
        log.error(f"cannot use --out {args.out}: {exc.strerror or exc}; pick a writable directory")
        return 1
    log.info("normalizing stdin", extra={"out": os.path.abspath(args.out), "max_rows": args.max_rows,
                                         "max_delay": args.max_delay})
    try:
        with writer:
            filter_ = HistoryFilter(writer, out)
            try:
                while True:
                    # os.read returns whatever the pipe holds: lines flow on without waiting for a full buffer
                    data = os.read(stdin, _READ_SIZE)
                    if not data:
                        break
                    filter_.feed(data)
                    out.flush()
            finally:
                filter_.finish()
                out.flush()
    except HistoryWriteError as exc:
        log.error(f"{exc}; the rows already written in {args.out} are complete")
        return 1
    except OSError as exc:
        log.error(f"cannot write history rows in {args.out}: {exc.strerror or exc}; the rows already written "
                  "there are complete: free space or fix the directory's permissions, then run the job again")
        return 1
    log.info("stdin closed", extra={"rows": filter_.rows, "chunks": len(writer.chunk_paths),
                                    "lines_passed": filter_.passed, "out": os.path.abspath(args.out)})
    return 0

