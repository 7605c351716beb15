"""A progress line on stderr for long commands, without a dependency.

Shown when stderr is a terminal, or when asked (``--progress``) even into a pipe; never with
``--no-progress``. On a terminal one line is redrawn in place (``\\r``) at most every
``interval`` seconds and left standing, with its final state, when the work ends; into a pipe
each update is a plain line, at most one a second. Log records written meanwhile clear the line
first (:func:`paused`), and stdout is never touched.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from typing import TextIO

__all__ = ["Progress", "add_argument", "human_bytes", "paused", "wanted"]

_lock = threading.RLock()
_active: list[Progress] = []


def add_argument(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="a progress line on stderr (default: only when stderr is a terminal)")


def wanted(flag: bool | None, stream: TextIO | None = None) -> bool:
    """``--progress``/``--no-progress`` when given, else whether ``stream`` (stderr) is a terminal."""
    if flag is not None:
        return flag
    stream = stream or sys.stderr
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"  # pragma: no cover


@contextlib.contextmanager
def paused(stream: TextIO) -> Iterator[None]:
    """Clear an active progress line (ours, or a tqdm bar) on ``stream`` while something else is written."""
    with _lock:
        for bar in _active:
            bar._erase()
        tqdm = sys.modules.get("tqdm")
        external = getattr(getattr(tqdm, "tqdm", None), "external_write_mode", None)
        with external(file=stream) if callable(external) else contextlib.nullcontext():
            yield


class Progress:
    """``label: text`` on stderr, redrawn in place on a terminal."""

    def __init__(self, label: str, *, enabled: bool, stream: TextIO | None = None,
                 interval: float | None = None) -> None:
        self.label = label
        self.enabled = enabled
        self.stream = stream or sys.stderr
        try:
            self.tty = self.stream.isatty()
        except (AttributeError, ValueError):
            self.tty = False
        self.interval = interval if interval is not None else (0.2 if self.tty else 1.0)
        self.started = time.monotonic()
        self._last = float("-inf")
        self._text = ""
        self._shown = False  # a \r line is on screen
        self._closed = False
        if enabled:
            with _lock:
                _active.append(self)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def update(self, text: str, *, force: bool = False) -> None:
        """New state; drawn if the last drawing is ``interval`` old (or ``force``)."""
        if not self.enabled or self._closed:
            return
        self._text = text
        now = time.monotonic()
        if force or now - self._last >= self.interval:
            self._last = now
            with _lock:
                self._draw()

    def close(self, text: str | None = None) -> None:
        """Draw the final state (with the elapsed time) and end the line."""
        if not self.enabled or self._closed:
            return
        if text is not None:
            self._text = text
        with _lock:
            self._text += f" ({time.monotonic() - self.started:.1f}s)"
            self._draw()
            if self.tty:
                self._write("\n")
            self._shown = False
            self._closed = True
            if self in _active:
                _active.remove(self)

    def _draw(self) -> None:
        line = f"{self.label}: {self._text}"
        if self.tty:
            self._write("\r" + line + "\x1b[K")
            self._shown = True
        else:
            self._write(line + "\n")

    def _erase(self) -> None:
        if self._shown:
            self._write("\r\x1b[K")
            self._shown = False
            self._last = float("-inf")  # redraw at the next update

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            self.enabled = False
