"""The run and experiment listings kept in the index: what a search or a runs table of 100,000 runs reads.

Three tables of ours beside TauGrid's (``schema.EXTENSION_SQL``), derived from ``runs``, ``tags`` and
``metric_summaries`` and kept by the writer in the transaction that changes those (:func:`refresh_runs`):

- ``run_listing``: per run its workspace (the ``tau_workspace`` tag, ``''`` when untagged), ids,
  state, TauGrid's lifecycle state (:mod:`tau_collector.reads.lifecycle`), creation time and "run time" (started, else
  completed, else created: TauGrid's ``latestRunTimestamp``);
- ``experiment_listing``: per (experiment, workspace) its run count, latest run time, first and last
  creation time and the project of its newest run;
- ``experiment_metrics``: the metric names each (experiment, workspace) has.

Runs are found by their notes through ``note_search`` (:data:`NOTE_SEARCH_SQL`: the notes' text indexed by
trigrams), kept by the note writer (``notes.py``) and built once for a store whose notes it did not write
(:func:`ensure_note_search`); without it (an SQLite without FTS5's trigram tokenizer, a search shorter than
three characters) notes are read instead.

A store written before the listings existed gets them when a writer opens it (:func:`rebuild_all`,
marked done by ``schema_meta`` key ``listing_version``). Readers never write: they use the listings
only when :func:`listing_ready` says they are there and cover every run, and otherwise read runs as
before. The read side (``search_experiments``, ``experiment_details``, ``run_window``, ...) applies
filters, order and the limit in SQL, so that its cost follows the answer, not the workspace.
"""

from __future__ import annotations

import json
import sqlite3
from collections import namedtuple
from collections.abc import Iterable, Sequence

from tau_collector.reads.lifecycle import classify
from tau_collector.reads.rows import RUN_SORTS, WORKSPACE_TAG, ExperimentDetails, ExperimentListingRow

__all__ = [
    "LISTING_VERSION",
    "NOTE_SEARCH_SQL",
    "ensure_note_search",
    "experiment_details",
    "listing_ready",
    "metric_names",
    "metric_values",
    "note_runs_sql",
    "rebuild_all",
    "refresh_runs",
    "run_window",
    "runs_per_metric",
    "search_experiments",
]

LISTING_VERSION = "1"
_META_KEY = "listing_version"
# Ours: the text of every run's notes (TauGrid's ``observations`` with scope ``run``), indexed by trigrams so a
# search for a note's words among 100,000 runs reads the index, not every note. Kept by the note writer in the
# transaction that adds the note; built once for a store whose notes came from elsewhere (ensure_note_search).
# Apart from schema.EXTENSION_SQL: an SQLite without FTS5's trigram tokenizer (before 3.34) has none, and notes
# are then searched by reading them.
NOTE_SEARCH_SQL = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS note_search USING fts5(text, run_id UNINDEXED, tokenize='trigram')"
)
_Summary = namedtuple("_Summary", "metric_name max_step non_finite_count finite_count max_value")
_SUMMARY_SQL = "SELECT metric_name, max_step, non_finite_count, finite_count, max_value FROM metric_summaries"
_RUN_SQL = "SELECT run_id, project, experiment_id, run_group_id, state, created_at, started_at, completed_at FROM runs"
_IN_WORKSPACE = "workspace IN (?, '')"  # a run tagged with the served workspace, or untagged


def _run_at(started: str | None, completed: str | None, created: str | None) -> str:
    for value in (started, completed, created):
        if value and value.strip():
            return value
    return ""


def _listing_row(run: Sequence, tags: dict[str, str], summaries: Iterable[_Summary]) -> tuple:
    run_id, project, experiment_id, group, state, created, started, completed = run
    lifecycle = classify(state, completed, tags, summaries)[0]
    return (run_id, tags.get(WORKSPACE_TAG, ""), project, experiment_id or "", group, state, lifecycle, created,
            _run_at(started, completed, created))


