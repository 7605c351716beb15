"""The store's reader (runs, metric summaries, raw rows, reduced series): the only SQL readers use.

:class:`StoreReader` is the local implementation of the read contract (:mod:`tau_collector.reads`:
:class:`~tau_collector.reads.ExperimentReader`, its row types and the non-blocking rule); the Kusto
reader (``taunotebook/portal/kusto/reader.py``) is the other.

Rows of a metric come from every registered file of the run whose step range overlaps the
request. Equal steps are deduplicated, **last wins**: the row with the latest wall_time, then
the one from the later-registered file (``metric_files`` rowid), then the later row in its file
(the rule, a file's decoding and a run's file list live in :mod:`.series_merge`; this module caches them).
Files are immutable and keyed by file_id, so decoded slices are cached (bounded LRU by bytes);
the merged full series of a (run, metric) is cached too, keyed by the exact set of files it was
built from, with an :class:`~.m4.M4Index` so that reducing 10M points costs milliseconds. When a
live run appends files, the cached series and its index are extended rather than rebuilt.
A series request over a long range (more than 2^20 points) never merges the series: it is reduced
from the files' series levels (:mod:`.level_reads`), so its cost follows the answer's resolution.

What the index says (runs, summaries, events, file lists) is cached too, for as long as SQLite's
``PRAGMA data_version`` says no other connection has committed: a Portal answering hundreds of live
panes a second re-reads it once per change of the store, not once per request.

Inside :func:`~tau_collector.reads.no_blocking` (the read contract's rule) a read raises
:class:`~tau_collector.reads.WouldBlock` instead of doing slow work (reading a
Parquet file, merging or indexing a large series, reducing a large range): a server answers what is
cached on its event loop and hands the rest to a worker thread.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator

import numpy as np

from tau_collector.expstore.read.level_reads import LevelReads
from tau_collector.expstore.read.m4 import M4Index, m4_indices
from tau_collector.expstore.read.read_cache import LRU, IndexCache
from tau_collector.expstore.read.series_merge import (
    EMPTY_F,
    EMPTY_I,
    FileList,
    Merged,
    bounds,
    clamp,
    merge,
    read_slice,
)
from tau_collector.expstore.store import ExpStore
from tau_collector.expstore.write import listing
from tau_collector.expstore.write.config_rows import read_run_configs
from tau_collector.expstore.write.run_events import read_run_events
from tau_collector.expstore.write.summaries import SUMMARY_COLUMNS
from tau_collector.reads.blocking import QUICK_FILE_ROWS, may_block
from tau_collector.reads.rows import (
    WORKSPACE_TAG,
    ExperimentRow,
    MetricSummaryRow,
    ReducedSeries,
    Rows,
    RunEvent,
    RunRow,
)
from tau_collector.taugrid.run_config import RunConfig

__all__ = ["StoreReader"]

DEFAULT_CACHE_BYTES = 512 * 1024 * 1024
_KEPT_ORDERS = 4  # sorted orders of a workspace's runs kept for windows (100,000 ids: about 7 MB each)
_WALKED_ROWS = 5000  # a window of the newest runs within this is read by walking the index, not kept
_MISSING_FILE_RETRIES = 3
_RUN_COLUMNS = (
    "run_id, project, experiment_id, run_group_id, parent_run_id, state, owner, created_at, started_at, "
    "completed_at, config_hash, code_sha, image_digest, tau_command, result_uri"
)


class StoreReader:
    """Reads one store: the local :class:`~tau_collector.reads.ExperimentReader`, with the store's indexed
    listings besides. Safe to share between threads; see the module doc for the last-wins rule."""

    def __init__(
        self, store: ExpStore | str | os.PathLike[str], *, cache_bytes: int = DEFAULT_CACHE_BYTES
    ) -> None:
        self.store = store if isinstance(store, ExpStore) else ExpStore(store)
        self._cache = LRU(cache_bytes)
        self._index = IndexCache(self.store)
        # (run_id, metric) -> cache key of the newest merged full series, for cheap extension.
        self._latest: dict[tuple[str, str], tuple] = {}
        self._latest_lock = threading.Lock()
        self._loading: dict[tuple, threading.Lock] = {}  # file slices being read, one lock each
        self._loading_lock = threading.Lock()
        self._levels = LevelReads(self)

    @contextlib.contextmanager
    def pinned(self) -> Iterator[None]:
        """Within: the index is checked for changes once, on entry, not on every read.

        A request wraps itself in this: one change check instead of one per lookup, and one view
        of the index for the whole answer (unless another request sees a change meanwhile).
        """
        with self._index.pinned():
            yield

    def generation(self) -> object:
        """A token that stays the same object while the index is unchanged (as last checked): what a server
        computed from the store under one token is still right while this returns it (an answer cache)."""
        return self._index.get(("generation",), object)

    # -- runs -----------------------------------------------------------------------------

    def runs(
        self,
        workspace: str | None = None,
        *,
        project: str | None = None,
        experiment_id: str | None = None,
        run_group_id: str | None = None,
        state: str | None = None,
    ) -> list[RunRow]:
        """Runs, newest first. With ``workspace``: those tagged ``tau_workspace=<workspace>`` or untagged."""
        runs = self._index.get(("runs",), self._all_runs)
        for attr, value in (("project", project), ("experiment_id", experiment_id),
                            ("run_group_id", run_group_id), ("state", state)):
            if value is not None:
                runs = [r for r in runs if getattr(r, attr) == value]
        if workspace is not None:
            runs = [r for r in runs if r.tags.get(WORKSPACE_TAG, workspace) == workspace]
        return list(runs)

    def _all_runs(self) -> list[RunRow]:
        with self.store.read_transaction() as conn:
            rows = conn.execute(f"SELECT {_RUN_COLUMNS} FROM runs ORDER BY created_at DESC, run_id").fetchall()
            tags = _group(conn.execute("SELECT scope_id, key, value FROM tags WHERE scope_type = 'run'"))
            names = _group_names(conn.execute(
                "SELECT run_id, metric_name FROM metric_summaries ORDER BY run_id, metric_name"
            ))
        return [RunRow(*row, tags=tags.get(row[0], {}), metric_names=names.get(row[0], ())) for row in rows]

    def run(self, run_id: str, project: str | None = None) -> RunRow | None:
        """The run with exactly this id (and project, when given), or None."""
        return self._index.get(("run", run_id, project), lambda: self._run(run_id, project))

    def _run(self, run_id: str, project: str | None) -> RunRow | None:
        sql = f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?"
        params: list[str] = [run_id]
        if project is not None:
            sql += " AND project = ?"
            params.append(project)
        with self.store.read_transaction() as conn:
            row = conn.execute(sql, params).fetchone()
            if row is None:
                return None
            tags = dict(conn.execute(
                "SELECT key, value FROM tags WHERE scope_type = 'run' AND scope_id = ? ORDER BY key",
                (run_id,),
            ).fetchall())
            names = tuple(n for (n,) in conn.execute(
                "SELECT metric_name FROM metric_summaries WHERE run_id = ? ORDER BY metric_name", (run_id,)
            ))
        return RunRow(*row, tags=tags, metric_names=names)

    def experiments(self) -> list[ExperimentRow]:
        """Every row of the ``experiments`` table, by id (a run names its experiment; this has its name and times)."""

        def load() -> list[ExperimentRow]:
            with self.store.read_transaction() as conn:
                return [ExperimentRow(*row) for row in conn.execute(
                    "SELECT experiment_id, project, name, description, source, created_at, updated_at "
                    "FROM experiments ORDER BY experiment_id")]

        return list(self._index.get(("experiments",), load))

    # -- listings: searches and windows answered from the index's run listing (listing.py) ----

    def has_listings(self) -> bool:
        """Whether the store's run listings exist and cover every run (else list from :meth:`runs`)."""
        def load() -> bool:
            with self.store.read_transaction() as conn:
                return listing.listing_ready(conn)

        return self._index.get(("listing_ready",), load)

    def search_experiments(self, workspace: str, **filters) -> list[listing.ExperimentListingRow]:
        """:func:`.listing.search_experiments` (filters, order and limit in SQL); needs :meth:`has_listings`."""
        with self.store.read_transaction() as conn:
            return listing.search_experiments(conn, workspace, **filters)

    def experiment_details(self, workspace: str, experiment_ids: list[str],
                           with_run_ids: bool = False) -> dict[str, listing.ExperimentDetails]:
        with self.store.read_transaction() as conn:
            return listing.experiment_details(conn, workspace, experiment_ids, with_run_ids)

    def run_window(self, workspace: str, **query) -> tuple[int, list[RunRow]]:
        """(how many runs match, the runs of the window): :func:`.listing.run_window` with the rows read in two
        queries. These rows carry no ``metric_names`` (a table row does not show them; :meth:`run` has them)."""
        with self.store.read_transaction() as conn:
            total, ids = self._window_ids(conn, workspace, query)
            if not ids:
                return total, []
            marks = ",".join("?" * len(ids))
            rows = {r[0]: r for r in conn.execute(f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id IN ({marks})", ids)}
            tags = _group(conn.execute(
                f"SELECT scope_id, key, value FROM tags WHERE scope_type = 'run' AND scope_id IN ({marks})", ids))
        return total, [RunRow(*rows[i], tags=tags.get(i, {})) for i in ids if i in rows]

    def _window_ids(self, conn, workspace: str, query: dict) -> tuple[int, list[str]]:
        # Sorting every run by a column other than creation time costs a sort of the workspace in SQLite, and a
        # deep window of the newest-first order a walk of that many index entries: for the unfiltered table
        # (what scrolling asks again and again) the order is kept until the store changes, at most
        # _KEPT_ORDERS of them, and each window is a slice of it.
        filtered = any(query.get(k) for k in ("project", "experiment", "group", "run_ids", "state", "tag", "query"))
        if filtered:
            return listing.run_window(conn, workspace, **query)
        orders = self._index.get(("window_orders",), OrderedDict)
        key = (workspace, query.get("sort", "created_at"), query.get("descending", True), query.get("metric"))
        ids = orders.get(key)
        if ids is None and key[1] == "created_at" and query.get("offset", 0) + query["limit"] <= _WALKED_ROWS:
            return listing.run_window(conn, workspace, **query)  # the newest runs: a short walk of the index
        if ids is None:
            _, ids = listing.run_window(conn, workspace, **{**query, "offset": 0, "limit": -1})
            with self._latest_lock:
                while len(orders) >= _KEPT_ORDERS:
                    orders.popitem(last=False)
                orders[key] = ids
        offset, limit = query.get("offset", 0), query["limit"]
        return len(ids), ids[offset:offset + limit]

    def summaries_of(self, run_ids: list[str], metrics: list[str]) -> dict[tuple[str, str], MetricSummaryRow]:
        """The summaries of these metrics of these runs, in one query: ``(run_id, metric) -> row``."""
        if not run_ids or not metrics:
            return {}
        sql = (f"SELECT {SUMMARY_COLUMNS} FROM metric_summaries WHERE run_id IN ({','.join('?' * len(run_ids))}) "
               f"AND metric_name IN ({','.join('?' * len(metrics))})")
        with self.store.read_transaction() as conn:
            rows = [MetricSummaryRow(*row) for row in conn.execute(sql, [*run_ids, *metrics])]
        return {(r.run_id, r.metric_name): r for r in rows}

    def listing_metric_names(self, workspace: str, experiment: str = "") -> list[str]:
        with self.store.read_transaction() as conn:
            return listing.metric_names(conn, workspace, experiment)

    def runs_per_metric(self, workspace: str, experiment: str = "") -> dict[str, int]:
        """How many runs have each metric (cached until the store changes: it counts every summary row)."""
        def load() -> dict[str, int]:
            with self.store.read_transaction() as conn:
                return listing.runs_per_metric(conn, workspace, experiment)

        return dict(self._index.get(("runs_per_metric", workspace, experiment), load))

    def run_config(self, run_id: str) -> RunConfig | None:
        """The run's configuration (hyperparameters), or None when it has none."""
        return self.run_configs((run_id,)).get(run_id)

    def run_configs(self, run_ids: Iterable[str]) -> dict[str, RunConfig]:
        """The configuration of each run among ``run_ids`` that has one, read in one query."""
        key = tuple(sorted(set(run_ids)))

        def load() -> dict[str, RunConfig]:
            return read_run_configs(self.store.connection(), key)

        return dict(self._index.get(("configs", key), load))

    def metric_summaries(self, run_id: str) -> list[MetricSummaryRow]:
        return list(self._summaries(run_id))

    def metric_summaries_named(self, run_id: str, names: Iterable[str]) -> tuple[tuple[str, ...],
                                                                                 dict[str, MetricSummaryRow]]:
        """(every metric name the run has, by name; the summaries of those of ``names`` it has), without reading
        every summary row: a live pane polls a few of a wide run's thousands of metrics, and a live run's
        every commit would make :meth:`metric_summaries` read them all again (10,000 rows: ~100 ms)."""
        wanted = tuple(sorted(set(names)))

        def load_names() -> tuple[str, ...]:
            return tuple(n for (n,) in self.store.connection().execute(
                "SELECT metric_name FROM metric_summaries WHERE run_id = ? ORDER BY metric_name", (run_id,)))

        def load_rows() -> dict[str, MetricSummaryRow]:
            out: dict[str, MetricSummaryRow] = {}
            conn = self.store.connection()
            for i in range(0, len(wanted), 500):  # under SQLite's limit of bound variables
                chunk = wanted[i:i + 500]
                for row in conn.execute(f"SELECT {SUMMARY_COLUMNS} FROM metric_summaries WHERE run_id = ? "
                                        f"AND metric_name IN ({','.join('?' * len(chunk))})", (run_id, *chunk)):
                    out[row[1]] = MetricSummaryRow(*row)
            return out

        names_now = self._index.get(("summary_names", run_id), load_names)
        return names_now, dict(self._index.get(("summaries_named", run_id, wanted), load_rows) if wanted else {})

    def metric_summary(self, run_id: str, metric: str) -> MetricSummaryRow | None:
        return next((s for s in self._summaries(run_id) if s.metric_name == metric), None)

    def _summaries(self, run_id: str) -> tuple[MetricSummaryRow, ...]:
        def load() -> tuple[MetricSummaryRow, ...]:
            rows = self.store.connection().execute(
                f"SELECT {SUMMARY_COLUMNS} FROM metric_summaries WHERE run_id = ? ORDER BY metric_name",
                (run_id,),
            ).fetchall()
            return tuple(MetricSummaryRow(*row) for row in rows)

        return self._index.get(("summaries", run_id), load)

    def run_events(self, run_id: str, *, type: str | None = None) -> list[RunEvent]:
        """What the collector reported about the run's sources (``events`` table), oldest first."""
        return list(self._index.get(("events", run_id, type),
                                    lambda: tuple(read_run_events(self.store, run_id, type=type))))

    def derived(self, key: tuple, build):
        """A value derived from what the index says (an encoded answer, a listing), built by ``build()`` once and
        kept until the index changes: a catalog of 10,000 metrics is not rebuilt on every request."""
        return self._index.get(("derived", *key), build)

    def metric_names(self, run_id: str) -> list[str]:
        return [s.metric_name for s in self._summaries(run_id)]

    # -- points ---------------------------------------------------------------------------

    def rows(
        self, run_id: str, metric: str, start_step: int | None = None, end_step: int | None = None
    ) -> Rows:
        merged, lo, hi = self._range(run_id, metric, start_step, end_step)
        return Rows(merged.step[lo:hi].copy(), merged.wall_time[lo:hi].copy(), merged.value[lo:hi].copy())

    def non_finite(
        self, run_id: str, metric: str, start_step: int | None = None, end_step: int | None = None,
        limit: int | None = None,
    ) -> tuple[int, Rows]:
        """(how many NaN/±Inf observations lie in range, the first ``limit`` of them)."""
        found = self._levels.non_finite(run_id, metric, clamp(start_step), clamp(end_step), limit)
        if found is not None:  # a long range: counted from the series levels, listed from the files holding any
            count, step, wall, value = found
            return count, Rows(step, wall, value)
        merged, lo, hi = self._range(run_id, metric, start_step, end_step)
        bad = merged.non_finite()
        bad = bad[np.searchsorted(bad, lo):np.searchsorted(bad, hi)]
        shown = bad if limit is None else bad[:limit]
        return int(bad.size), Rows(merged.step[shown], merged.wall_time[shown], merged.value[shown])

    def series(
        self,
        run_id: str,
        metric: str,
        start_step: int | None = None,
        end_step: int | None = None,
        max_points: int = 8000,
        *,
        step_interval: int | None = None,
        finite_only: bool = False,
    ) -> ReducedSeries:
        """Points in range, thinned by ``step_interval`` (first, multiples from first, last), M4-reduced.

        With ``finite_only`` non-finite observations are left out before anything is counted, thinned
        or reduced (JSON, and so TauGrid's v2 series, cannot carry them); otherwise M4 keeps the first
        non-finite point of each bucket besides, for the caller to mark.
        """
        if max_points < 1:
            raise ValueError("max_points must be at least 1")
        if step_interval is not None and step_interval < 1:
            raise ValueError("step_interval must be at least 1")
        if step_interval is None or step_interval == 1:
            # A long range is reduced from the series levels, without reading its points.
            found = self._levels.series(run_id, metric, clamp(start_step), clamp(end_step), max_points,
                                        finite_only=finite_only)
            if found is not None:
                step, wall, value, source_points = found
                return ReducedSeries(step, wall, value, ~np.isfinite(value), source_points,
                                     int(step.size) < source_points)
        merged, lo, hi = self._range(run_id, metric, start_step, end_step)
        if finite_only and merged.non_finite().size:
            merged = merged.finite()
            lo, hi = bounds(merged.step, start_step, end_step)
        source_points = hi - lo
        if source_points > max_points:
            may_block(source_points)  # a reduction's cost grows with the range
        step, value, wall = merged.step, merged.value, merged.wall_time
        if step_interval is not None and step_interval > 1 and source_points > 0:
            s = step[lo:hi]
            keep = (s - s[0]) % step_interval == 0
            keep[-1] = True
            step, value, wall = s[keep], value[lo:hi][keep], wall[lo:hi][keep]
            idx = m4_indices(step, value, max_points)
        else:
            if merged.index is None and source_points > max_points:
                may_block()
                merged.index = M4Index(merged.value)
            idx = m4_indices(step, value, max_points, index=merged.index, lo=lo, hi=hi)
        out_value = value[idx]
        return ReducedSeries(step[idx], wall[idx], out_value, ~np.isfinite(out_value), source_points,
                             int(idx.size) < source_points)

    # -- internals ------------------------------------------------------------------------

    def _files(self, run_id: str) -> FileList:
        def load() -> FileList:
            rows = self.store.connection().execute(
                "SELECT file_id, path, min_step, max_step, row_count FROM metric_files WHERE run_id = ? "
                "ORDER BY rowid",
                (run_id,),
            ).fetchall()
            return FileList(rows)

        return self._index.get(("files", run_id), load)

    def _range(self, run_id: str, metric: str, start_step: int | None, end_step: int | None):
        start_step, end_step = clamp(start_step), clamp(end_step)
        for attempt in range(_MISSING_FILE_RETRIES):
            try:
                merged = self._merged(run_id, metric, start_step, end_step)
                break
            except FileNotFoundError:
                # Compaction retired a file after we listed it and its grace period ran out; the
                # fresh list names its replacement.
                if attempt == _MISSING_FILE_RETRIES - 1:
                    raise
                self._index.forget(("files", run_id))
        lo, hi = bounds(merged.step, start_step, end_step)
        return merged, lo, hi

    def _merged(self, run_id: str, metric: str, start_step: int | None, end_step: int | None) -> Merged:
        full = self._files(run_id)
        key = ("series", run_id, metric, full.ids)
        cached = self._cache.get(key)
        if cached is not None:
            return cached  # type: ignore[return-value]
        if start_step is None and end_step is None:
            merged = self._extend_previous(run_id, metric, full)
            if merged is None:
                may_block()
                merged = merge([(rank, s) for rank, s in enumerate(self._slices(full.rows, metric)) if s.step.size])
            self._remember(run_id, metric, key, merged)
            return merged
        # A range (a live pane's tail) reads only the files whose steps overlap it; the merge is kept
        # for the next poll of the same range until a file arrives or leaves.
        files = full.overlapping(start_step, end_step)
        range_key = ("range", run_id, metric, tuple(f[0] for f in files))
        cached = self._cache.get(range_key)
        if cached is not None:
            return cached  # type: ignore[return-value]
        slices = self._slices(files, metric)
        may_block(sum(s.step.size for s in slices))
        merged = merge([(rank, s) for rank, s in enumerate(slices) if s.step.size])
        self._cache.put(range_key, merged, merged.nbytes * 2)
        return merged

    def _slices(self, files: list[tuple], metric: str) -> list[Merged]:
        return [self._file_slice(file_id, path, metric, rows) for file_id, path, _, _, rows in files]

    def _remember(self, run_id: str, metric: str, key: tuple, merged: Merged) -> None:
        self._cache.put(key, merged, merged.nbytes * 2)  # x2: room for the M4 index and views
        with self._latest_lock:
            self._latest[(run_id, metric)] = key

    def _extend_previous(self, run_id: str, metric: str, full: FileList) -> Merged | None:
        """A live run only appends files: extend the last merged series instead of rebuilding it.

        Valid when the previous file list is a prefix of the current one (nothing was compacted
        away) and the new files' points all come after the previous last step (nothing to dedupe).
        """
        with self._latest_lock:
            prev_key = self._latest.get((run_id, metric))
        if prev_key is None:
            return None
        prev_ids, ids = prev_key[3], full.ids
        if len(ids) <= len(prev_ids) or ids[: len(prev_ids)] != prev_ids:
            return None
        prev = self._cache.get(prev_key)
        if prev is None:
            return None
        may_block(prev.step.size)
        added = self._slices(full.rows[len(prev_ids):], metric)
        added = sorted((a for a in added if a.step.size), key=lambda a: int(a.step[0]))
        last = int(prev.step[-1]) if prev.step.size else None
        for a in added:
            if last is not None and int(a.step[0]) <= last:
                return None
            last = int(a.step[-1])
        merged = Merged(
            np.concatenate([prev.step, *(a.step for a in added)]),
            np.concatenate([prev.wall_time, *(a.wall_time for a in added)]),
            np.concatenate([prev.value, *(a.value for a in added)]),
        )
        if prev.index is not None:
            merged.index = M4Index(merged.value, prev.index)
        elif prev._non_finite is not None:
            offset, parts = prev.step.size, [prev._non_finite]
            for a in added:
                parts.append(a.non_finite() + offset)
                offset += a.step.size
            merged._non_finite = np.concatenate(parts)
        return merged

    def _file_slice(self, file_id: str, path: str, metric: str, row_count: int | None = None) -> Merged:
        key = ("file", file_id, metric)
        cached = self._cache.get(key)
        if cached is not None:
            return cached  # type: ignore[return-value]
        held = self._file_metrics(file_id)
        if held is not None and not held[0] <= metric <= held[1]:
            return Merged(EMPTY_I, EMPTY_I, EMPTY_F)  # the index says the file holds no row of it
        may_block(row_count, QUICK_FILE_ROWS)  # a live run's new chunk is small: read it where it is asked for
        # One reader per file: when a new chunk lands, every pane polling the tail asks for it at once.
        with self._loading_lock:
            lock = self._loading.setdefault(key, threading.Lock())
        with lock:
            cached = self._cache.get(key)
            if cached is None:
                cached = self._read_slice(path, metric)
                self._cache.put(key, cached, cached.nbytes)
        with self._loading_lock:
            if self._loading.get(key) is lock:
                del self._loading[key]
        return cached  # type: ignore[return-value]

    def _file_metrics(self, file_id: str) -> tuple[str, str] | None:
        """The first and last metric name the file holds (``metric_file_metrics``); None when not known."""

        def load() -> tuple[str, str] | None:
            try:
                return self.store.connection().execute(
                    "SELECT first_metric, last_metric FROM metric_file_metrics WHERE file_id = ?", (file_id,)
                ).fetchone()
            except sqlite3.OperationalError:
                return None  # a store written before the table, opened read-only

        return self._index.get(("file_metrics", file_id), load)

    def _read_slice(self, path: str, metric: str) -> Merged:
        return read_slice(self.store.absolute(path), metric)


def _group(cursor) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for scope_id, key, value in cursor:
        out.setdefault(scope_id, {})[key] = value
    return dict(out)


def _group_names(cursor) -> dict[str, tuple[str, ...]]:
    out: dict[str, list[str]] = {}
    for run_id, name in cursor:
        out.setdefault(run_id, []).append(name)
    return {k: tuple(v) for k, v in out.items()}
