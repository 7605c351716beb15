"""What the loss pane's browser holds for one series, mirrored in the kernel, and the binary chunks that carry
points to it (int64 steps, float64 values, little-endian: the contract in :mod:`taunotebook.pane`)."""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["Held", "buffers", "chunk"]


@dataclass
class Held:
    """What the browser holds for one series, so Python can resend it and answer tails with last-wins."""

    steps: array = field(default_factory=lambda: array("q"))
    values: array = field(default_factory=lambda: array("d"))
    count: int = -1  # the catalog count at the last read; -1 before the first
    non_finite_count: int = 0
    last_step: int | None = None
    width: int = 0  # the pane width the last full-range read was sized for
    marks: tuple[array, array] | None = None  # the non-finite marks last sent, for a resend
    walls: tuple[array, array] | None = None  # the wall-time samples last sent, for a resend

    def reset(self, steps: Iterable[int], values: Iterable[float]) -> None:
        self.steps = array("q", steps)
        self.values = array("d", values)
        self.last_step = self.steps[-1] if self.steps else None

    def append(self, steps: array, values: array) -> None:
        if not steps:
            return
        first = steps[0]
        cut = len(self.steps)
        while cut and self.steps[cut - 1] >= first:
            cut -= 1
        del self.steps[cut:]
        del self.values[cut:]
        self.steps.extend(steps)
        self.values.extend(values)
        self.last_step = self.steps[-1]

    def splice(self, start: int, end: int, steps: array, values: array) -> None:
        keep_lo = [i for i, s in enumerate(self.steps) if s < start]
        keep_hi = [i for i, s in enumerate(self.steps) if s > end]
        self.steps = array("q", [self.steps[i] for i in keep_lo]) + steps + array("q", [self.steps[i] for i in keep_hi])
        self.values = (array("d", [self.values[i] for i in keep_lo]) + values
                       + array("d", [self.values[i] for i in keep_hi]))


def chunk(steps: Iterable[int], values: Iterable[float]) -> tuple[array, array]:
    s, v = array("q", steps), array("d", values)
    if s.itemsize != 8 or v.itemsize != 8:  # pragma: no cover - every CPython platform we run on
        raise RuntimeError("int64/float64 arrays are required for the pane's binary chunks")
    return s, v


def buffers(steps: array, values: array) -> list[bytes]:
    if sys.byteorder != "little":  # pragma: no cover - the browser reads little-endian typed arrays
        steps, values = array("q", steps), array("d", values)
        steps.byteswap()
        values.byteswap()
    return [steps.tobytes(), values.tobytes()]