_LISTING_COLUMNS = "run_id, workspace, project, experiment_id, run_group_id, state, lifecycle_state, created_at, run_at"
# What a run's listing row gives its experiment's (_rebuild_experiment): the experiment, workspace, project and times.
_EXPERIMENT_FIELDS = (1, 2, 3, 7, 8)
_UPSERT_RUN = ("INSERT OR REPLACE INTO run_listing(run_id, workspace, project, experiment_id, run_group_id, state, "
               "lifecycle_state, created_at, run_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")


def _rebuild_experiment(tx, experiment_id: str, workspace: str) -> None:
    tx.execute("DELETE FROM experiment_listing WHERE experiment_id = ? AND workspace = ?", (experiment_id, workspace))
    tx.execute(
        "INSERT INTO experiment_listing(experiment_id, workspace, project, run_count, latest_run_at, "
        "first_created_at, last_created_at) "
        "SELECT experiment_id, workspace, (SELECT project FROM run_listing WHERE experiment_id = ?1 AND workspace = ?2 "
        "ORDER BY created_at DESC, run_id LIMIT 1), count(*), max(run_at), min(created_at), max(created_at) "
        "FROM run_listing WHERE experiment_id = ?1 AND workspace = ?2 GROUP BY experiment_id, workspace",
        (experiment_id, workspace))


def refresh_runs(tx, run_ids: Iterable[str]) -> None:
    """Bring the listings up to date for these runs (call in the transaction that changed them).

    Costs one read of each run's summaries (their names and what the lifecycle needs); an experiment's row is
    computed again (a pass over its runs in the workspace) only when a run joins or leaves it or changes what
    that row holds (project, creation or run time) -- not when a delivery adds points to a run it has.
    """
    touched: set[tuple[str, str]] = set()
    for run_id in sorted(set(run_ids)):
        old = tx.execute(f"SELECT {_LISTING_COLUMNS} FROM run_listing WHERE run_id = ?", (run_id,)).fetchone()
        run = tx.execute(f"{_RUN_SQL} WHERE run_id = ?", (run_id,)).fetchone()
        if run is None:
            if old is not None:
                touched.add((old[3], old[1]))
                tx.execute("DELETE FROM run_listing WHERE run_id = ?", (run_id,))
            continue
        tags = dict(tx.execute("SELECT key, value FROM tags WHERE scope_type = 'run' AND scope_id = ?",
                               (run_id,)).fetchall())
        summaries = [_Summary(*row) for row in tx.execute(f"{_SUMMARY_SQL} WHERE run_id = ?", (run_id,)).fetchall()]
        row = _listing_row(run, tags, summaries)
        if old is None or tuple(old) != row:
            tx.execute(_UPSERT_RUN, row)
        pair = (row[3], row[1])
        if old is None or tuple(old[i] for i in _EXPERIMENT_FIELDS) != tuple(row[i] for i in _EXPERIMENT_FIELDS):
            touched.add(pair)
            if old is not None:
                touched.add((old[3], old[1]))
        tx.executemany("INSERT OR IGNORE INTO experiment_metrics(experiment_id, workspace, metric_name) "
                       "VALUES (?, ?, ?)", [(*pair, s.metric_name) for s in summaries])
        if old is not None and (old[3], old[1]) != pair:
            _rebuild_metrics(tx, old[3], old[1])  # a run moved: its old experiment may have lost names
    for experiment_id, workspace in sorted(touched):
        _rebuild_experiment(tx, experiment_id, workspace)


def _rebuild_metrics(tx, experiment_id: str, workspace: str) -> None:
    tx.execute("DELETE FROM experiment_metrics WHERE experiment_id = ? AND workspace = ?", (experiment_id, workspace))
    tx.execute("INSERT INTO experiment_metrics(experiment_id, workspace, metric_name) "
               "SELECT DISTINCT ?1, ?2, ms.metric_name FROM run_listing rl JOIN metric_summaries ms "
               "ON ms.run_id = rl.run_id WHERE rl.experiment_id = ?1 AND rl.workspace = ?2",
               (experiment_id, workspace))


