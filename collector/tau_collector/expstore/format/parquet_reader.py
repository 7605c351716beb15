"""Reading the store's metric files back without pyarrow, for the subset of Parquet our writers make.

Compaction runs beside the job (issue 30): a child that imported pyarrow to merge a few thousand rows
made the sidecar's process tree twice its memory budget. The files it merges are the ones
:mod:`.parquet_encoder` wrote (and, since issue 30, compaction itself), so this module reads that shape
and refuses everything else with :class:`ForeignParquetError`:

* a flat schema of exactly the ``tau.metrics.scalar.v2`` columns (:data:`.schema.METRIC_SCHEMA_COLUMNS`)
  with their physical types (INT64, DOUBLE, BYTE_ARRAY), no repetition;
* v1 data pages and dictionary pages, PLAIN or PLAIN/RLE_DICTIONARY values, definition levels in the
  RLE/bit-packed hybrid (runs and bit-packed groups of any width are both decoded);
* UNCOMPRESSED, GZIP (``zlib``, in the standard library) or ZSTD pages (``zstandard``: the media files since
  they are written with ZSTD, :data:`.media_files.MEDIA_CODEC`); a ZSTD page is decompressed as a stream, so what
  it holds is what its data makes, not what its header claims, and it must be the size its page header says.

A file from another writer (pyarrow's Snappy, TauGrid's Go writer, data page v2) is foreign: the sidecar's
compaction leaves it where it is (as it does a large file), and ``tau-collector store compact`` -- a
process outside the sidecar, with pyarrow -- merges it. A file is read whole (:func:`read_metric_file`) or a row group
at a time (:class:`MetricFileGroups`: the footer, then only the groups asked for). What it returns is columns as
numpy arrays and codes: memory is ~the decoded rows (a few hundred bytes a row), no Python object per row except for the
distinct strings of the coded columns.
"""

from __future__ import annotations

import itertools
import struct
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tau_collector.expstore.format import schema
from tau_collector.expstore.format.parquet_encoder import PlainTexts

__all__ = ["CodedTexts", "ForeignParquetError", "MetricFileGroups", "NumberColumn", "read_metric_file"]

_MAGIC = b"PAR1"
_INT64, _DOUBLE, _BYTE_ARRAY = 2, 5, 6
_PLAIN, _PLAIN_DICTIONARY, _RLE_DICTIONARY = 0, 2, 8
_UNCOMPRESSED, _GZIP, _ZSTD = 0, 2, 6
_DATA_PAGE, _DICTIONARY_PAGE = 0, 2
_OPTIONAL, _REPEATED = 1, 2
_TYPES = {"step": _INT64, "wall_time": _INT64, "value": _DOUBLE}  # every other column is BYTE_ARRAY
_LENGTH = struct.Struct("<i")


class ForeignParquetError(ValueError):
    """The file is valid Parquet, maybe, but not of the subset this reader reads (the message says why)."""


@dataclass(slots=True)
class NumberColumn:
    """``values[i]`` for the rows where ``valid[i]`` (``valid`` None: every row); 0 elsewhere."""

    values: np.ndarray
    valid: np.ndarray | None


@dataclass(slots=True)
class CodedTexts:
    """A text column as ``values[codes[i]]`` (``codes[i] == -1``: null)."""

    values: list[str]
    codes: np.ndarray


# -- Thrift compact protocol ----------------------------------------------------------------------


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


# What is read of each Thrift struct (field id -> the spec of its value: None for a scalar, a dict for a
# struct, and for a list the spec of its elements); every other field is skipped without building it.
_SCHEMA_ELEMENT = {1: None, 3: None, 4: None, 5: None, 6: None}  # 6: converted type (JSON, UTF8 or none)
_COLUMN_META = {4: None, 7: None, 9: None, 11: None, 12: {5: None, 6: None}}
_ROW_GROUP = {1: {1: None, 3: _COLUMN_META, 8: None, 9: None}, 3: None}
_FILE_META = {2: _SCHEMA_ELEMENT, 3: None, 4: _ROW_GROUP}
_PAGE_HEADER = {1: None, 2: None, 3: None, 5: {1: None, 2: None}, 7: {1: None, 2: None}}


