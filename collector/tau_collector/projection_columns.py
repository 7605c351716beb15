"""Whole batches through the projection: event-file columns to canonical lines, and points in columns.

The projection (:mod:`.projection`) judges history rows one by one. Event-file scalars arrive as
columns (:class:`~.sources.event_columns.ScalarColumns`) whose steps and times are already numbers;
when every step is nonnegative and every time a plausible epoch time, the projection's rules
reduce to per-column operations, and the canonical lines are assembled from the projector's
cached per-metric fragments without a row object per point. A batch with any other row takes
the row path whole, so both paths give the same lines, byte for byte, in record order.

Sinks that keep points rather than lines (the expstore) get them as :class:`PointColumns`: the
finite points column by column with, per metric key, the JSON text of its tags around the one
per-point tag (``jsonl.history_line``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import orjson

from .gojson import MAX_TIME_NS, MIN_TIME_NS, encode_float
from .metric_event import METRIC_EVENT_SCHEMA_V1
from .projection import PointLists, Projected, Projector, RowError
from .records import HistoryRow
from .sources.event_columns import ScalarColumns

__all__ = ["PointColumns", "point_columns", "project_scalar_columns"]

# Wall times (seconds) the column path takes as they are: well inside the years 0-9999 the projection allows.
_MIN_WALL = MIN_TIME_NS / 1e9 + 86_400.0
_MAX_WALL = MAX_TIME_NS / 1e9 - 86_400.0
_LINE_SLOT = '"jsonl.history_line":"\\u0000"'


@dataclass(slots=True)
class PointColumns:
    """One run's finite points, as the store keeps them, in the order they were read.

    ``key`` indexes the per-key lists: ``names`` (the metric name; two raw keys may share one),
    ``tag_texts`` (the JSON object of the point's tags, sorted, split where its history line goes)
    and ``tag_sets`` (the same tags as a dict, without the line). ``wall_us`` is in microseconds.
    """

    project: str
    experiment_id: str
    run_group_id: str
    run_id: str
    source: str
    names: list[str]
    tag_texts: list[tuple[str, str]]
    tag_sets: list[dict[str, str]]
    key: np.ndarray  # int32
    step: np.ndarray  # int64
    wall_us: np.ndarray  # int64
    value: np.ndarray  # float64
    line: np.ndarray  # int64

    def __len__(self) -> int:
        return len(self.key)


def _key_tables(projector: Projector, keys: list[str]) -> tuple[list[str], list[tuple[str, str]], list[dict]]:
    names, texts, sets = [], [], []
    for raw_key in keys:
        pieces = projector.metric_pieces(raw_key)
        tags = pieces.tags if pieces is not None else {}
        text = orjson.dumps({**tags, "jsonl.history_line": "\0"}, option=orjson.OPT_SORT_KEYS).decode()
        at = text.index(_LINE_SLOT)
        names.append(pieces.name if pieces is not None else raw_key)
        texts.append((text[:at] + '"jsonl.history_line":"', '"' + text[at + len(_LINE_SLOT):]))
        sets.append(tags)
    return names, texts, sets


def point_columns(projector: Projector, points: PointLists | None) -> PointColumns | None:
    """The points a row projection listed, as columns (None when there are none)."""
    if not points:
        return None
    codes: dict[str, int] = {}
    key = np.fromiter((codes.setdefault(k, len(codes)) for k in points.keys), dtype=np.int32, count=len(points))
    wall_ns = np.array(points.walls, dtype=np.int64)
    return _columns(projector, list(codes), key, np.array(points.steps, dtype=np.int64), wall_ns // 1000,
                    np.array(points.values, dtype=np.float64), np.array(points.lines, dtype=np.int64))


def _columns(projector: Projector, keys: list[str], key: np.ndarray, step: np.ndarray, wall_us: np.ndarray,
             value: np.ndarray, line: np.ndarray) -> PointColumns:
    c = projector.config
    names, texts, sets = _key_tables(projector, keys)
    return PointColumns(c.project, c.experiment_id, c.run_group_id, c.run_id, c.source or "jsonl", names, texts,
                        sets, key, step, wall_us, value, line)


def project_scalar_columns(projector: Projector, cols: ScalarColumns, *, points: bool = False, joined: bool = False
                           ) -> tuple[Projected, list[tuple[HistoryRow, RowError]], PointColumns | None]:
    """Project an event-file batch: (lines and non-finite observations, rejected rows, points).

    Lines are built when the projector has ``with_lines`` (collected in ``ndjson`` with
    ``joined``); ``points`` also returns the finite points as columns.
    """
    if not len(cols):
        return Projected([], [], [], None, [] if joined else None), [], None
    ordinary = (cols.step >= 0) & (cols.wall_time > _MIN_WALL) & (cols.wall_time < _MAX_WALL)
    if not ordinary.all():
        rows = [HistoryRow({"_step": step, "_timestamp": wall, cols.names[metric]: value}, record, offset)
                for metric, step, wall, value, record, offset in zip(
                    cols.metric.tolist(), cols.step.tolist(), cols.wall_time.tolist(), cols.value.tolist(),
                    cols.record.tolist(), cols.offset.tolist(), strict=True)]
        projected, errors = projector.project_rows(rows, points=points, joined=joined)
        return projected, errors, point_columns(projector, projected.points)
    pieces = [projector.metric_pieces(name) for name in cols.names]
    is_metric = np.array([p is not None for p in pieces] + [False], dtype=bool)
    finite = np.isfinite(cols.value)
    keep = np.flatnonzero(is_metric[cols.metric] & finite)
    odd = np.flatnonzero(is_metric[cols.metric] & ~finite)
    out = Projected([], [], [], None, [] if joined else None)
    wall_us = (cols.wall_time * 1e6).astype(np.int64)  # int(seconds * 1e6), as the projection
    if odd.size:
        # Non-finite values become observations through the row path (rare; they need event ids).
        rows = [HistoryRow({"_step": int(cols.step[i]), "_timestamp": float(cols.wall_time[i]),
                            cols.names[int(cols.metric[i])]: float(cols.value[i])}, int(cols.record[i]),
                           int(cols.offset[i])) for i in odd.tolist()]
        out.non_finite = projector.project_rows(rows)[0].non_finite
    if projector.with_lines and keep.size:
        _lines(out, projector, pieces, cols.metric[keep], cols.step[keep], wall_us[keep] * 1000, cols.value[keep],
               cols.record[keep])
    columns = None
    if points and keep.size:
        columns = _columns(projector, cols.names, cols.metric[keep], cols.step[keep], wall_us[keep],
                           cols.value[keep], cols.record[keep])
    return out, [], columns


def _lines(out: Projected, projector: Projector, pieces: list, metric: np.ndarray, step: np.ndarray,
           wall_ns: np.ndarray, value: np.ndarray, record: np.ndarray) -> None:
    """The canonical NDJSON line of every point, as :meth:`Projector.project_rows` writes it, into ``out``."""
    sha256 = hashlib.sha256
    time_text = projector.time_text
    head = '{"schema_version":"' + METRIC_EVENT_SCHEMA_V1 + '","event_id":"metric-'
    lines = out.lines
    append = lines.append
    for n, (code, s, ns, v, r) in enumerate(zip(metric.tolist(), step.tolist(), wall_ns.tolist(), value.tolist(),
                                                record.tolist(), strict=True)):
        if not n % 4096:
            out.join_lines()
        p = pieces[code]
        step_time = f',"step":{s},"wall_time":"{time_text(ns)}"'
        number = repr(v)
        if "e" in number:
            number = encode_float(v)
        elif number.endswith(".0"):
            number = number[:-2]
        append(f'{head}{sha256(f"{p.identity_head}{step_time}}}".encode()).hexdigest()}{p.line_head}{step_time}'
               f',"value":{number}{p.line_tags_head}"{r}"{p.line_tags_tail}'.encode())
    out.join_lines()
