"""Index rows that name no file: removed once per store, by the writer's migration (never by a reader).

A file's ``metric_summary_files`` row (its rows are counted in ``metric_summaries``) and its
``metric_file_metrics`` row (its metric range) are registered in the transaction that registers the file
(``metric_files``); compaction and clustering retire a file in the transaction that registers its
replacement (``metric_file_retirements``), and :func:`..maintain.compaction.delete_retired` removes both
rows with the retired file. Before issue 30 it removed only the file and its retirement row, so an older
store holds one ``metric_summary_files`` row (and, from before the swap dropped it, a ``metric_file_metrics``
row) for every file it ever compacted away -- a row per chunk ever delivered.

Such a row names a file that is neither registered nor retired: no reader asks for it, and nothing
registers a file under an id it already used (ids are fresh UUIDs), so it is deleted. The sweep is one
pass per table over the whole index (6 s for 1M rows, 99 % orphaned, on this busy 2-core machine); it
runs in the migration of the first writer to open the store with this code and is then marked done in
``schema_meta`` (:data:`SWEEP_VERSION`), so a compaction child opening the store every few seconds does
not repeat it. From then on the rows leave with their files and the tables hold the files a store has.
"""

from __future__ import annotations

import sqlite3

__all__ = ["SWEEP_VERSION", "ensure_no_orphaned_file_rows", "sweep_orphaned_file_rows"]

SWEEP_VERSION = "1"
_META_KEY = "orphaned_file_rows_swept"
_TABLES = ("metric_summary_files", "metric_file_metrics")


def sweep_orphaned_file_rows(tx: sqlite3.Connection) -> dict[str, int]:
    """Inside a write transaction: delete the per-file rows whose file is neither registered nor retired;
    how many went, per table."""
    removed = {}
    for table in _TABLES:
        before = tx.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
        # The rows kept are copied aside and put back: deleting the orphans one by one from the file_id index
        # (random UUIDs) costs ~40x more when they are most of the table, as in an old store.
        tx.execute(f"CREATE TEMP TABLE kept AS SELECT * FROM {table} t WHERE "
                   f"EXISTS (SELECT 1 FROM metric_files f WHERE f.file_id = t.file_id) OR "
                   f"EXISTS (SELECT 1 FROM metric_file_retirements r WHERE r.file_id = t.file_id)")
        try:
            kept = tx.execute("SELECT COUNT(*) FROM kept").fetchone()[0]
            if kept < before:
                tx.execute(f"DELETE FROM {table}")
                tx.execute(f"INSERT INTO {table} SELECT * FROM kept ORDER BY file_id")
        finally:
            tx.execute("DROP TABLE temp.kept")
        removed[table] = before - kept
    return removed


def ensure_no_orphaned_file_rows(tx: sqlite3.Connection) -> dict[str, int]:
    """The writer's migration: :func:`sweep_orphaned_file_rows` once per store (marked in ``schema_meta``)."""
    done = tx.execute("SELECT value FROM schema_meta WHERE key = ?", (_META_KEY,)).fetchone()
    if done is not None and done[0] == SWEEP_VERSION:
        return {}
    removed = sweep_orphaned_file_rows(tx)
    tx.execute("INSERT OR REPLACE INTO schema_meta(key, value) VALUES (?, ?)", (_META_KEY, SWEEP_VERSION))
    return removed
