"""Compaction: merge a run's many small metric files into one immutable file, atomically for readers.

A live run delivers a chunk every few seconds, and one small Parquet file per chunk would make
every read open thousands of files. When a run has more than ``min_files`` files under
``small_file_bytes``, they are merged into one replacement (rows sorted like any written file,
ties kept in registration order). Only files next to each other in registration order are merged:
the replacement takes the place of the newest of them, and a file left between them (a large one)
would otherwise move from after the older ones' rows to before them, reversing which of two rows of
one step with equal wall times wins. One transaction registers the replacement and retires the
originals, so a reader's file list is either the old set or the new one. The replacement is
marked summarized without being merged into ``metric_summaries`` (its rows are already counted).
Retired files stay on disk for ``grace_seconds`` because a reader may have listed them just
before the swap; a later compaction or :func:`delete_retired` removes them, with the index rows that
still name them (``metric_file_retirements``, ``metric_summary_files``), so the index holds rows for the
files a run has, not for every file it ever had.

A merge reads our own files with :mod:`..format.parquet_reader` and writes the replacement with
:mod:`..format.parquet_encoder`, numpy only (the sidecar merges in its own process: :mod:`.compaction_thread`);
files of another Parquet writer are merged with pyarrow where that is allowed (``pyarrow_fallback``) and
otherwise left where they are, separating the small files around them as a large file does.
"""

from __future__ import annotations

import hashlib
import io
import sqlite3
import struct
import sys
import time
import uuid
import zlib
from dataclasses import dataclass

import numpy as np

from tau_collector.collect.process_memory import release_arrow_memory
from tau_collector.expstore.format import schema
from tau_collector.expstore.format.levels import levels_path, publish_sorted_levels, publish_table_levels
from tau_collector.expstore.format.metric_files import metric_file_path, metric_row_groups
from tau_collector.expstore.format.parquet_encoder import Coded, Column, PlainTexts, encode_parquet
from tau_collector.expstore.format.parquet_reader import (
    CodedTexts,
    ForeignParquetError,
    NumberColumn,
    read_metric_file,
)
from tau_collector.expstore.format.written_parts import RecentParts, part_of_columns
from tau_collector.expstore.maintain.joined_texts import joined_texts
from tau_collector.expstore.store import ExpStore, StoreError, utc_now_rfc3339

__all__ = ["CompactionPolicy", "CompactionResult", "compact_all", "compact_quietly", "compact_run", "delete_retired",
           "new_file_count"]


COMPACTED_PREFIX = "compacted-"
# Files of a run clustered by metric (:mod:`.metric_clusters`): each holds a range of metric names, so
# compaction leaves them alone (merging two would undo what clustering did) and counts them as large.
CLUSTERED_PREFIX = "clustered-"


@dataclass(frozen=True, slots=True)
class CompactionPolicy:
    min_files: int = 64  # compact once a run has more small files than this
    small_file_bytes: int = 1 << 20
    grace_seconds: float = 300.0
    # One merge holds its files' rows in memory several times over (read, sorted, encoded): it takes the
    # oldest small files up to this many rows (at least two), so a run with a backlog of thousands of
    # chunk files is compacted in bounded steps, never all at once. Rows, not file bytes, size the
    # merge: a Parquet file of repetitive tags holds ten times its size in memory.
    max_merge_rows: int = 24_000
    # What a killed writer or compaction left (published, never registered; temporary files) is removed once
    # this old (:mod:`.leftovers`).
    leftover_grace_seconds: float = 3600.0
    # The rows of one media tag a media merge holds at once (:mod:`.media_compaction`; a 64-bucket histogram
    # row is ~1.6 kB): the sidecar's own process sets it low to stay in its container's memory.
    media_merge_rows: int = 16_384


@dataclass(frozen=True, slots=True)
class CompactionResult:
    file_id: str
    retired: tuple[str, ...]
    row_count: int


