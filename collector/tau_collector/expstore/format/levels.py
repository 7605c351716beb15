"""Series levels: per metric file, M4 summaries of each metric's points in buckets of ``b`` steps.

A long series is read at the resolution a request draws, not point by point: for every metric
Parquet file the writer publishes beside it (before registering the file) a *levels file*
``series_levels/<path of the metric file without .parquet>.npz`` holding, per metric and per level
``b`` in :data:`BASES` (64, 256, ... steps), one record per non-empty bucket ``floor(step / b)``:

- ``count`` and ``count_finite`` points (after the file's own last-wins dedupe, like the reader's);
- the ``first``/``last`` point, the ``first_finite``/``last_finite`` point, the ``min`` and ``max``
  finite point (the earliest on ties), and the ``first_non_finite`` point -- each as
  ``<name>_step``, ``<name>_wall`` (µs, ``INT64_MIN`` where the row had none) and ``<name>_value``.
  A point a bucket lacks (no finite value, no non-finite one) has step ``INT64_MIN`` and value NaN.

Member ``all`` holds one such record per metric for the whole file (its counts and step range).
Levels are derived data: a metric file is immutable, so its levels never go stale; the levels
file names its metric file's id and row count and is ignored unless both match; a missing one
(a store written before levels, a compacted file) is computed from the metric file when asked.
Bucket edges lie on a fixed grid (multiples of ``b``), so the records of a metric's files
concatenate, and a coarser level is the combination of four finer buckets (:func:`combine`).

Only numpy: the collector writes these without loading pyarrow.
"""

from __future__ import annotations

import io
import itertools
import logging
import zipfile
from typing import TYPE_CHECKING

import numpy as np

from tau_collector.expstore.format.schema import METRICS_DIR

if TYPE_CHECKING:  # the format layer names the store only in annotations
    from tau_collector.expstore.store import ExpStore

__all__ = ["BASES", "LEVELS_DIR", "MIN_POINTS_PER_METRIC", "POINT_FIELDS", "RECORD", "WRITTEN_FROM", "FileLevels",
           "combine", "levels_of_records", "levels_path", "needs_levels", "publish_chunk_levels",
           "publish_sorted_levels", "publish_table_levels", "publish_write_levels", "read_levels", "summarize"]

log = logging.getLogger(__name__)

LEVELS_DIR = "series_levels"
FORMAT_VERSION = 1
BASES = tuple(4**k for k in range(3, 16))  # 64 steps .. 4^15: every level ~N/4^k records, ~N/48 in all
# What a levels file holds is bounded by its metric file's size (issue 30: levels bytes <= 10 % of data bytes
# for every file shape). A record is 200 bytes and a stored point ~10 (Parquet): levels from 64 steps made a
# long file's levels a third of its bytes and a tiny wide file's (one record per metric per level) 15 times
# them. Files therefore store levels from WRITTEN_FROM steps on (~0.26 bytes a point; a finer level a read
# asks for is summarized from the file's points, see read/level_reads.py -- the reader merges ranges under
# a million points raw anyway, so a finer level is rarely asked for), and a file with fewer than
# MIN_POINTS_PER_METRIC rows per metric gets no levels file: its metrics' slices are small, and a reader
# computes their levels from them when a long range needs them, as for a file written before levels.
WRITTEN_FROM = 1024
MIN_POINTS_PER_METRIC = 1024
_I64_MIN = np.iinfo(np.int64).min

POINT_FIELDS = ("first", "last", "first_finite", "last_finite", "min", "max", "first_non_finite")
RECORD = np.dtype(
    [("metric", np.int64), ("bucket", np.int64), ("count", np.int64), ("count_finite", np.int64)]
    + [(f"{p}_{c}", t) for p in POINT_FIELDS for c, t in (("step", np.int64), ("wall", np.int64),
                                                        ("value", np.float64))]
)


def levels_path(metric_relative_path: str) -> str:
    """Where the levels of a metric file live (store-relative, ``/``-separated)."""
    stem = metric_relative_path.removesuffix(".parquet")
    # Under series_levels/ instead of metrics/: TauGrid's tree holds only TauGrid's files.
    return f"{LEVELS_DIR}/{stem.removeprefix(METRICS_DIR + '/')}.npz"


# -- building ---------------------------------------------------------------------------------


