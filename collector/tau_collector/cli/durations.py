"""The one syntax of every duration flag and environment variable: seconds (``10``, ``2.5``) or Go's (``1m30s``).

A duration is a bare number of seconds (``10``, ``2.5``, ``.5``) or Go's ``time.ParseDuration`` syntax
(``10s``, ``1m30s``, ``500ms``, ``1.5h``; units ``ns``, ``us``/``µs``, ``ms``, ``s``, ``m``, ``h``), so a
TauGrid flag keeps every value Go accepts that is not negative, and ours take the same. No duration is
negative or infinite. ``0`` is a duration; whether a flag allows it, and what it then means (off, no
wait, the default), is the flag's (:func:`duration_type`): one that cannot be 0 refuses it. The user's
copy of this rule is ``docs/configuration.md#durations``.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable

__all__ = ["FORMS", "DurationError", "duration_type", "parse_duration"]

FORMS = "seconds such as 10 or 2.5, or Go syntax such as 10s, 1m30s, 500ms, 1h"

_SECONDS = re.compile(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+")
_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)")  # µ (micro sign) and μ (Greek mu), as Go
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class DurationError(argparse.ArgumentTypeError, ValueError):
    """A text that is not a duration, or one its flag refuses; the message shows the accepted forms."""


def parse_duration(text: str) -> float:
    """``text`` as seconds: a bare number of seconds or a Go duration, never negative or infinite.

    Raises :class:`DurationError` (an ``argparse.ArgumentTypeError`` and a ``ValueError``) whose
    message quotes ``text`` and names the accepted forms; the caller adds the flag or variable.
    """
    raw = str(text).strip()
    sign = raw[:1] if raw[:1] in ("+", "-") else ""
    body = raw[len(sign):]
    if _SECONDS.fullmatch(body):
        value = float(body)
    else:
        value, pos = 0.0, 0
        for match in _PART.finditer(body):
            if match.start() != pos:
                break
            value += float(match.group(1)) * _UNITS[match.group(2)]
            pos = match.end()
        if not body or pos != len(body):
            raise DurationError(f"invalid duration {text!r} (use {FORMS})")
    if not math.isfinite(value):
        raise DurationError(f"duration {text!r} is too long (use {FORMS})")
    if sign == "-" and value != 0:
        raise DurationError(f"a duration cannot be negative, got {text!r} (use {FORMS})")
    return value


def duration_type(*, zero: bool = False) -> Callable[[str], float]:
    """A parser of one flag's durations (an argparse ``type``; also used for its environment variable).

    ``zero``: whether ``0`` means something for this flag (off, no wait, the default); without it,
    ``0`` is refused with ``must be more than 0``.
    """
    def parse(text: str) -> float:
        value = parse_duration(text)
        if value == 0 and not zero:
            raise DurationError(f"must be more than 0, got {text!r}")
        return value

    parse.__name__ = "duration"  # argparse's "invalid duration value" if anything else escapes
    return parse
