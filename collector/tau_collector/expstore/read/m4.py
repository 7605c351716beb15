"""M4 reduction (DESIGN §7): per step bucket keep the first, last, minimum and maximum point.

A line drawn through the kept points at ``max_points/4`` pixels wide (one bucket per pixel
column) covers exactly the pixels the full line covers, so no spike is ever lost -- unlike LTTB,
which TauGrid uses and which can drop a one-point spike. Input: steps sorted ascending and
unique (the reader dedupes first). Non-finite values never take part in min/max; the first
non-finite point of each bucket is kept besides, so a caller can mark it.

Work per request is O(buckets * block + n / block) with an :class:`M4Index` (block-wise
argmin/argmax computed once per cached series), instead of several passes over all n points.
"""

from __future__ import annotations

import numpy as np

__all__ = ["BLOCKS", "M4Index", "bucket_edges", "m4_indices"]

BLOCKS = (16, 128, 1024)  # block sizes indexed; a request uses the one cheapest for its bucket length


class _Level:
    """Argmin/argmax of every full block of one size (non-finite values never win)."""

    __slots__ = ("block", "block_max", "block_max_val", "block_min", "block_min_val")

    def __init__(self, values: np.ndarray, block: int, previous: _Level | None = None) -> None:
        self.block = block
        # Blocks the previous index (of a prefix of ``values``) already covers are kept as they are.
        first = previous.block_min.size if previous is not None else 0
        nblk = values.size // block - first
        full = values[first * block : (first + nblk) * block]
        base = (np.arange(nblk, dtype=np.int64) + first) * block
        finite = np.isfinite(full)
        if not finite.all():
            lo = np.where(finite, full, np.inf).reshape(nblk, block)
            hi = np.where(finite, full, -np.inf).reshape(nblk, block)
        else:
            lo = hi = full.reshape(nblk, block)
        rows = np.arange(nblk)
        lo_col, hi_col = lo.argmin(axis=1), hi.argmax(axis=1)
        parts = (lo_col + base, hi_col + base, lo[rows, lo_col], hi[rows, hi_col])
        # +-inf marks a block without any finite value.
        if previous is not None:
            old = (previous.block_min, previous.block_max, previous.block_min_val, previous.block_max_val)
            parts = tuple(np.concatenate((a, b)) for a, b in zip(old, parts, strict=True))
        self.block_min, self.block_max, self.block_min_val, self.block_max_val = parts


class M4Index:
    """Block extremes of one value array at a few block sizes, computed once per cached series."""

    __slots__ = ("levels", "n", "non_finite")

    def __init__(self, values: np.ndarray, previous: M4Index | None = None) -> None:
        """Index ``values``; with ``previous`` (the index of a prefix of ``values``) only the new tail is scanned."""
        values = np.asarray(values, dtype=np.float64)
        self.n = values.size
        if previous is not None and previous.n <= self.n:
            start = previous.n
            tail_nf = np.flatnonzero(~np.isfinite(values[start:])) + start
            self.non_finite = np.concatenate((previous.non_finite, tail_nf))
            old = {level.block: level for level in previous.levels}
        else:
            self.non_finite = np.flatnonzero(~np.isfinite(values))
            old = {}
        self.levels = [_Level(values, b, old.get(b)) for b in BLOCKS if b * 2 <= self.n]

    def level_for(self, bucket_length: float) -> _Level | None:
        # Per bucket the raw head and tail cost ~2*block, the full blocks ~length/block.
        best, best_cost = None, 2.0 * bucket_length  # cost of scanning raw
        for level in self.levels:
            cost = 2.0 * level.block + bucket_length / level.block
            if cost < best_cost:
                best, best_cost = level, cost
        return best


_INT64_MAX = 2**63 - 1


