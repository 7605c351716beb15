"""Where a run's histograms and text live in the store (our addition) and how their Parquet bytes are encoded.

TauGrid's schema has no place for distributions or text summaries, so they get a layout of their own
beside ``metrics/`` (``docs/media.md``), indexed by our extension tables ``media_files`` (a row per tag and
delivery: the file, its rows and step range) and ``media_tag_groups`` (the row groups holding the tag):

``media/run=<run>/<kind>/<file_id>.parquet``

One file holds every tag of ``kind`` (``histograms`` or ``text``) one chunk of a run delivered, rows tag after
tag (a ``tag`` column) and by step within a tag, in row groups of whole tags (:func:`tag_row_groups`), so one
tag is read from its own row groups without decoding the others, and a step range prunes files by the
index's ``step_min``/``step_max`` and row groups by their step statistics. The first layout, one file per tag
and delivery (``media/run=<run>/<kind>/<sha256(tag)[:16]>/<file_id>.parquet``, no ``media_tag_groups`` row),
is still read: a reader then reads the whole file.

Histogram rows carry their step-bucketed summary beside the buckets: the total ``count``, the ``min``/``max``
edges holding counts and the nine percentiles of TensorBoard's distribution bands (:data:`BASIS_POINTS`), so
a distribution over a long run reads those few numeric columns (a column projection never touches the
``buckets`` column) and the buckets only of the steps drawn. A ``buckets`` cell is the histogram's ``[k, 3]``
float64 rows as little-endian bytes (a binary column, :func:`bucket_cells`); stores written before held them as
JSON text (:func:`encode_buckets`), and :func:`decode_buckets` reads both. Each row names where it was read (``source``:
the file and frame, with the tag): a chunk delivered again after a crash adds no row a reader shows twice.

Written without pyarrow (:mod:`.parquet_encoder`): the sidecar writes these, with ZSTD pages (:data:`MEDIA_CODEC`:
a histograms file's ``buckets`` column compressed ~5x faster than GZIP, and no larger); files written before have
GZIP pages, and every reader reads both (pyarrow; :mod:`.parquet_reader` for media compaction).
"""

from __future__ import annotations

import hashlib
import math
import struct
from collections.abc import Sequence

import numpy as np
import orjson

from tau_collector.expstore.format.histogram_summaries import (
    BASIS_POINTS,
    HISTOGRAM_SUMMARY_COLUMNS,
    histogram_summaries,
    histogram_summary,
)
from tau_collector.expstore.format.metric_files import id_component
from tau_collector.expstore.format.parquet_encoder import Coded, Column, PlainTexts, encode_parquet

__all__ = ["BASIS_POINTS", "GROUP_ROWS", "HISTOGRAM_SUMMARY_COLUMNS", "MEDIA_CODEC", "MEDIA_DIR", "TAG_GROUP_ROWS",
           "bucket_cells", "decode_buckets",
           "delivery_file_path", "encode_buckets", "histogram_summary", "histograms_file_bytes", "media_file_path",
           "tag_row_groups", "texts_file_bytes"]

MEDIA_DIR = "media"
MEDIA_CODEC = "zstd"  # the pages' codec of the media files written (deliveries and media compaction's merges)
GROUP_ROWS = 1024
TAG_GROUP_ROWS = 256  # a delivery file's row group holds whole tags up to this many rows (a longer tag: its own)
_LENGTH = struct.Struct("<I")
_NON_FINITE = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}


def media_file_path(run_id: str, kind: str, tag: str, file_id: str) -> str:
    """The store-relative path of one tag's file in the first layout (``tag`` hashed: any name, one directory
    level). Still read; no longer written."""
    tag_key = hashlib.sha256(tag.encode()).hexdigest()[:16]
    return f"{MEDIA_DIR}/run={id_component(run_id)}/{kind}/{tag_key}/{file_id}.parquet"