def compact_run(
    store: ExpStore, run_id: str, *, policy: CompactionPolicy | None = None, force: bool = False,
    known: RecentParts | None = None,
) -> CompactionResult | None:
    """Compact ``run_id``'s small files if the policy (or ``force``, for >= 2 files) says so; ``known``: the
    columns of files this process wrote (:mod:`..format.written_parts`), merged without reading them back."""
    policy = policy or CompactionPolicy()
    conn = store.connection()
    if not force:
        # Called after every delivery: a run with few files is settled by one indexed count, without
        # listing and stat-ing its files.
        (count,) = conn.execute("SELECT COUNT(*) FROM metric_files WHERE run_id = ? AND format = ?",
                                (run_id, schema.METRIC_FILE_FORMAT)).fetchone()
        if count <= policy.min_files:
            delete_retired(store, grace_seconds=policy.grace_seconds)
            return None
    runs = _small_files(store, run_id, policy)
    result = None
    first = next((run for run in runs if len(run) >= 2), None)
    if first is not None and (force or sum(map(len, runs)) > policy.min_files):
        result = _merge(store, run_id, _first_merge(first, policy), known=known)
        release_arrow_memory()  # the merge's buffers were the largest this process holds; return them now
    delete_retired(store, grace_seconds=policy.grace_seconds)
    return result


def _small_files(store: ExpStore, run_id: str, policy: CompactionPolicy,
                 foreign: set[str] = frozenset()) -> list[list[tuple]]:  # type: ignore[assignment]
    """``run_id``'s files under ``small_file_bytes`` in registration order, as runs of files next to each other
    (any other file of the run between two small ones separates them, and so do ``foreign`` ones); one
    listing, a stat each."""
    files = store.connection().execute(
        "SELECT rowid, file_id, path, project, run_group_id, min_step, max_step, row_count, format FROM metric_files "
        "WHERE run_id = ? ORDER BY rowid",
        (run_id,),
    ).fetchall()
    runs: list[list[tuple]] = [[]]
    for f in files:
        try:
            # Half the merge's rows or more is as good as large: two such files would exceed the merge's
            # bound, and merged files that stay under small_file_bytes (GZIP packs 24,000 rows in ~300 kB)
            # would otherwise be merged again pass after pass, each merge twice the last.
            small = (f[8] == schema.METRIC_FILE_FORMAT and f[1] not in foreign
                     and not f[1].startswith(CLUSTERED_PREFIX)
                     and (f[7] or 0) <= policy.max_merge_rows // 2
                     and store.absolute(f[2]).stat().st_size < policy.small_file_bytes)
        except FileNotFoundError:
            small = False  # retired by a concurrent compaction; not ours to merge
        if small:
            runs[-1].append(f[:8])
        elif runs[-1]:
            runs.append([])
    return [run for run in runs if run]


def _first_merge(small: list[tuple], policy: CompactionPolicy) -> list[tuple]:
    """The oldest of ``small`` up to ``max_merge_rows`` rows together, at least two."""
    rows, count = 0, 0
    while count < len(small) and (count < 2 or rows + (small[count][7] or 0) <= policy.max_merge_rows):
        rows += small[count][7] or 0
        count += 1
    return small[:count]


def compact_quietly(store: ExpStore, run_id: str, *, policy: CompactionPolicy | None,
                    known: RecentParts | None = None) -> None:
    """:func:`compact_run` after a delivery. Compaction is an optimisation: a failure (a concurrent
    compaction deleting a file we were merging, a busy index) must never fail the delivery that
    triggered it, which is already committed. The next delivery tries again."""
    try:
        compact_run(store, run_id, policy=policy, known=known)
    except (StoreError, OSError, sqlite3.Error):
        pass
    except Exception as exc:
        arrow = sys.modules.get("pyarrow")
        if arrow is None or not isinstance(exc, arrow.ArrowException):
            raise


