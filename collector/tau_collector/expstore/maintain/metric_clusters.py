"""Clustering a run's files by metric: each metric's rows in one file, so a reader opens one file for it.

A wide run (thousands of metrics logged at every step) is delivered as files that each hold every metric
for a range of steps: one metric of a 2,000-metric run imported in 4 MiB batches sits in 21 files, and a
cold read of it opens all 21. :func:`cluster_run` rewrites such a run's files as files that each hold a
range of metric names (sorted by name, then step) over all steps, at most ``max_rows`` rows apiece: the
metrics are cut into consecutive name ranges by their row counts (``metric_summaries.count``), one range a
file. The rows, their order and the last-wins rule are kept (ties in registration order, as compaction
keeps them: :mod:`.compaction`); the files keep TauGrid's schema and metric-boundary row groups.

For runs whose history is written at once, ``taunotebook import`` starts it in a child process when its runs'
files are all written (:func:`start_clustering`, ``python -m`` this module) and does not wait for it -- the
run reads right before, during and after, and a child killed at any point leaves it as it was or clustered. A
run with a metric longer than ``max_rows`` rows (a long narrow run, whose files already hold few metrics each)
or that would not come out in fewer files is left alone. One transaction swaps the files, as compaction does:
the replacements take the retired files' newest rowids (their place in registration order), the retired files
stay on disk for the grace period.

Live wide runs are clustered by the sidecar's maintenance thread in a layout of their own (a base file per metric
range and tiered deltas: :mod:`.live_clusters`). Clustering reads with :mod:`..format.parquet_reader` (only the row
groups whose ``metric_name`` statistics can hold the range) and writes with :mod:`..format.parquet_encoder`, so
compaction can read what it wrote. A file of another Parquet writer (:class:`.compaction.ForeignFileError`: a store
clustered before the encoder did it holds pyarrow's) is read with pyarrow here (an import's child, never the
sidecar), so such a run is clustered again; a damaged file leaves the run as it is. Clustered files are named
``clustered-...`` (:data:`.compaction.CLUSTERED_PREFIX`); compaction does not merge them. """

from __future__ import annotations

import argparse
import hashlib
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tau_collector.expstore.format import schema
from tau_collector.expstore.format.levels import publish_sorted_levels
from tau_collector.expstore.format.metric_files import metric_file_path, metric_row_groups
from tau_collector.expstore.format.parquet_encoder import Coded, Column, PlainTexts, encode_parquet
from tau_collector.expstore.maintain.compaction import CLUSTERED_PREFIX, ForeignFileError, merged_columns, read_parts
from tau_collector.expstore.maintain.compaction_process import child_environment
from tau_collector.expstore.maintain.leftovers import sweep_run
from tau_collector.expstore.store import ExpStore, StoreError, utc_now_rfc3339

