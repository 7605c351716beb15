"""Writing one delivered chunk: immutable Parquet files per run, registered with runs, tags and summaries.

A chunk becomes one ``tau.metrics.scalar.v2`` file per run it touches. Files are published
(temp name, fsync, rename) before the index transaction, and the transaction registers them,
upserts the run's experiment/run group/run/tag rows, merges the summaries and records the
idempotency key -- all or nothing. A redelivered chunk (same key, same request hash) is a no-op;
the same key with another hash is a conflict. Files published by a transaction that then lost
(the key was recorded meanwhile by another writer, or the transaction failed) are deleted again.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import math
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import orjson

from tau_collector.collect.completion_file import RUN_STATUS_METRIC
from tau_collector.expstore.format import schema
from tau_collector.expstore.format.levels import publish_write_levels
from tau_collector.expstore.format.metric_files import metric_file_path, metric_row_groups
from tau_collector.expstore.format.parquet_encoder import Coded, Column, PlainTexts, TextValues, encode_parquet
from tau_collector.expstore.format.written_parts import RecentParts, part_of_columns
from tau_collector.expstore.maintain.compaction import CompactionPolicy, compact_quietly
from tau_collector.expstore.maintain.compaction_thread import CompactionThread
from tau_collector.expstore.maintain.leftovers import GRACE_SECONDS, sweep_run_directories
from tau_collector.expstore.store import ExpStore, StoreError, utc_now_rfc3339
from tau_collector.expstore.write.config_rows import ConfigConflictError, put_run_config, run_config_hash
from tau_collector.expstore.write.idempotency import (
    IDLE_STREAM_SECONDS,
    IDLE_SWEEP_SECONDS,
    prune_idle_streams,
    record_stream_key,
)
from tau_collector.expstore.write.listing import refresh_runs
from tau_collector.expstore.write.summaries import read_summary, store_summary, summarize_sorted, upsert_summaries
from tau_collector.projection.metric_event import MetricEvent
from tau_collector.taugrid.gojson import MAX_TIME_NS, MIN_TIME_NS, format_time
from tau_collector.taugrid.ids import unreachable_id
from tau_collector.taugrid.run_config import RunConfig

__all__ = [
    "RUN_STATUS_METRIC",
    "ConfigConflictError",
    "IdempotencyConflictError",
    "MetricWriter",
    "register_run",
    "RunColumns",
    "WriteResult",
    "metric_file_path",
    "read_summary",
    "run_status_of",
    "store_summary",
]

RUN_STATUS_STATES = {1.0: "succeeded", -1.0: "failed", -2.0: "cancelled"}
RUN_STATE_RUNNING = "running"
RUN_STATE_COMPLETED = "completed"  # TauGrid's other succeeded-like state: ended, no verdict of its own
EXPERIMENT_SOURCE = "implicit"
WRITE_COMMAND = "collector deliver"


class IdempotencyConflictError(StoreError):
    """The idempotency key was already used for a different request."""


@dataclass(frozen=True, slots=True)
class WriteResult:
    reused: bool  # True: the key was already recorded with this hash, nothing was written
    file_ids: tuple[str, ...]
    row_count: int


@dataclass(slots=True)
class RunColumns:
    """One run's rows for one write, column by column, in arrival order (the writer sorts them; rows
    already in file order -- metric name, step, wall time -- are written without a copy).

    ``metric`` indexes ``names``; ``wall_time`` is in microseconds (0 where ``wall_valid`` is
    False; ``wall_valid`` None means every row has one); ``tags`` holds each row's tags as a JSON
    object with sorted keys (as text, or already PLAIN-encoded: :class:`..format.parquet_encoder.PlainTexts`),
    and ``tag_sets`` the distinct tag maps behind them (the run's tags
    are what all of them share). ``source``/``unit``/``split`` are one value for every row or an
    array per row. ``first_wall_ns`` (the earliest wall time, ns) and ``status`` (the newest
    ``tau/run_status`` row as ``(state, completed_at ns or None)``) keep the precision of the
    caller's times.
    """

    project: str
    experiment_id: str
    run_group_id: str
    run_id: str
    names: list[str]
    metric: np.ndarray
    step: np.ndarray
    wall_time: np.ndarray
    value: np.ndarray
    tags: list[str] | PlainTexts
    tag_sets: list[dict[str, str]]
    source: TextValues
    unit: TextValues = None
    split: TextValues = None
    wall_valid: np.ndarray | None = None
    first_wall_ns: int = 0
    status: tuple[str, int | None] | None = None

    def __len__(self) -> int:
        return len(self.metric)


@dataclass(slots=True)
class _RunFile:
    project: str
    experiment_id: str
    run_group_id: str
    run_id: str
    file_id: str
    relative_path: str
    row_count: int
    min_step: int
    max_step: int
    digest: str
    data: bytes
    summaries: list[tuple]  # metric_summaries rows of this file (summaries.summarize_sorted)
    tags: dict[str, str]
    status: tuple[str, int | None] | None
    first_wall_ns: int
    metrics: tuple[str, str]  # the first and last metric name of its rows
    columns: list[Column]  # what was encoded (kept for an in-process compaction: .format.written_parts)


def _tags_json(tags: dict[str, str]) -> str:
    return orjson.dumps(tags, option=orjson.OPT_SORT_KEYS).decode()


class MetricWriter:
    """Writes chunks into one store. Thread-safe per thread (one SQLite connection each)."""

    def __init__(self, store: ExpStore, *, compaction: CompactionPolicy | None = None,
                 background_compaction: bool = False, leftover_grace_seconds: float = GRACE_SECONDS,
                 idle_stream_seconds: float = IDLE_STREAM_SECONDS) -> None:
        self.store = store
        # Streams idle this long keep only their newest sequence's keys (.idempotency); swept at the first
        # delivery with a stream and then at most every IDLE_SWEEP_SECONDS (or the idle time, if shorter).
        if not idle_stream_seconds > 0:
            raise ValueError(f"idle_stream_seconds must be positive, got {idle_stream_seconds}")
        self.idle_stream_seconds = idle_stream_seconds
        self._next_idle_sweep = -math.inf
        # Runs whose directories this writer swept of what a killed writer or compaction left (.maintain.leftovers).
        self._swept: set[tuple[str, str, str, str]] = set()
        self.leftover_grace_seconds = leftover_grace_seconds
        # None: never compact opportunistically.
        self.compaction = compaction
        # With ``background_compaction`` merges run in a thread, never with pyarrow
        # (:mod:`..maintain.compaction_thread`): the sidecar's way. Otherwise after a delivery, in the
        # delivering thread (with pyarrow for another writer's files).
        self._compaction_thread = (CompactionThread(store, compaction)
                                   if compaction is not None and background_compaction else None)
        # Compacting in this thread: the columns of the small files this writer wrote, so that a merge does not
        # read them back (.format.written_parts); at most a merge's rows.
        self._written = (RecentParts(compaction.max_merge_rows)
                         if compaction is not None and not background_compaction else None)

    def write_chunk(
        self,
        idempotency_key: str,
        events: list[MetricEvent],
        non_finite: list[MetricEvent],
        *,
        request_hash: str,
        stream: tuple[str, int] | None = None,
    ) -> WriteResult:
        """Write canonical events (and non-finite observations) under ``idempotency_key``.

        ``stream``: ``(spool stream, chunk sequence)`` of a spooled chunk; the stream's keys older than the
        replay horizon are pruned (:mod:`.idempotency`). Without it the key is kept for good."""
        existing = self._recorded_hash(idempotency_key)
        if existing is not None:
            return self._reuse(idempotency_key, existing, request_hash)
        return self._write(idempotency_key, columns_from_events(list(events) + list(non_finite)), request_hash,
                           stream)

    def write_columns(self, idempotency_key: str, runs: list[RunColumns], *, request_hash: str,
                      stream: tuple[str, int] | None = None) -> WriteResult:
        """Write rows already in columns (bulk importers) under ``idempotency_key``: one file per run
        (``stream`` as for :meth:`write_chunk`)."""
        existing = self._recorded_hash(idempotency_key)
        if existing is not None:
            return self._reuse(idempotency_key, existing, request_hash)
        return self._write(idempotency_key, runs, request_hash, stream)

    def _write(self, idempotency_key: str, runs: list[RunColumns], request_hash: str,
               stream: tuple[str, int] | None = None) -> WriteResult:
        for run in runs:  # a stored run is always reachable: refuse what the v2 API could not name
            for kind, value in (("run_id", run.run_id), ("experiment_id", run.experiment_id)):
                if problem := unreachable_id(kind, value):
                    raise StoreError(problem)
        for run in runs:
            key = (run.project, run.experiment_id, run.run_group_id, run.run_id)
            if len(run) and key not in self._swept:
                sweep_run_directories(self.store, *key, grace_seconds=self.leftover_grace_seconds)
                self._swept.add(key)
        now = utc_now_rfc3339()
        run_files = [self._run_file(run, now) for run in runs if len(run)]
        published = []
        try:
            for rf in run_files:
                published.append(self.store.publish_file(rf.relative_path, _writer_of(rf.data)))
            published.extend(publish_write_levels(self.store, [run for run in runs if len(run)], run_files))
            with self.store.write_transaction() as tx:
                raced = tx.execute(
                    "SELECT request_hash FROM idempotency_keys WHERE key = ?", (idempotency_key,)
                ).fetchone()
                if raced is None:
                    for rf in run_files:
                        self._register(tx, rf, now)
                    refresh_runs(tx, {rf.run_id for rf in run_files})
                    tx.execute(
                        "INSERT INTO idempotency_keys(key, command, target_type, target_id, request_hash, "
                        "created_at) VALUES (?, ?, ?, ?, ?, ?)",
                        (idempotency_key, WRITE_COMMAND, "metric_files",
                         ",".join(rf.file_id for rf in run_files), request_hash, now),
                    )
                    if stream is not None:
                        record_stream_key(tx, stream[0], stream[1], idempotency_key, now)
        except BaseException:
            for path in published:
                path.unlink(missing_ok=True)
            raise
        if raced is not None:
            # Another writer recorded the same key between our check and our transaction.
            for path in published:
                path.unlink(missing_ok=True)
            return self._reuse(idempotency_key, raced[0], request_hash)
        if stream is not None and time.monotonic() >= self._next_idle_sweep:
            self._prune_idle_streams()
        if self._written is not None:
            for rf in run_files:
                if rf.row_count <= self._written.max_rows // 2:  # what a merge takes as small (compaction)
                    self._written.put(rf.relative_path, rf.row_count, part_of_columns(rf.columns, rf.row_count))
        if self.compaction is not None:
            self._maybe_compact({rf.run_id for rf in run_files})
        file_ids = tuple(rf.file_id for rf in run_files)
        return WriteResult(False, file_ids, sum(rf.row_count for rf in run_files))

    # -- idempotency ----------------------------------------------------------------------

    def _prune_idle_streams(self) -> int:
        self._next_idle_sweep = time.monotonic() + min(IDLE_SWEEP_SECONDS, self.idle_stream_seconds)
        cutoff = _dt.datetime.now(_dt.UTC) - _dt.timedelta(seconds=self.idle_stream_seconds)
        with self.store.write_transaction() as tx:
            return prune_idle_streams(tx, cutoff.strftime("%Y-%m-%dT%H:%M:%SZ"))

    def recorded(self, key: str) -> bool:
        """Whether ``key`` is recorded (an importer checks a whole file's key before reading it)."""
        return self._recorded_hash(key) is not None

    def record_key(self, key: str, *, command: str, target_type: str, target_id: str, request_hash: str) -> None:
        """Record ``key`` without writing rows (e.g. "every chunk of this file is written")."""
        with self.store.write_transaction() as tx:
            tx.execute(
                "INSERT OR IGNORE INTO idempotency_keys(key, command, target_type, target_id, request_hash, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?)",
                (key, command, target_type, target_id, request_hash, utc_now_rfc3339()),
            )

    def put_run_config(self, run_id: str, config: RunConfig) -> bool:
        """Store ``config`` as the run's configuration (TauGrid's ``configs`` row and ``runs.config_hash``).

        True when it was written, False when the same row was already there; a run that already has
        another configuration raises :class:`ConfigConflictError` (nothing is written). The run row
        itself may come later: it takes the hash when its first metrics are written.
        """
        return put_run_config(self.store, run_id, config)

    def mark_completed(self, run_id: str, media_newest: float | None = None) -> None:
        """A run whose whole history was written at once (an import): state ``completed``, completed at
        its newest point (or ``media_newest``, seconds, its newest histogram/image/text, when later or the
        only one). A state set by a ``tau/run_status`` row (succeeded/failed/cancelled) stays."""
        with self.store.write_transaction() as tx:
            newest = tx.execute("SELECT max(latest_wall_time) FROM metric_summaries WHERE run_id = ?",
                                (run_id,)).fetchone()[0]
            if media_newest is not None and math.isfinite(media_newest) and media_newest > 0:
                media_us = round(media_newest * 1e6)
                newest = media_us if newest is None else max(newest, media_us)
            completed = _time_text(newest * 1000) if newest is not None else utc_now_rfc3339()
            tx.execute("UPDATE runs SET state = ?, completed_at = ? WHERE run_id = ? AND state IN (?, ?)",
                       (RUN_STATE_COMPLETED, completed, run_id, RUN_STATE_RUNNING, RUN_STATE_COMPLETED))
            refresh_runs(tx, [run_id])

    def keys_with_prefix(self, prefix: str) -> list[tuple[str, str, str]]:
        """``(key, request_hash, target_id)`` of every recorded key that starts with ``prefix``."""
        return self.store.connection().execute(
            "SELECT key, request_hash, target_id FROM idempotency_keys WHERE key >= ? AND key < ? ORDER BY key",
            (prefix, prefix + "\U0010ffff"),
        ).fetchall()

    def _recorded_hash(self, key: str) -> str | None:
        row = self.store.connection().execute(
            "SELECT request_hash FROM idempotency_keys WHERE key = ?", (key,)
        ).fetchone()
        return None if row is None else row[0]

    @staticmethod
    def _reuse(key: str, recorded: str, request_hash: str) -> WriteResult:
        if recorded != request_hash:
            raise IdempotencyConflictError(
                f"idempotency key {key!r} was used for a different request "
                f"(recorded hash {recorded}, this request {request_hash})"
            )
        return WriteResult(True, (), 0)

    # -- files ----------------------------------------------------------------------------

    def _run_file(self, run: RunColumns, now: str) -> _RunFile:
        n = len(run)
        # Sorted by metric, then step, then wall_time, then arrival (lexsort is stable): readers slice
        # a metric with a binary search and the last row of equal steps is the one that wins.
        rank = np.empty(len(run.names), dtype=np.int64)
        rank[np.argsort(np.array(run.names, dtype=object), kind="stable")] = np.arange(len(run.names))
        metric_rank = rank[run.metric]
        order = np.lexsort((run.wall_time, run.step, metric_rank))
        if (order == np.arange(n)).all():
            order = None  # already in file order (a bulk importer sorts): nothing to copy
        names_sorted = sorted(run.names)

        def rows(array: np.ndarray) -> np.ndarray:
            return array if order is None else array[order]

        metric_sorted = rows(metric_rank)
        steps = rows(run.step)
        walls = rows(run.wall_time)
        values = rows(run.value)
        listed = None if order is None else order.tolist()

        def text(value: TextValues) -> TextValues:
            if isinstance(value, list) and listed is not None:
                return [value[i] for i in listed]
            if isinstance(value, PlainTexts) and order is not None:
                return value.take(order)
            return value

        columns = [
            Column("project", "string", True, run.project),
            Column("run_group_id", "string", True, run.run_group_id),
            Column("run_id", "string", True, run.run_id),
            Column("metric_name", "string", True, Coded(names_sorted, metric_sorted), statistics=True),
            Column("step", "int64", False, steps, statistics=True),
            Column("wall_time", "timestamp_us", False, walls, statistics=True,
                   valid=None if run.wall_valid is None else rows(run.wall_valid)),
            Column("value", "double", True, values, statistics=True),
            Column("unit", "string", False, text(run.unit)),
            Column("source", "string", True, text(run.source)),
            Column("split", "string", False, text(run.split)),
            Column("tags", "json", True, text(run.tags)),
        ]
        data = encode_parquet(columns, n, metric_row_groups(_slice_starts(metric_sorted), n))
        file_id = "metrics-" + uuid.uuid4().hex
        return _RunFile(
            project=run.project,
            experiment_id=run.experiment_id,
            run_group_id=run.run_group_id,
            run_id=run.run_id,
            file_id=file_id,
            relative_path=metric_file_path(run.project, run.experiment_id, run.run_group_id, run.run_id, file_id),
            row_count=n,
            min_step=int(steps.min()),
            max_step=int(steps.max()),
            digest=hashlib.sha256(data).hexdigest(),
            data=data,
            summaries=summarize_sorted(run_id=run.run_id, names=names_sorted, metric=metric_sorted,
                                       project=run.project, run_group_id=run.run_group_id, steps=steps,
                                       wall_times=walls, values=values, file_id=file_id, updated_at=now,
                                       wall_valid=None if run.wall_valid is None else rows(run.wall_valid)),
            tags=_common_tags(run.tag_sets),
            status=run.status,
            first_wall_ns=run.first_wall_ns,
            metrics=(names_sorted[int(metric_sorted[0])], names_sorted[int(metric_sorted[-1])]),
            columns=columns,
        )

    # -- index ----------------------------------------------------------------------------

    def _register(self, tx, rf: _RunFile, now: str) -> None:
        other = register_run(tx, rf.run_id, rf.project, rf.experiment_id, rf.run_group_id, rf.first_wall_ns, now)
        if other is not None:
            raise StoreError(
                f"run {rf.run_id!r} already belongs to project {other[0]!r}, experiment "
                f"{other[1]!r}, group {other[2]!r}; refusing metrics for project {rf.project!r}, "
                f"experiment {rf.experiment_id!r}, group {rf.run_group_id!r}"
            )
        if rf.status is not None:
            state, completed_ns = rf.status
            tx.execute(
                "UPDATE runs SET state = ?, completed_at = ? WHERE run_id = ?",
                (state, _time_text(completed_ns) if completed_ns else now, rf.run_id),
            )
        if rf.tags:
            tx.executemany(
                "INSERT INTO tags(scope_type, scope_id, key, value) VALUES ('run', ?, ?, ?) "
                "ON CONFLICT(scope_type, scope_id, key) DO UPDATE SET value = excluded.value",
                [(rf.run_id, k, v) for k, v in sorted(rf.tags.items())],
            )
        tx.execute(
            "INSERT INTO metric_files(file_id, path, format, schema_version, schema_hash, project, "
            "run_group_id, run_id, row_count, digest, min_step, max_step, created_at) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (rf.file_id, rf.relative_path, schema.METRIC_FILE_FORMAT, schema.METRIC_SCHEMA_VERSION,
             schema.METRIC_SCHEMA_HASH, rf.project, rf.run_group_id, rf.run_id, rf.row_count, rf.digest,
             rf.min_step, rf.max_step, now),
        )
        tx.execute("INSERT INTO metric_file_metrics(file_id, run_id, first_metric, last_metric) VALUES (?, ?, ?, ?)",
                   (rf.file_id, rf.run_id, *rf.metrics))
        upsert_summaries(tx, rf.summaries)  # one statement for every metric of the file
        tx.execute(
            "INSERT INTO metric_summary_files(file_id, run_id, summarized_at) VALUES (?, ?, ?)",
            (rf.file_id, rf.run_id, now),
        )

    def media_delivered(self, run_ids: set[str]) -> None:
        """A delivery of ``run_ids``' histograms, text or images was written: the sidecar's compaction thread looks
        whether their media are due (a job that logs only media delivers no points to ask). Without the thread
        (an import) nothing: the import compacts a run's media when it ends."""
        if self._compaction_thread is not None:
            self._compaction_thread.request(sorted(run_ids))

    def _maybe_compact(self, run_ids: set[str]) -> None:
        if self._compaction_thread is not None:
            self._compaction_thread.request(sorted(run_ids))
            return
        for run_id in sorted(run_ids):
            compact_quietly(self.store, run_id, policy=self.compaction, known=self._written)

    def close(self) -> None:
        """Wait for a compaction still merging (it is safe to stop at any point, but a finished collector
        should not leave work half done)."""
        if self._compaction_thread is not None:
            self._compaction_thread.close()


