"""How a metric's series is built from a run's files: which files and row groups can hold it, one file's
slice decoded, and slices merged by the store's last-wins rule (see :mod:`.reader`).

Plain data and functions, no cache and no lock: :class:`~.reader.StoreReader` keeps what these build, and
:mod:`.level_reads` merges overlapping files by the same :func:`merge`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tau_collector.expstore.format.parquet_encoder import CREATED_BY as ENCODER_CREATED_BY
from tau_collector.expstore.read.m4 import M4Index
from tau_collector.reads.blocking import may_block

__all__ = [
    "EMPTY_F", "EMPTY_I", "FileList", "Merged", "bounds", "clamp", "dedupe", "groups_holding", "merge", "read_slice",
]

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
EMPTY_I = np.empty(0, dtype=np.int64)
EMPTY_F = np.empty(0, dtype=np.float64)

@dataclass(slots=True)
class Merged:
    """One metric's points sorted by unique step; the index, non-finite positions and finite view come lazily."""

    step: np.ndarray
    wall_time: np.ndarray
    value: np.ndarray
    index: M4Index | None = None
    _non_finite: np.ndarray | None = None  # positions of NaN/±Inf values
    _finite: Merged | None = None  # the finite points only

    @property
    def nbytes(self) -> int:
        return self.step.nbytes + self.wall_time.nbytes + self.value.nbytes

    def non_finite(self) -> np.ndarray:
        if self._non_finite is None:
            may_block(self.step.size)
            self._non_finite = self.index.non_finite if self.index is not None else np.flatnonzero(
                ~np.isfinite(self.value))
        return self._non_finite

    def finite(self) -> Merged:
        """This series without its non-finite points (itself when it has none)."""
        bad = self.non_finite()
        if bad.size == 0:
            return self
        if self._finite is None:
            may_block(self.step.size)
            keep = np.ones(self.step.size, dtype=bool)
            keep[bad] = False
            self._finite = Merged(self.step[keep], self.wall_time[keep], self.value[keep], _non_finite=EMPTY_I)
        return self._finite


class FileList:
    """A run's registered files in registration order, with their step ranges as arrays for range queries."""

    __slots__ = ("_ranges", "ids", "max_step", "min_step", "rows")

    def __init__(self, rows: list[tuple]) -> None:
        self.rows = rows  # (file_id, path, min_step, max_step, row_count)
        self._ranges: dict[tuple, list[tuple]] = {}  # (start, end) -> overlapping rows: panes repeat their tails
        self.ids = tuple(r[0] for r in rows)
        # An unknown bound (NULL) never excludes a file.
        self.min_step = np.array([INT64_MIN if r[2] is None else r[2] for r in rows], dtype=np.int64)
        self.max_step = np.array([INT64_MAX if r[3] is None else r[3] for r in rows], dtype=np.int64)

    def overlapping(self, start_step: int | None, end_step: int | None) -> list[tuple]:
        found = self._ranges.get((start_step, end_step))
        if found is None:
            keep = np.ones(len(self.rows), dtype=bool)
            if start_step is not None:
                keep &= self.max_step >= start_step
            if end_step is not None:
                keep &= self.min_step <= end_step
            if len(self._ranges) >= 64:
                self._ranges.clear()
            found = self._ranges[(start_step, end_step)] = [self.rows[i] for i in np.flatnonzero(keep)]
        return found


def groups_holding(meta, metric: str) -> list[int]:
    """The row groups whose ``metric_name`` min/max statistics do not rule ``metric`` out (a group without
    statistics, as another writer may leave it, is kept).

    A file of the store's own encoder is sorted by metric name, its groups cut at metric boundaries
    (:mod:`..format.metric_files`): their statistics ascend, so the groups are found by a binary search over
    them -- a few groups' statistics looked at, not every one (each costs a few microseconds through pyarrow,
    and a clustered file has dozens to a thousand). Any other file's groups are each looked at."""
    column = meta.schema.names.index("metric_name")
    count = meta.num_row_groups
    if count > _SCANNED_GROUPS and meta.created_by == ENCODER_CREATED_BY:
        found = _sorted_groups_holding(meta, column, count, metric)
        if found is not None:
            return found
    groups = []
    for g in range(count):
        stats = meta.row_group(g).column(column).statistics
        if stats is None or not stats.has_min_max or stats.min <= metric <= stats.max:
            groups.append(g)
    return groups


# Up to this many groups a file's statistics are all looked at (a binary search saves nothing).
_SCANNED_GROUPS = 8