def rebuild_all(tx) -> None:
    """Build the listings of every run from scratch (a store written before they existed), in bulk."""
    tags: dict[str, dict[str, str]] = {}
    for run_id, key, value in tx.execute("SELECT scope_id, key, value FROM tags WHERE scope_type = 'run'"):
        tags.setdefault(run_id, {})[key] = value
    summaries: dict[str, list[_Summary]] = {}
    for row in tx.execute(f"SELECT run_id, {_SUMMARY_SQL[7:]}"):
        summaries.setdefault(row[0], []).append(_Summary(*row[1:]))
    rows = [_listing_row(run, tags.get(run[0], {}), summaries.get(run[0], ()))
            for run in tx.execute(_RUN_SQL).fetchall()]
    tx.execute("DELETE FROM run_listing")
    tx.execute("DELETE FROM experiment_listing")
    tx.execute("DELETE FROM experiment_metrics")
    tx.executemany(_UPSERT_RUN, rows)
    tx.execute(
        "INSERT INTO experiment_listing(experiment_id, workspace, project, run_count, latest_run_at, "
        "first_created_at, last_created_at) "
        "SELECT experiment_id, workspace, (SELECT r2.project FROM run_listing r2 WHERE r2.experiment_id = "
        "rl.experiment_id AND r2.workspace = rl.workspace ORDER BY r2.created_at DESC, r2.run_id LIMIT 1), "
        "count(*), max(run_at), min(created_at), max(created_at) FROM run_listing rl "
        "GROUP BY experiment_id, workspace")
    tx.execute("INSERT INTO experiment_metrics(experiment_id, workspace, metric_name) "
               "SELECT DISTINCT rl.experiment_id, rl.workspace, ms.metric_name FROM run_listing rl "
               "JOIN metric_summaries ms ON ms.run_id = rl.run_id")
    tx.execute("INSERT OR REPLACE INTO schema_meta(key, value) VALUES (?, ?)", (_META_KEY, LISTING_VERSION))


def ensure_listings(tx) -> None:
    """The writer's migration: build the listings once for a store that has none yet."""
    done = tx.execute("SELECT value FROM schema_meta WHERE key = ?", (_META_KEY,)).fetchone()
    if done is None or done[0] != LISTING_VERSION:
        rebuild_all(tx)


def ensure_note_search(tx) -> None:
    """The writer's migration: the notes' search index, holding every run note (those TauGrid or an older writer
    added too). Without FTS5's trigram tokenizer there is none, and notes are searched by reading them."""
    try:
        tx.execute(NOTE_SEARCH_SQL)
    except sqlite3.OperationalError:
        return
    indexed = tx.execute("SELECT count(*) FROM note_search").fetchone()[0]
    notes = tx.execute("SELECT count(*) FROM observations WHERE scope_type = 'run'").fetchone()[0]
    if indexed != notes:
        tx.execute("DELETE FROM note_search")
        tx.execute("INSERT INTO note_search(rowid, text, run_id) "
                   "SELECT rowid, text, scope_id FROM observations WHERE scope_type = 'run'")


def index_note(tx, rowid: int, run_id: str, text: str) -> None:
    """Add one new run note to the search index (in the transaction that adds the note)."""
    if _has_note_search(tx):
        tx.execute("INSERT INTO note_search(rowid, text, run_id) VALUES (?, ?, ?)", (rowid, text, run_id))


def _has_note_search(conn) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'note_search'").fetchone() is not None


def note_runs_sql(conn, text: str) -> tuple[str, list]:
    """(a subquery of the run ids with a note containing ``text`` in any case, its arguments).

    From the trigram index when there is one and the text has three characters or more (what a trigram can
    find); else by reading the run notes (``tau_lower`` must be registered on ``conn``).
    """
    if len(text) >= 3 and _has_note_search(conn):
        return "SELECT run_id FROM note_search WHERE note_search MATCH ?", ['"' + text.replace('"', '""') + '"']
    return ("SELECT scope_id FROM observations WHERE scope_type = 'run' AND instr(tau_lower(text), ?) > 0",
            [text.lower()])


# -- reading --------------------------------------------------------------------------------------------


