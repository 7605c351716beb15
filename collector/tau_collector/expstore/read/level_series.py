"""M4 of a long series from its level records (:mod:`..format.levels`), without touching its points.

A request over ``span`` steps for ``max_points`` draws ``C = max(1, max_points // 4)`` columns
(:func:`.m4.bucket_edges`). The reader picks the coarsest level ``b`` with ``4 * b <= span // C``
(:func:`choose_base`); the records of that level are grouped into columns whose inner edges are the
request's edges rounded down to a multiple of ``b`` (:func:`snapped_edges`) -- a level bucket never
straddles such an edge -- and each column keeps the first, last, min and max point of its records
(and the first non-finite one). The result is **exactly** :func:`.m4.m4_indices` of the full-resolution
points with those edges: every point that is the first, last, minimum or maximum of its column is
kept, so no spike is lost at any zoom; each inner edge moves by less than ``b <= width / 4`` steps
(under a quarter of a column). Where the request's edges are already multiples of ``b`` (or
``C == 1``) the answer is the same as the plain reduction's.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from tau_collector.expstore.format.levels import RECORD
from tau_collector.expstore.read.m4 import bucket_edges

__all__ = ["choose_base", "columns", "reduce_records", "snapped_edges"]

_I64_MIN = np.iinfo(np.int64).min
_FIELDS = tuple(name for name in RECORD.names if name not in ("metric", "bucket"))


def choose_base(bases: tuple[int, ...], first_step: int, last_step: int, max_points: int) -> int | None:
    """The coarsest level whose buckets are at most a quarter of a column, or None (read the points)."""
    columns = max(1, max_points // 4)
    width = (last_step - first_step + 1) // columns
    fit = [b for b in bases if 4 * b <= width]
    return max(fit) if fit else None


def snapped_edges(first_step: int, last_step: int, max_points: int, b: int) -> np.ndarray:
    """Column edges: the request's ends, and its inner edges rounded down to a multiple of ``b``."""
    edges = bucket_edges(first_step, last_step, max(1, max_points // 4))
    edges[1:-1] = (edges[1:-1] // b) * b
    return edges


def columns(records: np.ndarray) -> dict[str, np.ndarray]:
    """A record array as contiguous columns (what :func:`reduce_records` reads fastest)."""
    return {name: np.ascontiguousarray(records[name]) for name in _FIELDS}


def reduce_records(records: Mapping[str, np.ndarray] | np.ndarray, edges: np.ndarray, max_points: int, *,
                   finite_only: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(step, wall, value) of the points M4 keeps, from records (a RECORD array or its :func:`columns`) in
    step order (no bucket straddles an edge), for columns ``[edges[k], edges[k+1])``.

    With ``finite_only`` a record's first/last are its first/last finite points and records without
    one are left out (as if the non-finite points were not there); otherwise the first non-finite
    point of each column is kept besides. ``max_points`` below 4 (one column): its first and last
    point, and its maximum when 3 fit (:func:`.m4.m4_indices`' rule).
    """
    if finite_only:
        keep = records["count_finite"] > 0
        if not keep.all():
            records = {name: records[name][keep] for name in _FIELDS}
        first, last = "first_finite", "last_finite"
    else:
        first, last = "first", "last"
    if records["count"].size == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float64)
    # The last column ends at the last edge, held to 2^63-1 when a step is that (m4.bucket_edges): it holds it.
    col = np.minimum(np.searchsorted(edges, records[f"{first}_step"], side="right") - 1, edges.size - 2)
    starts = np.flatnonzero(np.append(True, col[1:] != col[:-1]))
    ends = np.append(starts[1:], col.size)
    group = np.repeat(np.arange(starts.size), ends - starts)
    ncol = starts.size
    every = np.ones(ncol, dtype=bool)
    picks = [(first, starts, every), (last, ends - 1, every)]  # (point, record per column, whether it has one)
    has_fin = records["count_finite"] > 0
    for name, sign in (("max", -1.0), ("min", 1.0)):
        if max_points < 4 and not (name == "max" and max_points == 3):
            continue
        vals = np.where(has_fin, sign * records[f"{name}_value"], np.inf)
        best = np.minimum.reduceat(vals, starts)
        picks.append((name, *_first_hit(has_fin & (vals == best[group]), starts, ends)))
    if not finite_only and max_points >= 4:
        picks.append(("first_non_finite",
                      *_first_hit(records["count"] > records["count_finite"], starts, ends)))
    # Per column at most 5 points, all inside it: sort each column's few, and the columns are in order.
    # A missing pick sorts last by its own flag, not by a sentinel step: 2^63-1 is a step like any other.
    big = np.iinfo(np.int64).max
    step = np.stack([np.where(ok, records[f"{n}_step"][pos], big) for n, pos, ok in picks], axis=1)
    missing = np.stack([~ok for _, _, ok in picks], axis=1)
    order = np.lexsort((step, missing), axis=1)
    rows = np.arange(ncol)[:, None]
    step = step[rows, order].ravel()
    wall = np.stack([records[f"{n}_wall"][pos] for n, pos, _ in picks], axis=1)[rows, order].ravel()
    value = np.stack([records[f"{n}_value"][pos] for n, pos, _ in picks], axis=1)[rows, order].ravel()
    keep = ~missing[rows, order].ravel()
    keep[1:] &= (step[1:] != step[:-1]) | ~keep[:-1]  # the same point picked twice (a column's first is its min)
    return step[keep], wall[keep], value[keep]


def _first_hit(mask: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column: the first record with ``mask`` in [start, end), and whether there is one."""
    hit = np.flatnonzero(mask)
    if hit.size == 0:
        return starts, np.zeros(starts.size, dtype=bool)
    at = np.searchsorted(hit, starts)
    pos = hit[np.minimum(at, hit.size - 1)]
    return pos, (at < hit.size) & (pos < ends)