def _value(data: bytes, pos: int, ttype: int, spec) -> tuple[object, int]:
    if ttype in (5, 6, 4):
        n, pos = _varint(data, pos)
        return (n >> 1) ^ -(n & 1), pos
    if ttype == 8:
        n, pos = _varint(data, pos)
        return data[pos:pos + n], pos + n
    if ttype == 12:
        return _struct(data, pos, spec)
    if ttype in (9, 10):
        head = data[pos]
        pos += 1
        size, etype = head >> 4, head & 0x0F
        if size == 15:
            size, pos = _varint(data, pos)
        items = []
        for _ in range(size):
            if etype in (1, 2):
                items.append(data[pos] == 1)
                pos += 1
            else:
                item, pos = _value(data, pos, etype, spec)
                items.append(item)
        return items, pos
    if ttype == 3:
        return data[pos], pos + 1
    if ttype == 7:
        return struct.unpack_from("<d", data, pos)[0], pos + 8
    raise ForeignParquetError(f"Thrift type {ttype} in the footer")


def _skip(data: bytes, pos: int, ttype: int) -> int:
    if ttype in (4, 5, 6):
        while data[pos] & 0x80:
            pos += 1
        return pos + 1
    if ttype == 8:
        n, pos = _varint(data, pos)
        return pos + n
    if ttype == 12:
        while True:
            head = data[pos]
            pos += 1
            if head == 0:
                return pos
            if not head >> 4:
                while data[pos] & 0x80:
                    pos += 1
                pos += 1
            t = head & 0x0F
            if t not in (1, 2):
                pos = _skip(data, pos, t)
    if ttype in (9, 10):
        head = data[pos]
        pos += 1
        size, etype = head >> 4, head & 0x0F
        if size == 15:
            size, pos = _varint(data, pos)
        if etype in (1, 2, 3):
            return pos + size
        for _ in range(size):
            pos = _skip(data, pos, etype)
        return pos
    if ttype == 3:
        return pos + 1
    if ttype == 7:
        return pos + 8
    raise ForeignParquetError(f"Thrift type {ttype} in the footer")


def _struct(data: bytes, pos: int, spec: dict) -> tuple[dict[int, object], int]:
    fields: dict[int, object] = {}
    last = 0
    while True:
        head = data[pos]
        pos += 1
        if head == 0:
            return fields, pos
        delta, ttype = head >> 4, head & 0x0F
        if delta:
            fid = last + delta
        else:
            raw, pos = _varint(data, pos)
            fid = (raw >> 1) ^ -(raw & 1)
        last = fid
        if fid not in spec:
            if ttype not in (1, 2):
                pos = _skip(data, pos, ttype)
        elif ttype in (1, 2):
            fields[fid] = ttype == 1
        else:
            fields[fid], pos = _value(data, pos, ttype, spec[fid])


# -- values ---------------------------------------------------------------------------------------


def _hybrid(data: bytes, pos: int, end: int, width: int, count: int) -> np.ndarray:
    """``count`` values of the RLE/bit-packed hybrid encoding in ``data[pos:end]``."""
    out = np.zeros(count, dtype=np.int64)
    at = 0
    value_bytes = (width + 7) // 8
    while at < count and pos < end:
        header, pos = _varint(data, pos)
        if header & 1:  # bit-packed groups of 8 values
            groups = header >> 1
            nbytes = groups * width
            bits = np.unpackbits(np.frombuffer(data, dtype=np.uint8, count=nbytes, offset=pos), bitorder="little")
            values = bits.reshape(-1, width).astype(np.int64) @ (1 << np.arange(width, dtype=np.int64)) \
                if width else np.zeros(groups * 8, dtype=np.int64)
            take = min(len(values), count - at)
            out[at:at + take] = values[:take]
            at += take
            pos += nbytes
        else:
            run = header >> 1
            value = int.from_bytes(data[pos:pos + value_bytes], "little")
            pos += value_bytes
            out[at:at + run] = value
            at += run
    if at < count:
        raise ForeignParquetError(f"hybrid-encoded run holds {at} of {count} values")
    return out


def _plain_texts(data: bytes, count: int) -> tuple[bytes, list[int] | np.ndarray]:
    """The first ``count`` PLAIN byte-array values of ``data``: their bytes and each one's start (plus the end)."""
    if count and len(data) >= 4:
        width = 4 + _LENGTH.unpack_from(data, 0)[0]
        if width * count <= len(data) and width > 4:  # values of one length (tags "{}"), checked by numpy
            lengths = np.frombuffer(data, dtype=np.uint8, count=width * count).reshape(count, width)[:, :4]
            if (lengths == lengths[0]).all():
                return data[:width * count], np.arange(0, width * (count + 1), width, dtype=np.int64)
    bounds = [0]
    pos = 0
    unpack = _LENGTH.unpack_from
    for _ in range(count):
        pos += 4 + unpack(data, pos)[0]
        bounds.append(pos)
    return data[:pos], bounds