def compact_all(store: ExpStore, run_id: str, *, policy: CompactionPolicy | None = None,
                pyarrow_fallback: bool = True) -> int:
    """Merge ``run_id``'s small files, a bounded merge at a time, until fewer than two are left; returns
    how many merges were made. What the sidecar's compaction thread (:mod:`.compaction_thread`, with
    ``pyarrow_fallback=False``) and a compaction process (:mod:`.compaction_process`) run. Then the run's
    histogram and text files are merged too (:mod:`.media_compaction`, numpy only), when enough have piled up.

    The run's files are listed (and stat-ed) once per pass, not once per merge: a pass merges its list's
    small files in consecutive bounded groups, oldest first, as repeated :func:`compact_run` calls would;
    the next pass lists again and merges what came out still small. A long job's backlog of thousands of
    delivery files costs a listing per pass, not per merge (which had made a merge's cost grow with the
    number of files the run has). Without ``pyarrow_fallback`` a file of another Parquet writer is left as
    it is and separates the small files around it, as a large file does.
    """
    from tau_collector.expstore.maintain.leftovers import sweep_run

    policy = policy or CompactionPolicy()
    sweep_run(store, run_id, grace_seconds=policy.leftover_grace_seconds)
    merges = 0
    foreign: set[str] = set()
    while True:
        merged_now, relist = 0, False
        for small in _small_files(store, run_id, policy, foreign):
            while len(small) >= 2:
                group = _first_merge(small, policy)
                try:
                    result = _merge(store, run_id, group, pyarrow_fallback=pyarrow_fallback)
                except ForeignFileError as exc:
                    foreign.add(exc.file_id)
                    relist = True
                    break
                small = small[len(group):]
                if result is not None:  # None: a concurrent compaction took some first
                    merged_now += 1
                release_arrow_memory()
        delete_retired(store, grace_seconds=policy.grace_seconds)
        merges += merged_now
        if not merged_now and not relist:
            from tau_collector.expstore.maintain.media_compaction import compact_media_quietly, media_policy

            # the run's media: few files a tag
            compact_media_quietly(store, run_id, policy=media_policy(policy.media_merge_rows))
            return merges


def new_file_count(store: ExpStore, run_id: str) -> int:
    """How many of ``run_id``'s files were written by deliveries and not yet merged (one indexed count)."""
    (count,) = store.connection().execute(
        "SELECT COUNT(*) FROM metric_files WHERE run_id = ? AND format = ? AND file_id NOT LIKE ? "
        "AND file_id NOT LIKE ?",
        (run_id, schema.METRIC_FILE_FORMAT, COMPACTED_PREFIX + "%", CLUSTERED_PREFIX + "%")).fetchone()
    return count


class ForeignFileError(StoreError):
    """A file of the merge is not of the Parquet subset :mod:`..format.parquet_reader` reads."""

    def __init__(self, file_id: str, reason: str) -> None:
        super().__init__(reason)
        self.file_id = file_id


def _merge(store: ExpStore, run_id: str, files: list[tuple], *, pyarrow_fallback: bool = True,
           known: RecentParts | None = None) -> CompactionResult | None:
    """Merge ``files`` (registration order) into one; without pyarrow when they are all of our own Parquet
    subset, else with pyarrow (``pyarrow_fallback``) or :class:`ForeignFileError` naming the first other file."""
    try:
        merged = _merged_columns(store, files, known)
    except ForeignFileError:
        if not pyarrow_fallback:
            raise
        return _merge_with_pyarrow(store, run_id, files)
    rows, columns, names, metric, step, step_valid, wall, wall_valid, value = merged
    data = encode_parquet(columns, rows, metric_row_groups(_metric_starts(metric), rows))
    first_last = (names[int(metric[0])], names[int(metric[-1])]) if rows else None

    def levels(relative: str, file_id: str) -> list:
        if step_valid is not None:
            return []  # rows a reader skips: it computes levels from what it keeps
        return publish_sorted_levels(store, relative, file_id, rows, names, metric, step, wall, wall_valid, value)

    result = _swap_in(store, run_id, files, data, rows, first_last, levels)
    if result is not None and known is not None and rows <= known.max_rows // 2:  # small: merged again later
        row = store.connection().execute("SELECT path FROM metric_files WHERE file_id = ?",
                                         (result.file_id,)).fetchone()
        if row is not None:
            known.put(row[0], rows, part_of_columns(columns, rows))
    return result


