"""Parquet bytes for the store's metric rows, written without pyarrow: what the sidecar's writes need.

The collector runs beside a training job, and pyarrow's libraries alone are ~50 MB resident, more
than half a sidecar's budget (DESIGN §3, issue 11). The rows a sink writes have one fixed shape
(``tau.metrics.scalar.v2``, :func:`.schema.metric_arrow_schema`), so this module writes exactly
that shape and nothing else, from numpy arrays and Python strings:

* Parquet format 2 files, row groups starting where the caller says (by default one per
  ``ROW_GROUP_ROWS`` rows; the writer cuts them at metric boundaries) and v1 data pages of at most
  ``PAGE_ROWS`` values, RLE definition levels, GZIP pages (``zlib``, level 1) or, for a writer that asks
  (``codec="zstd"``: the media files), ZSTD pages (``zstandard``, level 1: ~5x less CPU than GZIP level 1 on
  histogram pages, and no larger; one compressor a thread); column chunks under 1 KiB stay uncompressed;
  numbers and per-row text PLAIN, text of one or few values (project, run, metric name, source...)
  dictionary-encoded with RLE runs of indices;
* the schema as TauGrid's parquet-go declares it (required/optional, STRING, TIMESTAMP(MICROS,
  UTC), JSON logical types), without an ``ARROW:schema`` blob -- pyarrow reads the logical types
  back as the same Arrow schema, as it does TauGrid's own files;
* min/max statistics (with type-defined column order) for the columns the reader prunes by.

A file is written whole (:func:`encode_parquet`) or a row group at a time to a file object
(:class:`ParquetStream`: what it holds is one group's pages, so a streaming merge writes files of any size).
The footer is the Thrift compact protocol, written by the few lines below. Readers stay on pyarrow;
compaction reads these files back with :mod:`.parquet_reader` and writes the merged file with this encoder.
"""

from __future__ import annotations

import io
import itertools
import struct
import threading
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["CODECS", "CREATED_BY", "PAGE_ROWS", "ROW_GROUP_ROWS", "ZSTD_LEVEL", "Coded", "Column", "ParquetStream",
           "PlainTexts", "TextValues", "encode_parquet"]

ROW_GROUP_ROWS = 131_072  # as the pyarrow writer of the compaction
PAGE_ROWS = 16_384
_MAGIC = b"PAR1"
# The footer's created_by: a reader knows this encoder's metric files are sorted by metric name.
CREATED_BY = "tau-collector parquet_encoder"

# parquet.thrift enums
_INT64, _DOUBLE, _BYTE_ARRAY = 2, 5, 6
_REQUIRED, _OPTIONAL = 0, 1
_PLAIN, _PLAIN_DICTIONARY, _RLE, _RLE_DICTIONARY = 0, 2, 3, 8
_UNCOMPRESSED, _GZIP, _ZSTD = 0, 2, 6
# A file's page codec by name: GZIP for the metric files (TauGrid's layout), ZSTD where a writer asks for it.
CODECS = {"gzip": _GZIP, "zstd": _ZSTD}
ZSTD_LEVEL = 1  # measured on histogram bucket pages: level 3 is slower and larger on real (varying) bucket edges
_COMPRESS_FROM = 1024  # bytes of a column chunk's pages
_DATA_PAGE, _DICTIONARY_PAGE = 0, 2
_CONVERTED_UTF8, _CONVERTED_TIMESTAMP_MICROS, _CONVERTED_JSON = 0, 10, 19

_PHYSICAL = {"string": _BYTE_ARRAY, "json": _BYTE_ARRAY, "binary": _BYTE_ARRAY, "int64": _INT64, "timestamp_us": _INT64,
             "double": _DOUBLE}



@dataclass(slots=True)
class Coded:
    """A text column of few distinct values: row ``i`` is ``values[codes[i]]`` (no nulls)."""

    values: list[str]
    codes: np.ndarray
    pieces: list[bytes] | None = None  # each value PLAIN-encoded, made once for all the row groups

    def plain(self) -> list[bytes]:
        if self.pieces is None:
            self.pieces = [_LENGTH.pack(len(b)) + b for b in map(str.encode, self.values)]
        return self.pieces