@dataclass(slots=True)
class _Chunk:
    """One column chunk decoded: present values (numbers, or PLAIN text pieces), or dictionary codes."""

    valid: np.ndarray
    numbers: list[np.ndarray]
    texts: list[tuple[bytes, list[int]]]
    dictionary: list[str] | None
    codes: list[np.ndarray]


_PER_THREAD = threading.local()  # a ZstdDecompressor is not safe to share between threads; it is reusable


def _unzstd(body: bytes, size: int | None, where: str) -> bytes:
    """A ZSTD page's body: one whole frame of ``size`` bytes (the page header's uncompressed size), decompressed a
    block at a time (a frame's own content size is not trusted to size the output)."""
    import zstandard  # only a process reading media pages loads it

    decompressor = getattr(_PER_THREAD, "zstd", None)
    if decompressor is None:
        decompressor = _PER_THREAD.zstd = zstandard.ZstdDecompressor()
    stream = decompressor.decompressobj()
    try:
        out = stream.decompress(body)
    except zstandard.ZstdError as exc:
        raise ValueError(f"{where}: damaged ZSTD page ({exc})") from None
    if not stream.eof or len(out) != size:
        raise ValueError(f"{where}: ZSTD page of {len(out)} bytes{'' if stream.eof else ', cut short'}, "
                         f"its header says {size}")
    return out


def _read_chunk(raw: bytes, meta: dict, rows: int, ptype: int, optional: bool, where: str) -> _Chunk:
    codec = meta.get(4)
    if codec not in (_UNCOMPRESSED, _GZIP, _ZSTD):
        raise ForeignParquetError(f"{where}: compression codec {codec} (this reader reads none, GZIP and ZSTD)")
    chunk = _Chunk(np.zeros(0, dtype=bool), [], [], None, [])
    numbers = None  # a numeric column's dictionary
    valids = []
    pos, seen = 0, 0
    while seen < rows:
        header, pos = _struct(raw, pos, _PAGE_HEADER)
        size = header.get(3)
        body = raw[pos:pos + size]
        pos += size
        if codec == _GZIP:
            body = zlib.decompress(body, 47)
        elif codec == _ZSTD:
            body = _unzstd(body, header.get(2), f"{where} page at byte {pos - size} of the chunk")
        kind = header.get(1)
        if kind == _DICTIONARY_PAGE:
            dph = header.get(7, {})
            if dph.get(2) not in (_PLAIN, _PLAIN_DICTIONARY):
                raise ForeignParquetError(f"{where}: dictionary page encoding {dph.get(2)}")
            if ptype == _BYTE_ARRAY:
                data, bounds = _plain_texts(body, dph.get(1, 0))
                chunk.dictionary = [data[a + 4:b].decode() for a, b in itertools.pairwise(bounds)]
            else:  # numbers have dictionaries too (pyarrow writes them)
                numbers = np.frombuffer(body, dtype="<i8" if ptype == _INT64 else "<f8", count=dph.get(1, 0))
            continue
        if kind != _DATA_PAGE:
            raise ForeignParquetError(f"{where}: page type {kind} (this reader reads v1 data pages)")
        dph = header[5]
        count, encoding = dph[1], dph[2]
        at = 0
        if optional:
            (length,) = _LENGTH.unpack_from(body, 0)
            valid = _hybrid(body, 4, 4 + length, 1, count).astype(bool)
            at = 4 + length
        else:
            valid = np.ones(count, dtype=bool)
        valids.append(valid)
        present = int(valid.sum())
        if encoding in (_PLAIN_DICTIONARY, _RLE_DICTIONARY):
            if chunk.dictionary is None and numbers is None:
                raise ForeignParquetError(f"{where}: dictionary-encoded page without a dictionary")
            width = body[at] if present else 0
            codes = _hybrid(body, at + 1, len(body), width, present) if present else np.zeros(0, dtype=np.int64)
            if numbers is None:
                chunk.codes.append(codes)
            else:
                chunk.numbers.append(numbers[codes])
        elif encoding == _PLAIN:
            if chunk.codes:  # a fallback from dictionary to PLAIN midway (pyarrow's, on large dictionaries)
                raise ForeignParquetError(f"{where}: PLAIN pages after dictionary pages")
            if ptype == _INT64:
                chunk.numbers.append(np.frombuffer(body, dtype="<i8", count=present, offset=at))
            elif ptype == _DOUBLE:
                chunk.numbers.append(np.frombuffer(body, dtype="<f8", count=present, offset=at))
            else:
                chunk.texts.append(_plain_texts(body[at:], present))
        else:
            raise ForeignParquetError(f"{where}: value encoding {encoding}")
        seen += count
    chunk.valid = np.concatenate(valids) if valids else np.zeros(0, dtype=bool)
    return chunk


