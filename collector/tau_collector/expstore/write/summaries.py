"""Per-metric run summaries (``metric_summaries``): computed per file, merged by TauGrid's rules, read and stored.

The rules (TauGrid ``metric_summary.go``): non-finite rows add only to ``count``,
``non_finite_count`` and the step range; min/max/latest come from finite rows; the latest
point is ordered by step, then wall_time, then write order, and a non-null key beats a null one;
merging adds counts, widens ranges and keeps the later latest;
values stay NULL while ``finite_count`` is 0; each file is summarized once
(``metric_summary_files``, enforced by the writer and by compaction).

A writer summarizes a whole file at once, in columns (:func:`summarize_sorted`: a few numpy reductions
over the file's metric slices, whatever the number of metrics) and folds it into the stored rows with
one upsert statement that spells the merge rules in SQL (:func:`upsert_summaries`): a run of 10,000
metrics costs no Python call per metric. :func:`summarize_metric` and :func:`merge_summaries` are the
same rules one metric at a time, the reference the columnar path is tested against.

Write order, not TauGrid's (updated_at, file_id): files are folded in the order they are registered, so a
file's latest point wins a tie on (step, wall_time) against what is stored -- the reader's last-wins rule
(:mod:`.series_merge`), so the latest value is the series' own. TauGrid's key orders by updated_at (whole
seconds) and then by file_id (a random id), which for a step re-sent with the same wall time within one
second picked the older value about half the time.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence

import numpy as np

from tau_collector.reads.rows import MetricSummaryRow

__all__ = ["SUMMARY_COLUMNS", "merge_summaries", "read_summary", "run_summaries", "store_summary", "summaries_named",
           "summaries_of", "summarize_metric", "summarize_sorted", "summary_count", "summary_names",
           "upsert_summaries"]


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


def run_summaries(conn, run_id: str) -> tuple[MetricSummaryRow, ...]:
    """Every stored summary of the run, by metric name."""
    rows = conn.execute(
        f"SELECT {SUMMARY_COLUMNS} FROM metric_summaries WHERE run_id = ? ORDER BY metric_name", (run_id,)
    ).fetchall()
    return tuple(MetricSummaryRow(*row) for row in rows)


def summary_names(conn, run_id: str) -> tuple[str, ...]:
    """The names of the run's summarized metrics, in order, without reading their summaries."""
    return tuple(n for (n,) in conn.execute(
        "SELECT metric_name FROM metric_summaries WHERE run_id = ? ORDER BY metric_name", (run_id,)))


def summaries_named(conn, run_id: str, names: Sequence[str]) -> dict[str, MetricSummaryRow]:
    """The run's summaries of those of ``names`` it has, by name (500 names a query: SQLite's bound variables)."""
    out: dict[str, MetricSummaryRow] = {}
    for i in range(0, len(names), 500):
        chunk = names[i:i + 500]
        for row in conn.execute(f"SELECT {SUMMARY_COLUMNS} FROM metric_summaries WHERE run_id = ? "
                                f"AND metric_name IN ({','.join('?' * len(chunk))})", (run_id, *chunk)):
            out[row[1]] = MetricSummaryRow(*row)
    return out


def summaries_of(conn, run_ids: Sequence[str], metrics: Sequence[str]) -> dict[tuple[str, str], MetricSummaryRow]:
    """The summaries of these metrics of these runs, in one query: ``(run_id, metric) -> row``."""
    sql = (f"SELECT {SUMMARY_COLUMNS} FROM metric_summaries WHERE run_id IN ({','.join('?' * len(run_ids))}) "
           f"AND metric_name IN ({','.join('?' * len(metrics))})")
    rows = [MetricSummaryRow(*row) for row in conn.execute(sql, [*run_ids, *metrics])]
    return {(r.run_id, r.metric_name): r for r in rows}


def summary_count(conn, run_id: str, metric: str) -> int | None:
    """How many observations the run's summary of ``metric`` counts (every one, before dedupe); None: no summary."""
    row = conn.execute("SELECT count FROM metric_summaries WHERE run_id = ? AND metric_name = ?",
                       (run_id, metric)).fetchone()
    return None if row is None or row[0] is None else int(row[0])


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
    # A tie goes to ``new``: it was written after the files folded into ``existing``.
    if new.finite_count and (existing.finite_count == 0 or _latest_key(new) >= _latest_key(existing)):
        merged = dataclasses.replace(
            merged,
            latest_step=new.latest_step,
            latest_wall_time=new.latest_wall_time,
            latest_value=new.latest_value,
            latest_file_id=new.latest_file_id,
        )
    return merged