# Bytes of rows PlainTexts.take gathers at a time (its index arrays are 8 bytes a byte).
_TAKE_BLOCK_BYTES = 1 << 17

# Below this many rows a segment on average, building text pieces row by row in Python is the cheaper way.
_SEGMENT_ROWS = 8


@dataclass(slots=True)
class PlainTexts:
    """A text column's rows already PLAIN-encoded in one buffer (no nulls): row ``i`` is
    ``data[bounds[i]:bounds[i + 1]]``, its 4-byte little-endian length then its UTF-8 bytes -- what a data
    page holds, so pages are slices of it, with no ``str`` or ``bytes`` object per row."""

    data: np.ndarray  # uint8
    bounds: np.ndarray  # int64, one more than the rows

    def __len__(self) -> int:
        return len(self.bounds) - 1

    def rows(self) -> list[str]:
        """Each row as text (tests, and the rare caller that needs strings)."""
        data = self.data.tobytes()
        return [data[a + 4:b].decode() for a, b in itertools.pairwise(self.bounds.tolist())]

    def take(self, order: np.ndarray) -> PlainTexts:
        """The rows at ``order``, gathered by numpy: each byte's source is its row's start plus its place in it.

        A byte's source index is 8 bytes: gathered a block of about ``_TAKE_BLOCK_BYTES`` at a time, so a merge of
        12,000 rows of tags (~3 MB) holds a few MB of indices, not ~75 MB (the sidecar's memory budget is 80 MB)."""
        order = np.asarray(order, dtype=np.int64)
        starts = self.bounds[order]
        lengths = self.bounds[order + 1] - starts
        bounds = np.zeros(len(order) + 1, dtype=np.int64)
        np.cumsum(lengths, out=bounds[1:])
        data = np.empty(int(bounds[-1]), dtype=np.uint8)
        first, rows = 0, len(order)
        while first < rows:
            last = int(np.searchsorted(bounds, bounds[first] + _TAKE_BLOCK_BYTES, side="right")) - 1
            last = min(rows, max(last, first + 1))
            block_starts, block_lengths = starts[first:last], lengths[first:last]
            if block_lengths.min() == block_lengths.max():  # rows of one length (tags "{}"): a 2-D gather
                width = int(block_lengths[0])
                source = (block_starts[:, None] + np.arange(width, dtype=np.int64)).ravel()
            else:
                block_bounds = bounds[first:last + 1] - bounds[first]
                source = (np.repeat(block_starts - block_bounds[:-1], block_lengths)
                          + np.arange(int(block_bounds[-1]), dtype=np.int64))
            data[bounds[first]:bounds[last]] = self.data[source]
            first = last
        return PlainTexts(data, bounds)

    def rows_between(self, start: int, stop: int) -> PlainTexts:
        """Rows ``start:stop`` (views, no copy)."""
        return PlainTexts(self.data[self.bounds[start]:self.bounds[stop]],
                          self.bounds[start:stop + 1] - self.bounds[start])

    @classmethod
    def around_numbers(cls, parts: Sequence[tuple[str, str]], key: np.ndarray,
                       numbers: np.ndarray) -> PlainTexts | None:
        """Row ``i`` is ``parts[key[i]][0] + str(numbers[i]) + parts[key[i]][1]`` (a point's tags JSON around
        its history line), built by segments of rows of one key and one digit count: in such a segment
        every row has the same length, so its rows are one 2-D block of the buffer filled by broadcasting.
        None when the rows make short segments or a number is negative (row by row is then as cheap)."""
        n = len(key)
        if not n or int(numbers.min()) < 0:
            return None
        numbers = numbers.astype(np.int64, copy=False)
        digits = np.ones(n, dtype=np.int64)
        for power in range(1, 19):
            bigger = numbers >= 10 ** power
            if not bigger.any():
                break
            digits += bigger
        cuts = np.flatnonzero((key[1:] != key[:-1]) | (digits[1:] != digits[:-1])) + 1
        if n < _SEGMENT_ROWS * (len(cuts) + 1):
            return None
        heads = [head.encode() for head, _ in parts]
        tails = [tail.encode() for _, tail in parts]
        head_len = np.array([len(b) for b in heads], dtype=np.int64)
        tail_len = np.array([len(b) for b in tails], dtype=np.int64)
        length = head_len[key] + digits + tail_len[key]
        bounds = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(length + 4, out=bounds[1:])
        data = np.empty(int(bounds[-1]), dtype=np.uint8)
        starts = [0, *cuts.tolist()]
        for first, last in zip(starts, [*cuts.tolist(), n], strict=True):
            k, d = int(key[first]), int(digits[first])
            h, width = len(heads[k]), int(length[first])
            block = data[bounds[first]:bounds[last]].reshape(last - first, width + 4)
            block[:, :4] = np.frombuffer(_LENGTH.pack(width), dtype=np.uint8)
            block[:, 4:4 + h] = np.frombuffer(heads[k], dtype=np.uint8)
            powers = 10 ** np.arange(d - 1, -1, -1, dtype=np.int64)
            block[:, 4 + h:4 + h + d] = numbers[first:last, None] // powers % 10 + 48
            block[:, 4 + h + d:] = np.frombuffer(tails[k], dtype=np.uint8)
        return cls(data, bounds)