def listing_ready(conn: sqlite3.Connection) -> bool:
    """Whether this store's listings exist, are complete and cover every run (else: read runs as before).

    A store last written by TauGrid's writer, or by a writer older than the listings, fails this and is
    listed the old way; it gets listings the next time one of our writers opens it.
    """
    tables = {name for (name,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN "
        "('run_listing', 'experiment_listing', 'experiment_metrics')")}
    if len(tables) < 3:
        return False
    done = conn.execute("SELECT value FROM schema_meta WHERE key = ?", (_META_KEY,)).fetchone()
    if done is None or done[0] != LISTING_VERSION:
        return False
    return (conn.execute("SELECT count(*) FROM runs").fetchone()[0]
            == conn.execute("SELECT count(*) FROM run_listing").fetchone()[0])


# TauGrid's v2ExperimentSortAt: latest run, else updated, else created time (each only when not blank).
_SORT_AT = ("CASE WHEN trim(latest) <> '' THEN latest WHEN trim(updated) <> '' THEN updated "
            "WHEN trim(created) <> '' THEN created ELSE '0001-01-01T00:00:00Z' END")


def search_experiments(conn: sqlite3.Connection, workspace: str, *, project: str = "",
                       tags: dict[str, str] | None = None, metric_names: Sequence[str] = (), since: str = "",
                       start: str = "", end: str = "", lifecycle: str = "",
                       limit: int) -> list[ExperimentListingRow]:
    """The experiments with a run in ``workspace`` that pass the filters, latest first, at most ``limit``.

    The filters are :func:`~taunotebook`'s ``/experiments/search`` ones (TauGrid's ``SearchExperiments``)
    but text search and config filters, which the caller answers by reading runs.
    """
    where = [f"el.{_IN_WORKSPACE}", "el.experiment_id <> ''"]
    args: list = [workspace]
    runs_of = f"rl.experiment_id = el.experiment_id AND rl.{_IN_WORKSPACE}"
    for key, value in sorted((tags or {}).items()):
        where.append(f"EXISTS (SELECT 1 FROM run_listing rl JOIN tags t ON t.scope_type = 'run' AND "
                     f"t.scope_id = rl.run_id AND t.key = ? AND t.value = ? WHERE {runs_of})")
        args += [key, value, workspace]
    for name in metric_names:
        where.append("EXISTS (SELECT 1 FROM experiment_metrics em WHERE em.experiment_id = el.experiment_id "
                     "AND em.workspace IN (?, '') AND em.metric_name = ?)")
        args += [workspace, name]
    if lifecycle:
        where.append(f"EXISTS (SELECT 1 FROM run_listing rl WHERE {runs_of} AND rl.lifecycle_state = ?)")
        args += [workspace, lifecycle]
    having: list[str] = []
    having_args: list = []
    if project:
        having.append("proj = ?")
        having_args.append(project)
    if since:
        having.append("(updated >= ? OR latest >= ?)")
        having_args += [since, since]
    if start:
        in_range = "({0} <> '' AND {0} BETWEEN ?1 AND ?2)"
        where.append(
            f"EXISTS (SELECT 1 FROM run_listing rl JOIN runs r ON r.run_id = rl.run_id WHERE {runs_of} AND ("
            + " OR ".join(in_range.format(c).replace("?1", "?").replace("?2", "?")
                          for c in ("r.created_at", "r.started_at", "r.completed_at")) + ")) "
            "OR EXISTS (SELECT 1 FROM experiments e2 WHERE e2.experiment_id = el.experiment_id "
            "AND e2.updated_at <> '' AND e2.updated_at BETWEEN ? AND ?)")
        args += [workspace, start, end, start, end, start, end, start, end]
        where[-1] = f"({where[-1]})"
    sql = (
        "SELECT el.experiment_id, coalesce(e.project, max(el.project)) AS proj, coalesce(e.name, el.experiment_id), "
        "coalesce(e.description, ''), coalesce(e.created_at, min(el.first_created_at)) AS created, "
        "coalesce(e.updated_at, max(el.last_created_at)) AS updated, max(el.latest_run_at) AS latest "
        "FROM experiment_listing el LEFT JOIN experiments e ON e.experiment_id = el.experiment_id "
        f"WHERE {' AND '.join(where)} GROUP BY el.experiment_id"
        + (f" HAVING {' AND '.join(having)}" if having else "")
    )
    ordered = f"SELECT *, {_SORT_AT} AS sort_at FROM ({sql}) ORDER BY sort_at DESC, experiment_id LIMIT ?"
    rows = conn.execute(ordered, [*args, *having_args, limit]).fetchall()
    return [ExperimentListingRow(r[0], r[1] or "", r[2] or r[0], r[3], r[4] or "", r[5] or "", r[6] or "", r[7])
            for r in rows]