def _sorted_groups_holding(meta, column: int, count: int, metric: str) -> list[int] | None:
    """:func:`groups_holding` for groups sorted by ``metric_name``: the first group whose max is not below the
    metric, and the groups after it whose min is not above it. None when a group looked at has no statistics or
    they do not ascend there (the caller looks at every group)."""

    def bounds(g: int) -> tuple[str, str] | None:
        stats = meta.row_group(g).column(column).statistics
        return (stats.min, stats.max) if stats is not None and stats.has_min_max else None

    lo, hi = 0, count
    while lo < hi:
        mid = (lo + hi) // 2
        b = bounds(mid)
        if b is None:
            return None
        if b[1] < metric:
            lo = mid + 1
        else:
            hi = mid
    previous = None  # the max of the group before
    if lo > 0:
        before = bounds(lo - 1)
        if before is None or before[1] >= metric:
            return None  # not ascending where it was searched
        previous = before[1]
    groups = []
    while lo < count:
        b = bounds(lo)
        if b is None or b[0] > b[1] or (previous is not None and b[0] < previous):
            return None
        if b[0] > metric:
            break
        groups.append(lo)
        previous = b[1]
        lo += 1
    return groups


def read_slice(path, metric: str) -> Merged:
    """The rows of ``metric`` in the Parquet file at ``path`` (absolute), sorted by step, last wins."""
    parquet = pq.ParquetFile(path)
    # Only the row groups whose metric_name statistics can hold the metric (files are cut at metric
    # boundaries: one metric of a wide file is one group), read without the dataset layer's thread
    # pool: a cold read of one metric costs its group, not the file.
    table = parquet.read_row_groups(groups_holding(parquet.metadata, metric),
                                    columns=["metric_name", "step", "wall_time", "value"], use_threads=False)
    table = table.filter(pc.equal(table.column("metric_name"), metric))
    step_col = table.column("step")
    if step_col.null_count:
        table = table.filter(pc.is_valid(step_col))  # a row without a step has no place on the axis
    step = table.column("step").to_numpy().astype(np.int64, copy=False)
    wall_arr = table.column("wall_time").cast("int64").fill_null(np.iinfo(np.int64).min)
    wall = wall_arr.to_numpy().astype(np.int64, copy=False)
    value = table.column("value").to_numpy().astype(np.float64, copy=False)
    return dedupe(step, wall, value, np.zeros(step.size, dtype=np.int64))


def clamp(step: int | None) -> int | None:
    # Steps are int64: a bound beyond that range selects the same points as the range's own end.
    return None if step is None else min(max(int(step), INT64_MIN), INT64_MAX)


def bounds(step: np.ndarray, start_step: int | None, end_step: int | None) -> tuple[int, int]:
    lo = 0 if start_step is None else int(np.searchsorted(step, start_step, side="left"))
    hi = step.size if end_step is None else int(np.searchsorted(step, end_step, side="right"))
    return lo, max(lo, hi)


def dedupe(step: np.ndarray, wall: np.ndarray, value: np.ndarray, rank: np.ndarray) -> Merged:
    """Sort by (step, wall_time, rank, position) and keep the last row of each step."""
    n = step.size
    if n > 1 and not bool(np.all(step[1:] > step[:-1])):
        order = np.lexsort((np.arange(n), rank, wall, step))
        step, wall, value = step[order], wall[order], value[order]
        last = np.ones(n, dtype=bool)
        last[:-1] = step[1:] != step[:-1]
        step, wall, value = step[last], wall[last], value[last]
    return Merged(np.ascontiguousarray(step), np.ascontiguousarray(wall), np.ascontiguousarray(value))


def merge(slices: list[tuple[int, Merged]]) -> Merged:
    if not slices:
        return Merged(EMPTY_I, EMPTY_I, EMPTY_F)
    if len(slices) == 1:
        return slices[0][1]
    ordered = sorted(slices, key=lambda rs: int(rs[1].step[0]))
    if all(int(a.step[-1]) < int(b.step[0]) for (_, a), (_, b) in itertools.pairwise(ordered)):
        # The common case (chunks arrive in step order): no overlap, so no sort is needed.
        return Merged(
            np.concatenate([s.step for _, s in ordered]),
            np.concatenate([s.wall_time for _, s in ordered]),
            np.concatenate([s.value for _, s in ordered]),
        )
    return dedupe(
        np.concatenate([s.step for _, s in slices]),
        np.concatenate([s.wall_time for _, s in slices]),
        np.concatenate([s.value for _, s in slices]),
        np.concatenate([np.full(s.step.size, rank, dtype=np.int64) for rank, s in slices]),
    )
