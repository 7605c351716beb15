"""The columns a writer just encoded, kept as a reader would decode them: what an in-process compaction merges
without reading back the small files it wrote (:func:`..maintain.compaction.read_parts`).

A delivery writes one small file per run; after ``min_files`` of them the writer's in-process compaction
merges them, and reading each back (footer, pages, dictionaries: ~0.8 ms for an 8-row file) cost as much as
writing it. The writer already holds those rows: :func:`part_of_columns` turns the encoder's
:class:`~.parquet_encoder.Column` list into what :func:`~.parquet_reader.read_metric_file` returns for the file
(the same rows, values and nulls; a coded column's dictionary may be in another order, which a merge remaps),
and :class:`RecentParts` keeps them by the file's path, bounded by rows, oldest dropped first. Files are
immutable once published (a new file id each), so a path's part never goes stale; one that is not kept (an
evicted one, another writer's) is read from disk as before.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from tau_collector.expstore.format.parquet_encoder import Coded, Column, PlainTexts
from tau_collector.expstore.format.parquet_reader import CodedTexts, NumberColumn

__all__ = ["RecentParts", "part_of_columns"]

_NUMERIC = ("int64", "timestamp_us", "double")
_LENGTH_BYTES = 4


def part_of_columns(columns: list[Column], rows: int, plain: frozenset[str] = frozenset({"tags"})) -> dict:
    """``columns`` (``rows`` rows, as given to :func:`~.parquet_encoder.encode_parquet`) as
    :func:`~.parquet_reader.read_metric_file` returns the file they encode; arrays are copied (a caller may
    reuse its buffers)."""
    part: dict = {}
    for column in columns:
        values = column.values
        if column.kind in _NUMERIC:
            array = np.array(values, dtype="<f8" if column.kind == "double" else "<i8", copy=True)
            valid = None if column.valid is None or np.all(column.valid) else np.array(column.valid, dtype=bool)
            if valid is not None:
                array[~valid] = 0  # what a reader returns for a null
            part[column.name] = NumberColumn(array, valid)
        elif column.name in plain:
            part[column.name] = _plain(values, rows, column.name)
        else:
            part[column.name] = _coded(values, rows)
    return part


def _coded(values, rows: int) -> CodedTexts:
    if values is None:
        return CodedTexts([], np.full(rows, -1, dtype=np.int64))
    if isinstance(values, str):
        return CodedTexts([values], np.zeros(rows, dtype=np.int64))
    if isinstance(values, Coded):
        return CodedTexts(list(values.values), np.array(values.codes, dtype=np.int64, copy=True))
    texts = values.rows() if isinstance(values, PlainTexts) else values
    index: dict[str, int] = {}
    codes = np.fromiter((-1 if v is None else index.setdefault(v, len(index)) for v in texts), dtype=np.int64,
                        count=rows)
    return CodedTexts(list(index), codes)


def _plain(values, rows: int, name: str) -> PlainTexts:
    if isinstance(values, PlainTexts):
        return PlainTexts(values.data.copy(), values.bounds.copy())
    if isinstance(values, str):
        values = [values] * rows
    elif isinstance(values, Coded):
        values = [values.values[c] for c in values.codes.tolist()]
    if values is None or None in values:
        raise ValueError(f"column {name} has nulls")  # the reader refuses such a file too
    encoded = [len(b).to_bytes(_LENGTH_BYTES, "little") + b for b in map(str.encode, values)]
    bounds = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=bounds[1:])
    return PlainTexts(np.frombuffer(b"".join(encoded), dtype=np.uint8).copy(), bounds)


class RecentParts:
    """Parts of recently written files by path, at most ``max_rows`` rows in all (oldest dropped first)."""

    def __init__(self, max_rows: int) -> None:
        if max_rows < 0:
            raise ValueError(f"max_rows must be at least 0, got {max_rows}")
        self.max_rows = max_rows
        self._parts: OrderedDict[str, tuple[int, dict]] = OrderedDict()
        self._rows = 0

    def __len__(self) -> int:
        return len(self._parts)

    def put(self, path: str, rows: int, part: dict) -> None:
        if rows > self.max_rows:
            return
        self._drop(path)
        self._parts[path] = (rows, part)
        self._rows += rows
        while self._rows > self.max_rows:
            _, (old, _) = self._parts.popitem(last=False)
            self._rows -= old

    def take(self, path: str) -> dict | None:
        """The part of the file at ``path`` (forgotten: a merged file is not merged again), or None."""
        entry = self._parts.pop(path, None)
        if entry is None:
            return None
        self._rows -= entry[0]
        return entry[1]

    def _drop(self, path: str) -> None:
        entry = self._parts.pop(path, None)
        if entry is not None:
            self._rows -= entry[0]
