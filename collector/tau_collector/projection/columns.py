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

from tau_collector.projection.metric_event import METRIC_EVENT_SCHEMA_V1
from tau_collector.projection.projector import PointLists, Projected, Projector, RowError
from tau_collector.sources.event_columns import ScalarColumns
from tau_collector.sources.records import HistoryRow
from tau_collector.taugrid.gojson import MAX_TIME_NS, MIN_TIME_NS, encode_float, format_date_second

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
    # Microseconds from the Python integers: nanoseconds after 2262 are past int64.
    wall_us = np.array([w // 1000 for w in points.walls], dtype=np.int64)
    return _columns(projector, list(codes), key, np.array(points.steps, dtype=np.int64), wall_us,
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
        _lines(out, projector, pieces, cols.metric[keep], cols.step[keep], wall_us[keep], cols.value[keep],
               cols.record[keep])
    columns = None
    if points and keep.size:
        columns = _columns(projector, cols.names, cols.metric[keep], cols.step[keep], wall_us[keep],
                           cols.value[keep], cols.record[keep])
    return out, [], columns


def float_texts(value: np.ndarray) -> list[str]:
    """:func:`~.gojson.encode_float` of every (finite) value, with one orjson call for the column.

    orjson writes the same shortest round-trip digits as ``repr`` (so as Go) and, for
    1e-5 <= |v| < 1e16 and in exponent form (|v| < 1e-6 or >= 1e21), Go's layout too, except that it
    keeps a ``.0`` on integral values (removed here). Between, Go writes positional digits where orjson
    writes an exponent: those values go through ``encode_float``. A property test holds this to
    ``encode_float`` over all finite float64s.
    """
    texts = orjson.dumps(value.tolist()).decode()[1:-1].split(",") if len(value) else []
    texts = [t[:-2] if t[-2:] == ".0" else t for t in texts]
    magnitude = np.abs(value)
    for i in np.flatnonzero(((magnitude >= 1e-6) & (magnitude < 1e-5))
                            | ((magnitude >= 1e16) & (magnitude < 1e21))).tolist():
        texts[i] = encode_float(float(value[i]))
    return texts


def time_texts(wall_us: np.ndarray) -> list[str]:
    """:func:`~.gojson.format_time` of every time in microseconds (all inside the years the column path
    allows; in nanoseconds those after 2262 would overflow int64), each second's date and clock formatted once."""
    seconds, frac = np.divmod(wall_us, 1_000_000)
    dates = {s: format_date_second(s) for s in np.unique(seconds).tolist()}
    return [f"{dates[s]}.{f:06d}".rstrip("0") + "Z" if f else dates[s] + "Z"
            for s, f in zip(seconds.tolist(), frac.tolist(), strict=True)]


def _lines(out: Projected, projector: Projector, pieces: list, metric: np.ndarray, step: np.ndarray,
           wall_us: np.ndarray, value: np.ndarray, record: np.ndarray) -> None:
    """The canonical NDJSON line of every point, as :meth:`Projector.project_rows` writes it, into ``out``."""
    sha256 = hashlib.sha256
    head = '{"schema_version":"' + METRIC_EVENT_SCHEMA_V1 + '","event_id":"metric-'
    lines = out.lines
    append = lines.append
    for n, (code, s, time, number, r) in enumerate(zip(metric.tolist(), step.tolist(), time_texts(wall_us),
                                                       float_texts(value), record.tolist(), strict=True)):
        if not n % 4096:
            out.join_lines()
        p = pieces[code]
        step_time = f',"step":{s},"wall_time":"{time}"'
        append(f'{head}{sha256(f"{p.identity_head}{step_time}}}".encode()).hexdigest()}{p.line_head}{step_time}'
               f',"value":{number}{p.line_tags_head}"{r}"{p.line_tags_tail}'.encode())
    out.join_lines()