__all__ = ["CLUSTER_ROWS", "cluster_quietly", "cluster_run", "clustering_due", "main", "metric_ranges",
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
    project, group = files[-1][3] or "", files[-1][4] or ""
    written: list[Written] = []
    published: list = []
    try:
        for first, last, _ in ranges:
            # Only the row groups whose metric_name statistics can hold the range are read (.parquet_reader).
            try:
                parts = read_parts(store, files, (first, last), pyarrow_fallback=True)
            except ForeignFileError as exc:
                path = str(store.absolute(next(f[2] for f in files if f[1] == exc.file_id)))
                reason = str(exc).removeprefix(path + ": ")
                raise StoreError(f"{path}: cannot be read for clustering by metric: {reason}") from None
            if parts:
                written += _publish(store, run_id, project, group, merged_columns(parts, files), [first], published)
        if not swap_files(store, run_id, files, written, project, group):
            for path in published:
                path.unlink(missing_ok=True)
            return None
    except BaseException:
        for path in published:
            path.unlink(missing_ok=True)
        raise
    return [w.file_id for w in written]


@dataclass(frozen=True, slots=True)
class Written:
    """A clustered file published, to register: its id, path, rows, step bounds, digest and metric range."""

    file_id: str
    path: str
    rows: int
    min_step: int | None
    max_step: int | None
    digest: str
    first: str
    last: str


def _publish(store: ExpStore, run_id: str, project: str, group: str, merged: tuple, cuts: list[str],
             published: list) -> list[Written]:
    """Write ``merged`` (:func:`.compaction.merged_columns`, sorted by metric) as one file per metric range with
    :mod:`..format.parquet_encoder`, and their levels: a range starts at each name of ``cuts`` (ascending; the
    first range also holds the names before the first cut; a range holding no row makes no file). Every path
    published is appended to ``published``."""
    rows, columns, names, metric, step, step_valid, wall, wall_valid, value = merged
    experiment = store.connection().execute("SELECT experiment_id FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    # metric codes are ranks in the sorted names: a range of names is a range of rows
    at = np.searchsorted(np.array(names, dtype=object), np.array(cuts[1:], dtype=object)) if names else []
    stops = [*np.searchsorted(metric, at, side="left").tolist(), rows]
    written: list[Written] = []
    start = 0
    for stop in stops:
        if stop <= start:
            continue
        n = stop - start
        part = [_slice(c, start, stop) for c in columns]
        m = metric[start:stop]
        starts = [0, *(np.flatnonzero(m[1:] != m[:-1]) + 1).tolist()]
        data = encode_parquet(part, n, metric_row_groups(starts, n))
        file_id = CLUSTERED_PREFIX + uuid.uuid4().hex
        relative = metric_file_path(project, experiment[0] if experiment else "", group, run_id, file_id)
        published.append(store.publish_file(relative, lambda p, data=data: p.write_bytes(data)))
        s = step[start:stop] if step_valid is None else step[start:stop][step_valid[start:stop]]
        low, high = (int(s.min()), int(s.max())) if s.size else (None, None)
        lo, hi = int(m[0]), int(m[-1])
        written.append(Written(file_id, relative, n, low, high, hashlib.sha256(data).hexdigest(), names[lo],
                                names[hi]))
        if step_valid is None:  # rows a reader skips (no step): it computes the levels from what it keeps
            published.extend(publish_sorted_levels(
                store, relative, file_id, n, names[lo:hi + 1], m - lo, step[start:stop], wall[start:stop],
                None if wall_valid is None else wall_valid[start:stop], value[start:stop]))
        start = stop
    return written


def _slice(column: Column, start: int, stop: int) -> Column:
    """``column``'s rows ``start:stop``."""
    values = column.values
    if isinstance(values, Coded):
        values = Coded(values.values, values.codes[start:stop], values.pieces)
    elif isinstance(values, PlainTexts):
        values = PlainTexts(values.data[values.bounds[start]:values.bounds[stop]],
                            values.bounds[start:stop + 1] - values.bounds[start])
    elif isinstance(values, np.ndarray | list):
        values = values[start:stop]
    valid = None if column.valid is None else column.valid[start:stop]
    return Column(column.name, column.kind, column.required, values, valid=valid, statistics=column.statistics)


def cluster_quietly(store: ExpStore, run_id: str, *, max_rows: int = CLUSTER_ROWS) -> list[str] | None:
    """:func:`cluster_run` where its failure must not fail what asked for it (an import whose rows are
    already committed): a busy index, a file retired meanwhile, a file of another Parquet writer
    (:class:`.compaction.ForeignFileError`) leave the run as it is."""
    try:
        return cluster_run(store, run_id, max_rows=max_rows)
    except (StoreError, OSError, sqlite3.Error):
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


def swap_files(store: ExpStore, run_id: str, files: list[tuple], written: list[Written], project: str, group: str, *,
          fresh: bool = False) -> bool:
    """Retire ``files`` and register ``written`` in one transaction; False when some of ``files`` are gone, or
    (``fresh``) when a file registered meanwhile makes moving their rows unsafe (:func:`_moves_safely`)."""
    retired = [f[1] for f in files]
    now = utc_now_rfc3339()
    with store.write_transaction() as tx:
        still = 0
        for at in range(0, len(retired), 500):
            part = retired[at:at + 500]
            still += tx.execute(f"SELECT COUNT(*) FROM metric_files WHERE file_id IN ({','.join('?' * len(part))})",
                                part).fetchone()[0]
        if still != len(retired):
            return False  # a concurrent compaction merged some of these files first
        if fresh:
            # The replacements go after every file of the run, those a live writer registered meanwhile too.
            if not _moves_safely(clustering_listing(tx, run_id), set(retired)):
                return False
            rowids: list[int | None] = [None] * len(written)
        else:
            # The replacements take the newest retired rowids, in order: their place among files registered
            # meanwhile by a live writer (later rowids) stays before those, as the merged rows' did.
            rowids = sorted(f[0] for f in files)[-len(written):]  # type: ignore[assignment]
        tx.executemany("DELETE FROM metric_files WHERE file_id = ?", [(f,) for f in retired])
        tx.executemany("DELETE FROM metric_file_metrics WHERE file_id = ?", [(f,) for f in retired])
        tx.executemany("INSERT INTO metric_file_metrics(file_id, run_id, first_metric, last_metric) "
                       "VALUES (?, ?, ?, ?)", [(w.file_id, run_id, w.first, w.last) for w in written])
        tx.executemany(
            "INSERT INTO metric_files(rowid, file_id, path, format, schema_version, schema_hash, project, "
            "run_group_id, run_id, row_count, digest, min_step, max_step, created_at) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [(rowid, w.file_id, w.path, schema.METRIC_FILE_FORMAT, schema.METRIC_SCHEMA_VERSION,
              schema.METRIC_SCHEMA_HASH, project, group, run_id, w.rows, w.digest, w.min_step, w.max_step, now)
             for rowid, w in zip(rowids, written, strict=True)])
        # Already counted in metric_summaries: the replacements are marked summarized, never merged again.
        tx.executemany("INSERT INTO metric_summary_files(file_id, run_id, summarized_at) VALUES (?, ?, ?)",
                       [(w.file_id, run_id, now) for w in written])
        # Only a latest row held by a retired file moved: one a concurrent import wrote meanwhile (a newer
        # file, not among these) stays where it is.
        for at in range(0, len(retired), 500):
            part = retired[at:at + 500]
            tx.executemany(
                "UPDATE metric_summaries SET latest_file_id = ? WHERE run_id = ? AND metric_name >= ? "
                f"AND metric_name <= ? AND latest_file_id IN ({','.join('?' * len(part))})",
                [(w.file_id, run_id, w.first, w.last, *part) for w in written])
        tx.executemany(
            "INSERT OR REPLACE INTO metric_file_retirements(file_id, path, run_id, replaced_by, retired_at, "
            "retired_unix) VALUES (?, ?, ?, ?, ?, ?)",
            [(f[1], f[2], run_id, ",".join(w.file_id for w in written), now, time.time()) for f in files])
    return True


