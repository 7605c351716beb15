"""Every stored point of one series, in step order, a bounded batch at a time, and as CSV or JSON bytes.

The reader's series (:class:`~.reader.StoreReader`) merges a metric's files into one array, which
is what a chart wants and what an export of 10M points must not do. The reader's export
(:meth:`~.reader.StoreReader.export_series`) hands its file list to :func:`iter_series`: the run's files are taken
in groups whose step ranges overlap (a live run's appended files overlap none: each is a group of its
own), each group is read for the one metric, merged by the reader's rule (sorted by step, the last
stored point of a step wins: by wall time, then by registration order), and handed out in batches
of ``batch_rows``. Memory holds one group's points of the metric, never the series.

Values are kept exactly (non-finite ones too, which the v2 series leaves out). Text spells them
``NaN``, ``Infinity`` and ``-Infinity``; JSON carries them as those strings, so the document stays
JSON any parser reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tau_collector.expstore.store import ExpStore

__all__ = ["SeriesBatch", "iter_series", "csv_chunks", "json_chunks", "CSV_HEADER", "FORMATS"]

FORMATS = ("csv", "json")
CSV_HEADER = b"step,wall_time,value\n"
_INT64_MIN = np.iinfo(np.int64).min
_INT64_MAX = np.iinfo(np.int64).max


@dataclass(slots=True)
class SeriesBatch:
    """Consecutive points of the series: ``wall_time`` in microseconds since the epoch (``valid`` False: none)."""

    step: np.ndarray  # int64
    wall_time: np.ndarray  # int64
    wall_valid: np.ndarray  # bool
    value: np.ndarray  # float64

    def __len__(self) -> int:
        return int(self.step.size)


@dataclass(slots=True)
class _Group:
    low: int
    high: int
    files: list[tuple[int, str]]  # (registration rank, path)


def _groups(files: list[tuple[str, int | None, int | None]]) -> list[_Group]:
    """Files (path, min_step, max_step) in registration order → groups whose step ranges overlap, in step order.
    A file without bounds overlaps everything."""
    spans = sorted(
        ((_INT64_MIN if lo is None else lo, _INT64_MAX if hi is None else hi, rank, path)
         for rank, (path, lo, hi) in enumerate(files)),
        key=lambda s: (s[0], s[2]))
    groups: list[_Group] = []
    for lo, hi, rank, path in spans:
        if not groups or lo > groups[-1].high:
            groups.append(_Group(lo, hi, []))
        else:
            groups[-1].high = max(groups[-1].high, hi)
        groups[-1].files.append((rank, path))
    return groups


def _read_group(store: ExpStore, group: _Group, metric: str) -> SeriesBatch:
    steps, walls, valids, values, ranks = [], [], [], [], []
    for rank, path in group.files:
        table = pq.read_table(store.absolute(path), columns=["step", "wall_time", "value"],
                              filters=[("metric_name", "=", metric)])
        if not table.num_rows:
            continue
        step_col = table.column("step")
        if step_col.null_count:
            table = table.filter(pc.is_valid(step_col))  # no step, no place in a series (the reader's rule)
        wall = table.column("wall_time").cast(pa.int64())
        steps.append(table.column("step").to_numpy().astype(np.int64, copy=False))
        valids.append(pc.is_valid(wall).to_numpy(zero_copy_only=False))
        walls.append(wall.fill_null(_INT64_MIN).to_numpy().astype(np.int64, copy=False))
        values.append(table.column("value").to_numpy().astype(np.float64, copy=False))
        ranks.append(np.full(table.num_rows, rank, dtype=np.int64))
    if not steps:
        empty = np.empty(0, np.int64)
        return SeriesBatch(empty, empty, np.empty(0, bool), np.empty(0, np.float64))
    step, wall, valid, value, rank = (np.concatenate(a) for a in (steps, walls, valids, values, ranks))
    n = step.size
    if n > 1 and not bool(np.all(step[1:] > step[:-1])):
        order = np.lexsort((np.arange(n), rank, wall, step))
        step, wall, valid, value = step[order], wall[order], valid[order], value[order]
        last = np.ones(n, dtype=bool)
        last[:-1] = step[1:] != step[:-1]
        step, wall, valid, value = step[last], wall[last], valid[last], value[last]
    return SeriesBatch(step, wall, valid, value)


def iter_series(store: ExpStore, files: list[tuple[str, int | None, int | None]], metric: str,
                start_step: int | None = None, end_step: int | None = None, *,
                batch_rows: int = 65_536) -> Iterator[SeriesBatch]:
    """The series' points with ``start_step <= step <= end_step``, in step order, at most ``batch_rows`` a batch,
    from the run's ``files`` as ``(path, min_step, max_step)`` in registration order."""
    if batch_rows < 1:
        raise ValueError(f"batch_rows must be at least 1, got {batch_rows}")
    for group in _groups(files):
        if (start_step is not None and group.high < start_step) or (end_step is not None and group.low > end_step):
            continue
        batch = _read_group(store, group, metric)
        lo = 0 if start_step is None else int(np.searchsorted(batch.step, start_step, side="left"))
        hi = batch.step.size if end_step is None else int(np.searchsorted(batch.step, end_step, side="right"))
        for at in range(lo, hi, batch_rows):
            to = min(at + batch_rows, hi)
            yield SeriesBatch(batch.step[at:to], batch.wall_time[at:to], batch.wall_valid[at:to], batch.value[at:to])


