"""The index rows the writer keeps, read back: runs with their tags and metric names, experiments, a run's files.

The writer (:mod:`.writer`) registers these rows; readers ask this module for them instead of spelling the
tables out. Summaries are :mod:`.summaries`', listings :mod:`.listing`'s, configurations :mod:`.config_rows`'
and events :mod:`.run_events`'.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from tau_collector.reads.rows import ExperimentRow, RunRow

__all__ = ["all_runs", "experiments", "file_metric_range", "run", "run_file_metric_ranges", "run_files", "runs_by_id"]

RUN_COLUMNS = (
    "run_id, project, experiment_id, run_group_id, parent_run_id, state, owner, created_at, started_at, "
    "completed_at, config_hash, code_sha, image_digest, tau_command, result_uri"
)


def all_runs(conn: sqlite3.Connection) -> list[RunRow]:
    """Every run, newest first, with its tags and metric names (call inside one read transaction)."""
    rows = conn.execute(f"SELECT {RUN_COLUMNS} FROM runs ORDER BY created_at DESC, run_id").fetchall()
    tags = _group(conn.execute("SELECT scope_id, key, value FROM tags WHERE scope_type = 'run'"))
    names = _group_names(conn.execute("SELECT run_id, metric_name FROM metric_summaries ORDER BY run_id, metric_name"))
    return [RunRow(*row, tags=tags.get(row[0], {}), metric_names=names.get(row[0], ())) for row in rows]


def run(conn: sqlite3.Connection, run_id: str, project: str | None = None) -> RunRow | None:
    """The run with exactly this id (and project, when given), with its tags and metric names, or None."""
    sql = f"SELECT {RUN_COLUMNS} FROM runs WHERE run_id = ?"
    params: list[str] = [run_id]
    if project is not None:
        sql += " AND project = ?"
        params.append(project)
    row = conn.execute(sql, params).fetchone()
    if row is None:
        return None
    tags = dict(conn.execute(
        "SELECT key, value FROM tags WHERE scope_type = 'run' AND scope_id = ? ORDER BY key", (run_id,)).fetchall())
    names = tuple(n for (n,) in conn.execute(
        "SELECT metric_name FROM metric_summaries WHERE run_id = ? ORDER BY metric_name", (run_id,)))
    return RunRow(*row, tags=tags, metric_names=names)


def runs_by_id(conn: sqlite3.Connection, run_ids: Sequence[str]) -> list[RunRow]:
    """The runs among ``run_ids``, in that order, with their tags (no metric names), in two queries."""
    marks = ",".join("?" * len(run_ids))
    rows = {r[0]: r for r in conn.execute(f"SELECT {RUN_COLUMNS} FROM runs WHERE run_id IN ({marks})", run_ids)}
    tags = _group(conn.execute(
        f"SELECT scope_id, key, value FROM tags WHERE scope_type = 'run' AND scope_id IN ({marks})", run_ids))
    return [RunRow(*rows[i], tags=tags.get(i, {})) for i in run_ids if i in rows]


def experiments(conn: sqlite3.Connection) -> list[ExperimentRow]:
    """Every row of the ``experiments`` table, by id."""
    return [ExperimentRow(*row) for row in conn.execute(
        "SELECT experiment_id, project, name, description, source, created_at, updated_at "
        "FROM experiments ORDER BY experiment_id")]


def run_files(conn: sqlite3.Connection, run_id: str) -> list[tuple]:
    """The run's registered metric files in registration order: ``(file_id, path, min_step, max_step, row_count)``."""
    return conn.execute(
        "SELECT file_id, path, min_step, max_step, row_count FROM metric_files WHERE run_id = ? ORDER BY rowid",
        (run_id,),
    ).fetchall()


def file_metric_range(conn: sqlite3.Connection, file_id: str) -> tuple[str, str] | None:
    """The first and last metric name the file holds (``metric_file_metrics``), or None when not recorded.
    Raises :class:`sqlite3.OperationalError` on a store written before the table."""
    return conn.execute(
        "SELECT first_metric, last_metric FROM metric_file_metrics WHERE file_id = ?", (file_id,)).fetchone()


def run_file_metric_ranges(conn: sqlite3.Connection, run_id: str) -> dict[str, tuple[str, str]]:
    """The first and last metric name of each of the run's files that has them recorded, in one query (a cold
    read of one metric of a run of many files asks for them all). Raises :class:`sqlite3.OperationalError` on a
    store written before the table."""
    return {file_id: (first, last) for file_id, first, last in conn.execute(
        "SELECT file_id, first_metric, last_metric FROM metric_file_metrics WHERE run_id = ?", (run_id,))}


def _group(cursor: Iterable[tuple[str, str, str]]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for scope_id, key, value in cursor:
        out.setdefault(scope_id, {})[key] = value
    return dict(out)


def _group_names(cursor: Iterable[tuple[str, str]]) -> dict[str, tuple[str, ...]]:
    out: dict[str, list[str]] = {}
    for run_id, name in cursor:
        out.setdefault(run_id, []).append(name)
    return {k: tuple(v) for k, v in out.items()}
