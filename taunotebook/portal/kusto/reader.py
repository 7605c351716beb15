"""Runs, metric summaries and reduced series read from ADX, as the same result types the local store reader returns.

The reads mirror :class:`tau_collector.expstore.reader.StoreReader` so the v2 routes can serve either
source. Each read is one query (``queries.py``); a fault raises a :class:`~.errors.KustoError` and
nothing partial is returned. Differences from the local source, all on purpose (also in ``collector/kql/README.md``):

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
* **No** ``rows()``: the v2 routes read raw rows only for a metric with non-finite values, and ADX
  holds none (a non-finite observation never becomes a MetricEvent).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import numpy as np

from tau_collector.expstore import reader as store_reader
from tau_collector.gojson import format_time

from .connection import KustoConnection
from .errors import KustoUpstreamError
from .queries import (
    DEFAULT_LOOKBACK,
    RUN_LIMIT,
    metric_summaries_query,
    runs_query,
    series_query,
)

__all__ = ["PER_POINT_TAGS", "AmbiguousRunError", "KustoReader"]

# Tags that differ from point to point (the projection's varying JSONL slots); not run properties.
PER_POINT_TAGS = frozenset({"jsonl.raw_key", "jsonl.history_line", "tau.metric.card", "tau.metric.standard"})
RUNNING = "running"


class AmbiguousRunError(LookupError):
    """A run id names runs in several projects of the workspace (TauGrid's 409 ``CONFLICT``); pass ``project``."""

    def __init__(self, run_id: str, projects: list[str]) -> None:
        super().__init__(f"run {run_id!r} exists in projects {', '.join(sorted(projects))}; name the project")
        self.run_id = run_id
        self.projects = projects


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


class KustoReader:
    """Reads one workspace of one database; safe to share between threads."""

    source = "kusto"

    def __init__(self, connection: KustoConnection, *, workspace: str = "default",
                 lookback: str = DEFAULT_LOOKBACK) -> None:
        self.connection = connection
        self.workspace = workspace
        self.lookback = lookback

    # -- runs -----------------------------------------------------------------------------

    def _run(self, row: dict[str, Any]) -> store_reader.RunRow:
        state = str(row.get("terminal_state") or "") or RUNNING
        tags = {str(k): str(v) for k, v in _object(row.get("tags")).items() if k not in PER_POINT_TAGS}
        first = _time_text(row.get("first_metric_at"))
        return store_reader.RunRow(
            run_id=str(row["run_id"]), project=str(row["project"]), experiment_id=str(row["experiment_id"]),
            run_group_id=str(row["run_group_id"]), parent_run_id=None, state=state, owner=None,
            created_at=first or "", started_at=first, completed_at=_time_text(row.get("terminal_at")),
            config_hash=None, code_sha=None, image_digest=None, tau_command=None, result_uri=None,
            tags=dict(sorted(tags.items())), metric_names=_names(row.get("metric_names")),
        )  # fmt: skip

    def search_runs(
        self,
        workspace: str | None = None,
        *,
        run_id: str | None = None,
        project: str | None = None,
        experiment_id: str | None = None,
        run_group_id: str | None = None,
        state: str | None = None,
    ) -> tuple[list[store_reader.RunRow], bool]:
        """(runs newest first, truncated): at most ``RUN_LIMIT`` runs; ``truncated`` when more matched."""
        query = runs_query(
            workspace if workspace is not None else self.workspace, run_id=run_id, experiment_id=experiment_id,
            project=project, run_group_id=run_group_id, lookback=self.lookback,
        )  # fmt: skip
        rows = self.connection.execute(query)
        truncated = len(rows) > RUN_LIMIT
        runs = [self._run(row) for row in rows[:RUN_LIMIT]]
        if state is not None:
            runs = [r for r in runs if r.state == state]
        return runs, truncated

    def runs(self, workspace: str | None = None, *, project: str | None = None, experiment_id: str | None = None,
             run_group_id: str | None = None, state: str | None = None) -> list[store_reader.RunRow]:
        """Runs, newest first (``StoreReader.runs``' signature); see :meth:`search_runs` for truncation."""
        return self.search_runs(workspace, project=project, experiment_id=experiment_id,
                                run_group_id=run_group_id, state=state)[0]

    def run(self, run_id: str, project: str | None = None) -> store_reader.RunRow | None:
        """The run, or None. Raises :class:`AmbiguousRunError` when several projects hold the id."""
        runs, _ = self.search_runs(run_id=run_id, project=project)
        if len(runs) > 1:
            raise AmbiguousRunError(run_id, [r.project for r in runs])
        return runs[0] if runs else None

    def metric_names(self, run_id: str) -> list[str]:
        run = self.run(run_id)
        return [] if run is None else list(run.metric_names)

    def run_events(self, run_id: str, *, type: str | None = None) -> list:
        """The collector's source problems live beside the job, not in ADX: always none here."""
        return []

    # -- metrics --------------------------------------------------------------------------

    def metric_summaries(self, run_id: str, project: str | None = None) -> list[store_reader.MetricSummaryRow]:
        rows = self.connection.execute(
            metric_summaries_query(self.workspace, run_id, project=project, lookback=self.lookback)
        )
        out = []
        for row in rows:
            count = int(row["count"])
            latest_ns = _ns(row.get("latest_wall_time"))
            out.append(store_reader.MetricSummaryRow(
                run_id=run_id, metric_name=str(row["metric_name"]), project=str(row["project"]),
                run_group_id=str(row["run_group_id"]), count=count, finite_count=count, non_finite_count=0,
                min_step=int(row["min_step"]), max_step=int(row["max_step"]), latest_step=int(row["latest_step"]),
                latest_wall_time=None if latest_ns is None else latest_ns // 1000,
                latest_value=float(row["latest_value"]), min_value=float(row["min_value"]),
                max_value=float(row["max_value"]), updated_at=_seconds_text(row.get("updated_at")),
                latest_file_id=None,
            ))  # fmt: skip
        return out

    # -- points ---------------------------------------------------------------------------

    def series(
        self,
        run_id: str,
        metric: str,
        start_step: int | None = None,
        end_step: int | None = None,
        max_points: int = 8000,
        *,
        step_interval: int | None = None,
        project: str | None = None,
    ) -> store_reader.ReducedSeries:
        """The series reduced in KQL (M4 + milestones); a live pane's tail poll passes ``start_step``."""
        query = series_query(
            self.workspace, run_id, metric, max_points=max_points, project=project, start_step=start_step,
            end_step=end_step, step_interval=step_interval, lookback=self.lookback,
        )  # fmt: skip
        rows = self.connection.execute(query)
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
        return store_reader.ReducedSeries(step, wall, value, np.zeros(step.size, dtype=bool), source_points,
                                          int(step.size) < source_points)