# A text column: a value per row (None: null), coded values, rows already PLAIN-encoded, one value for every
# row, or None for all null.
TextValues = list[str | None] | list[str] | Coded | PlainTexts | str | None


@dataclass(slots=True)
class Column:
    """One column of ``n`` rows.

    ``kind`` is ``string``, ``json`` (strings with the JSON logical type), ``binary`` (bytes, no logical
    type; its values only as :class:`PlainTexts`), ``int64``, ``timestamp_us`` (int64 microseconds, UTC) or
    ``double``. ``values`` is a numpy array for the numeric kinds; for the text kinds a list of ``str``
    (``None`` for a null), or one ``str`` for every row, or ``None`` for a column of nulls. ``valid`` (numeric
    kinds) marks the rows that have a value; None means all. ``statistics`` writes min/max/null count for the
    column.
    """

    name: str
    kind: str
    required: bool
    values: object
    valid: np.ndarray | None = None
    statistics: bool = False


# ---------------------------------------------------------------------------------------
# Thrift compact protocol: just what the footer and page headers use

_T_TRUE, _T_FALSE, _T_I32, _T_I64, _T_BINARY, _T_LIST, _T_STRUCT = 1, 2, 5, 6, 8, 9, 12


def _varint(n: int) -> bytes:
    if 0 <= n < 0x80:
        return _ONE_BYTE[n]
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _zigzag(n: int) -> bytes:
    if -64 <= n < 64:  # most of a footer's numbers (enums, counts, field ids): one byte, looked up
        return _ONE_BYTE[(n << 1) ^ (n >> 63)]
    return _varint((n << 1) ^ (n >> 63))


_ONE_BYTE = [bytes([i]) for i in range(0x80)]


