"""Turns the notebook's rows (``{"step": 3, "loss": 1.25}``) into TauGrid house rows.

A house row is what TauGrid's JSONL history holds: ``{"_step": 3, "_timestamp": 1760000000.125,
"loss": 1.25}``. The rules (``DESIGN.md`` §3 "Normalizer"): ``step`` becomes ``_step``, a row
without a step gets the previous step + 1 (W&B's auto-increment, from 0), ``_timestamp`` is the
row's own, else its ``timestamp``/``wall_time`` (epoch seconds), else the observation time;
other keys are kept in their order. Non-finite floats are written as the strings ``"NaN"``,
``"Infinity"``, ``"-Infinity"``: valid JSON that TauGrid's collector skips instead of failing the
file, and that our JSONL source reads back as non-finite values.
"""

from __future__ import annotations

import math
from typing import Any

from tau_collector.sources.jsonl import decode_history_line

__all__ = ["StepError", "Normalizer", "normalize_row", "classify_line", "MAX_STEP"]

MAX_STEP = 2**63 - 1  # TauGrid's step is an int64

_TIME_KEYS = ("timestamp", "wall_time")
_WHITESPACE = b" \t\r\n"


class StepError(ValueError):
    """A row whose ``step`` is not a non-negative integer; the row is not normalized."""


def classify_line(line: bytes) -> dict[str, Any] | bytes:
    """A stdout line that is one JSON object is a row (returned decoded); anything else is returned as is.

    ``NaN``/``Infinity`` tokens (Python's ``json.dumps``) are allowed in a row. Plain text,
    JSON arrays or numbers, progress bars with ``\\r``: all come back unchanged, byte for byte.
    """
    # Only "{" can open a row: one byte test keeps log text off the JSON parser.
    if line.lstrip(_WHITESPACE)[:1] != b"{":
        return line
    try:
        # "NaN" strings stay strings: the normalizer writes non-finite values that way anyway
        value = decode_history_line(line, nonfinite_strings=False)
    except ValueError:
        return line
    if type(value) is not dict:
        return line
    return value


def _step_of(value: Any) -> int:
    if type(value) is int:
        step = value
    elif type(value) is float and value.is_integer():
        step = int(value)  # 3.0 from a JavaScript-ish writer is step 3
    else:
        raise StepError(
            f"step {value!r} is not a non-negative integer; log an integer step such as 3, "
            "or leave it out to count up from the previous step")
    if step < 0 or step > MAX_STEP:
        raise StepError(
            f"step {value!r} is outside 0..{MAX_STEP}; log a non-negative 64-bit integer step, "
            "or leave it out to count up from the previous step")
    return step


def _time_of(value: Any) -> float | int | None:
    if type(value) in (int, float) and math.isfinite(value):
        return value
    return None


def _encode_value(value: Any) -> Any:
    if type(value) is float and not math.isfinite(value):
        if value != value:
            return "NaN"
        return "Infinity" if value > 0 else "-Infinity"
    return value


def normalize_row(obj: dict[str, Any], *, now: float, next_step: int = 0) -> dict[str, Any]:
    """The house row for ``obj``, observed at ``now`` (epoch seconds with fraction).

    ``next_step`` is the step a row without one gets; :class:`Normalizer` keeps it across rows.
    A row that already has ``_step`` passes through unchecked (the projection judges it, as
    TauGrid's does). Raises :class:`StepError` for a ``step`` that is not a non-negative integer.
    """
    consumed: set[str] = set()
    if "_step" in obj:
        step = obj["_step"]
    elif "step" in obj:
        step = _step_of(obj["step"])
        consumed.add("step")
    else:
        step = next_step
    if "_timestamp" in obj:
        timestamp = obj["_timestamp"]
    else:
        timestamp = now
        for key in _TIME_KEYS:
            if key in obj:
                own = _time_of(obj[key])
                if own is not None:
                    timestamp = own
                    consumed.add(key)
                    break
    row: dict[str, Any] = {"_step": step, "_timestamp": _encode_value(timestamp)}
    consumed.update(row)
    row.update({key: value for key, value in obj.items() if key not in consumed})
    # One C-level sum finds rows holding NaN or ±Inf (an overflowing sum only costs the loop).
    if not math.isfinite(sum([value for value in row.values() if type(value) is float])):
        for key, value in row.items():
            row[key] = _encode_value(value)
    return row


class Normalizer:
    """Normalizes a stream of rows, remembering the step for rows that carry none."""

    def __init__(self, next_step: int = 0) -> None:
        self.next_step = next_step

    def normalize_row(self, obj: dict[str, Any], *, now: float) -> dict[str, Any]:
        """Like :func:`normalize_row`; a row with a valid integer step moves the auto-step past it."""
        row = normalize_row(obj, now=now, next_step=self.next_step)
        step = row["_step"]
        if type(step) is int and 0 <= step < MAX_STEP:
            self.next_step = step + 1
        return row