def delivery_file_path(run_id: str, kind: str, file_id: str) -> str:
    """The store-relative path of one delivery's file of ``kind`` (every tag of the delivery)."""
    return f"{MEDIA_DIR}/run={id_component(run_id)}/{kind}/{file_id}.parquet"


def encode_buckets(buckets: np.ndarray) -> str:
    """``[[left, right, count], …]`` as JSON; edges beyond the doubles (``±inf``) as ``"±Infinity"``: the
    ``buckets`` cells of stores written before the binary encoding (:func:`bucket_cells`). No longer written."""
    if np.isfinite(buckets).all():  # orjson writes a float64 array as it writes the same floats in lists
        return orjson.dumps(np.ascontiguousarray(buckets, dtype=np.float64), option=orjson.OPT_SERIALIZE_NUMPY).decode()
    return orjson.dumps([[v if math.isfinite(v) else ("NaN" if math.isnan(v) else ("Infinity" if v > 0
                                                                                  else "-Infinity"))
                          for v in row] for row in buckets.tolist()]).decode()


def bucket_cells(buckets: Sequence[np.ndarray]) -> PlainTexts:
    """The ``buckets`` column's cells as Parquet writes them: each histogram's ``[k, 3]`` float64 rows
    little-endian (``24 * k`` bytes; ``±inf`` and NaN as themselves), a 4-byte length before each, in one
    buffer for the delivery (no text, no object per bucket): the histograms joined by one numpy call, the
    lengths put between them by numpy (a reshape when every histogram has the same bucket count)."""
    n = len(buckets)
    try:
        joined = np.concatenate(buckets, axis=0, dtype="<f8", casting="unsafe") if n else np.zeros(0, "<f8")
    except ValueError:  # arrays numpy cannot join (shapes beyond one row width): each as its own bytes
        return _bucket_cells_each(buckets)
    row_bytes = joined.itemsize * math.prod(joined.shape[1:])
    sizes = np.fromiter(map(len, buckets), dtype=np.int64, count=n) * row_bytes
    bounds = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(sizes + 4, out=bounds[1:])
    lengths = sizes.astype("<u4").view(np.uint8).reshape(n, 4)
    raw = joined.reshape(-1).view(np.uint8)
    data = np.empty(int(bounds[-1]), dtype=np.uint8)
    if n and (sizes == sizes[0]).all():
        cells = data.reshape(n, -1)
        cells[:, :4] = lengths
        cells[:, 4:] = raw.reshape(n, -1)
    elif n:
        length_at = np.zeros(len(data), dtype=bool)  # the 4 bytes of each length
        length_at[(bounds[:-1, None] + np.arange(4)).reshape(-1)] = True
        data[length_at] = lengths.reshape(-1)
        data[~length_at] = raw
    return PlainTexts(data, bounds)


def _bucket_cells_each(buckets: Sequence[np.ndarray]) -> PlainTexts:
    pack = _LENGTH.pack
    pieces = []
    for b in buckets:
        raw = np.ascontiguousarray(b, dtype="<f8").tobytes()
        pieces.append(pack(len(raw)))
        pieces.append(raw)
    sizes = np.fromiter((len(p) for p in pieces[1::2]), dtype=np.int64, count=len(buckets))
    bounds = np.zeros(len(buckets) + 1, dtype=np.int64)
    np.cumsum(sizes + 4, out=bounds[1:])
    return PlainTexts(np.frombuffer(b"".join(pieces), dtype=np.uint8), bounds)


def decode_buckets(cell: str | bytes) -> np.ndarray:
    """A ``buckets`` cell as float64 ``[k, 3]``: the binary encoding (:func:`bucket_cells`), or the JSON text
    of stores written before it (:func:`encode_buckets`)."""
    if isinstance(cell, bytes):
        if len(cell) % 24:
            raise ValueError(f"a histogram's buckets cell holds {len(cell)} bytes, not whole [left, right, count] "
                             "float64 rows (24 bytes each)")
        return np.frombuffer(cell, dtype="<f8").astype(np.float64).reshape(-1, 3)
    rows = orjson.loads(cell)
    if (b'"' in cell if isinstance(cell, bytes) else '"' in cell) and any(
            isinstance(v, str) for row in rows for v in row):  # "±Infinity"/"NaN": edges beyond doubles
        rows = [[_NON_FINITE[v] if isinstance(v, str) else v for v in row] for row in rows]
    return np.array(rows, dtype=np.float64).reshape(-1, 3)