# -- text ---------------------------------------------------------------------------------------------------


def _value_text(value: np.ndarray, *, quote: bool) -> pa.Array:
    """Shortest round-trip decimal text of each value; non-finite spelled out (quoted for JSON)."""
    text = pc.cast(pa.array(value, pa.float64()), pa.string())
    nan, pos, neg = (f'"{w}"' if quote else w for w in ("NaN", "Infinity", "-Infinity"))
    if np.isfinite(value).all():
        return text
    return pc.if_else(pa.array(np.isnan(value)), nan,
                      pc.if_else(pa.array(value == np.inf), pos, pc.if_else(pa.array(value == -np.inf), neg, text)))


def _wall_text(batch: SeriesBatch, missing: str) -> pa.Array:
    seconds = pc.cast(pa.array(batch.wall_time / 1e6, pa.float64()), pa.string())
    return pc.if_else(pa.array(batch.wall_valid), seconds, missing)


def _joined_bytes(*columns: pa.Array | str) -> bytes:
    """The element-wise concatenation of ``columns`` (arrays or constant text), all rows back to back."""
    parts = [pa.scalar(c) if isinstance(c, str) else c for c in columns]
    joined = pc.binary_join_element_wise(*parts, "")
    joined = joined.combine_chunks() if isinstance(joined, pa.ChunkedArray) else joined
    offsets = np.frombuffer(joined.buffers()[1], dtype=np.int32, count=len(joined) + 1, offset=joined.offset * 4)
    return joined.buffers()[2].slice(int(offsets[0]), int(offsets[-1] - offsets[0])).to_pybytes()


def csv_chunks(batches: Iterator[SeriesBatch]) -> Iterator[bytes]:
    """``step,wall_time,value`` lines (wall time in seconds, empty when unknown), header first."""
    yield CSV_HEADER
    for batch in batches:
        if len(batch):
            step = pc.cast(pa.array(batch.step), pa.string())
            yield _joined_bytes(step, ",", _wall_text(batch, ""), ",", _value_text(batch.value, quote=False), "\n")


def json_chunks(batches: Iterator[SeriesBatch], head: dict) -> Iterator[bytes]:
    """One JSON document: ``head``'s fields, ``"columns":["step","wall_time","value"]`` and ``"rows":[[…],…]``."""
    import orjson

    opening = orjson.dumps({**head, "columns": ["step", "wall_time", "value"]})
    yield opening[:-1] + b',"rows":['
    first = True
    for batch in batches:
        if not len(batch):
            continue
        step = pc.cast(pa.array(batch.step), pa.string())
        text = _joined_bytes(",\n[", step, ",", _wall_text(batch, "null"), ",", _value_text(batch.value, quote=True),
                             "]")
        yield text[1:] if first else text  # no comma before the first row
        first = False
    yield b"]}\n"