def read_parts(store: ExpStore, files: list[tuple], metric_range: tuple[str, str] | None = None, *,
               pyarrow_fallback: bool = False, known: RecentParts | None = None) -> list[dict]:
    """Each of ``files``' columns (:func:`..format.parquet_reader.read_metric_file`), in their order; with
    ``metric_range`` ``(first, last)`` only the rows of the metrics in that range. :class:`ForeignFileError`
    names the first file of another Parquet writer, unless ``pyarrow_fallback`` (never in the sidecar) reads it
    with pyarrow (:func:`read_with_pyarrow`: a store's clustered files written by pyarrow before the encoder).
    A file whose columns ``known`` holds (this process wrote it) is not read."""
    parts = []
    for f in files:
        try:
            part = known.take(f[2]) if known is not None else None
            if part is None:
                part = read_metric_file(store.absolute(f[2]), metric_range=metric_range)[1]
        except ForeignParquetError as exc:
            if not pyarrow_fallback:
                raise ForeignFileError(f[1], str(exc)) from None
            part = read_with_pyarrow(store.absolute(f[2]), f[1], str(exc))
        except (ValueError, IndexError, KeyError, struct.error, zlib.error) as exc:  # a damaged file
            raise ForeignFileError(f[1], f"{store.absolute(f[2])}: not a readable Parquet file ({exc})") from None
        if metric_range is not None:
            if not len(part["value"].values):
                continue  # no row group of the file can hold the range
            names = part["metric_name"]
            inside = np.array([metric_range[0] <= v <= metric_range[1] for v in names.values] + [False])
            keep = inside[names.codes]  # a null name (code -1) indexes the appended False
            if not keep.all():
                part = keep_rows(part, np.flatnonzero(keep))
        parts.append(part)
    return parts


def read_with_pyarrow(path, file_id: str, reason: str) -> dict:
    """A metric file of any Parquet writer as :func:`read_parts` returns one; :class:`ForeignFileError` (with
    ``reason``, why our reader refused it) when pyarrow cannot read it either or its schema is not the store's."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        table = pq.ParquetFile(path).read()
        part: dict = {}
        for name in schema.METRIC_SCHEMA_COLUMNS:
            column = table.column(name).combine_chunks()
            if name in ("step", "wall_time", "value"):
                values = column.cast(pa.float64() if name == "value" else pa.int64())
                valid = None if not column.null_count else np.asarray(column.is_valid())
                part[name] = NumberColumn(np.asarray(values.fill_null(0)), valid)
            elif name == "tags":
                pieces = [_LENGTH.pack(len(b)) + b for b in (v.encode() for v in column.cast(pa.string()).to_pylist())]
                part[name] = PlainTexts(np.frombuffer(b"".join(pieces), dtype=np.uint8),
                                        np.concatenate(([0], np.cumsum([len(p) for p in pieces]))).astype(np.int64))
            else:
                coded = pc.dictionary_encode(column.cast(pa.string()))
                part[name] = CodedTexts(coded.dictionary.to_pylist(),
                                        np.asarray(coded.indices.fill_null(-1), dtype=np.int64))
    except (OSError, KeyError, pa.ArrowException, AttributeError) as exc:
        raise ForeignFileError(file_id, f"{reason}; pyarrow cannot read it either ({exc})") from None
    return part


_LENGTH = struct.Struct("<i")


def keep_rows(part: dict, rows: np.ndarray) -> dict:
    """A file's columns (:func:`read_parts`) holding only the rows at ``rows`` (ascending)."""
    out = {}
    for name, column in part.items():
        if isinstance(column, NumberColumn):
            out[name] = NumberColumn(column.values[rows], None if column.valid is None else column.valid[rows])
        elif isinstance(column, CodedTexts):
            out[name] = CodedTexts(column.values, column.codes[rows])
        else:
            out[name] = column.take(rows)
    return out


