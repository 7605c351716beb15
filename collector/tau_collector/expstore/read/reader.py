"""The store's reader (runs, metric summaries, raw rows, reduced series, exports): :class:`StoreReader`.

:class:`StoreReader` is the local implementation of the read contract (:mod:`tau_collector.reads`:
:class:`~tau_collector.reads.ExperimentReader`, its row types and the non-blocking rule); the Kusto
reader (``taunotebook/portal/kusto/reader.py``) is the other.

Rows of a metric come from every registered file of the run whose step range overlaps the
request. Equal steps are deduplicated, **last wins**: the row with the latest wall_time, then
the one from the later-registered file (``metric_files`` rowid), then the later row in its file
(the rule, a file's decoding and a run's file list live in :mod:`.series_merge`).
Files are immutable and keyed by file_id, so decoded slices are cached (bounded LRU by bytes, in the
:class:`~.file_slices.FileSlices` this reader shares with its :class:`~.level_reads.LevelReads`);
the merged full series of a (run, metric) is cached too, keyed by the exact set of files it was
built from, with an :class:`~.m4.M4Index` so that reducing 10M points costs milliseconds. When a
live run appends files, the cached series and its index are extended rather than rebuilt.
A series request over a long range (more than 2^20 points) never merges the series: it is reduced
from the files' series levels (:mod:`.level_reads`), so its cost follows the answer's resolution.

What the index says (runs, summaries, events, file lists) is cached too, for as long as SQLite's
``PRAGMA data_version`` says no other connection has committed: a Portal answering hundreds of live
panes a second re-reads it once per change of the store, not once per request. The SQL is the index
modules' (:mod:`..write.index_rows`, :mod:`..write.summaries`, :mod:`..write.listing`,
:mod:`..write.config_rows`, :mod:`..write.run_events`, :mod:`..write.artifacts`); this module asks them
and caches the answers.

:meth:`StoreReader.export_series` hands out every stored point of a series in bounded batches
(:mod:`.series_export`), for a download that must not hold the series in memory.

Inside :func:`~tau_collector.reads.no_blocking` (the read contract's rule) a read raises
:class:`~tau_collector.reads.WouldBlock` instead of doing slow work (reading a
Parquet file, merging or indexing a large series, reducing a large range): a server answers what is
cached on its event loop and hands the rest to a worker thread.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from tau_collector.expstore.read import media_reads, series_export
from tau_collector.expstore.read.file_slices import FileSlices
from tau_collector.expstore.read.level_reads import LevelReads
from tau_collector.expstore.read.m4 import M4Index, m4_indices
from tau_collector.expstore.read.series_merge import FileList, Merged, bounds, clamp, merge
from tau_collector.expstore.store import ExpStore
from tau_collector.expstore.write import index_rows, listing, summaries
from tau_collector.expstore.write.artifacts import (
    MAX_ARTIFACTS_PER_READ,
    local_path_of,
    read_artifact,
    read_artifacts,
)
from tau_collector.expstore.write.config_rows import read_run_configs
from tau_collector.expstore.write.media import image_with_digest
from tau_collector.expstore.write.notes import MAX_NOTES_PER_READ, read_notes, runs_with_note
from tau_collector.expstore.write.run_events import read_run_events
from tau_collector.reads.blocking import may_block
from tau_collector.reads.media_rows import HistogramSeries, ImagesAt, MediaTag, TextAt
from tau_collector.reads.rows import (
    WORKSPACE_TAG,
    ArtifactRow,
    ExperimentRow,
    MetricSummaryRow,
    MetricValueRow,
    NoteRow,
    ReducedSeries,
    Rows,
    RunEvent,
    RunRow,
)
from tau_collector.taugrid.run_config import RunConfig, fields_from_rows

__all__ = ["StoreReader"]

DEFAULT_CACHE_BYTES = 512 * 1024 * 1024
_KEPT_ORDERS = 4  # sorted orders of a workspace's runs kept for windows (100,000 ids: about 7 MB each)
_WALKED_ROWS = 5000  # a window of the newest runs within this is read by walking the index, not kept
_MISSING_FILE_RETRIES = 3


class StoreReader:
    """Reads one store: the local :class:`~tau_collector.reads.ExperimentReader`, with the store's indexed
    listings besides. Safe to share between threads; see the module doc for the last-wins rule."""

    def __init__(
        self, store: ExpStore | str | os.PathLike[str], *, cache_bytes: int = DEFAULT_CACHE_BYTES
    ) -> None:
        self.store = store if isinstance(store, ExpStore) else ExpStore(store)
        # The runs' file lists, decoded slices and both caches: one object, shared with the level reads.
        self.file_slices = FileSlices(self.store, cache_bytes)
        self.levels = LevelReads(self.file_slices)  # the long-series path (series levels)
        self._cache, self._index = self.file_slices.cache, self.file_slices.index
        # (run_id, metric) -> cache key of the newest merged full series, for cheap extension.
        self._latest: dict[tuple[str, str], tuple] = {}
        self._latest_lock = threading.Lock()

    @contextlib.contextmanager
    def pinned(self) -> Iterator[None]:
        """Within: the index is checked for changes once, on entry, not on every read.

        A request wraps itself in this: one change check instead of one per lookup, and one view
        of the index for the whole answer (unless another request sees a change meanwhile).
        """
        with self.file_slices.pinned():
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
            return index_rows.all_runs(conn)

    def run(self, run_id: str, project: str | None = None) -> RunRow | None:
        """The run with exactly this id (and project, when given), or None."""
        return self._index.get(("run", run_id, project), lambda: self._run(run_id, project))

    def _run(self, run_id: str, project: str | None) -> RunRow | None:
        with self.store.read_transaction() as conn:
            return index_rows.run(conn, run_id, project)

    def experiments(self) -> list[ExperimentRow]:
        """Every row of the ``experiments`` table, by id (a run names its experiment; this has its name and times)."""

        def load() -> list[ExperimentRow]:
            with self.store.read_transaction() as conn:
                return index_rows.experiments(conn)

        return list(self._index.get(("experiments",), load))

    # -- listings: searches and windows answered from the index's run listing (listing.py) ----

    def has_listings(self) -> bool:
        """Whether the store's run listings exist and cover every run (else list from :meth:`runs`)."""
        def load() -> bool:
            with self.store.read_transaction() as conn:
                return listing.listing_ready(conn)

        return self._index.get(("listing_ready",), load)

    def search_experiments(self, workspace: str, **filters) -> list[listing.ExperimentListingRow]:
        """:func:`..write.listing.search_experiments` (filters, order and limit in SQL); needs :meth:`has_listings`."""
        with self.store.read_transaction() as conn:
            return listing.search_experiments(conn, workspace, **filters)

    def experiment_details(self, workspace: str, experiment_ids: list[str],
                           with_run_ids: bool = False) -> dict[str, listing.ExperimentDetails]:
        with self.store.read_transaction() as conn:
            return listing.experiment_details(conn, workspace, experiment_ids, with_run_ids)

    def run_window(self, workspace: str, **query) -> tuple[int, list[RunRow]]:
        """(how many runs match, the runs of the window): :func:`..write.listing.run_window` with the rows read in two
        queries. These rows carry no ``metric_names`` (a table row does not show them; :meth:`run` has them)."""
        with self.store.read_transaction() as conn:
            total, ids = self._window_ids(conn, workspace, query)
            if not ids:
                return total, []
            return total, index_rows.runs_by_id(conn, ids)

    def _window_ids(self, conn, workspace: str, query: dict) -> tuple[int, list[str]]:
        # Sorting every run by a column other than creation time costs a sort of the workspace in SQLite, and a
        # deep window of the newest-first order a walk of that many index entries: for the unfiltered table
        # (what scrolling asks again and again) the order is kept until the store changes, at most
        # _KEPT_ORDERS of them, and each window is a slice of it.
        filtered = any(query.get(k) for k in ("project", "experiment", "group", "run_ids", "state", "tag", "query",
                                               "note"))
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
        with self.store.read_transaction() as conn:
            return summaries.summaries_of(conn, run_ids, metrics)

    def metric_values(self, workspace: str, metric: str, *, project: str = "", experiment_ids: Sequence[str] = (),
                      run_ids: Sequence[str] = (), limit: int) -> tuple[int, list[MetricValueRow]]:
        """(how many runs match, the newest ``limit`` with one metric's summary values and their config fields):
        :func:`..write.listing.metric_values` in one query, kept until the store changes; needs :meth:`has_listings`."""
        key = ("metric_values", workspace, metric, project, tuple(experiment_ids), tuple(run_ids), limit)

        def load() -> tuple[int, tuple[MetricValueRow, ...]]:
            with self.store.read_transaction() as conn:
                total, rows = listing.metric_values(conn, workspace, metric, project=project,
                                                    experiment_ids=experiment_ids, run_ids=run_ids, limit=limit)
            return total, tuple(MetricValueRow(run_id, state, finite, latest, low, high,
                                               fields_from_rows(configs) if configs else None)
                                for run_id, state, finite, latest, low, high, configs in rows)

        total, rows = self._index.get(key, load)
        return total, list(rows)

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
            return summaries.summary_names(self.store.connection(), run_id)

        def load_rows() -> dict[str, MetricSummaryRow]:
            return summaries.summaries_named(self.store.connection(), run_id, wanted)

        names_now = self._index.get(("summary_names", run_id), load_names)
        return names_now, dict(self._index.get(("summaries_named", run_id, wanted), load_rows) if wanted else {})

    def metric_summary(self, run_id: str, metric: str) -> MetricSummaryRow | None:
        return next((s for s in self._summaries(run_id) if s.metric_name == metric), None)

    def _summaries(self, run_id: str) -> tuple[MetricSummaryRow, ...]:
        return self._index.get(("summaries", run_id), lambda: summaries.run_summaries(self.store.connection(), run_id))

    def artifacts(self, run_id: str, *, type: str | None = None, step_min: int | None = None,
                  step_max: int | None = None, after_id: str | None = None,
                  limit: int = MAX_ARTIFACTS_PER_READ) -> list[ArtifactRow]:
        """The run's artifacts (``artifacts`` table) in step order, one bounded page (``after_id`` continues)."""
        return read_artifacts(self.store, run_id, type=type, step_min=step_min, step_max=step_max,
                              after_id=after_id, limit=limit)

    def notes(self, run_id: str, *, limit: int = MAX_NOTES_PER_READ) -> list[NoteRow]:
        """The notes people wrote on the run (``observations``), oldest first; the newest ``limit`` of them."""
        return list(self._index.get(("notes", run_id, limit),
                                    lambda: tuple(read_notes(self.store.connection(), run_id, limit))))

    def runs_with_note(self, run_ids: Iterable[str], text: str) -> set[str]:
        """Which of ``run_ids`` have a note containing ``text`` (any case), from the notes' search index."""
        with self.store.read_transaction() as conn:
            return runs_with_note(conn, run_ids, text)
    def artifact(self, run_id: str, artifact_id: str) -> ArtifactRow | None:
        """One artifact of the run by id (a download)."""
        return read_artifact(self.store, run_id, artifact_id)

    def artifact_file(self, row: ArtifactRow) -> tuple[str, Path | None]:
        """Where an artifact's bytes are: (``present``, the file), (``gone``, None) for a file on this machine that
        no longer is (a job deleted it), (``remote``, None) for a URI elsewhere. A store-relative URI that would
        leave the store is ``gone``: nothing outside the store is reached through one."""
        path = local_path_of(self.store, row)
        if path is None:
            return "remote", None
        if not os.path.isabs(row.uri.removeprefix("file://")):
            root = os.path.realpath(self.store.root)
            if os.path.commonpath([root, os.path.realpath(path)]) != root:
                return "gone", None
        return ("present", path) if path.is_file() else ("gone", None)

    # -- histograms, images, text (media_reads) ---------------------------------------------

    def media_tags(self, run_id: str) -> list[MediaTag]:
        """The run's histogram, image and text tags with their counts and step ranges."""
        return list(self._index.get(("media_tags", run_id), lambda: tuple(media_reads.media_tags(self.store, run_id))))

    def histograms(self, run_id: str, tag: str, *, step_min: int | None = None, step_max: int | None = None,
                   max_steps: int = 500, keep: tuple[int, ...] = (), buckets: bool = True) -> HistogramSeries:
        """A histogram tag over a step range, reduced to at most ``max_steps`` steps, never dropping one of ``keep``."""
        return media_reads.histogram_series(self.store, run_id, tag, step_min=step_min, step_max=step_max,
                                            max_steps=max_steps, keep=keep, buckets=buckets)

    def histogram_at(self, run_id: str, tag: str, step: int) -> HistogramSeries | None:
        """The histogram of ``tag`` at exactly ``step``; None when that step has none."""
        found = self.histograms(run_id, tag, step_min=step, step_max=step, max_steps=1)
        return found if found.total else None

    def text_at(self, run_id: str, tag: str, step: int) -> TextAt | None:
        """The strings of a text tag at the stored step nearest ``step``."""
        return media_reads.text_at(self.store, run_id, tag, step)

    def images_near(self, run_id: str, tag: str, step: int) -> ImagesAt | None:
        """Every image of a tag at the stored step nearest ``step``."""
        return media_reads.images_near(self.store, run_id, tag, step)

    def image(self, run_id: str, digest: str) -> ArtifactRow | None:
        """An image row of the run whose bytes have ``digest`` (``sha256:<hex>``); None when the run holds none."""
        return image_with_digest(self.store, run_id, digest)

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
        found = self.levels.non_finite(run_id, metric, clamp(start_step), clamp(end_step), limit)
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
            found = self.levels.series(run_id, metric, clamp(start_step), clamp(end_step), max_points,
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

    # -- export ---------------------------------------------------------------------------

    def export_series(self, run_id: str, metric: str, start_step: int | None = None, end_step: int | None = None,
                      *, batch_rows: int = 65_536) -> Iterator[series_export.SeriesBatch]:
        """Every stored point of the series with ``start_step <= step <= end_step``, in step order, at most
        ``batch_rows`` a batch, never the whole series in memory (:func:`.series_export.iter_series`; encode
        the batches with :func:`.series_export.csv_chunks` or :func:`.series_export.json_chunks`)."""
        if batch_rows < 1:
            raise ValueError(f"batch_rows must be at least 1, got {batch_rows}")
        files = [(path, lo, hi) for _, path, lo, hi, _ in self.file_slices.files(run_id).rows]
        return series_export.iter_series(self.store, files, metric, start_step, end_step, batch_rows=batch_rows)

    # -- internals ------------------------------------------------------------------------

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
                self.file_slices.forget_files(run_id)
        lo, hi = bounds(merged.step, start_step, end_step)
        return merged, lo, hi

    def _merged(self, run_id: str, metric: str, start_step: int | None, end_step: int | None) -> Merged:
        full = self.file_slices.files(run_id)
        key = ("series", run_id, metric, full.ids)
        cached = self._cache.get(key)
        if cached is not None:
            return cached  # type: ignore[return-value]
        if start_step is None and end_step is None:
            merged = self._extend_previous(run_id, metric, full)
            if merged is None:
                may_block()
                slices = self.file_slices.slices(full.rows, metric)
                merged = merge([(rank, s) for rank, s in enumerate(slices) if s.step.size])
            self._remember(run_id, metric, key, merged)
            return merged
        # A range (a live pane's tail) reads only the files whose steps overlap it; the merge is kept
        # for the next poll of the same range until a file arrives or leaves.
        files = full.overlapping(start_step, end_step)
        range_key = ("range", run_id, metric, tuple(f[0] for f in files))
        cached = self._cache.get(range_key)
        if cached is not None:
            return cached  # type: ignore[return-value]
        slices = self.file_slices.slices(files, metric)
        may_block(sum(s.step.size for s in slices))
        merged = merge([(rank, s) for rank, s in enumerate(slices) if s.step.size])
        self._cache.put(range_key, merged, merged.nbytes * 2)
        return merged

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
        added = self.file_slices.slices(full.rows[len(prev_ids):], metric)
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