class _Struct:
    """A Thrift struct's fields, in increasing field id order."""

    __slots__ = ("_last", "_out")

    def __init__(self) -> None:
        self._out = bytearray()
        self._last = 0

    def _head(self, fid: int, ttype: int) -> None:
        delta = fid - self._last
        if 0 < delta <= 15:
            self._out.append((delta << 4) | ttype)
        else:
            self._out.append(ttype)
            self._out += _zigzag(fid)
        self._last = fid

    def i32(self, fid: int, value: int) -> _Struct:
        # _head and _zigzag inlined for the common case (a footer has thousands of these a small file)
        delta = fid - self._last
        if 0 < delta <= 15:
            self._out.append((delta << 4) | _T_I32)
            self._last = fid
        else:
            self._head(fid, _T_I32)
        self._out += _ONE_BYTE[(value << 1) ^ (value >> 63)] if -64 <= value < 64 else _zigzag(value)
        return self

    def i64(self, fid: int, value: int) -> _Struct:
        delta = fid - self._last
        if 0 < delta <= 15:
            self._out.append((delta << 4) | _T_I64)
            self._last = fid
        else:
            self._head(fid, _T_I64)
        self._out += _ONE_BYTE[(value << 1) ^ (value >> 63)] if -64 <= value < 64 else _zigzag(value)
        return self

    def boolean(self, fid: int, value: bool) -> _Struct:
        self._head(fid, _T_TRUE if value else _T_FALSE)
        return self

    def binary(self, fid: int, value: bytes | str) -> _Struct:
        data = value.encode() if isinstance(value, str) else value
        self._head(fid, _T_BINARY)
        self._out += _varint(len(data)) + data
        return self

    def struct(self, fid: int, value: _Struct) -> _Struct:
        self._head(fid, _T_STRUCT)
        self._out += value.end()
        return self

    def list(self, fid: int, element_type: int, items: Sequence[bytes]) -> _Struct:
        """``items`` already encoded (structs: :meth:`end`, i32: zigzag varints, strings: length + bytes)."""
        self._head(fid, _T_LIST)
        n = len(items)
        self._out += bytes([(n << 4) | element_type]) if n < 15 else bytes([0xF0 | element_type]) + _varint(n)
        for item in items:
            self._out += item
        return self

    def end(self) -> bytes:
        return bytes(self._out) + b"\0"


def _string_item(text: str) -> bytes:
    data = text.encode()
    return _varint(len(data)) + data


# ---------------------------------------------------------------------------------------
# values


_LENGTH = struct.Struct("<i")


def _definition_levels(valid: np.ndarray) -> bytes:
    """RLE/bit-packed hybrid, bit width 1, with its 4-byte length: one RLE run when every value is
    present, else one bit-packed run (values past the end are padding the reader ignores)."""
    n = len(valid)
    if valid.all():
        body = _varint(n << 1) + b"\x01"
    else:
        groups = (n + 7) // 8
        body = _varint((groups << 1) | 1) + np.packbits(valid.astype(np.uint8), bitorder="little").tobytes()
    return _LENGTH.pack(len(body)) + body


def _gzip(data: bytes) -> bytes:
    compressor = zlib.compressobj(1, zlib.DEFLATED, 31)
    return compressor.compress(data) + compressor.flush()


_PER_THREAD = threading.local()  # a ZstdCompressor is not safe to share between threads; it is reusable


def _zstd(data: bytes) -> bytes:
    """One Zstandard frame by this thread's compressor: its content size in the header (as pyarrow writes it) and
    a checksum of the content at its end (a damaged page is an error, as GZIP's CRC makes it, not other numbers)."""
    compressor = getattr(_PER_THREAD, "zstd", None)
    if compressor is None:
        import zstandard  # only a process writing media files loads it (the scalar-only sidecar stays smaller)

        compressor = _PER_THREAD.zstd = zstandard.ZstdCompressor(level=ZSTD_LEVEL, write_checksum=True)
    return compressor.compress(data)


_COMPRESS = {_GZIP: _gzip, _ZSTD: _zstd}


def _statistics(column: Column, present: object, nulls: int) -> _Struct | None:
    stats = _Struct()
    low = high = None
    if column.kind in ("string", "json"):
        if present:
            low, high = min(present).encode(), max(present).encode()  # type: ignore[type-var]
    elif column.kind == "double":
        finite = present[~np.isnan(present)]  # type: ignore[index]
        if finite.size:
            lo, hi = float(finite.min()), float(finite.max())
            # The format's rule for zeros: a minimum of zero is written -0.0, a maximum +0.0.
            low = struct.pack("<d", -0.0 if lo == 0.0 else lo)
            high = struct.pack("<d", 0.0 if hi == 0.0 else hi)
    elif len(present):  # type: ignore[arg-type]
        low = struct.pack("<q", int(present.min()))  # type: ignore[union-attr]
        high = struct.pack("<q", int(present.max()))  # type: ignore[union-attr]
    stats.i64(3, nulls)
    if low is not None:
        stats.binary(5, high).binary(6, low)
    return stats