def _footer(path: str | Path, where: str) -> dict:
    """The file's footer (FileMetaData), read from its end without reading the rest."""
    with open(path, "rb") as f:
        head = f.read(4)
        size = f.seek(0, 2)
        if size < 12 or head != _MAGIC:
            raise ForeignParquetError(f"{where}: not a Parquet file")
        f.seek(size - 8)
        tail = f.read(8)
        if tail[4:] != _MAGIC:
            raise ForeignParquetError(f"{where}: not a Parquet file")
        (length,) = _LENGTH.unpack_from(tail, 0)
        if not 0 < length <= size - 12:
            raise ForeignParquetError(f"{where}: footer length {length} in a file of {size} bytes")
        f.seek(size - 8 - length)
        data = f.read(length)
    try:
        meta, _ = _struct(data, 0, _FILE_META)
    except (IndexError, struct.error) as exc:
        raise ForeignParquetError(f"{where}: unreadable footer ({exc})") from None
    return meta


class MetricFileGroups:
    """A metric file's row groups, each decoded when asked (:meth:`read`): the footer is read once, a group's
    bytes only when it is read -- what a streaming merge holds of a file is the groups it asked for.
    ``plain``: as :func:`read_metric_file`'s."""

    def __init__(self, path: str | Path, *, plain: frozenset[str] = frozenset({"tags"}),
                 any_columns: bool = False) -> None:
        self.path = path
        self.where = where = str(path)
        self.plain = plain
        meta = _footer(path, where)
        leaves = meta.get(2, [])[1:]
        names = [e.get(4, b"").decode() for e in leaves]
        if (not any_columns and tuple(names) != schema.METRIC_SCHEMA_COLUMNS) or any(e.get(5) for e in leaves):
            raise ForeignParquetError(f"{where}: columns {names} are not {list(schema.METRIC_SCHEMA_COLUMNS)}")
        self.names = names
        self.types, self.optional, self.converted = {}, {}, {}
        for name, e in zip(names, leaves, strict=True):
            # any_columns (a media file): flat columns of INT64, DOUBLE or BYTE_ARRAY, whatever their names
            expected = ((_INT64, _DOUBLE, _BYTE_ARRAY) if any_columns else (_TYPES.get(name, _BYTE_ARRAY),))
            if e.get(1) not in expected or e.get(3) == _REPEATED:
                raise ForeignParquetError(f"{where}: column {name} has physical type {e.get(1)}, "
                                          f"repetition {e.get(3)}")
            self.types[name], self.optional[name], self.converted[name] = e.get(1), e.get(3) == _OPTIONAL, e.get(6)
        self.groups: list[dict] = meta.get(4, [])
        self._at_name = names.index("metric_name") if "metric_name" in names else 0

    def __len__(self) -> int:
        return len(self.groups)

    def rows(self, index: int) -> int:
        return self.groups[index].get(3, 0)

    def metric_bounds(self, index: int) -> tuple[str, str] | None:
        """The first and last metric name of group ``index`` by its statistics; None when it has none."""
        stats = ((self.groups[index].get(1) or [{}])[self._at_name].get(3) or {}).get(12) or {}
        low, high = stats.get(6), stats.get(5)
        return None if low is None or high is None else (low.decode(), high.decode())

    def may_hold(self, index: int, metric_range: tuple[str, str]) -> bool:
        """Whether group ``index``'s ``metric_name`` statistics overlap the range (no statistics: it may)."""
        bounds = self.metric_bounds(index)
        return bounds is None or (bounds[0] <= metric_range[1] and bounds[1] >= metric_range[0])

    def read(self, indices: list[int]) -> tuple[int, dict[str, NumberColumn | CodedTexts | PlainTexts]]:
        """``(rows, columns)`` of the groups at ``indices`` (ascending), as :func:`read_metric_file` returns them."""
        where = self.where
        rows = 0
        chunks: dict[str, list[_Chunk]] = {name: [] for name in self.names}
        with open(self.path, "rb") as f:
            for index in indices:
                group = self.groups[index]
                group_rows = group.get(3, 0)
                rows += group_rows
                spans = []
                for name, column in zip(self.names, group.get(1, []), strict=True):
                    cmeta = column.get(3)
                    # 1: file_path (the chunk is in another file); 8, 9: an encrypted chunk
                    if cmeta is None or any(column.get(k) is not None for k in (1, 8, 9)):
                        raise ForeignParquetError(f"{where}: column {name} has no metadata here")
                    spans.append((name, cmeta, cmeta.get(11) or cmeta[9]))
                low = min(at for _, _, at in spans)
                high = max(at + cmeta[7] for _, cmeta, at in spans)
                f.seek(low)
                data = f.read(high - low)
                for name, cmeta, at in spans:
                    raw = data[at - low:at - low + cmeta[7]]
                    chunks[name].append(_read_chunk(raw, cmeta, group_rows, self.types[name], self.optional[name],
                                                    f"{where} {name}"))
        return rows, {name: _column(name, chunks[name], rows, name in self.plain, where, self.types[name])
                      for name in self.names}


