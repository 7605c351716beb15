"""Compaction: merge a run's many small metric files into one immutable file, atomically for readers.

A live run delivers a chunk every few seconds, and one small Parquet file per chunk would make
every read open thousands of files. When a run has more than ``min_files`` files under
``small_file_bytes``, they are merged into one replacement (rows sorted like any written file,
ties kept in registration order). One transaction registers the replacement and retires the
originals, so a reader's file list is either the old set or the new one. The replacement is
marked summarized without being merged into ``metric_summaries`` (its rows are already counted).
Retired files stay on disk for ``grace_seconds`` because a reader may have listed them just
before the swap; a later compaction or :func:`delete_retired` removes them.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from . import schema
from .metric_files import metric_file_path, parquet_bytes
from .store import ExpStore, StoreError, utc_now_rfc3339

__all__ = ["CompactionPolicy", "CompactionResult", "compact_run", "delete_retired"]


@dataclass(frozen=True, slots=True)
class CompactionPolicy:
    min_files: int = 64  # compact once a run has more small files than this
    small_file_bytes: int = 1 << 20
    grace_seconds: float = 300.0
    # One merge reads its files whole: the oldest small files up to this many bytes (at least two), so a
    # run with a backlog of thousands of chunk files is compacted in bounded steps, never all at once.
    max_merge_bytes: int = 2 << 20


@dataclass(frozen=True, slots=True)
class CompactionResult:
    file_id: str
    retired: tuple[str, ...]
    row_count: int


def compact_run(
    store: ExpStore, run_id: str, *, policy: CompactionPolicy | None = None, force: bool = False
) -> CompactionResult | None:
    """Compact ``run_id``'s small files if the policy (or ``force``, for >= 2 files) says so."""
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
    files = conn.execute(
        "SELECT rowid, file_id, path, project, run_group_id, min_step, max_step FROM metric_files "
        "WHERE run_id = ? AND format = ? ORDER BY rowid",
        (run_id, schema.METRIC_FILE_FORMAT),
    ).fetchall()
    small = []
    sizes = []
    for f in files:
        try:
            size = store.absolute(f[2]).stat().st_size
        except FileNotFoundError:
            continue  # retired by a concurrent compaction; not ours to merge
        if size < policy.small_file_bytes:
            small.append(f)
            sizes.append(size)
    result = None
    if len(small) >= 2 and (force or len(small) > policy.min_files):
        total, count = 0, 0
        while count < len(small) and (count < 2 or total + sizes[count] <= policy.max_merge_bytes):
            total += sizes[count]
            count += 1
        result = _merge(store, run_id, small[:count])
    delete_retired(store, grace_seconds=policy.grace_seconds)
    return result


def _merge(store: ExpStore, run_id: str, files: list[tuple]) -> CompactionResult | None:
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
    experiment_id = store.connection().execute(
        "SELECT experiment_id FROM runs WHERE run_id = ?", (run_id,)
    ).fetchone()
    project, group = files[-1][3] or "", files[-1][4] or ""
    file_id = "compacted-" + uuid.uuid4().hex
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
            # The replacement takes the newest original's rowid: its place in registration order,
            # which the last-wins rule of the reader uses, stays where its newest rows were.
            tx.execute(
                "INSERT INTO metric_files(rowid, file_id, path, format, schema_version, schema_hash, "
                "project, run_group_id, run_id, row_count, digest, min_step, max_step, created_at) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (files[-1][0], file_id, relative, schema.METRIC_FILE_FORMAT, schema.METRIC_SCHEMA_VERSION,
                 schema.METRIC_SCHEMA_HASH, project, group, run_id, merged.num_rows,
                 hashlib.sha256(data).hexdigest(), min(min_steps, default=None), max(max_steps, default=None),
                 now),
            )
            tx.execute(
                "INSERT INTO metric_summary_files(file_id, run_id, summarized_at) VALUES (?, ?, ?)",
                (file_id, run_id, now),
            )
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
    return CompactionResult(file_id, retired, merged.num_rows)


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
    if due:
        with store.write_transaction() as tx:
            tx.executemany("DELETE FROM metric_file_retirements WHERE file_id = ?", [(f,) for f, _ in due])
    return len(due)