# -- moving files past those registered after them (live clustering, .live_clusters) ------------------------


_NO_STEP_LOW, _NO_STEP_HIGH = -(2**63), 2**63 - 1
_NO_NAME_LOW, _NO_NAME_HIGH = "", "\U0010ffff"


def clustering_listing(conn, run_id: str) -> list[tuple]:
    """The run's files in registration order: ``(rowid, file_id, path, project, run_group_id, row_count, min_step,
    max_step, first_metric, last_metric)`` (the metric range of a file that has none recorded: every name)."""
    return [(*f[:8], _NO_NAME_LOW if f[8] is None else f[8], _NO_NAME_HIGH if f[9] is None else f[9])
            for f in conn.execute(
                "SELECT f.rowid, f.file_id, f.path, f.project, f.run_group_id, f.row_count, f.min_step, f.max_step, "
                "m.first_metric, m.last_metric FROM metric_files f LEFT JOIN metric_file_metrics m "
                "ON m.file_id = f.file_id WHERE f.run_id = ? AND f.format = ? ORDER BY f.rowid",
                (run_id, schema.METRIC_FILE_FORMAT)).fetchall()]


def _moves_safely(listing: list[tuple], moved: set[str]) -> bool:
    """Whether the rows of the ``moved`` files may be registered after every file of the run: the reader breaks
    a tie of (metric, step, wall time) by registration order, so no file registered after one of them may hold
    a metric and a step that file holds (by their recorded ranges; a file without steps recorded holds all)."""
    later: list[tuple] = []  # files registered after the moved file being looked at, newest first
    for f in reversed(listing):
        if f[1] in moved:
            low, high = run_steps(f)
            for x in later:
                x_low, x_high = run_steps(x)
                if x_low <= high and x_high >= low and x[8] <= f[9] and x[9] >= f[8]:
                    return False
        else:
            later.append(f)
    return True


def run_steps(f: tuple) -> tuple[int, int]:
    return (_NO_STEP_LOW if f[6] is None else f[6]), (_NO_STEP_HIGH if f[7] is None else f[7])


if __name__ == "__main__":
    sys.exit(main())