def tag_row_groups(tag_rows: Sequence[int]) -> tuple[list[int], list[tuple[int, int]]]:
    """Row groups of a delivery file whose rows are tags one after another (``tag_rows[t]`` rows each): (the
    first row of each group, each tag's first and last group). A group holds whole tags up to
    :data:`TAG_GROUP_ROWS` rows; a tag longer than that has groups of its own (of :data:`GROUP_ROWS` rows)."""
    starts: list[int] = []
    spans = []
    row = filled = 0
    for count in tag_rows:
        if count > TAG_GROUP_ROWS:
            first = len(starts)
            starts += range(row, row + count, GROUP_ROWS)
            spans.append((first, len(starts) - 1))
            filled = TAG_GROUP_ROWS  # the next tag starts a group
        else:
            if not starts or filled + count > TAG_GROUP_ROWS:
                starts.append(row)
                filled = 0
            spans.append((len(starts) - 1, len(starts) - 1))
            filled += count
        row += count
    return starts or [0], spans


def _tag_column(tags: Sequence[str], tag_rows: Sequence[int]) -> Column:
    codes = np.repeat(np.arange(len(tags), dtype=np.int64), np.asarray(tag_rows, dtype=np.int64))
    return Column("tag", "string", True, Coded(list(tags), codes))


def histograms_file_bytes(tags: Sequence[str], tag_rows: Sequence[int], step: np.ndarray, wall_time: np.ndarray,
                          source: list[str], buckets: list[np.ndarray], *,
                          codec: str = MEDIA_CODEC) -> tuple[bytes, list[tuple[int, int]]]:
    """A delivery's histograms as Parquet, rows tag after tag (``tag_rows[t]`` rows of ``tags[t]``, each tag's
    sorted by step by the caller), and each tag's first and last row group (:func:`tag_row_groups`). ``codec``:
    the pages' compression (``"gzip"`` writes a file as stores before the ZSTD pages did)."""
    starts, spans = tag_row_groups(tag_rows)
    summary = histogram_summaries(buckets)
    columns = [_tag_column(tags, tag_rows),
               Column("step", "int64", True, step.astype(np.int64), statistics=True),
               Column("wall_time", "double", True, wall_time.astype(np.float64)),
               Column("source", "string", True, source),
               *(Column(name, "double", True, np.ascontiguousarray(summary[:, i]))
                 for i, name in enumerate(HISTOGRAM_SUMMARY_COLUMNS)),
               Column("buckets", "binary", True, bucket_cells(buckets))]
    return encode_parquet(columns, len(step), starts, codec=codec), spans


def texts_file_bytes(tags: Sequence[str], tag_rows: Sequence[int], step: np.ndarray, wall_time: np.ndarray,
                     source: list[str], shapes: list[tuple[int, ...]],
                     texts: list[tuple[str, ...]], *, codec: str = MEDIA_CODEC) -> tuple[bytes, list[tuple[int, int]]]:
    """A delivery's text summaries as Parquet, laid out as :func:`histograms_file_bytes`: each row's strings
    and shape."""
    starts, spans = tag_row_groups(tag_rows)
    columns = [_tag_column(tags, tag_rows),
               Column("step", "int64", True, step.astype(np.int64), statistics=True),
               Column("wall_time", "double", True, wall_time.astype(np.float64)),
               Column("source", "string", True, source),
               Column("shape", "json", True, [orjson.dumps(list(s)).decode() for s in shapes]),
               Column("text", "json", True, [orjson.dumps(list(t)).decode() for t in texts])]
    return encode_parquet(columns, len(step), starts, codec=codec), spans
