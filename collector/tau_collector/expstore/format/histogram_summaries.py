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
    if not len(buckets):
        return out
    widths = np.fromiter(map(len, buckets), dtype=np.int64, count=len(buckets))
    if (widths == widths[0]).all():  # the usual delivery: one bucket count, stacked in one call
        groups = [(int(widths[0]), None)]
    else:
        order = np.argsort(widths, kind="stable")
        cuts = np.flatnonzero(np.diff(widths[order])) + 1
        groups = [(int(widths[rows[0]]), rows) for rows in np.split(order, cuts)]
    for width, rows in groups:
        picked = buckets if rows is None else [buckets[i] for i in rows.tolist()]
        if width == 0:
            out[slice(None) if rows is None else rows] = histogram_summary(np.zeros((0, 3)))
            continue
        stacked = np.concatenate(picked, axis=0, dtype=np.float64, casting="unsafe").reshape(len(picked), width, 3)
        out[slice(None) if rows is None else rows] = _same_width(stacked)
    return out


def _python_max(a: np.ndarray, b: np.ndarray | float) -> np.ndarray:
    """Python's ``max(a, b)`` elementwise (``b`` only where ``b > a``: a NaN ``b`` never wins, a NaN ``a`` stays)."""
    return np.where(b > a, b, a)


def _python_min(a: np.ndarray, b: np.ndarray | float) -> np.ndarray:
    return np.where(b < a, b, a)


_FRACTIONS = np.array(BASIS_POINTS, dtype=np.float64)


def _same_width(stacked: np.ndarray) -> np.ndarray:
    """The summaries of ``[m, k, 3]`` histograms of one bucket count ``k`` (``k >= 1``): every band at once
    (``[m, 9]`` arrays), each number by the same float operations as the rule's."""
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
    take = regular & (totals > 0)
    if take.all():  # the usual delivery: no row set aside, nothing copied
        rows: np.ndarray | slice = slice(None)
        edges = stacked
    else:
        rows = np.flatnonzero(take)
        if not len(rows):
            return out
        counts, cumulative, totals, edges = counts[rows], cumulative[rows], totals[rows], stacked[rows]
    n = len(totals)
    held = counts > 0
    first = held.argmax(axis=1)
    last = k - 1 - held[:, ::-1].argmax(axis=1)
    flat = edges.reshape(-1)  # edges[r, i, c] is flat[(r * k + i) * 3 + c]
    base = np.arange(n) * k
    low, high = flat[(base + first) * 3], flat[(base + last) * 3 + 1]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        target = totals[:, None] * _FRACTIONS / 10_000  # [n, 9]: the rule's ``total * bp / 10_000``
        # searchsorted(side="left") on a sorted row: how many of its cumulative counts lie below each target,
        # counted a bucket at a time over contiguous [9, n] arrays (the bands of every row at once)
        ahead, bands = np.ascontiguousarray(cumulative.T), np.ascontiguousarray(target.T)
        below = np.zeros(bands.shape, dtype=np.int16 if k < 2 ** 15 else np.int64)
        less = np.empty(bands.shape, dtype=bool)
        for column in ahead:
            np.less(column, bands, out=less)
            below += less
        i = np.minimum(below.T, k - 1).astype(np.int64)
        at = base[:, None] + i
        before = np.where(i > 0, cumulative.reshape(-1)[np.maximum(at - 1, 0)], 0.0)
        left, right, count = flat[at * 3], flat[at * 3 + 1], flat[at * 3 + 2]
        fraction = np.where(count > 0, (target - before) / np.where(count > 0, count, 1.0), 0.0)
        value = left + (right - left) * _python_min(_python_max(fraction, 0.0), 1.0)
        marks = _python_min(_python_max(value, low[:, None]), high[:, None])
    out[rows, 1], out[rows, 2], out[rows, 3:] = low, high, marks
    return out
