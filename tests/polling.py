"""Waiting for a condition in a test: poll it, with a deadline that only a broken build reaches.

A test waits for what it can observe (a file, a row in the store, a line printed), never for a
guessed time. The deadline is generous on purpose -- a loaded machine (2 cores shared by several
suites) can be ten times slower than a quiet one -- and exists only so that a broken build fails
instead of hanging.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["DEADLINE", "wait_until"]

DEADLINE = 300.0  # seconds

T = TypeVar("T")


def wait_until(predicate: Callable[[], T], what: str, timeout: float = DEADLINE, interval: float = 0.02) -> T:
    """Poll ``predicate`` until it returns something truthy and return that; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)