def _text_rows(column: Column, start: int, stop: int) -> tuple[np.ndarray, list[bytes] | None, np.ndarray | None,
                                                             list[str]]:
    """A text column's rows ``start:stop`` as (valid mask, PLAIN pieces, codes into the pieces or None
    when the pieces are the present values in order, the distinct present values for statistics)."""
    n = stop - start
    values = column.values
    pack = _LENGTH.pack
    if values is None:
        return np.zeros(n, dtype=bool), [], None, []
    if isinstance(values, str):
        data = values.encode()
        return np.ones(n, dtype=bool), [pack(len(data)) + data], np.zeros(n, dtype=np.int64), [values]
    if isinstance(values, PlainTexts):  # the pieces are ``values`` itself: _pages slices it by page
        return np.ones(n, dtype=bool), None, None, []
    if isinstance(values, Coded):
        # The row group's dictionary holds the values its rows use, not every value of the file: a file of a
        # row group per metric would otherwise repeat all its metric names in every group (W groups x W names).
        used_codes, codes = np.unique(values.codes[start:stop], return_inverse=True)
        plain = values.plain()
        used_list = used_codes.tolist()
        return (np.ones(n, dtype=bool), [plain[c] for c in used_list], codes.astype(np.int64, copy=False),
                [values.values[c] for c in used_list])
    rows = values[start:stop]  # type: ignore[index]
    if None in rows:
        valid = np.fromiter((v is not None for v in rows), dtype=bool, count=n)
        rows = [v for v in rows if v is not None]
    else:
        valid = np.ones(n, dtype=bool)
    return valid, [pack(len(b)) + b for b in map(str.encode, rows)], None, rows


def _dictionary_indices(codes: np.ndarray, width: int) -> bytes:
    """A data page's dictionary indices: the bit width, then one RLE run per stretch of equal codes (rows
    are sorted by metric, and the other coded columns hold one value: a few runs per page)."""
    out = bytearray([width])
    if not len(codes):
        return bytes(out)
    value_bytes = (width + 7) // 8
    bounds = np.flatnonzero(np.diff(codes)) + 1
    starts = [0, *bounds.tolist()]
    ends = [*bounds.tolist(), len(codes)]
    for first, last, code in zip(starts, ends, codes[starts].tolist(), strict=True):
        out += _varint((last - first) << 1)
        out += code.to_bytes(value_bytes, "little")
    return bytes(out)


def _pages(column: Column, start: int, stop: int) -> tuple[bytes | None, list[tuple[int, bytes]], object, int]:
    """The row group's dictionary page body (None: no dictionary), its data pages as (value count, body
    before compression), the present values for statistics and the null count. Text columns of one or few
    values (constant, :class:`Coded`) are dictionary-encoded, as pyarrow writes them: a reader filtering by
    metric name then compares a few dictionary entries, not a string per row."""
    n = stop - start
    text = column.kind in ("string", "json", "binary")
    if column.kind == "binary" and not isinstance(column.values, PlainTexts):
        raise ValueError(f"column {column.name}: a binary column's values are PlainTexts")
    if text:
        valid, pieces, codes, present = _text_rows(column, start, stop)
    else:
        array = np.asarray(column.values)[start:stop]
        valid = np.ones(n, dtype=bool) if column.valid is None else np.asarray(column.valid[start:stop], dtype=bool)
        present = array if valid.all() else array[valid]
        dtype = "<f8" if column.kind == "double" else "<i8"
    nulls = n - int(valid.sum())
    if column.required and nulls:
        raise ValueError(f"column {column.name} is required but has nulls")
    dictionary = b"".join(pieces) if text and codes is not None else None
    width = (len(pieces) - 1).bit_length() if dictionary is not None else 0
    pages = []
    at = 0  # in present values
    for page_start in range(0, n, PAGE_ROWS):
        page_valid = valid[page_start:page_start + PAGE_ROWS]
        count = int(page_valid.sum())
        if not text:
            body = np.ascontiguousarray(present[at:at + count], dtype=dtype).tobytes()  # type: ignore[index]
        elif pieces is None:  # PlainTexts: this page's rows are one slice of its buffer
            plain = column.values
            body = plain.data[plain.bounds[start + at]:plain.bounds[start + at + count]].tobytes()  # type: ignore[union-attr]
        elif codes is None:
            body = b"".join(pieces[at:at + count])
        else:
            body = _dictionary_indices(codes[at:at + count], width)
        at += count
        levels = b"" if column.required else _definition_levels(page_valid)
        pages.append((len(page_valid), levels + body))
    return dictionary, pages, present, nulls


