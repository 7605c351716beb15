"""Runs, metric summaries and reduced series read from ADX: the read contract's second implementation.

:class:`KustoReader` is an :class:`~tau_collector.reads.ExperimentReader` answering with the contract's
rows (:mod:`tau_collector.reads.rows`), as the local store's ``StoreReader`` does, so the v2 routes can
serve either source. A run and its metric summaries are one query, a run listing one, a series one
(``queries.py``; :class:`KustoReader` says when an answer is reused); a fault raises a
:class:`~.errors.KustoError` and nothing partial is returned. Differences from the local source, all on
purpose (also in ``collector/kql/README.md``):

* **Workspace**: strict, inside the query (``workspace_id == …``). A run without a workspace is
  nobody's in a shared database (TauGrid's kusto rule); the local store serves untagged runs to every
  workspace.
* **Run fields**: ``created_at`` and ``started_at`` are the first point's time (TauGrid's
  ``first_activity_at``; the local store stamps ``created_at`` when it first stores the run);
  ``state`` is the latest terminal ``tau/run_status`` marker's ``tau.status.state``, else ``running``
  (TauGrid's catalog says ``unknown``; ``running`` is what the local store and the pane say);
  ``completed_at`` is that marker's time; ``tags`` are the run's latest event's, without the per-point
  keys; fields ADX does not hold (owner, parent, config hash, ...) are empty.
* **Summaries**: exact counts from the events (TauGrid's catalog answers ``count: 0`` and no values);
  no non-finite observations exist in ADX (they never become MetricEvents); ``updated_at`` is the
  latest ``exported_at``.
* **Series**: M4 as the local store (ties may pick another step of equal value), plus TauGrid's
  milestone steps; ``source_points``/``partial`` as TauGrid reports them.
* **Freshness**: a run's state and metric catalog may be up to ``max_age_s`` (1 s) old when a request
  reuses another's answer; series reads are always fresh.
* **No** ``rows()``, and ``non_finite()`` finds none: ADX holds no non-finite values (a non-finite
  observation never becomes a MetricEvent).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from tau_collector.reads import MetricSummaryRow, ReducedSeries, Rows, RunEvent, RunRow, may_block
from tau_collector.taugrid.gojson import format_time

from .connection import KustoConnection
from .errors import AmbiguousRunError, KustoUpstreamError
from .queries import (
    DEFAULT_LOOKBACK,
    MAX_RUNS_PER_QUERY,
    RUN_LIMIT,
    KqlQuery,
    run_metrics_query,
    runs_query,
    series_query,
)

__all__ = ["DEFAULT_MAX_AGE_S", "PER_POINT_TAGS", "AmbiguousRunError", "KustoReader"]

# Tags that differ from point to point (the projection's varying JSONL slots); not run properties.
PER_POINT_TAGS = frozenset({"jsonl.raw_key", "jsonl.history_line", "tau.metric.card", "tau.metric.standard"})
RUNNING = "running"
DEFAULT_MAX_AGE_S = 1.0  # how old a run's answer (state, metric catalog) may be when a request reuses it
_CACHED_RUNS = 4096
_EMPTY_I = np.empty(0, dtype=np.int64)
_EMPTY_F = np.empty(0, dtype=np.float64)


def _ns(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        delta = value - datetime(1970, 1, 1, tzinfo=UTC)
        return (delta.days * 86400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000
    raise KustoUpstreamError(f"Kusto answer: expected a datetime, got {type(value).__name__}", kind="answer")


def _time_text(value: Any) -> str | None:
    ns = _ns(value)
    return None if ns is None else format_time(ns)


def _seconds_text(value: Any) -> str:
    ns = _ns(value)
    return "" if ns is None else datetime.fromtimestamp(ns // 1_000_000_000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _object(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value) if value else {}
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def _names(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = json.loads(value) if value else []
    return tuple(sorted(str(v) for v in value or ()))


@dataclass(frozen=True, slots=True)
class _Entry:
    """One run as ADX holds it: its row and its metric summaries (one query answers both)."""

    run: RunRow
    summaries: tuple[MetricSummaryRow, ...]


@dataclass
class _Request:
    """What one Portal request has read: a run id means the same run on every read of one answer."""

    entries: dict[str, tuple[_Entry, ...]] = field(default_factory=dict)
    projects: dict[str, str] = field(default_factory=dict)  # run id -> the project run() resolved
    listed: dict[str, None] = field(default_factory=dict)  # run ids a listing named (summaries come in batches)


class KustoReader:
    """Reads one workspace of one database; safe to share between threads.

    Queries: a run's row and metric summaries come from one query (:func:`~.queries.run_metrics_query`),
    reused by every read of the same request and, for ``max_age_s`` seconds, by later requests (a
    live pane asks for a run, its metrics and a tail within milliseconds; the Portal then sends two
    queries, not six). A run listing is one query, the summaries of the runs it lists one more per
    :data:`~.queries.MAX_RUNS_PER_QUERY` runs. A series read is always one fresh query. Inside
    :func:`~tau_collector.reads.no_blocking` a read that would query raises ``WouldBlock``,
    so the Portal sends it from a worker thread, never from its event loop.
    """

    source = "kusto"

    def __init__(self, connection: KustoConnection, *, workspace: str = "default",
                 lookback: str = DEFAULT_LOOKBACK, max_age_s: float = DEFAULT_MAX_AGE_S) -> None:
        self.connection = connection
        self.workspace = workspace
        self.lookback = lookback
        self.max_age_s = max_age_s
        self._cache: OrderedDict[str, tuple[float, tuple[_Entry, ...]]] = OrderedDict()
        self._lock = threading.Lock()
        self._request: ContextVar[_Request | None] = ContextVar(f"kusto-request-{id(self)}", default=None)

    @contextlib.contextmanager
    def pinned(self) -> Iterator[None]:
        """One request: runs are read once and mean the same run throughout (``StoreReader.pinned``'s role)."""
        token = self._request.set(_Request())
        try:
            yield
        finally:
            self._request.reset(token)

    def _execute(self, query: KqlQuery) -> list[dict[str, Any]]:
        may_block()  # a network round trip: never on the Portal's event loop
        return self.connection.execute(query)

    # -- runs -----------------------------------------------------------------------------

    def _run(self, row: dict[str, Any], metric_names: tuple[str, ...]) -> RunRow:
        state = str(row.get("terminal_state") or "") or RUNNING
        tags = {str(k): str(v) for k, v in _object(row.get("tags")).items() if k not in PER_POINT_TAGS}
        first = _time_text(row.get("first_metric_at"))
        return RunRow(
            run_id=str(row["run_id"]), project=str(row["project"]), experiment_id=str(row["experiment_id"]),
            run_group_id=str(row["run_group_id"]), parent_run_id=None, state=state, owner=None,
            created_at=first or "", started_at=first, completed_at=_time_text(row.get("terminal_at")),
            config_hash=None, code_sha=None, image_digest=None, tau_command=None, result_uri=None,
            tags=dict(sorted(tags.items())), metric_names=metric_names,
        )  # fmt: skip

    def _summary(self, row: dict[str, Any]) -> MetricSummaryRow:
        count = int(row["count"])
        latest_ns = _ns(row.get("latest_wall_time"))
        return MetricSummaryRow(
            run_id=str(row["run_id"]), metric_name=str(row["metric_name"]), project=str(row["project"]),
            run_group_id=str(row["run_group_id"]), count=count, finite_count=count, non_finite_count=0,
            min_step=int(row["min_step"]), max_step=int(row["max_step"]), latest_step=int(row["latest_step"]),
            latest_wall_time=None if latest_ns is None else latest_ns // 1000,
            latest_value=float(row["latest_value"]), min_value=float(row["min_value"]),
            max_value=float(row["max_value"]), updated_at=_seconds_text(row.get("updated_at")), latest_file_id=None,
        )  # fmt: skip

    def _query_runs(self, run_ids: list[str]) -> dict[str, tuple[_Entry, ...]]:
        """Each run id's entries (none when ADX holds nothing for it in this workspace), from one query."""
        rows = self._execute(run_metrics_query(self.workspace, run_ids, lookback=self.lookback))
        found: dict[str, list[_Entry]] = {run_id: [] for run_id in run_ids}
        key = lambda row: (row["project"], row["experiment_id"], row["run_group_id"], row["run_id"])  # noqa: E731
        for _, group in itertools.groupby(rows, key=key):
            group = list(group)
            summaries = tuple(self._summary(row) for row in group)
            run = self._run(group[0], tuple(sorted(s.metric_name for s in summaries)))
            found.setdefault(run.run_id, []).append(_Entry(run, summaries))
        return {run_id: tuple(entries) for run_id, entries in found.items()}

    def _fresh(self, run_id: str, now: float) -> tuple[_Entry, ...] | None:
        hit = self._cache.get(run_id)
        return hit[1] if hit is not None and now - hit[0] <= self.max_age_s else None

    def _entries(self, run_id: str) -> tuple[_Entry, ...]:
        request = self._request.get()
        if request is not None and run_id in request.entries:
            return request.entries[run_id]
        now = time.monotonic()
        with self._lock:
            entries = self._fresh(run_id, now)
            # A listing's runs are fetched together, on the first read of any of them.
            pending = [] if request is None else [
                r for r in request.listed
                if r != run_id and r not in request.entries and self._fresh(r, now) is None
            ][: MAX_RUNS_PER_QUERY - 1]
        if entries is None:
            fetched = self._query_runs([run_id, *pending])
            with self._lock:
                for fetched_id, fetched_entries in fetched.items():
                    self._cache[fetched_id] = (now, fetched_entries)
                    self._cache.move_to_end(fetched_id)
                while len(self._cache) > _CACHED_RUNS:
                    self._cache.popitem(last=False)
            if request is not None:
                request.entries.update(fetched)
            entries = fetched[run_id]
        elif request is not None:
            request.entries[run_id] = entries
        return entries

    def _resolved_project(self, run_id: str, project: str | None) -> str | None:
        request = self._request.get()
        return project if project is not None or request is None else request.projects.get(run_id)

    def search_runs(
        self,
        workspace: str | None = None,
        *,
        run_id: str | None = None,
        project: str | None = None,
        experiment_id: str | None = None,
        run_group_id: str | None = None,
        state: str | None = None,
    ) -> tuple[list[RunRow], bool]:
        """(runs newest first, truncated): at most ``RUN_LIMIT`` runs; ``truncated`` when more matched."""
        runs = self.runs(workspace, run_id=run_id, project=project, experiment_id=experiment_id,
                         run_group_id=run_group_id, state=state)
        return runs[:RUN_LIMIT], len(runs) > RUN_LIMIT

    def runs(self, workspace: str | None = None, *, run_id: str | None = None, project: str | None = None,
             experiment_id: str | None = None, run_group_id: str | None = None,
             state: str | None = None) -> list[RunRow]:
        """Runs, newest first (``StoreReader.runs``' signature), at most ``RUN_LIMIT + 1``: a run beyond
        ``RUN_LIMIT`` says more matched (the v2 listing's scan limit is the same, and it marks its page partial)."""
        query = runs_query(
            workspace if workspace is not None else self.workspace, run_id=run_id, experiment_id=experiment_id,
            project=project, run_group_id=run_group_id, lookback=self.lookback,
        )  # fmt: skip
        runs = [self._run(row, _names(row.get("metric_names"))) for row in self._execute(query)]
        if state is not None:
            runs = [r for r in runs if r.state == state]
        request = self._request.get()
        if request is not None and (workspace is None or workspace == self.workspace):
            request.listed.update(dict.fromkeys(r.run_id for r in runs))
        return runs

    def run(self, run_id: str, project: str | None = None) -> RunRow | None:
        """The run, or None. Raises :class:`AmbiguousRunError` when several projects hold the id."""
        runs = [e.run for e in self._entries(run_id) if project is None or e.run.project == project]
        if len(runs) > 1:
            raise AmbiguousRunError(run_id, sorted({r.project for r in runs}))
        if not runs:
            return None
        request = self._request.get()
        if request is not None:
            request.projects[run_id] = runs[0].project
        return runs[0]

    def metric_names(self, run_id: str) -> list[str]:
        run = self.run(run_id)
        return [] if run is None else list(run.metric_names)

    def run_events(self, run_id: str, *, type: str | None = None) -> list[RunEvent]:
        """The collector's source problems live beside the job, not in ADX: always none here."""
        return []

    # -- metrics --------------------------------------------------------------------------

    def metric_summaries(self, run_id: str, project: str | None = None) -> list[MetricSummaryRow]:
        """The run's metrics by name; without ``project``, the run this request resolved (or every project's)."""
        project = self._resolved_project(run_id, project)
        return [s for e in self._entries(run_id) if project is None or e.run.project == project for s in e.summaries]

    def metric_summary(self, run_id: str, metric: str) -> MetricSummaryRow | None:
        return next((s for s in self.metric_summaries(run_id) if s.metric_name == metric), None)

    # -- points ---------------------------------------------------------------------------

    def non_finite(self, run_id: str, metric: str, start_step: int | None = None, end_step: int | None = None,
                   limit: int | None = None) -> tuple[int, Rows]:
        """None, ever: a non-finite observation never becomes a MetricEvent, so ADX holds none."""
        return 0, Rows(_EMPTY_I, _EMPTY_I, _EMPTY_F)

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
        project: str | None = None,
    ) -> ReducedSeries:
        """The series reduced in KQL (M4 + milestones); a live pane's tail poll passes ``start_step``.

        Every value is finite (``finite_only`` changes nothing); without ``project``, the run this request
        resolved.
        """
        query = series_query(
            self.workspace, run_id, metric, max_points=max_points, project=self._resolved_project(run_id, project),
            start_step=start_step, end_step=end_step, step_interval=step_interval, lookback=self.lookback,
        )  # fmt: skip
        rows = self._execute(query)
        source_points = int(rows[0]["source_points"]) if rows else 0
        step = np.fromiter((int(r["step"]) for r in rows), dtype=np.int64, count=len(rows))
        value = np.fromiter((float(r["value"]) for r in rows), dtype=np.float64, count=len(rows))
        wall = np.fromiter(((_ns(r["wall_time"]) or 0) // 1000 for r in rows), dtype=np.int64, count=len(rows))
        if max_points < 4 and step.size > max_points:
            # One bucket came back (first, last, min, max and milestones); m4_indices' rule picks from it.
            keep = [step.size - 1] if max_points == 1 else [0, step.size - 1]
            if max_points == 3:
                keep.append(int(np.argmax(value)))
            idx = np.unique(np.array(keep, dtype=np.int64))
            step, value, wall = step[idx], value[idx], wall[idx]
        return ReducedSeries(step, wall, value, np.zeros(step.size, dtype=bool), source_points,
                                          int(step.size) < source_points)