def _slice_starts(sorted_codes: np.ndarray) -> list[int]:
    """Where each run of equal codes starts (rows sorted by metric: each metric's first row)."""
    return [0, *(np.flatnonzero(sorted_codes[1:] != sorted_codes[:-1]) + 1).tolist()]


def run_status_of(values: np.ndarray, wall_ns: list[int | None]) -> tuple[str, int | None] | None:
    """The run state set by the newest ``tau/run_status`` row among ``values`` (in file row order), if any."""
    status = None
    best = 0
    for value, wall in zip(values.tolist(), wall_ns, strict=True):
        state = RUN_STATUS_STATES.get(value)
        if state is not None and (status is None or (wall or 0) >= best):
            status, best = (state, wall), wall or 0
    return status


def columns_from_events(events: list[MetricEvent]) -> list[RunColumns]:
    """Canonical events as one :class:`RunColumns` per run, in order of first appearance."""
    by_run: dict[tuple[str, str, str, str], list[MetricEvent]] = defaultdict(list)
    for e in events:
        by_run[(e.project, e.experiment_id, e.run_group_id, e.run_id)].append(e)
    out = []
    for (project, experiment_id, group, run_id), evs in by_run.items():
        codes: dict[str, int] = {}
        tag_cache: dict[tuple, str] = {}
        tags_col = []
        for e in evs:
            key = tuple(e.tags.items())
            text = tag_cache.get(key)
            if text is None:
                text = tag_cache[key] = _tags_json(e.tags)
            tags_col.append(text)
        metric = np.array([codes.setdefault(e.metric_name, len(codes)) for e in evs], dtype=np.int32)
        walls = [e.wall_time for e in evs]
        valid = np.array([w is not None for w in walls], dtype=bool)
        values = np.array([float(e.value) for e in evs], dtype=np.float64)
        # In the file's row order (step, then wall time, then arrival), as the rows are written.
        status_rows = sorted((i for i, e in enumerate(evs) if e.metric_name == RUN_STATUS_METRIC),
                             key=lambda i: (evs[i].step, evs[i].wall_time or 0, i))
        out.append(RunColumns(
            project=project, experiment_id=experiment_id, run_group_id=group, run_id=run_id,
            names=list(codes), metric=metric,
            step=np.array([e.step for e in evs], dtype=np.int64),
            wall_time=np.array([0 if w is None else w // 1000 for w in walls], dtype=np.int64),
            value=values,
            tags=tags_col,
            tag_sets=[dict(k) for k in tag_cache],
            source=[e.source for e in evs],
            unit=[e.unit or None for e in evs],
            split=[e.split or None for e in evs],
            wall_valid=None if valid.all() else valid,
            first_wall_ns=min((w for w in walls if w is not None), default=0),
            status=run_status_of(values[status_rows], [walls[i] for i in status_rows]),
        ))
    return out


_POINT_TAG_PREFIXES = ("jsonl.", "tau.metric.")


def _common_tags(tag_sets: list[dict[str, str]]) -> dict[str, str]:
    """Run tags = the tags every event of the run in this chunk carries with the same value.

    The collector's ``--tag``s (e.g. ``tau_workspace``) are on every event; per-point tags are not
    run properties and so do not become ``tags`` rows.
    """
    if not tag_sets:
        return {}
    # Projection metadata describes a point's provenance, never the run, even when a chunk
    # happens to hold one row or one metric.
    common = {k: v for k, v in tag_sets[0].items() if not k.startswith(_POINT_TAG_PREFIXES)}
    for tags in tag_sets[1:]:
        if not common:
            break
        common = {k: v for k, v in common.items() if tags.get(k) == v}
    return common


def register_run(tx, run_id: str, project: str, experiment_id: str, run_group_id: str, first_wall_ns: int | None,
                 now: str) -> tuple[str, str, str] | None:
    """Create the run's row (``running``) with its experiment and group, or move its start earlier.

    Returns the (project, experiment, group) the run already belongs to when they differ from these (nothing
    is changed then); None otherwise. Shared by points and media (a run that logs only media is listed).
    """
    tx.execute(
        "INSERT INTO experiments(experiment_id, project, name, description, source, created_at, "
        "updated_at) "
        "VALUES (?, ?, ?, NULL, ?, ?, ?) "
        "ON CONFLICT(experiment_id) DO UPDATE SET updated_at = excluded.updated_at",
        (experiment_id, project, experiment_id, EXPERIMENT_SOURCE, now, now),
    )
    tx.execute(
        "INSERT INTO run_groups(run_group_id, project, name, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT(run_group_id) DO UPDATE SET updated_at = excluded.updated_at",
        (run_group_id, project, run_group_id, now, now),
    )
    started = _time_text(first_wall_ns) if first_wall_ns else None
    existing = tx.execute(
        "SELECT project, experiment_id, run_group_id, started_at FROM runs WHERE run_id = ?", (run_id,),
    ).fetchone()
    if existing is None:
        tx.execute(
            "INSERT INTO runs(run_id, project, experiment_id, run_group_id, state, created_at, "
            "started_at, config_hash, index_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (run_id, project, experiment_id, run_group_id, RUN_STATE_RUNNING, now, started,
             run_config_hash(tx, run_id), schema.SCHEMA_VERSION),
        )
        return None
    if tuple(existing[:3]) != (project, experiment_id, run_group_id):
        return tuple(existing[:3])
    # RFC3339Nano UTC strings of equal form compare like the times they name... except when
    # fraction lengths differ, so compare as times via their nanoseconds when both exist.
    if started is not None and (existing[3] is None or first_wall_ns < _parse_ns(existing[3])):
        tx.execute("UPDATE runs SET started_at = ? WHERE run_id = ?", (started, run_id))
    return None


def _time_text(ns: int) -> str:
    """A run's time as TauGrid's RFC 3339 text; a wall time outside the years 0-9999 (a store holds any int64
    microseconds) is held to that range's end, which is all the text can say."""
    return format_time(min(max(int(ns), MIN_TIME_NS), MAX_TIME_NS))


def _parse_ns(text: str) -> int:
    from tau_collector.taugrid.gojson import GoJSONError, parse_time

    try:
        return parse_time(text)
    except GoJSONError:
        return math.inf  # type: ignore[return-value]  # an unparsable value loses to any real time


def _writer_of(data: bytes):
    def write(path) -> None:
        with open(path, "wb") as fh:
            fh.write(data)

    return write