def bucket_edges(first_step: int, last_step: int, buckets: int) -> np.ndarray:
    """Step edges: bucket k holds steps s with ``floor((s - first) * buckets / span) == k``.

    ``span = last - first + 1``; edge k is the smallest such step, ``first + ceil(k * span / buckets)``.
    Python integers: ``k * span`` can overflow int64. The last edge, ``last + 1``, is held to 2^63-1 when
    ``last`` is that (a caller counts the range's last point in the last bucket, whatever that edge says).
    """
    span = last_step - first_step + 1
    if span < 2**62 // (buckets + 1) and abs(first_step) < 2**62:  # no int64 overflow: in numpy
        k = np.arange(buckets + 1, dtype=np.int64)
        return first_step + (k * span + buckets - 1) // buckets
    return np.array(
        [min(first_step + (k * span + buckets - 1) // buckets, _INT64_MAX) for k in range(buckets + 1)], dtype=np.int64
    )


def _segment_extremes(
    values: np.ndarray, starts: np.ndarray, ends: np.ndarray, index: M4Index, level: _Level | None
) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the min and the max finite value in each [start, end); -1 where there is none."""
    nseg = starts.size
    rows = np.arange(nseg)
    has_nf = index.non_finite.size > 0
    best = {}
    for want_max in (False, True):
        best[want_max] = (np.full(nseg, np.inf), np.full(nseg, -1, dtype=np.int64))

    def offer(want_max: bool, idx: np.ndarray, val: np.ndarray, seg: np.ndarray) -> None:
        # val is signed so that smaller is better; the earlier index wins ties.
        best_val, best_idx = best[want_max]
        cur_v, cur_i = best_val[seg], best_idx[seg]
        better = np.isfinite(val) & ((val < cur_v) | ((val == cur_v) & (idx < cur_i)))
        best_val[seg[better]] = val[better]
        best_idx[seg[better]] = idx[better]

    block = level.block if level is not None else 1
    fb_start = -(-starts // block)  # first full block inside the segment
    fb_end = ends // block  # one past the last full block
    has_blocks = (fb_end > fb_start) if level is not None else np.zeros(nseg, dtype=bool)
    # Raw ranges: the head and tail around the full blocks, or the whole (short) segment.
    head_end = np.where(has_blocks, fb_start * block, ends)
    tail_start = np.where(has_blocks, fb_end * block, ends)
    for r_start, r_end in ((starts, head_end), (tail_start, ends)):
        width = int((r_end - r_start).max()) if nseg else 0
        if width <= 0:
            continue
        nonempty = r_end > r_start
        # Clipping repeats the range's last element: harmless for argmin/argmax (first hit wins).
        # An empty range (a tail at the very end) is clipped into bounds and then ignored.
        last = np.minimum(np.maximum(r_end - 1, r_start), values.size - 1)
        grid = np.minimum(r_start[:, None] + np.arange(width, dtype=np.int64)[None, :], last[:, None])
        vals = values[grid]
        if has_nf:
            finite = np.isfinite(vals)
            lo_vals, hi_vals = np.where(finite, vals, np.inf), np.where(finite, vals, -np.inf)
        else:
            lo_vals = hi_vals = vals
        lo_col, hi_col = lo_vals.argmin(axis=1), hi_vals.argmax(axis=1)
        seg = rows[nonempty]
        offer(False, grid[rows, lo_col][nonempty], lo_vals[rows, lo_col][nonempty], seg)
        offer(True, grid[rows, hi_col][nonempty], -hi_vals[rows, hi_col][nonempty], seg)
    if has_blocks.any():
        seg = np.flatnonzero(has_blocks)
        b0, b1 = fb_start[seg], fb_end[seg]
        counts = b1 - b0
        offsets = np.concatenate(([0], np.cumsum(counts)[:-1]))
        flat = np.repeat(b0 - offsets, counts) + np.arange(int(counts.sum()))
        for want_max, bvals, bidx in (
            (False, level.block_min_val, level.block_min),
            (True, -level.block_max_val, level.block_max),
        ):
            cand = bvals[flat]
            seg_min = np.minimum.reduceat(cand, offsets)
            # First block per segment holding the segment's minimum (blocks are in index order).
            hits = np.flatnonzero(cand == np.repeat(seg_min, counts))
            first = hits[np.searchsorted(hits, offsets)]
            offer(want_max, bidx[flat[first]], cand[first], seg)
    return best[False][1], best[True][1]


def m4_indices(
    steps: np.ndarray,
    values: np.ndarray,
    max_points: int,
    *,
    index: M4Index | None = None,
    lo: int = 0,
    hi: int | None = None,
    edges: np.ndarray | None = None,
) -> np.ndarray:
    """Sorted unique indices of the points M4 keeps from ``[lo, hi)`` for ``max_points``.

    Steps ascending and unique. Indices are positions in the full arrays, so a cached
    :class:`M4Index` of the whole series serves any sub-range. n <= max_points: everything.
    max_points == 1: the last point (TauGrid). max_points 2 or 3: one bucket's first and last,
    plus its maximum when 3 fit. Otherwise ``max_points // 4`` buckets, or the columns between
    ``edges`` when given (ascending steps; the first at or below the range's first step, the last
    above its last: :mod:`.level_series` snaps the inner ones to a level's grid).
    """
    hi = steps.size if hi is None else hi
    n = hi - lo
    if max_points < 1:
        raise ValueError("max_points must be at least 1")
    if n <= max_points:
        return np.arange(lo, hi, dtype=np.int64)
    if max_points == 1:
        return np.array([hi - 1], dtype=np.int64)
    if index is None or index.n != steps.size:
        index = M4Index(values)
    if edges is None:
        edges = bucket_edges(int(steps[lo]), int(steps[hi - 1]), max(1, max_points // 4))
    pos = np.searchsorted(steps[lo:hi], edges, side="left") + lo
    pos[-1] = hi  # the last edge lies above the range (but for a last step of 2^63-1: bucket_edges)
    starts, ends = pos[:-1], pos[1:]
    nonempty = ends > starts
    starts, ends = starts[nonempty], ends[nonempty]
    level = index.level_for(n / starts.size)
    mins, maxs = _segment_extremes(values, starts, ends, index, level)
    if max_points < 4:
        keep = [lo, hi - 1] + ([int(maxs[0])] if max_points == 3 and maxs[0] >= 0 else [])
        return np.unique(np.array(keep, dtype=np.int64))
    nf = index.non_finite
    parts = [starts, ends - 1, mins[mins >= 0], maxs[maxs >= 0]]
    if nf.size:
        at = np.searchsorted(nf, starts, side="left")
        at_ok = at < nf.size
        first_nf = np.where(at_ok, nf[np.minimum(at, nf.size - 1)], -1)
        parts.append(first_nf[at_ok & (first_nf < ends)])
    return np.unique(np.concatenate(parts))