def _first_in(mask_pos: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per [start, end): the first position in sorted ``mask_pos`` inside it, and whether there is one."""
    at = np.searchsorted(mask_pos, starts, side="left")
    ok = at < mask_pos.size
    pos = np.where(ok, mask_pos[np.minimum(at, max(mask_pos.size - 1, 0))] if mask_pos.size else 0, 0)
    ok &= pos < ends
    return pos, ok


def _last_in(mask_pos: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    at = np.searchsorted(mask_pos, ends, side="left") - 1
    ok = at >= 0
    pos = np.where(ok, mask_pos[np.maximum(at, 0)] if mask_pos.size else 0, 0)
    ok &= pos >= starts
    return pos, ok


def _reduce(src: dict[str, np.ndarray], metric: np.ndarray, bucket: np.ndarray) -> np.ndarray:
    """Combine consecutive rows of ``src`` (records or points, in (metric, step) order) with equal
    (metric, bucket) into one record each.

    ``src`` maps every RECORD field but metric/bucket to an array (points pass the same arrays for
    all their point fields). A row "has" a finite point when count_finite > 0, a non-finite one when
    count > count_finite; min/max take the first row holding the group's extreme.
    """
    m = metric.size
    out = np.zeros(0, dtype=RECORD)
    if m == 0:
        return out
    change = np.ones(m, dtype=bool)
    change[1:] = (metric[1:] != metric[:-1]) | (bucket[1:] != bucket[:-1])
    starts = np.flatnonzero(change)
    ends = np.append(starts[1:], m)
    out = np.zeros(starts.size, dtype=RECORD)
    out["metric"], out["bucket"] = metric[starts], bucket[starts]
    count, count_fin = src["count"], src["count_finite"]
    out["count"] = np.add.reduceat(count, starts)
    out["count_finite"] = np.add.reduceat(count_fin, starts)
    has_fin = count_fin > 0
    fin_pos = np.flatnonzero(has_fin)
    nf_pos = np.flatnonzero(count > count_fin)
    picks = {"first": (starts, None), "last": (ends - 1, None),
             "first_finite": _first_in(fin_pos, starts, ends), "last_finite": _last_in(fin_pos, starts, ends),
             "first_non_finite": _first_in(nf_pos, starts, ends)}
    group = np.repeat(np.arange(starts.size), ends - starts)
    for name, sign in (("min", 1.0), ("max", -1.0)):
        vals = np.where(has_fin, sign * src[f"{name}_value"], np.inf)
        best = np.minimum.reduceat(vals, starts)
        hit = np.flatnonzero(has_fin & (vals == best[group]))
        picks[name] = _first_in(hit, starts, ends)
    for name, (pos, ok) in picks.items():
        for col in ("step", "wall", "value"):
            values = src[f"{name}_{col}"][pos]
            if ok is not None:
                values = np.where(ok, values, np.nan if col == "value" else _I64_MIN)
            out[f"{name}_{col}"] = values
    return out


def _point_source(step: np.ndarray, wall: np.ndarray, value: np.ndarray) -> dict[str, np.ndarray]:
    finite = np.isfinite(value)
    src = {"count": np.ones(step.size, dtype=np.int64), "count_finite": finite.astype(np.int64)}
    for p in POINT_FIELDS:
        src[f"{p}_step"], src[f"{p}_wall"], src[f"{p}_value"] = step, wall, value
    return src


def _record_source(records: np.ndarray) -> dict[str, np.ndarray]:
    return {name: records[name] for name in RECORD.names if name not in ("metric", "bucket")}


def summarize(metric: np.ndarray, step: np.ndarray, wall: np.ndarray, value: np.ndarray, b: int | None) -> np.ndarray:
    """Records of points sorted by (metric, step), one per step, in buckets of ``b`` (None: one per metric)."""
    bucket = np.zeros(step.size, dtype=np.int64) if b is None else step // b
    return _reduce(_point_source(step, wall, value), metric, bucket)


def combine(records: np.ndarray, factor: int | None) -> np.ndarray:
    """Records (in (metric, bucket) order; equal buckets may repeat) merged into buckets ``factor`` times
    wider (1: just merge repeats; None: one per metric)."""
    bucket = np.zeros(records.size, dtype=np.int64) if factor is None else records["bucket"] // factor
    return _reduce(_record_source(records), records["metric"], bucket)


def needs_levels(row_count: int, metrics: int) -> bool:
    """Whether a metric file of ``row_count`` rows over ``metrics`` metrics gets a levels file."""
    return metrics > 0 and row_count >= MIN_POINTS_PER_METRIC * metrics


def file_levels(metric: np.ndarray, step: np.ndarray, wall: np.ndarray, value: np.ndarray, *,
                first: int | None = None) -> dict[str, np.ndarray]:
    """Every level from ``first`` steps (default: the finest) of a file's deduped points sorted by (metric, step):
    ``{"all": ..., "b64": ..., ...}``."""
    first = BASES[0] if first is None else first
    if first not in BASES:
        raise ValueError(f"levels start at one of {BASES}, not {first}")
    span = int(step.max() - step.min()) + 1 if step.size else 0
    return levels_of_records(summarize(metric, step, wall, value, None), summarize(metric, step, wall, value, first),
                             span, first=first)


def levels_of_records(every: np.ndarray, finest: np.ndarray, span: int, *, first: int = WRITTEN_FROM
                      ) -> dict[str, np.ndarray]:
    """:func:`file_levels` from its ``all`` records and its finest level's (buckets of ``first`` steps), the
    file's steps spanning ``span``: what a file written a part at a time summarizes part by part."""
    out = {"all": every, f"b{first}": finest}
    records = finest
    for prev, b in itertools.pairwise(BASES[BASES.index(first):]):
        if prev >= span:  # one bucket per metric already: coarser levels are combined when asked
            break
        records = combine(records, b // prev)
        out[f"b{b}"] = records
    return out


def dedupe_file_rows(names_rank: np.ndarray, step: np.ndarray, wall: np.ndarray, wall_valid: np.ndarray | None,
                     value: np.ndarray, *, in_file_order: bool = False
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rows in arrival order (or, ``in_file_order``, as a file holds them) -> the points a reader keeps
    from the file the writer makes of them.

    The writer's file order is (metric, step, wall_time, arrival); the reader reads a missing wall
    time as ``INT64_MIN`` and keeps, per (metric, step), the last row by (wall_time, file position).
    """
    if step.size > 1:
        later = names_rank[1:] > names_rank[:-1]
        ordered = later | ((names_rank[1:] == names_rank[:-1]) & (step[1:] > step[:-1]))
        if ordered.all():  # already one row per step in file order (a bulk importer's chunk): nothing to sort
            return names_rank, step, wall if wall_valid is None else np.where(wall_valid, wall, _I64_MIN), value
    file_order = np.lexsort((wall, step, names_rank)) if in_file_order is False else np.arange(step.size)
    wall_read = wall if wall_valid is None else np.where(wall_valid, wall, _I64_MIN)
    wall_read = wall_read[file_order]
    metric_f, step_f, value_f = names_rank[file_order], step[file_order], value[file_order]
    order = np.lexsort((np.arange(step_f.size), wall_read, step_f, metric_f))
    metric_f, step_f, wall_read, value_f = metric_f[order], step_f[order], wall_read[order], value_f[order]
    last = np.ones(step_f.size, dtype=bool)
    last[:-1] = (step_f[1:] != step_f[:-1]) | (metric_f[1:] != metric_f[:-1])
    return metric_f[last], step_f[last], wall_read[last], value_f[last]


# -- files ------------------------------------------------------------------------------------


def levels_bytes(file_id: str, row_count: int, names: list[str], levels: dict[str, np.ndarray]) -> bytes:
    sink = io.BytesIO()
    np.savez(sink, version=np.array(FORMAT_VERSION), file_id=np.array(file_id), row_count=np.array(row_count),
             names=np.array(names, dtype=str), **levels)
    return sink.getvalue()


def publish_chunk_levels(store: ExpStore, relative_path: str, file_id: str, row_count: int, names: list[str],
                         metric: np.ndarray, step: np.ndarray, wall: np.ndarray, wall_valid: np.ndarray | None,
                         value: np.ndarray) -> list:
    """Write the levels of a metric file the writer is about to register, from its rows in arrival order
    (``metric`` indexes ``names``). Returns the published path (to delete if the write loses), or
    nothing when building them failed or the file is too small to need them (:func:`needs_levels`):
    levels are derived, a reader computes missing ones itself."""
    if not needs_levels(row_count, len(names)):
        return []
    try:
        rank = np.empty(len(names), dtype=np.int64)
        sorted_names = sorted(names)
        rank[np.argsort(np.array(names, dtype=object), kind="stable")] = np.arange(len(names))
        m, s, w, v = dedupe_file_rows(rank[metric], np.asarray(step, np.int64), np.asarray(wall, np.int64),
                                      wall_valid, np.asarray(value, np.float64))
        data = levels_bytes(file_id, row_count, sorted_names, file_levels(m, s, w, v, first=WRITTEN_FROM))
        return [store.publish_file(levels_path(relative_path), lambda p: p.write_bytes(data))]
    except Exception:
        log.exception("series levels of %s not written; readers compute them when asked", relative_path)
        return []


def publish_write_levels(store: ExpStore, runs: list, run_files: list) -> list:
    """The writer's hook: the levels of each file of one write (``runs[i]`` became ``run_files[i]``)."""
    published = []
    for run, rf in zip(runs, run_files, strict=True):
        published += publish_chunk_levels(store, rf.relative_path, rf.file_id, rf.row_count, run.names, run.metric,
                                          run.step, run.wall_time, run.wall_valid, run.value)
    return published


def publish_sorted_levels(store: ExpStore, relative_path: str, file_id: str, row_count: int, names: list[str],
                          metric: np.ndarray, step: np.ndarray, wall: np.ndarray, wall_valid: np.ndarray | None,
                          value: np.ndarray) -> list:
    """Compaction's hook: the levels of a merged file from its rows in file order (``metric`` indexes the
    sorted ``names``; every row has a step). Nothing for a file too small to need them (:func:`needs_levels`)."""
    if not needs_levels(row_count, len(names)):
        return []
    try:
        m, s, w, v = dedupe_file_rows(metric.astype(np.int64, copy=False), step.astype(np.int64, copy=False),
                                      wall.astype(np.int64, copy=False), wall_valid,
                                      value.astype(np.float64, copy=False), in_file_order=True)
        data = levels_bytes(file_id, row_count, list(names), file_levels(m, s, w, v, first=WRITTEN_FROM))
        return [store.publish_file(levels_path(relative_path), lambda p: p.write_bytes(data))]
    except Exception:  # derived data: readers compute missing levels themselves
        log.exception("series levels of %s not written; readers compute them when asked", relative_path)
        return []


def publish_table_levels(store: ExpStore, relative_path: str, file_id: str, table) -> list:
    """Compaction's hook: the levels of a merged file, from its pyarrow table (rows in file order)."""
    try:
        names_col = table.column("metric_name").combine_chunks()
        if names_col.null_count or table.column("step").null_count:
            return []  # rows a reader skips: leave it to the reader, which computes levels from what it keeps
        if hasattr(names_col, "dictionary"):
            names_col = names_col.cast("string")
        # np.unique's codes, from the distinct names alone (a string per row costs 1 s per 2M rows)
        import pyarrow.compute as pc

        coded = pc.dictionary_encode(names_col)
        distinct = np.asarray(coded.dictionary.to_pylist(), dtype=object)
        order = np.argsort(distinct, kind="stable")
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        names, codes = distinct[order], rank[coded.indices.to_numpy()]
        if not needs_levels(table.num_rows, len(names)):
            return []
        wall_col = table.column("wall_time").cast("int64")
        valid = None if wall_col.null_count == 0 else np.asarray(wall_col.is_valid())
        wall = wall_col.fill_null(0).to_numpy()
        step = table.column("step").to_numpy()
        value = table.column("value").cast("double").fill_null(float("nan")).to_numpy()
        m, s, w, v = dedupe_file_rows(codes.astype(np.int64), step.astype(np.int64), wall.astype(np.int64), valid,
                                      value.astype(np.float64), in_file_order=True)
        data = levels_bytes(file_id, table.num_rows, [str(n) for n in names],
                            file_levels(m, s, w, v, first=WRITTEN_FROM))
        return [store.publish_file(levels_path(relative_path), lambda p: p.write_bytes(data))]
    except Exception:  # derived data: readers compute missing levels themselves
        log.exception("series levels of %s not written; readers compute them when asked", relative_path)
        return []


class FileLevels:
    """One levels file, opened lazily per member (a request at one resolution reads one level)."""

    def __init__(self, path, names: np.ndarray, stats: np.ndarray, members: set[str]) -> None:
        self.path = path
        self.index = {str(n): i for i, n in enumerate(names)}
        self.stats = stats
        self.bases = tuple(sorted(int(m[1:]) for m in members if m.startswith("b") and m[1:].isdigit()))

    @property
    def nbytes(self) -> int:
        return int(self.stats.nbytes) + 64 * len(self.index)

    def member(self, b: int) -> np.ndarray:
        with np.load(self.path, allow_pickle=False) as npz:
            return npz[f"b{b}"]


def read_levels(path, file_id: str, row_count: int | None) -> FileLevels | None:
    """The levels file at ``path`` if it is there, readable and made from this very metric file."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            members = set(npz.files)
            if int(npz["version"]) != FORMAT_VERSION or str(npz["file_id"]) != file_id:
                return None
            if row_count is not None and int(npz["row_count"]) != row_count:
                return None
            stats = npz["all"]
            if stats.dtype != RECORD:
                return None
            return FileLevels(path, npz["names"], stats, members)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile):
        return None