def experiment_details(conn: sqlite3.Connection, workspace: str, experiment_ids: Sequence[str],
                       with_run_ids: bool = False) -> dict[str, ExperimentDetails]:
    """Each experiment's run and group counts, state and lifecycle counts and metric names in ``workspace``,
    counted by SQLite (a few rows per experiment reach Python)."""
    out = {e: ExperimentDetails(0, 0, {}, {}, [], [] if with_run_ids else None) for e in experiment_ids}
    if not out:
        return out
    marks = ",".join("?" * len(out))
    # "+": find the runs through the experiment index (a page's runs), never by scanning the workspace's.
    scope = f"experiment_id IN ({marks}) AND +{_IN_WORKSPACE}"
    for experiment_id, state, lifecycle, n in conn.execute(
            f"SELECT experiment_id, state, lifecycle_state, count(*) FROM run_listing WHERE {scope} "
            "GROUP BY experiment_id, state, lifecycle_state", [*out, workspace]):
        d = out[experiment_id]
        d.run_count += n
        key = state.strip().lower()
        d.state_counts[key] = d.state_counts.get(key, 0) + n
        d.lifecycle_counts[lifecycle] = d.lifecycle_counts.get(lifecycle, 0) + n
    for experiment_id, n in conn.execute(
            f"SELECT experiment_id, count(DISTINCT run_group_id) FROM run_listing WHERE {scope} GROUP BY experiment_id",
            [*out, workspace]):
        out[experiment_id].run_group_count = n
    for experiment_id, name in conn.execute(
            f"SELECT DISTINCT experiment_id, metric_name FROM experiment_metrics WHERE {scope} "
            "ORDER BY experiment_id, metric_name", [*out, workspace]):
        out[experiment_id].metric_names.append(name)
    if with_run_ids:
        for experiment_id, run_id in conn.execute(
                f"SELECT experiment_id, run_id FROM run_listing WHERE {scope} ORDER BY created_at DESC, run_id",
                [*out, workspace]):
            out[experiment_id].run_ids.append(run_id)  # type: ignore[union-attr]
    return out


# -- the runs table ------------------------------------------------------------------------------------

_STAT_COLUMN = {"metric:latest": "latest_value", "metric:min": "min_value", "metric:max": "max_value"}


def _run_filters(conn: sqlite3.Connection, workspace: str, *, project: str, experiment: str, group: str,
                 run_ids: Sequence[str], state: str, tag: tuple[str, str] | None, query: str,
                 note: str) -> tuple[str, list]:
    where = [f"rl.{_IN_WORKSPACE}"]
    args: list = [workspace]
    for column, value in (("project", project), ("experiment_id", experiment), ("run_group_id", group),
                          ("state", state)):
        if value:
            where.append(f"rl.{column} = ?")
            args.append(value)
    if run_ids:
        where.append(f"rl.run_id IN ({','.join('?' * len(run_ids))})")
        args += list(run_ids)
    if tag is not None:
        # From the tag's own index (idx_tags_key_value): the runs that have it, not every run probed for it.
        where.append("rl.run_id IN (SELECT scope_id FROM tags WHERE key = ? AND value = ? AND scope_type = 'run')")
        args += list(tag)
    if note:
        notes, note_args = note_runs_sql(conn, note)
        where.append(f"rl.run_id IN ({notes})")
        args += note_args
    if query:
        # Any case: ids, state, tags as key=value, and the config's flattened fields as stored (JSON text).
        where.append(
            "(instr(tau_lower(rl.run_id || char(0) || rl.project || char(0) || rl.experiment_id || char(0) || "
            "rl.run_group_id || char(0) || rl.state), ?1) > 0 "
            "OR EXISTS (SELECT 1 FROM tags t WHERE t.scope_type = 'run' AND t.scope_id = rl.run_id "
            "AND instr(tau_lower(t.key || '=' || t.value), ?1) > 0) "
            "OR EXISTS (SELECT 1 FROM configs c WHERE c.run_id = rl.run_id "
            "AND instr(tau_lower(coalesce(c.indexed_fields, '')), ?1) > 0) "
            "OR rl.run_id IN (NOTES))".replace("?1", "?").replace("NOTES", note_runs_sql(conn, query)[0]))
        needle = query.lower()
        args += [needle, needle, needle, *note_runs_sql(conn, query)[1]]
    return " AND ".join(where), args