def _schema_element(column: Column) -> bytes:
    element = _Struct()
    element.i32(1, _PHYSICAL[column.kind]).i32(3, _REQUIRED if column.required else _OPTIONAL).binary(4, column.name)
    logical = _Struct()
    if column.kind == "string":
        element.i32(6, _CONVERTED_UTF8)
        logical.struct(1, _Struct())
    elif column.kind == "json":
        element.i32(6, _CONVERTED_JSON)
        logical.struct(12, _Struct())
    elif column.kind == "timestamp_us":
        element.i32(6, _CONVERTED_TIMESTAMP_MICROS)
        logical.struct(8, _Struct().boolean(1, True).struct(2, _Struct().struct(2, _Struct())))
    else:
        return element.end()
    return element.struct(10, logical).end()


_SCHEMAS: dict[tuple, list[bytes]] = {}  # the schema elements of a column layout (one in practice)
_TYPE_ORDER = b"\x1c\x00\x00"  # ColumnOrder{TYPE_ORDER: TypeDefinedOrder{}}


def encode_parquet(columns: list[Column], rows: int, group_starts: Sequence[int] | None = None, *,
                   codec: str = "gzip") -> bytes:
    """The file's bytes: ``columns`` (each of ``rows`` rows) in order. ``group_starts``: the first row of
    each row group (ascending, from 0); by default every ``ROW_GROUP_ROWS`` rows. ``codec``: the pages'
    compression, a name of :data:`CODECS`."""
    starts = list(range(0, rows, ROW_GROUP_ROWS)) if group_starts is None else list(group_starts)
    if starts and (starts[0] != 0 or any(b <= a for a, b in itertools.pairwise(starts))
                   or starts[-1] >= rows):
        raise ValueError(f"row groups must start at 0 and ascend below {rows} rows, got {starts[:8]}...")
    sink = io.BytesIO()
    stream = ParquetStream(sink, columns, codec=codec)
    for group_start, group_stop in zip(starts, [*starts[1:], rows], strict=True):
        stream.write_group(columns, group_start, group_stop)
    stream.close()
    return sink.getvalue()