def _merged_columns(store: ExpStore, files: list[tuple], known: RecentParts | None = None):
    """:func:`merged_columns` of ``files`` read whole (or known)."""
    return merged_columns(read_parts(store, files, known=known), files)


def merged_columns(parts: list[dict], files: list[tuple]):
    """The rows of ``parts`` (``files``' columns, registration order) sorted as a written file's (metric, step,
    wall time, then registration order: file, row; null steps and times last, as pyarrow's sort put them), as
    encoder columns and the arrays levels need. ``parts`` is consumed (each entry set to None): the tags, most of a
    merge's bytes, are joined a file at a time straight into merged order, each file's part released once joined
    (:mod:`.joined_texts`), so the merge never holds them three times (parts, concatenation, sorted copy)."""
    rows = sum(len(p["value"].values) for p in parts)

    def numbers(name: str, dtype) -> tuple[np.ndarray, np.ndarray | None]:
        values = np.concatenate([p[name].values for p in parts]).astype(dtype, copy=False)
        if all(p[name].valid is None for p in parts):
            return values, None
        return values, np.concatenate([np.ones(len(p[name].values), bool) if p[name].valid is None
                                       else p[name].valid for p in parts])

    def coded(name: str) -> tuple[list[str], np.ndarray]:
        index: dict[str, int] = {}
        codes = []
        for p in parts:
            column = p[name]
            # -1 (null) indexes the appended -1: nulls stay nulls
            remap = np.array([index.setdefault(v, len(index)) for v in column.values] + [-1], dtype=np.int64)
            codes.append(remap[column.codes])
        return list(index), np.concatenate(codes) if codes else np.zeros(0, np.int64)

    names, name_codes = coded("metric_name")
    rank = np.empty(len(names), dtype=np.int64)
    rank[np.argsort(np.array(names, dtype=object), kind="stable")] = np.arange(len(names))
    names = sorted(names)
    step, step_valid = numbers("step", np.int64)
    wall, wall_valid = numbers("wall_time", np.int64)
    value, value_valid = numbers("value", np.float64)
    if (name_codes < 0).any() or value_valid is not None:
        raise ForeignFileError(files[0][1], "a required column (metric_name, value) holds nulls")
    metric = rank[name_codes]
    no_step = np.zeros(rows, bool) if step_valid is None else ~step_valid
    no_wall = np.zeros(rows, bool) if wall_valid is None else ~wall_valid
    order = np.lexsort((np.arange(rows), np.where(no_wall, 0, wall), no_wall, np.where(no_step, 0, step), no_step,
                        metric))

    def texts(name: str, required: bool):
        values, codes = coded(name)
        codes = codes[order]
        if (codes < 0).all():
            if required and rows:
                raise ForeignFileError(files[0][1], f"required column {name} holds nulls")
            return None
        if (codes >= 0).all():
            return Coded(values, codes)
        if required:
            raise ForeignFileError(files[0][1], f"required column {name} holds nulls")
        return [values[c] if c >= 0 else None for c in codes.tolist()]

    # Every column but the tags is taken from the parts first: the tags' join releases them (joined_texts).
    project, group, run = texts("project", True), texts("run_group_id", True), texts("run_id", True)
    unit, source, split = texts("unit", False), texts("source", True), texts("split", False)
    tags = joined_texts(parts, "tags", order)
    metric, step, wall, value = metric[order], step[order], wall[order], value[order]
    step_valid = None if step_valid is None else step_valid[order]
    wall_valid = None if wall_valid is None else wall_valid[order]
    columns = [
        Column("project", "string", True, project),
        Column("run_group_id", "string", True, group),
        Column("run_id", "string", True, run),
        Column("metric_name", "string", True, Coded(names, metric), statistics=True),
        Column("step", "int64", False, step, valid=step_valid, statistics=True),
        Column("wall_time", "timestamp_us", False, wall, valid=wall_valid, statistics=True),
        Column("value", "double", True, value, statistics=True),
        Column("unit", "string", False, unit),
        Column("source", "string", True, source),
        Column("split", "string", False, split),
        Column("tags", "json", True, tags),
    ]
    return rows, columns, names, metric, step, step_valid, wall, wall_valid, value