def run_window(conn: sqlite3.Connection, workspace: str, *, project: str = "", experiment: str = "",
               group: str = "", run_ids: Sequence[str] = (), state: str = "", tag: tuple[str, str] | None = None,
               query: str = "", note: str = "", sort: str = "created_at", descending: bool = True,
               metric: str | None = None, offset: int = 0, limit: int) -> tuple[int, list[str]]:
    """(how many runs match, the ids of rows ``offset .. offset+limit`` in the asked order).

    ``tag`` keeps the runs with that tag, ``note`` those with a note containing the text (any case); ``query``
    matches ids, state, tags, config fields and notes.

    Order: the sort column (a metric statistic among finite values), runs without a value last either
    way, then newest first, then run id; ``created_at`` alone is newest first (or oldest) then run id.
    """
    if sort not in RUN_SORTS:
        raise ValueError(f"sort must be one of {', '.join(RUN_SORTS)}")
    conn.create_function("tau_lower", 1, lambda s: s.lower() if isinstance(s, str) else s, deterministic=True)
    where, args = _run_filters(conn, workspace, project=project, experiment=experiment, group=group,
                               run_ids=run_ids, state=state, tag=tag, query=query, note=note)
    unfiltered = not (project or experiment or group or run_ids or state or tag or query or note)
    if unfiltered:  # the workspace's runs: counted per experiment already
        total = conn.execute(f"SELECT coalesce(sum(run_count), 0) FROM experiment_listing WHERE {_IN_WORKSPACE}",
                             [workspace]).fetchone()[0]
    else:
        total = conn.execute(f"SELECT count(*) FROM run_listing rl WHERE {where}", args).fetchone()[0]
    direction = "DESC" if descending else "ASC"
    join = ""
    join_args: list = []
    if sort == "created_at":
        order = f"rl.created_at {direction}, rl.run_id"
        if unfiltered:
            # Walk the (created_at, run_id, workspace) index in order and stop at the window: "+" keeps SQLite
            # from choosing the workspace index and sorting every run instead.
            where = where.replace(f"rl.{_IN_WORKSPACE}", f"+rl.{_IN_WORKSPACE}", 1)
    elif sort in _STAT_COLUMN:
        if not metric:
            raise ValueError("sorting by a metric statistic needs a metric")
        join = "LEFT JOIN metric_summaries ms ON ms.run_id = rl.run_id AND ms.metric_name = ?"
        join_args = [metric]
        value = f"(CASE WHEN ms.finite_count > 0 THEN ms.{_STAT_COLUMN[sort]} END)"
        order = f"{value} IS NULL, {value} {direction}, rl.created_at DESC, rl.run_id"
    else:
        value = f"nullif(rl.{sort}, '')"
        order = f"{value} IS NULL, {value} {direction}, rl.created_at DESC, rl.run_id"
    rows = conn.execute(f"SELECT rl.run_id FROM run_listing rl {join} WHERE {where} ORDER BY {order} "
                        "LIMIT ? OFFSET ?", [*join_args, *args, limit, offset]).fetchall()
    return total, [r[0] for r in rows]


