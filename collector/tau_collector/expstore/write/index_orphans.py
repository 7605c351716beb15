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
anti-join per table over the whole index (a second or so per million rows); it runs in the migration of
the first writer to open the store with this code and is then marked done in ``schema_meta``
(:data:`SWEEP_VERSION`), so a compaction child opening the store every few seconds does not repeat it. From
then on the rows leave with their files and the tables hold the files a store has.
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
        removed[table] = tx.execute(
            f"DELETE FROM {table} WHERE NOT EXISTS (SELECT 1 FROM metric_files f WHERE f.file_id = {table}.file_id) "
            f"AND NOT EXISTS (SELECT 1 FROM metric_file_retirements r WHERE r.file_id = {table}.file_id)"
        ).rowcount
    return removed


def ensure_no_orphaned_file_rows(tx: sqlite3.Connection) -> dict[str, int]:
    """The writer's migration: :func:`sweep_orphaned_file_rows` once per store (marked in ``schema_meta``)."""
    done = tx.execute("SELECT value FROM schema_meta WHERE key = ?", (_META_KEY,)).fetchone()
    if done is not None and done[0] == SWEEP_VERSION:
        return {}
    removed = sweep_orphaned_file_rows(tx)
    tx.execute("INSERT OR REPLACE INTO schema_meta(key, value) VALUES (?, ?)", (_META_KEY, SWEEP_VERSION))
    return removed
