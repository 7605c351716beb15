"""Clustering a run's files by metric: each metric's rows in one file, so a reader opens one file for it.

A wide run (thousands of metrics logged at every step) is delivered as files that each hold every metric
for a range of steps: one metric of a 2,000-metric run imported in 4 MiB batches sits in 21 files, and a
cold read of it opens all 21. :func:`cluster_run` rewrites such a run's files as files that each hold a
range of metric names (sorted by name, then step) over all steps, at most ``max_rows`` rows apiece: the
metrics are cut into consecutive name ranges by their row counts (``metric_summaries.count``), one range a
file. The rows, their order and the last-wins rule are kept (ties in registration order, as compaction
keeps them: :mod:`.compaction`); the files keep TauGrid's schema and metric-boundary row groups.

It is an optimisation for runs whose history is written at once: ``taunotebook import`` starts it in a
child process when its runs' files are all written (:func:`start_clustering`, ``python -m`` this module)
and does not wait for it -- the run reads right before, during and after, and a child killed at any point
leaves it as it was or clustered. A run with a metric longer than ``max_rows`` rows (a long narrow run, whose files
already hold few metrics each) or that would not come out in fewer files is left alone. One transaction
swaps the files, as compaction does: the replacements take the retired files' newest rowids (their place
in registration order), the retired files stay on disk for the grace period.
"""

from __future__ import annotations

import argparse
import hashlib
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence

from tau_collector.collect.process_memory import release_arrow_memory
from tau_collector.expstore.format import schema
from tau_collector.expstore.format.levels import publish_table_levels
from tau_collector.expstore.format.metric_files import metric_file_path
from tau_collector.expstore.maintain.compaction import COMPACTED_PREFIX, parquet_bytes
from tau_collector.expstore.maintain.compaction_process import child_environment
from tau_collector.expstore.maintain.leftovers import sweep_run
from tau_collector.expstore.store import ExpStore, StoreError, utc_now_rfc3339

__all__ = ["CLUSTER_ROWS", "SLICE_ROWS", "cluster_quietly", "cluster_run", "clustering_due", "main", "metric_ranges",
           "start_clustering"]

# Rows of one clustered file: what a clustering holds in memory at once (read, sorted, encoded).
CLUSTER_ROWS = 262_144


def metric_ranges(counts: list[tuple[str, int]], max_rows: int) -> list[tuple[str, str, int]] | None:
    """``(first, last, rows)`` name ranges of consecutive metrics (``counts`` sorted by name) holding at most
    ``max_rows`` rows each; None when one metric alone holds more."""
    ranges: list[tuple[str, str, int]] = []
    first, last, rows = None, None, 0
    for name, count in counts:
        if count > max_rows:
            return None
        if first is not None and rows + count > max_rows:
            ranges.append((first, last, rows))  # type: ignore[arg-type]
            first, rows = None, 0
        if first is None:
            first = name
        last, rows = name, rows + count
    if first is not None:
        ranges.append((first, last, rows))  # type: ignore[arg-type]
    return ranges