def _metric_starts(metric: np.ndarray) -> list[int]:
    return [0, *(np.flatnonzero(metric[1:] != metric[:-1]) + 1).tolist()]


def _merge_with_pyarrow(store: ExpStore, run_id: str, files: list[tuple]) -> CompactionResult | None:
    """The merge of files of any Parquet writer (what ``tau-collector store compact`` may do; never the sidecar)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = []
    for rank, f in enumerate(files):
        # ParquetFile.read: half the cost of read_table (no dataset discovery) on these small files
        table = pq.ParquetFile(store.absolute(f[2])).read()
        n = table.num_rows
        table = table.append_column("__rank", pa.array([rank] * n, pa.int64()))
        tables.append(table.append_column("__row", pa.array(range(n), pa.int64())))
    merged = pa.concat_tables(tables)
    # Same order as a written file; rank and row keep the registration order among equal
    # (step, wall_time) rows, so last-wins reads give the same answer before and after.
    merged = merged.sort_by(
        [("metric_name", "ascending"), ("step", "ascending"), ("wall_time", "ascending"),
         ("__rank", "ascending"), ("__row", "ascending")]
    ).drop_columns(["__rank", "__row"])
    merged = merged.cast(schema.metric_arrow_schema())
    data = parquet_bytes(merged)
    names = merged.column("metric_name")  # sorted: its first and last row
    first_last = (names[0].as_py(), names[-1].as_py()) if merged.num_rows else None
    return _swap_in(store, run_id, files, data, merged.num_rows, first_last,
                    lambda relative, file_id: publish_table_levels(store, relative, file_id, merged))


def _swap_in(store: ExpStore, run_id: str, files: list[tuple], data: bytes, rows: int,
             first_last: tuple[str, str] | None, levels) -> CompactionResult | None:
    """Publish ``data`` as the replacement of ``files``, and register it and retire them in one transaction."""
    experiment_id = store.connection().execute(
        "SELECT experiment_id FROM runs WHERE run_id = ?", (run_id,)
    ).fetchone()
    project, group = files[-1][3] or "", files[-1][4] or ""
    file_id = COMPACTED_PREFIX + uuid.uuid4().hex
    relative = metric_file_path(project, experiment_id[0] if experiment_id else "", group, run_id, file_id)
    path = store.publish_file(relative, lambda p: p.write_bytes(data))
    retired = tuple(f[1] for f in files)
    min_steps = [f[5] for f in files if f[5] is not None]
    max_steps = [f[6] for f in files if f[6] is not None]
    now = utc_now_rfc3339()
    try:
        with store.write_transaction() as tx:
            marks = ",".join("?" * len(retired))
            still = tx.execute(
                f"SELECT COUNT(*) FROM metric_files WHERE file_id IN ({marks})", retired
            ).fetchone()[0]
            if still != len(retired):
                raise _Lost()
            tx.execute(f"DELETE FROM metric_files WHERE file_id IN ({marks})", retired)
            tx.execute(f"DELETE FROM metric_file_metrics WHERE file_id IN ({marks})", retired)
            # The replacement takes the newest original's rowid: its place in registration order,
            # which the last-wins rule of the reader uses, stays where its newest rows were.
            tx.execute(
                "INSERT INTO metric_files(rowid, file_id, path, format, schema_version, schema_hash, "
                "project, run_group_id, run_id, row_count, digest, min_step, max_step, created_at) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (files[-1][0], file_id, relative, schema.METRIC_FILE_FORMAT, schema.METRIC_SCHEMA_VERSION,
                 schema.METRIC_SCHEMA_HASH, project, group, run_id, rows,
                 hashlib.sha256(data).hexdigest(), min(min_steps, default=None), max(max_steps, default=None),
                 now),
            )
            tx.execute(
                "INSERT INTO metric_summary_files(file_id, run_id, summarized_at) VALUES (?, ?, ?)",
                (file_id, run_id, now),
            )
            if first_last is not None:
                tx.execute("INSERT INTO metric_file_metrics(file_id, run_id, first_metric, last_metric) "
                           "VALUES (?, ?, ?, ?)", (file_id, run_id, *first_last))
            tx.execute(
                "UPDATE metric_summaries SET latest_file_id = ? "
                f"WHERE run_id = ? AND latest_file_id IN ({marks})",
                (file_id, run_id, *retired),
            )
            tx.executemany(
                "INSERT OR REPLACE INTO metric_file_retirements(file_id, path, run_id, replaced_by, "
                "retired_at, retired_unix) VALUES (?, ?, ?, ?, ?, ?)",
                [(f[1], f[2], run_id, file_id, now, time.time()) for f in files],
            )
    except _Lost:
        path.unlink(missing_ok=True)
        return None  # a concurrent compaction merged some of these files first
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    levels(relative, file_id)  # derived, after the swap: a reader computes them till then
    return CompactionResult(file_id, retired, rows)


class _Lost(StoreError):
    pass


def delete_retired(store: ExpStore, *, grace_seconds: float, now: float | None = None) -> int:
    """Delete retired files older than the grace period; returns how many were removed."""
    cutoff = (time.time() if now is None else now) - grace_seconds
    due = store.connection().execute(
        "SELECT file_id, path FROM metric_file_retirements WHERE retired_unix <= ?", (cutoff,)
    ).fetchall()
    for _, path in due:
        store.absolute(path).unlink(missing_ok=True)
        store.absolute(levels_path(path)).unlink(missing_ok=True)
    if due:
        with store.write_transaction() as tx:
            gone = [(f,) for f, _ in due]
            tx.executemany("DELETE FROM metric_file_retirements WHERE file_id = ?", gone)
            # The retired file's other rows go with it: its summarized mark (its rows are counted in the
            # replacement's, which has its own) and its metric range (dropped at the swap already; again here
            # for a swap made before that).
            tx.executemany("DELETE FROM metric_summary_files WHERE file_id = ?", gone)
            tx.executemany("DELETE FROM metric_file_metrics WHERE file_id = ?", gone)
    return len(due)


# Dictionary encoding pays for the repeated strings (one project/run/metric/source per many rows) only.
_DICTIONARY_COLUMNS = ["project", "run_group_id", "run_id", "metric_name", "unit", "source", "split"]
_STATISTICS_COLUMNS = ["metric_name", "step", "wall_time", "value"]  # the reader prunes by metric_name


def parquet_bytes(table) -> bytes:
    """A merged ``tau.metrics.scalar.v2`` table as Parquet file bytes (Snappy: a compacted file is read
    many times; a delivery's file, written by :mod:`..format.parquet_encoder`, is GZIP)."""
    import numpy as np
    import pyarrow.parquet as pq

    sink = io.BytesIO()
    # Row groups cut at metric boundaries, as a delivered file's (metric_files.metric_row_groups): their
    # metric_name statistics let a reader of one metric skip the others. Dictionaries of steps, times,
    # values and tags (every point's tags differ: jsonl.history_line) and min/max statistics of tags
    # would be built only to be thrown away (measured: 2.5x the time to write).
    rows = table.num_rows
    names = table.column("metric_name").to_numpy(zero_copy_only=False)
    metric_starts = [0, *(np.flatnonzero(names[1:] != names[:-1]) + 1).tolist()] if rows else [0]
    starts = metric_row_groups(metric_starts, rows)
    with pq.ParquetWriter(sink, table.schema, compression="snappy", use_dictionary=_DICTIONARY_COLUMNS,
                          write_statistics=_STATISTICS_COLUMNS) as writer:
        for start, stop in zip(starts, [*starts[1:], rows], strict=True):
            writer.write_table(table.slice(start, stop - start), row_group_size=max(stop - start, 1))
    return sink.getvalue()