def summarize_sorted(
    *,
    run_id: str,
    names: list[str],
    metric: np.ndarray,
    project: str | None,
    run_group_id: str | None,
    steps: np.ndarray,
    wall_times: np.ndarray,
    values: np.ndarray,
    file_id: str,
    updated_at: str,
    wall_valid: np.ndarray | None = None,
) -> list[tuple]:
    """Every metric's summary of one file as ``metric_summaries`` rows (tuples in :data:`SUMMARY_COLUMNS`
    order), computed in columns: what :func:`summarize_metric` gives for each metric's slice. A latest
    point without a wall time (``wall_valid`` False there; its ``wall_times`` entry is 0) has a NULL
    ``latest_wall_time``, as TauGrid's, not the epoch.

    The rows are in file order, sorted by ``metric`` (a code into ``names``), then step, then wall time,
    then arrival: a metric is one contiguous slice, its step range is its first and last row, and its
    latest finite point is its last finite row (the latest key is (step, wall time, row order)).
    """
    n = int(metric.size)
    if n == 0:
        return []
    bounds = np.flatnonzero(metric[1:] != metric[:-1]) + 1
    starts = np.concatenate(([0], bounds))
    ends = np.concatenate((bounds, [n]))
    finite = np.isfinite(values)
    count = ends - starts
    finite_count = np.add.reduceat(finite.astype(np.int64), starts)
    # The last finite row of each slice (-1: none); min/max over finite values (fmin/fmax skip NaN).
    last = np.maximum.reduceat(np.where(finite, np.arange(n), -1), starts)
    masked = np.where(finite, values, np.nan)
    with np.errstate(invalid="ignore"):
        low = np.fmin.reduceat(masked, starts)
        high = np.fmax.reduceat(masked, starts)
    has = (finite_count > 0).tolist()
    at = np.maximum(last, 0)

    def finite_only(array: np.ndarray) -> list:
        return [v if h else None for v, h in zip(array.tolist(), has, strict=True)]

    latest_walls = finite_only(wall_times[at])
    if wall_valid is not None:
        latest_walls = [w if ok else None for w, ok in zip(latest_walls, wall_valid[at].tolist(), strict=True)]
    return list(zip(
        itertools.repeat(run_id), [names[c] for c in metric[starts].tolist()], itertools.repeat(project),
        itertools.repeat(run_group_id), count.tolist(), finite_count.tolist(), (count - finite_count).tolist(),
        steps[starts].tolist(), steps[ends - 1].tolist(), finite_only(steps[at]), latest_walls,
        finite_only(values[at]), finite_only(low), finite_only(high), itertools.repeat(updated_at),
        [file_id if h else None for h in has], strict=False,
    ))


# A newer latest point: the key (step, wall_time), a non-null component beating a null one, and a tie going to
# the new file (written later); compared as SQLite row values. Unqualified names are the stored row,
# ``excluded`` the new one.
def _latest_key_sql(row: str) -> str:
    return (f"({row}latest_step IS NOT NULL, coalesce({row}latest_step, 0), {row}latest_wall_time IS NOT NULL, "
            f"coalesce({row}latest_wall_time, 0))")


_NEWER = (f"(excluded.finite_count > 0 AND (finite_count = 0 OR {_latest_key_sql('excluded.')} >= "
          f"{_latest_key_sql('')}))")


def _widen_sql(column: str, pick: str) -> str:
    # SQLite's multi-argument min()/max() are NULL when an argument is: the other one then stands.
    return f"{column} = coalesce({pick}({column}, excluded.{column}), {column}, excluded.{column})"


# merge_summaries in SQL: in an upsert's SET every expression sees the stored row as it was.
_UPSERT = (
    f"INSERT INTO metric_summaries({SUMMARY_COLUMNS}) VALUES ({','.join('?' * len(SUMMARY_COLUMNS.split(', ')))}) "
    "ON CONFLICT(run_id, metric_name) DO UPDATE SET "
    "project = coalesce(nullif(project, ''), excluded.project), "
    "run_group_id = coalesce(nullif(run_group_id, ''), excluded.run_group_id), "
    "count = count + excluded.count, finite_count = finite_count + excluded.finite_count, "
    "non_finite_count = non_finite_count + excluded.non_finite_count, "
    + ", ".join([_widen_sql("min_step", "min"), _widen_sql("max_step", "max"),
                 _widen_sql("min_value", "min"), _widen_sql("max_value", "max")]) + ", "
    "updated_at = max(updated_at, excluded.updated_at), "
    + ", ".join(f"{c} = CASE WHEN {_NEWER} THEN excluded.{c} ELSE {c} END"
                for c in ("latest_step", "latest_wall_time", "latest_value", "latest_file_id"))
)


def upsert_summaries(tx, rows: list[tuple]) -> None:
    """Fold one file's summaries (:func:`summarize_sorted` rows) into the stored ones, by
    :func:`merge_summaries`' rules, in one statement inside the caller's write transaction."""
    if rows:
        tx.executemany(_UPSERT, rows)
