"""The step-bucketed summary of histograms (count, min, max, TensorBoard's percentiles), one delivery at a time.

A stored histogram row carries, beside its buckets, the total ``count``, the ``min``/``max`` edges holding
counts and the value at each of TensorBoard's distribution bands (:data:`BASIS_POINTS`), interpolated inside
a bucket as TensorBoard's ``compress_histogram`` does. :func:`histogram_summary` is the rule for one
histogram; :func:`histogram_summaries` computes the same numbers for a delivery's histograms in a few numpy
passes (histograms of one bucket count stacked into one array), bit for bit, falling back to the rule itself
for a histogram whose counts are not finite and non-negative (where the vectorised search would differ).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

__all__ = ["BASIS_POINTS", "HISTOGRAM_SUMMARY_COLUMNS", "histogram_summaries", "histogram_summary"]

# TensorBoard's distribution bands (``compressor.NORMAL_HISTOGRAM_BPS``): min, -2σ … +2σ, max of a normal.
BASIS_POINTS = (0, 668, 1587, 3085, 5000, 6915, 8413, 9332, 10000)
HISTOGRAM_SUMMARY_COLUMNS = ("count", "min", "max", *(f"bp{bp}" for bp in BASIS_POINTS))
_WIDTH = len(HISTOGRAM_SUMMARY_COLUMNS)


def histogram_summary(buckets: np.ndarray) -> tuple[float, ...]:
    """(count, min, max, the percentiles at :data:`BASIS_POINTS`) of ``[k, 3]`` buckets, interpolated inside a
    bucket as TensorBoard's ``compress_histogram`` does; NaN for an empty histogram."""
    counts = buckets[:, 2] if len(buckets) else np.zeros(0)
    total = float(counts.sum()) if len(counts) else 0.0
    if not total > 0:
        return (total, *([math.nan] * (2 + len(BASIS_POINTS))))
    held = np.flatnonzero(counts > 0)
    low, high = float(buckets[held[0], 0]), float(buckets[held[-1], 1])
    cumulative = np.cumsum(counts)
    marks = []
    for bp in BASIS_POINTS:
        target = total * bp / 10_000
        i = int(np.searchsorted(cumulative, target, side="left"))
        i = min(i, len(buckets) - 1)
        before = float(cumulative[i - 1]) if i else 0.0
        left, right, count = (float(v) for v in buckets[i])
        fraction = (target - before) / count if count > 0 else 0.0
        value = left + (right - left) * min(max(fraction, 0.0), 1.0)
        marks.append(min(max(value, low), high))
    return (total, low, high, *marks)


def histogram_summaries(buckets: Sequence[np.ndarray]) -> np.ndarray:
    """``[n, 12]`` float64: :func:`histogram_summary` of each of ``buckets`` (``[k, 3]`` arrays), row by row."""
    out = np.empty((len(buckets), _WIDTH), dtype=np.float64)
    by_width: dict[int, list[int]] = defaultdict(list)
    for i, b in enumerate(buckets):
        by_width[len(b)].append(i)
    for width, rows in by_width.items():
        if width == 0:
            out[rows] = histogram_summary(np.zeros((0, 3)))
            continue
        out[rows] = _same_width(np.stack([np.asarray(buckets[i], dtype=np.float64) for i in rows]))
    return out


def _python_max(a: np.ndarray, b: np.ndarray | float) -> np.ndarray:
    """Python's ``max(a, b)`` elementwise (``b`` only where ``b > a``: a NaN ``b`` never wins, a NaN ``a`` stays)."""
    return np.where(b > a, b, a)


def _python_min(a: np.ndarray, b: np.ndarray | float) -> np.ndarray:
    return np.where(b < a, b, a)


def _same_width(stacked: np.ndarray) -> np.ndarray:
    """The summaries of ``[m, k, 3]`` histograms of one bucket count ``k`` (``k >= 1``)."""
    m, k = stacked.shape[:2]
    counts = np.ascontiguousarray(stacked[:, :, 2])
    with np.errstate(over="ignore", invalid="ignore"):  # an overflowing row takes the rule, which warns as before
        totals = counts.sum(axis=1)
        cumulative = np.cumsum(counts, axis=1)
    out = np.full((m, _WIDTH), np.nan)
    out[:, 0] = totals
    # The search below is searchsorted's on a sorted row: counts finite and non-negative. Others take the rule.
    regular = (counts >= 0).all(axis=1) & np.isfinite(totals) & np.isfinite(cumulative[:, -1])
    for r in np.flatnonzero(~regular).tolist():
        out[r] = histogram_summary(stacked[r])
    rows = np.flatnonzero(regular & (totals > 0))
    if not len(rows):
        return out
    counts, cumulative, totals, edges = counts[rows], cumulative[rows], totals[rows], stacked[rows]
    held = counts > 0
    first = held.argmax(axis=1)
    last = k - 1 - held[:, ::-1].argmax(axis=1)
    pick = np.arange(len(rows))
    low, high = edges[pick, first, 0], edges[pick, last, 1]
    before_of = np.concatenate([np.zeros((len(rows), 1)), cumulative], axis=1)  # before_of[:, i] = cumulative[i-1]
    marks = np.empty((len(rows), len(BASIS_POINTS)))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for j, bp in enumerate(BASIS_POINTS):
            target = totals * bp / 10_000
            i = np.minimum((cumulative < target[:, None]).sum(axis=1), k - 1)
            before = before_of[pick, i]
            left, right, count = edges[pick, i, 0], edges[pick, i, 1], edges[pick, i, 2]
            fraction = np.where(count > 0, (target - before) / np.where(count > 0, count, 1.0), 0.0)
            value = left + (right - left) * _python_min(_python_max(fraction, 0.0), 1.0)
            marks[:, j] = _python_min(_python_max(value, low), high)
    out[rows, 1], out[rows, 2], out[rows, 3:] = low, high, marks
    return out