class ParquetStream:
    """A Parquet file written to ``sink`` (a binary file object) a row group at a time: what it holds is one row
    group's pages while they are written, and the footer's few hundred bytes a row group till :meth:`close`.
    ``columns`` gives the layout (names, kinds, nullability) every group's columns must have; ``codec`` the pages'
    compression (a name of :data:`CODECS`; a column chunk under 1 KiB is left uncompressed whatever it is)."""

    def __init__(self, sink, columns: list[Column], *, codec: str = "gzip") -> None:
        for column in columns:
            if column.kind not in _PHYSICAL:
                raise ValueError(f"column {column.name}: unknown kind {column.kind!r}")
        if codec not in CODECS:
            raise ValueError(f"codec {codec!r}: not one of {sorted(CODECS)}")
        self.codec = CODECS[codec]
        self.sink = sink
        self.layout = tuple((c.name, c.kind, c.required) for c in columns)
        self.rows = 0
        self._row_groups: list[bytes] = []
        self._at = len(_MAGIC)
        sink.write(_MAGIC)

    def write_group(self, columns: list[Column], start: int, stop: int) -> None:
        """Rows ``start:stop`` of ``columns`` as the next row group."""
        if tuple((c.name, c.kind, c.required) for c in columns) != self.layout:
            raise ValueError("a row group's columns differ from the file's layout")
        out = bytearray()
        chunks, group_bytes = [], 0
        for column in columns:
            dictionary, pages, present, nulls = _pages(column, start, stop)
            first = self._at + len(out)
            uncompressed = 0
            # Compressing a few hundred bytes costs more than it saves (a live run's chunk of a hundred rows).
            size = sum(len(body) for _, body in pages) + len(dictionary or b"")
            codec = self.codec if size >= _COMPRESS_FROM else _UNCOMPRESSED
            compress = _COMPRESS.get(codec)
            if dictionary is not None:
                packed = dictionary if compress is None else compress(dictionary)
                header = _Struct().i32(1, _DICTIONARY_PAGE).i32(2, len(dictionary)).i32(3, len(packed)).struct(
                    7, _Struct().i32(1, len(present))  # type: ignore[arg-type]  # the dictionary's values
                    .i32(2, _PLAIN_DICTIONARY)).end()
                out += header
                out += packed
                uncompressed += len(header) + len(dictionary)
            data_start = self._at + len(out)
            encoding = _PLAIN if dictionary is None else _RLE_DICTIONARY
            for count, body in pages:
                packed = body if compress is None else compress(body)
                header = _Struct().i32(1, _DATA_PAGE).i32(2, len(body)).i32(3, len(packed)).struct(
                    5, _Struct().i32(1, count).i32(2, encoding).i32(3, _RLE).i32(4, _RLE)).end()
                out += header
                out += packed
                uncompressed += len(header) + len(body)
            meta = _Struct().i32(1, _PHYSICAL[column.kind])
            encodings = [_PLAIN, _RLE] if dictionary is None else [_PLAIN_DICTIONARY, _RLE, _RLE_DICTIONARY]
            meta.list(2, _T_I32, [_zigzag(e) for e in encodings])
            meta.list(3, _T_BINARY, [_string_item(column.name)])
            meta.i32(4, codec).i64(5, stop - start).i64(6, uncompressed).i64(7, self._at + len(out) - first)
            meta.i64(9, data_start)
            if dictionary is not None:
                meta.i64(11, first)
            if column.statistics:
                stats = _statistics(column, present, nulls)
                if stats is not None:
                    meta.struct(12, stats)
            chunks.append(_Struct().i64(2, first).struct(3, meta).end())
            group_bytes += uncompressed
        self._row_groups.append(_Struct().list(1, _T_STRUCT, chunks).i64(2, group_bytes).i64(3, stop - start).end())
        self.sink.write(out)
        self._at += len(out)
        self.rows += stop - start

    def close(self) -> int:
        """Write the footer; the file's size in bytes."""
        schema = _SCHEMAS.get(self.layout)
        if schema is None:
            root = _Struct().binary(4, "schema").i32(5, len(self.layout)).end()
            schema = _SCHEMAS[self.layout] = [root, *(_schema_element(Column(n, k, r, None))
                                                       for n, k, r in self.layout)]
        footer = _Struct().i32(1, 2)
        footer.list(2, _T_STRUCT, schema)
        footer.i64(3, self.rows).list(4, _T_STRUCT, self._row_groups)
        footer.binary(6, CREATED_BY)
        footer.list(7, _T_STRUCT, [_TYPE_ORDER] * len(self.layout))
        meta_bytes = footer.end()
        tail = meta_bytes + _LENGTH.pack(len(meta_bytes)) + _MAGIC
        self.sink.write(tail)
        self._at += len(tail)
        return self._at