def read_metric_file(path: str | Path, *, plain: frozenset[str] = frozenset({"tags"}),
                     metric_range: tuple[str, str] | None = None
                     ) -> tuple[int, dict[str, NumberColumn | CodedTexts | PlainTexts]]:
    """``(rows, columns)`` of a metric file. Text columns named in ``plain`` come back as
    :class:`.parquet_encoder.PlainTexts` (no nulls allowed), the others as :class:`CodedTexts`.
    ``metric_range`` ``(first, last)``: only the row groups whose ``metric_name`` statistics can hold a name
    in that range (a group without statistics is read); they may hold other metrics' rows too."""
    groups = MetricFileGroups(path, plain=plain)
    return groups.read([i for i in range(len(groups)) if metric_range is None or groups.may_hold(i, metric_range)])


def _valid(parts: list[_Chunk], rows: int) -> np.ndarray | None:
    valid = np.concatenate([p.valid for p in parts]) if parts else np.zeros(0, dtype=bool)
    if len(valid) != rows:
        raise ForeignParquetError(f"column chunks hold {len(valid)} of {rows} rows")
    return None if valid.all() else valid


def _column(name: str, parts: list[_Chunk], rows: int, plain: bool, where: str, ptype: int):
    valid = _valid(parts, rows)
    if ptype != _BYTE_ARRAY:
        # no row group read (all ruled out by metric_range): an empty column of the column's own type, not
        # float64 -- concatenated with int64 steps, that would round them to doubles
        present = (np.concatenate([x for p in parts for x in p.numbers]) if parts
                   else np.zeros(0, dtype="<i8" if ptype == _INT64 else "<f8"))
        if valid is None:
            return NumberColumn(present.copy(), None)
        values = np.zeros(rows, dtype=present.dtype)
        values[valid] = present
        return NumberColumn(values, valid)
    if plain:
        if valid is not None:
            raise ForeignParquetError(f"{where}: column {name} has nulls")
        pieces, bounds, offset = [], [0], 0
        for p in parts:
            if p.dictionary is not None and p.codes:
                encoded = [_LENGTH.pack(len(b)) + b for b in (v.encode() for v in p.dictionary)]
                for codes in p.codes:
                    texts = [encoded[c] for c in codes.tolist()]
                    pieces.extend(texts)
                    for t in texts:
                        offset += len(t)
                        bounds.append(offset)
            for data, starts in p.texts:
                pieces.append(data)
                bounds.append(np.asarray(starts[1:], dtype=np.int64) + offset)
                offset += len(data)
        return PlainTexts(np.frombuffer(b"".join(pieces), dtype=np.uint8),
                          np.concatenate([np.atleast_1d(np.asarray(b, dtype=np.int64)) for b in bounds]))
    index: dict[str, int] = {}
    codes_parts = []
    for p in parts:
        if p.dictionary is not None and p.codes:
            remap = np.array([index.setdefault(v, len(index)) for v in p.dictionary] or [0], dtype=np.int64)
            codes_parts.extend(remap[c] for c in p.codes)
        for data, starts in p.texts:
            codes_parts.append(np.fromiter((index.setdefault(data[a + 4:b].decode(), len(index))
                                            for a, b in itertools.pairwise(starts)),
                                           dtype=np.int64, count=len(starts) - 1))
    values = list(index)
    present = np.concatenate(codes_parts) if codes_parts else np.zeros(0, dtype=np.int64)
    if valid is None:
        if len(present) != rows:
            raise ForeignParquetError(f"{where}: column {name} holds {len(present)} of {rows} rows")
        return CodedTexts(values, present)
    codes = np.full(rows, -1, dtype=np.int64)
    codes[valid] = present
    return CodedTexts(values, codes)
