"""One logging setup for every command line: structured lines on stderr, quiet by default.

``configure(verbosity, fmt)`` sends the records of our packages (``tau_collector``, and
``taunotebook`` when it reuses this module) to stderr: warnings and errors by default, info with
``-v``, debug with ``-vv``. Other libraries stay at Python's default (warnings and errors).

Two formats, one record per line:

- ``logfmt`` (default): ``ts=2026-09-18T19:00:00.123Z level=info logger=tau_collector.collect
  msg="collector finished" chunks=3 events=120``; ``msg`` is always quoted, other values only when
  they hold a space, ``=``, a quote, a backslash or a control character (JSON string escapes);
- ``json``: ``{"ts":…,"level":…,"logger":…,"msg":…, …fields}``.

Fields are the ``extra=`` of a log call: ``log.info("chunk delivered", extra={"events": 12})``.
A progress line (:mod:`tau_collector.cli.progress`) or a tqdm bar on the same stream is cleared
before a record is written, so the two never end up on one line.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Iterable
from typing import TextIO

__all__ = ["FORMATS", "JSONFormatter", "LogfmtFormatter", "add_arguments", "configure", "configure_from", "level_for"]

FORMATS = ("logfmt", "json")
PACKAGES = ("tau_collector", "taunotebook")

# LogRecord's own attributes, and uvicorn's ANSI-coloured copy of its message: not fields.
_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {
    "message", "asctime", "taskName", "color_message"}


def add_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``-v/--verbose`` (repeatable) and ``--log-format``, the same on every command."""
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="more log lines on stderr: -v info, -vv debug (default: warnings and errors only)")
    parser.add_argument("--log-format", choices=FORMATS, default="logfmt",
                        help="log line format on stderr: logfmt (key=value, default) or json (one object a line)")


def level_for(verbosity: int) -> int:
    if verbosity <= 0:
        return logging.WARNING
    return logging.INFO if verbosity == 1 else logging.DEBUG


def _timestamp(created: float) -> str:
    seconds = int(created)
    millis = int((created - seconds) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"


def _fields(record: logging.LogRecord) -> dict[str, object]:
    return {k: v for k, v in record.__dict__.items() if k not in _STANDARD and not k.startswith("_")}


def _logfmt_value(value: object) -> str:
    if value is None:
        return '""'
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    if text == "" or any(ch in ' ="\\' or not ch.isprintable() for ch in text):
        return json.dumps(text, ensure_ascii=False)
    return text


class LogfmtFormatter(logging.Formatter):
    """``ts=… level=… logger=… msg="…" key=value`` on one line."""

    def format(self, record: logging.LogRecord) -> str:
        parts = [
            f"ts={_timestamp(record.created)}",
            f"level={record.levelname.lower()}",
            f"logger={_logfmt_value(record.name)}",
            f"msg={json.dumps(record.getMessage(), ensure_ascii=False)}",
        ]
        parts.extend(f"{key}={_logfmt_value(value)}" for key, value in _fields(record).items())
        if record.exc_info:
            parts.append(f"exc={json.dumps(self.formatException(record.exc_info), ensure_ascii=False)}")
        return " ".join(parts)


class JSONFormatter(logging.Formatter):
    """One JSON object per record: ``ts``, ``level``, ``logger``, ``msg``, then the fields."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, object] = {
            "ts": _timestamp(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in _fields(record).items():
            data.setdefault(key, value)
        if record.exc_info:
            data["exc"] = self.formatException(record.exc_info)
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)


class _StderrHandler(logging.Handler):
    """Writes to ``stream``, or to whatever ``sys.stderr`` is at the time of the record."""

    def __init__(self, stream: TextIO | None = None) -> None:
        super().__init__()
        self._stream = stream

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record) + "\n"
            stream = self._stream or sys.stderr
            from tau_collector.cli import progress
            with progress.paused(stream):
                stream.write(line)
                stream.flush()
        except Exception:  # logging must never take the command down
            self.handleError(record)


def configure(verbosity: int = 0, fmt: str = "logfmt", *, stream: TextIO | None = None,
              packages: Iterable[str] = PACKAGES) -> logging.Handler:
    """Install the stderr handler (replacing one installed before) and set our packages' level."""
    if fmt not in FORMATS:
        raise ValueError(f"log format {fmt!r}: use one of {', '.join(FORMATS)}")
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _StderrHandler)]:
        root.removeHandler(old)
    handler = _StderrHandler(stream)
    handler.setFormatter(JSONFormatter() if fmt == "json" else LogfmtFormatter())
    root.addHandler(handler)
    level = level_for(verbosity)
    for name in packages:
        logging.getLogger(name).setLevel(level)
    return handler


def configure_from(args: argparse.Namespace) -> logging.Handler:
    """:func:`configure` from the ``-v``/``--log-format`` of :func:`add_arguments` (absent: the defaults)."""
    return configure(getattr(args, "verbose", 0) or 0, getattr(args, "log_format", "logfmt") or "logfmt")