def cluster_run(store: ExpStore, run_id: str, *, max_rows: int = CLUSTER_ROWS) -> list[str] | None:
    """Rewrite ``run_id``'s files as files of consecutive metric-name ranges; the new file ids, or None when
    the run is left as it is (see the module doc) or a concurrent compaction changed its files first."""
    sweep_run(store, run_id)  # what an earlier clustering or writer killed midway left (.leftovers)
    conn = store.connection()
    files = conn.execute(
        "SELECT rowid, file_id, path, project, run_group_id, row_count, min_step, max_step FROM metric_files "
        "WHERE run_id = ? AND format = ? ORDER BY rowid", (run_id, schema.METRIC_FILE_FORMAT)).fetchall()
    if len(files) < 2:
        return None
    counts = conn.execute("SELECT metric_name, count FROM metric_summaries WHERE run_id = ? ORDER BY metric_name",
                          (run_id,)).fetchall()
    ranges = metric_ranges(counts, max_rows)
    # The summaries count every row of every summarized file: a mismatch (a file not summarized) says the
    # ranges would not hold what the files hold.
    if ranges is None or len(ranges) >= len(files) or sum(r[2] for r in ranges) != sum(f[5] or 0 for f in files):
        return None
    experiment = conn.execute("SELECT experiment_id FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    project, group = files[-1][3] or "", files[-1][4] or ""
    import pyarrow.compute as pc

    written: list[tuple[str, str, int, int | None, int | None, str, str, str]] = []
    published = []
    try:
        footers: dict[str, object] = {}  # each file's footer, parsed once for all the ranges
        for first, last, _ in ranges:
            table = _rows_between(store, files, first, last, footers)
            data = parquet_bytes(table)
            file_id = COMPACTED_PREFIX + uuid.uuid4().hex
            relative = metric_file_path(project, experiment[0] if experiment else "", group, run_id, file_id)
            published.append(store.publish_file(relative, lambda p, data=data: p.write_bytes(data)))
            bounds = pc.min_max(table.column("step"))  # a null step (another writer's row) is no bound
            low, high = bounds["min"].as_py(), bounds["max"].as_py()
            written.append((file_id, relative, table.num_rows, low, high, hashlib.sha256(data).hexdigest(),
                            first, last))
            published.extend(publish_table_levels(store, relative, file_id, table))  # derived: see levels.py
            del table, data  # the pool keeps the pages for the next range: mapping them afresh costs more
        release_arrow_memory()
        if not _swap(store, run_id, files, written, project, group):
            for path in published:
                path.unlink(missing_ok=True)
            return None
    except BaseException:
        for path in published:
            path.unlink(missing_ok=True)
        raise
    return [w[0] for w in written]


def cluster_quietly(store: ExpStore, run_id: str, *, max_rows: int = CLUSTER_ROWS) -> list[str] | None:
    """:func:`cluster_run` where its failure must not fail what asked for it (an import whose rows are
    already committed): a busy index, a file retired meanwhile, an unreadable file leave the run as it is."""
    try:
        return cluster_run(store, run_id, max_rows=max_rows)
    except (StoreError, OSError, sqlite3.Error):
        return None
    except Exception as exc:
        arrow = sys.modules.get("pyarrow")
        if arrow is None or not isinstance(exc, arrow.ArrowException):
            raise
        return None


def clustering_due(store: ExpStore, run_ids: Sequence[str], max_rows: int = CLUSTER_ROWS) -> list[str]:
    """Those of ``run_ids`` that :func:`cluster_run` may rewrite: more files than its rows need at ``max_rows``
    a file, and no metric longer than that. Two indexed queries each, so a run imported in one file, a long
    narrow run or a run clustered already starts no child."""
    conn = store.connection()
    due = []
    for run_id in run_ids:
        files = conn.execute("SELECT COUNT(*) FROM metric_files WHERE run_id = ? AND format = ?",
                             (run_id, schema.METRIC_FILE_FORMAT)).fetchone()[0]
        rows, longest = conn.execute("SELECT SUM(count), MAX(count) FROM metric_summaries WHERE run_id = ?",
                                     (run_id,)).fetchone()
        if longest is not None and longest <= max_rows and files > max(1, -(-rows // max_rows)):
            due.append(run_id)
    return due


def start_clustering(store: ExpStore, run_ids: Sequence[str], *,
                     max_rows: int = CLUSTER_ROWS) -> subprocess.Popen | None:
    """Start a child that clusters those of ``run_ids`` that are due, and return it without waiting (None when
    none is due). It runs in its own session: a Ctrl-C meant for the import that started it does not stop it
    (stopping it would be harmless: see the module doc)."""
    due = clustering_due(store, run_ids, max_rows)
    if not due:
        return None
    command = [sys.executable, "-m", __name__, "--store", str(store.root), "--max-rows", str(max_rows)]
    for run_id in due:
        command += ["--run", run_id]
    return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            env=child_environment(), start_new_session=True)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tau_collector.expstore.maintain.metric_clusters --store DIR --run ID [--run ID ...]``: cluster
    each run (:func:`cluster_quietly`: a run that cannot be clustered now is left as it is); 1 when the store
    cannot be opened."""
    from tau_collector.collect.process_memory import bound_process_memory, pandas_kept_out

    parser = argparse.ArgumentParser(prog="python -m " + __name__, description="cluster runs' files by metric")
    parser.add_argument("--store", required=True)
    parser.add_argument("--run", action="append", required=True)
    parser.add_argument("--max-rows", type=int, default=CLUSTER_ROWS)
    args = parser.parse_args(argv)
    bound_process_memory()
    try:
        store = ExpStore(args.store, writable=True)
        with pandas_kept_out():
            for run_id in args.run:
                cluster_quietly(store, run_id, max_rows=args.max_rows)
        store.close()
    except (StoreError, OSError, sqlite3.Error) as exc:
        sys.stderr.write(f"taunotebook: clustering the runs of {args.store} by metric: {exc}\n")
        return 1
    return 0


def _rows_between(store: ExpStore, files: list[tuple], first: str, last: str, footers: dict[str, object]):
    """The rows of metrics ``first``..``last`` from every file, sorted as a written file's: metric, step, wall
    time, then registration order (file, row) -- the order the last-wins rule reads ties in."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    pieces = []  # each file's row groups that can hold the range, in registration order
    for f in files:
        path = store.absolute(f[2])
        try:
            parquet = pq.ParquetFile(path, metadata=footers.get(f[1]))
            meta = footers[f[1]] = parquet.metadata
            column = meta.schema.names.index("metric_name")
            groups = []
            for g in range(meta.num_row_groups):
                stats = meta.row_group(g).column(column).statistics
                # A group without statistics (a file written by another writer) is read and filtered.
                if stats is None or not stats.has_min_max or (stats.min <= last and stats.max >= first):
                    groups.append(g)
            if groups:
                pieces.append(parquet.read_row_groups(groups))
        except (pa.ArrowException, ValueError) as exc:
            raise StoreError(f"{path}: cannot be read for clustering by metric: {exc}") from None
    if _steps_ascend(files):
        merged = _by_metric(pieces, first, last)
    else:
        tables = []
        for rank, table in enumerate(pieces):
            names = table.column("metric_name")
            table = table.filter(pc.and_(pc.greater_equal(names, first), pc.less_equal(names, last)))
            n = table.num_rows
            table = table.append_column("__rank", pa.array([rank] * n, pa.int64()))
            tables.append(table.append_column("__row", pa.array(range(n), pa.int64())))
        merged = pa.concat_tables(tables).sort_by(
            [("metric_name", "ascending"), ("step", "ascending"), ("wall_time", "ascending"), ("__rank", "ascending"),
             ("__row", "ascending")]).drop_columns(["__rank", "__row"])
    return merged.cast(schema.metric_arrow_schema())


# Below this many rows per (metric, file) slice on average, one stable sort of the rows by metric beats
# gathering the slices one by one (10,000 metrics of a few rows a file).
SLICE_ROWS = 32


def _by_metric(pieces: list, first: str, last: str):
    """Files whose steps ascend file after file, each sorted by (metric, step, wall time, row): each metric's
    slice of each file, metric after metric and file after file, is the full order. The rows are gathered by
    slices when they are long (no filter, sort or take), else put in that order by one stable integer sort."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    cuts = []  # (table, names, first row of each metric's run) of each file
    for table in pieces:
        names = table.column("metric_name").combine_chunks()
        n = len(names)
        if n:
            cuts.append((table, names, np.concatenate(([0], np.flatnonzero(
                pc.not_equal(names.slice(1), names.slice(0, n - 1)).to_numpy(zero_copy_only=False)) + 1))))
    if sum(len(c[1]) for c in cuts) >= SLICE_ROWS * sum(len(c[2]) for c in cuts):
        by_name: dict[str, list] = {}
        for table, names, starts in cuts:
            ends = [*starts[1:].tolist(), len(names)]
            for start, end, name in zip(starts.tolist(), ends, names.take(starts).to_pylist(), strict=True):
                if first <= name <= last:
                    by_name.setdefault(name, []).append(table.slice(start, end - start))
        return pa.concat_tables([piece for name in sorted(by_name) for piece in by_name[name]]).combine_chunks()
    merged = pa.concat_tables([c[0] for c in cuts])
    names = merged.column("metric_name")
    merged = merged.filter(pc.and_(pc.greater_equal(names, first), pc.less_equal(names, last)))
    coded = pc.dictionary_encode(merged.column("metric_name")).combine_chunks()
    rank = np.empty(len(coded.dictionary), dtype=np.int64)
    rank[np.argsort(np.array(coded.dictionary.to_pylist(), dtype=object), kind="stable")] = np.arange(rank.size)
    return merged.take(np.argsort(rank[coded.indices.to_numpy()], kind="stable"))


def _steps_ascend(files: list[tuple]) -> bool:
    """Whether each file's steps all come after the previous file's (a history imported in order)."""
    last = None
    for f in files:
        low, high = f[6], f[7]
        if low is None or high is None or (last is not None and low <= last):
            return False
        last = high
    return True


def _swap(store: ExpStore, run_id: str, files: list[tuple], written: list[tuple], project: str, group: str) -> bool:
    """Retire ``files`` and register ``written`` in one transaction; False when some of ``files`` are gone."""
    retired = [f[1] for f in files]
    # The replacements take the newest retired rowids, in order: their place among files registered
    # meanwhile by a live writer (later rowids) stays before those, as the merged rows' did.
    rowids = sorted(f[0] for f in files)[-len(written):]
    now = utc_now_rfc3339()
    with store.write_transaction() as tx:
        still = 0
        for at in range(0, len(retired), 500):
            part = retired[at:at + 500]
            still += tx.execute(f"SELECT COUNT(*) FROM metric_files WHERE file_id IN ({','.join('?' * len(part))})",
                                part).fetchone()[0]
        if still != len(retired):
            return False  # a concurrent compaction merged some of these files first
        tx.executemany("DELETE FROM metric_files WHERE file_id = ?", [(f,) for f in retired])
        tx.executemany("DELETE FROM metric_file_metrics WHERE file_id = ?", [(f,) for f in retired])
        tx.executemany("INSERT INTO metric_file_metrics(file_id, run_id, first_metric, last_metric) "
                       "VALUES (?, ?, ?, ?)", [(w[0], run_id, w[6], w[7]) for w in written])
        tx.executemany(
            "INSERT INTO metric_files(rowid, file_id, path, format, schema_version, schema_hash, project, "
            "run_group_id, run_id, row_count, digest, min_step, max_step, created_at) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [(rowid, w[0], w[1], schema.METRIC_FILE_FORMAT, schema.METRIC_SCHEMA_VERSION, schema.METRIC_SCHEMA_HASH,
              project, group, run_id, w[2], w[5], w[3], w[4], now) for rowid, w in zip(rowids, written, strict=True)])
        # Already counted in metric_summaries: the replacements are marked summarized, never merged again.
        tx.executemany("INSERT INTO metric_summary_files(file_id, run_id, summarized_at) VALUES (?, ?, ?)",
                       [(w[0], run_id, now) for w in written])
        # Only a latest row held by a retired file moved: one a concurrent import wrote meanwhile (a newer
        # file, not among these) stays where it is.
        for at in range(0, len(retired), 500):
            part = retired[at:at + 500]
            tx.executemany(
                "UPDATE metric_summaries SET latest_file_id = ? WHERE run_id = ? AND metric_name >= ? "
                f"AND metric_name <= ? AND latest_file_id IN ({','.join('?' * len(part))})",
                [(w[0], run_id, w[6], w[7], *part) for w in written])
        tx.executemany(
            "INSERT OR REPLACE INTO metric_file_retirements(file_id, path, run_id, replaced_by, retired_at, "
            "retired_unix) VALUES (?, ?, ?, ?, ?, ?)",
            [(f[1], f[2], run_id, ",".join(w[0] for w in written), now, time.time()) for f in files])
    return True


if __name__ == "__main__":
    sys.exit(main())
