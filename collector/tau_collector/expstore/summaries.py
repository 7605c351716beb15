"""Per-metric run summaries (``metric_summaries``): computed per file, merged by TauGrid's rules, read and stored.

The rules (TauGrid ``metric_summary.go``): non-finite rows add only to ``count``,
``non_finite_count`` and the step range; min/max/latest come from finite rows; the latest
point is ordered by step, then wall_time, then updated_at, then file_id, then row order, and a
non-null key beats a null one; merging adds counts, widens ranges and keeps the later latest;
values stay NULL while ``finite_count`` is 0; each file is summarized once
(``metric_summary_files``, enforced by the writer and by compaction).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

__all__ = ["SUMMARY_COLUMNS", "MetricSummaryRow", "merge_summaries", "read_summary", "store_summary",
           "summarize_metric"]


@dataclass(frozen=True, slots=True)
class MetricSummaryRow:
    """One ``metric_summaries`` row (``latest_wall_time`` in microseconds since the epoch, UTC)."""

    run_id: str
    metric_name: str
    project: str | None
    run_group_id: str | None
    count: int
    finite_count: int
    non_finite_count: int
    min_step: int | None
    max_step: int | None
    latest_step: int | None
    latest_wall_time: int | None
    latest_value: float | None
    min_value: float | None
    max_value: float | None
    updated_at: str
    latest_file_id: str | None


# The ``metric_summaries`` columns in the order of :class:`MetricSummaryRow`'s fields.
SUMMARY_COLUMNS = ", ".join(f.name for f in dataclasses.fields(MetricSummaryRow))


def read_summary(tx, run_id: str, metric_name: str) -> MetricSummaryRow | None:
    """The stored summary of one metric of a run, inside the caller's transaction."""
    row = tx.execute(
        f"SELECT {SUMMARY_COLUMNS} FROM metric_summaries WHERE run_id = ? AND metric_name = ?",
        (run_id, metric_name),
    ).fetchone()
    return None if row is None else MetricSummaryRow(*row)


def store_summary(tx, s: MetricSummaryRow) -> None:
    """Replace one metric's stored summary, inside the caller's write transaction."""
    marks = ",".join("?" * len(dataclasses.fields(MetricSummaryRow)))
    tx.execute(f"INSERT OR REPLACE INTO metric_summaries({SUMMARY_COLUMNS}) VALUES ({marks})",
               dataclasses.astuple(s))


def summarize_metric(
    *,
    run_id: str,
    metric_name: str,
    project: str | None,
    run_group_id: str | None,
    steps: np.ndarray,
    wall_times: np.ndarray,
    values: np.ndarray,
    file_id: str,
    updated_at: str,
) -> MetricSummaryRow:
    """Summarize one metric's rows of one file (arrays in file row order; the writer never writes nulls)."""
    steps = np.asarray(steps, dtype=np.int64)
    wall_times = np.asarray(wall_times, dtype=np.int64)
    values = np.asarray(values, dtype=np.float64)
    count = int(values.size)
    finite = np.isfinite(values)
    finite_count = int(finite.sum())
    min_step = int(steps.min()) if count else None
    max_step = int(steps.max()) if count else None
    if finite_count == 0:
        return MetricSummaryRow(
            run_id, metric_name, project, run_group_id, count, 0, count, min_step, max_step,
            None, None, None, None, None, updated_at, None,
        )
    f_idx = np.flatnonzero(finite)
    # lexsort's last key is primary; row order (f_idx) breaks the final tie.
    order = np.lexsort((f_idx, wall_times[f_idx], steps[f_idx]))
    latest = f_idx[order[-1]]
    fv = values[f_idx]
    return MetricSummaryRow(
        run_id=run_id,
        metric_name=metric_name,
        project=project,
        run_group_id=run_group_id,
        count=count,
        finite_count=finite_count,
        non_finite_count=count - finite_count,
        min_step=min_step,
        max_step=max_step,
        latest_step=int(steps[latest]),
        latest_wall_time=int(wall_times[latest]),
        latest_value=float(values[latest]),
        min_value=float(fv.min()),
        max_value=float(fv.max()),
        updated_at=updated_at,
        latest_file_id=file_id,
    )


def _latest_key(s: MetricSummaryRow) -> tuple:
    # (present?, value) pairs make a non-null component beat a null one at every level.
    return (
        s.latest_step is not None, s.latest_step or 0,
        s.latest_wall_time is not None, s.latest_wall_time or 0,
        s.updated_at or "",
        s.latest_file_id or "",
    )


def _widen(a: int | float | None, b: int | float | None, pick) -> int | float | None:
    if a is None:
        return b
    if b is None:
        return a
    return pick(a, b)


def merge_summaries(existing: MetricSummaryRow | None, new: MetricSummaryRow) -> MetricSummaryRow:
    """Fold one file's summary into the run's summary."""
    if existing is None:
        return new
    merged = dataclasses.replace(
        existing,
        project=existing.project or new.project,
        run_group_id=existing.run_group_id or new.run_group_id,
        count=existing.count + new.count,
        finite_count=existing.finite_count + new.finite_count,
        non_finite_count=existing.non_finite_count + new.non_finite_count,
        min_step=_widen(existing.min_step, new.min_step, min),
        max_step=_widen(existing.max_step, new.max_step, max),
        min_value=_widen(existing.min_value, new.min_value, min),
        max_value=_widen(existing.max_value, new.max_value, max),
        updated_at=max(existing.updated_at, new.updated_at),
    )
    if new.finite_count and (existing.finite_count == 0 or _latest_key(new) > _latest_key(existing)):
        merged = dataclasses.replace(
            merged,
            latest_step=new.latest_step,
            latest_wall_time=new.latest_wall_time,
            latest_value=new.latest_value,
            latest_file_id=new.latest_file_id,
        )
    return merged
