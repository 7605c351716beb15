"""Where a run's histograms and text live in the store (our addition) and how their Parquet bytes are encoded.

TauGrid's schema has no place for distributions or text summaries, so they get a layout of their own
beside ``metrics/`` (``docs/media.md``), indexed by our extension table ``media_files``:

``media/run=<run>/<kind>/<sha256(tag)[:16]>/<file_id>.parquet``

One file holds one tag of one run (``kind`` is ``histograms`` or ``text``) as delivered in one chunk, rows
sorted by step, so a tag is read without opening the others and a step range prunes files by the index's
``step_min``/``step_max`` and row groups (:data:`GROUP_ROWS` rows) by their step statistics.

Histogram rows carry their step-bucketed summary beside the buckets: the total ``count``, the ``min``/``max``
edges holding counts and the nine percentiles of TensorBoard's distribution bands (:data:`BASIS_POINTS`), so
a distribution over a long run reads those few numeric columns (a column projection never touches the
``buckets`` column) and the buckets only of the steps drawn. Each row names where it was read (``source``:
the file and frame, with the tag): a chunk delivered again after a crash adds no row a reader shows twice.

Written without pyarrow (:mod:`.parquet_encoder`): the sidecar writes these.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np
import orjson

from tau_collector.expstore.format.metric_files import id_component
from tau_collector.expstore.format.parquet_encoder import Column, encode_parquet

__all__ = ["BASIS_POINTS", "GROUP_ROWS", "HISTOGRAM_SUMMARY_COLUMNS", "MEDIA_DIR", "decode_buckets",
           "encode_buckets", "histogram_file_bytes", "histogram_summary", "media_file_path", "text_file_bytes"]

MEDIA_DIR = "media"
GROUP_ROWS = 1024
# TensorBoard's distribution bands (``compressor.NORMAL_HISTOGRAM_BPS``): min, -2σ … +2σ, max of a normal.
BASIS_POINTS = (0, 668, 1587, 3085, 5000, 6915, 8413, 9332, 10000)
HISTOGRAM_SUMMARY_COLUMNS = ("count", "min", "max", *(f"bp{bp}" for bp in BASIS_POINTS))
_NON_FINITE = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}


def media_file_path(run_id: str, kind: str, tag: str, file_id: str) -> str:
    """The store-relative path of one tag's file (``tag`` hashed: any name, one directory level)."""
    tag_key = hashlib.sha256(tag.encode()).hexdigest()[:16]
    return f"{MEDIA_DIR}/run={id_component(run_id)}/{kind}/{tag_key}/{file_id}.parquet"


def encode_buckets(buckets: np.ndarray) -> str:
    """``[[left, right, count], …]`` as JSON; edges beyond the doubles (``±inf``) as ``"±Infinity"``."""
    if np.isfinite(buckets).all():
        return orjson.dumps(buckets.tolist()).decode()
    return orjson.dumps([[v if math.isfinite(v) else ("NaN" if math.isnan(v) else ("Infinity" if v > 0
                                                                                  else "-Infinity"))
                          for v in row] for row in buckets.tolist()]).decode()


def decode_buckets(text: str) -> np.ndarray:
    rows = orjson.loads(text)
    if any(isinstance(v, str) for row in rows for v in row):
        rows = [[_NON_FINITE[v] if isinstance(v, str) else v for v in row] for row in rows]
    return np.array(rows, dtype=np.float64).reshape(-1, 3)


def histogram_summary(buckets: np.ndarray) -> tuple[float, ...]:
    """(count, min, max, the percentiles at :data:`BASIS_POINTS`) of ``[k, 3]`` buckets, interpolated inside a
    bucket as TensorBoard's ``compress_histogram`` does; NaN for an empty histogram."""
    counts = buckets[:, 2] if len(buckets) else np.zeros(0)
    total = float(counts.sum()) if len(counts) else 0.0
    if not total > 0:
        return (total, *([math.nan] * (2 + len(BASIS_POINTS))))
    held = np.flatnonzero(counts > 0)
    low, high = float(buckets[held[0], 0]), float(buckets[held[-1], 1])
    cumulative = np.cumsum(counts)
    marks = []
    for bp in BASIS_POINTS:
        target = total * bp / 10_000
        i = int(np.searchsorted(cumulative, target, side="left"))
        i = min(i, len(buckets) - 1)
        before = float(cumulative[i - 1]) if i else 0.0
        left, right, count = (float(v) for v in buckets[i])
        fraction = (target - before) / count if count > 0 else 0.0
        value = left + (right - left) * min(max(fraction, 0.0), 1.0)
        marks.append(min(max(value, low), high))
    return (total, low, high, *marks)


def _groups(rows: int) -> list[int]:
    return list(range(0, rows, GROUP_ROWS)) or [0]


def histogram_file_bytes(step: np.ndarray, wall_time: np.ndarray, source: list[str],
                         buckets: list[np.ndarray]) -> bytes:
    """One tag's histograms (rows sorted by step by the caller) as Parquet."""
    summary = np.array([histogram_summary(b) for b in buckets], dtype=np.float64).reshape(-1,
                                                                                         len(HISTOGRAM_SUMMARY_COLUMNS))
    columns = [Column("step", "int64", True, step.astype(np.int64), statistics=True),
               Column("wall_time", "double", True, wall_time.astype(np.float64)),
               Column("source", "string", True, source),
               *(Column(name, "double", True, np.ascontiguousarray(summary[:, i]))
                 for i, name in enumerate(HISTOGRAM_SUMMARY_COLUMNS)),
               Column("buckets", "json", True, [encode_buckets(b) for b in buckets])]
    return encode_parquet(columns, len(step), _groups(len(step)))


def text_file_bytes(step: np.ndarray, wall_time: np.ndarray, source: list[str], shapes: list[tuple[int, ...]],
                    texts: list[tuple[str, ...]]) -> bytes:
    """One tag's text summaries (rows sorted by step by the caller) as Parquet: each row's strings and shape."""
    columns = [Column("step", "int64", True, step.astype(np.int64), statistics=True),
               Column("wall_time", "double", True, wall_time.astype(np.float64)),
               Column("source", "string", True, source),
               Column("shape", "json", True, [orjson.dumps(list(s)).decode() for s in shapes]),
               Column("text", "json", True, [orjson.dumps(list(t)).decode() for t in texts])]
    return encode_parquet(columns, len(step), _groups(len(step)))