def metric_values(conn: sqlite3.Connection, workspace: str, metric: str, *, project: str = "",
                  experiment_ids: Sequence[str] = (), run_ids: Sequence[str] = (),
                  limit: int) -> tuple[int, list[tuple]]:
    """(how many runs match, the newest ``limit`` of them with one metric's summary values and their configs'
    fields), in three queries (a count, the runs joined to their summaries, their configs): what scores the
    parameters of thousands of runs, reading only those columns.

    The runs are the workspace's (of ``project`` when given) of the experiments ``experiment_ids`` or among
    ``run_ids`` (every run when neither is given), newest first then run id descending. Each row is
    ``(run_id, state, finite_count, latest_value, min_value, max_value, config_rows)`` (the summary's columns
    ``None`` for a run without the metric), ``config_rows`` a tuple of ``(indexed_fields, normalized_json)`` per
    config row in ``uri`` order (``normalized_json`` only where ``indexed_fields`` is empty), ``()`` for none.
    """
    where, args = [f"rl.{_IN_WORKSPACE}"], [workspace]
    if project:
        where.append("rl.project = ?")
        args.append(project)
    chosen = []
    if experiment_ids:
        chosen.append(f"rl.experiment_id IN ({','.join('?' * len(experiment_ids))})")
        args += list(experiment_ids)
    if run_ids:
        chosen.append(f"rl.run_id IN ({','.join('?' * len(run_ids))})")
        args += list(run_ids)
    if chosen:
        where.append(f"({' OR '.join(chosen)})")
    condition = " AND ".join(where)
    total = conn.execute(f"SELECT count(*) FROM run_listing rl WHERE {condition}", args).fetchone()[0]
    rows = conn.execute(
        "SELECT rl.run_id, rl.state, ms.finite_count, ms.latest_value, ms.min_value, ms.max_value "
        "FROM run_listing rl LEFT JOIN metric_summaries ms ON ms.run_id = rl.run_id AND ms.metric_name = ? "
        f"WHERE {condition} ORDER BY rl.created_at DESC, rl.run_id DESC LIMIT ?", [metric, *args, limit]).fetchall()
    # The configs of those runs in one query (by idx_configs_run).
    configs: dict[str, list[tuple[str, str]]] = {}
    if rows:
        for run_id, indexed, normalized in conn.execute(
                "SELECT run_id, coalesce(indexed_fields, ''), CASE WHEN coalesce(indexed_fields, '') = '' "
                "THEN coalesce(normalized_json, '') ELSE '' END FROM configs "
                "WHERE run_id IN (SELECT value FROM json_each(?)) ORDER BY run_id, uri, config_hash",
                (json.dumps([r[0] for r in rows]),)):
            configs.setdefault(run_id, []).append((indexed, normalized))
    out = [(*row, tuple(configs.get(row[0], ()))) for row in rows]
    return total, out


def metric_names(conn: sqlite3.Connection, workspace: str, experiment: str = "") -> list[str]:
    """Every metric name of the workspace's runs (of one experiment's runs when ``experiment`` is given)."""
    sql = f"SELECT DISTINCT metric_name FROM experiment_metrics WHERE {_IN_WORKSPACE}"
    args: list = [workspace]
    if experiment:
        sql += " AND experiment_id = ?"
        args.append(experiment)
    return [n for (n,) in conn.execute(sql + " ORDER BY metric_name", args)]


def runs_per_metric(conn: sqlite3.Connection, workspace: str, experiment: str = "") -> dict[str, int]:
    """How many of the workspace's runs (of one experiment's) have each metric: what picks a default metric."""
    sql = ("SELECT ms.metric_name, count(*) FROM run_listing rl JOIN metric_summaries ms ON ms.run_id = rl.run_id "
           f"WHERE rl.{_IN_WORKSPACE}")
    args: list = [workspace]
    if experiment:
        sql += " AND rl.experiment_id = ?"
        args.append(experiment)
    return dict(conn.execute(sql + " GROUP BY ms.metric_name", args).fetchall())
