"""M4 of a long series from its level records (:mod:`.levels`), without touching its points.

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

import numpy as np

from .levels import RECORD
from .m4 import bucket_edges

__all__ = ["choose_base", "reduce_records", "snapped_edges"]

_I64_MIN = np.iinfo(np.int64).min


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


def reduce_records(records: np.ndarray, edges: np.ndarray, max_points: int, *, finite_only: bool
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(step, wall, value) of the points M4 keeps, from records in step order (no two share a bucket
    that straddles an edge), for columns ``[edges[k], edges[k+1])``.

    With ``finite_only`` a record's first/last are its first/last finite points and records without
    one are left out (as if the non-finite points were not there); otherwise the first non-finite
    point of each column is kept besides. ``max_points`` below 4 (one column): its first and last
    point, and its maximum when 3 fit (:func:`.m4.m4_indices`' rule).
    """
    assert records.dtype == RECORD
    if finite_only:
        records = records[records["count_finite"] > 0]
        first, last = "first_finite", "last_finite"
    else:
        first, last = "first", "last"
    if records.size == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float64)
    col = np.searchsorted(edges, records[f"{first}_step"], side="right") - 1
    starts = np.flatnonzero(np.append(True, col[1:] != col[:-1]))
    ends = np.append(starts[1:], col.size)
    group = np.repeat(np.arange(starts.size), ends - starts)
    picks = [(first, starts), (last, ends - 1)]
    has_fin = records["count_finite"] > 0
    for name, sign in (("max", -1.0), ("min", 1.0)):
        if name == "min" and max_points < 4:
            continue
        vals = np.where(has_fin, sign * records[f"{name}_value"], np.inf)
        best = np.minimum.reduceat(vals, starts)
        hit = np.flatnonzero(has_fin & (vals == best[group]))
        at = np.searchsorted(hit, starts)
        ok = at < hit.size
        pos = hit[np.minimum(at, max(hit.size - 1, 0))] if hit.size else starts
        ok &= pos < ends
        if max_points < 4 and max_points != 3:
            ok[:] = False
        picks.append((name, pos[ok]))
    if not finite_only and max_points >= 4:
        has_nf = np.flatnonzero(records["count"] > records["count_finite"])
        at = np.searchsorted(has_nf, starts)
        ok = at < has_nf.size
        pos = has_nf[np.minimum(at, max(has_nf.size - 1, 0))] if has_nf.size else starts
        ok &= pos < ends
        picks.append(("first_non_finite", pos[ok]))
    step = np.concatenate([records[f"{n}_step"][p] for n, p in picks])
    wall = np.concatenate([records[f"{n}_wall"][p] for n, p in picks])
    value = np.concatenate([records[f"{n}_value"][p] for n, p in picks])
    step, keep = np.unique(step, return_index=True)  # one point per step: the same point, picked twice
    return step, wall[keep], value[keep]
