"""Where a metric file lives in the store (TauGrid's partitioned layout) and how its Parquet bytes are encoded.

The layout is TauGrid's ``metrics/project=<p>/experiment=<e|none>/group=<g>/run=<r>/<file_id>.parquet``.
TauGrid sets no length limit on ids, while a filesystem allows 255 bytes per name and a few KiB per
path: an id whose component would be longer than :data:`MAX_ID_COMPONENT_BYTES` is written as a
readable prefix, ``~`` and 32 hex digits of its SHA-256 (``~`` never occurs in a valid id, so a
shortened component never looks like a real one). The directory name is only for people: readers
find files through ``metric_files.path`` and take the full ids from the index and the Parquet rows.
"""

from __future__ import annotations

import hashlib
import io
import re
from urllib.parse import quote

import pyarrow as pa
import pyarrow.parquet as pq

from . import schema

__all__ = ["MAX_ID_COMPONENT_BYTES", "id_component", "metric_file_path", "parquet_bytes"]

# 8 bytes of "project=" and this stay far below NAME_MAX (255); four of them and a file name keep a
# relative path under 600 bytes, whatever the ids.
MAX_ID_COMPONENT_BYTES = 120
_DIGEST_HEX = 32
_PARTIAL_ESCAPE = re.compile(r"%[0-9A-F]?\Z")


def id_component(value: str) -> str:
    """``value`` as one path component: percent-quoted, and shortened with a digest when too long.

    The MetricEvent contract does not make ids path-safe, so quoting keeps a run named ``../x`` inside
    its directory while leaving TauGrid's lowercase ids unchanged.
    """
    text = quote(value, safe="-_.=+@~")
    if text.startswith("."):
        text = "%2E" + text[1:]
    if len(text) <= MAX_ID_COMPONENT_BYTES:  # quote() returns ASCII: characters are bytes
        return text
    head = _PARTIAL_ESCAPE.sub("", text[: MAX_ID_COMPONENT_BYTES - _DIGEST_HEX - 1])
    return f"{head}~{hashlib.sha256(value.encode()).hexdigest()[:_DIGEST_HEX]}"


def metric_file_path(project: str, experiment_id: str, run_group_id: str, run_id: str, file_id: str) -> str:
    """The store-relative path of a metric file (``/``-separated, as ``metric_files.path`` holds it)."""
    return "/".join(
        [
            schema.METRICS_DIR,
            "project=" + id_component(project),
            "experiment=" + (id_component(experiment_id) if experiment_id else "none"),
            "group=" + id_component(run_group_id),
            "run=" + id_component(run_id),
            file_id + ".parquet",
        ]
    )


# Dictionary encoding pays for the repeated strings (one project/run/metric/source per many rows) only.
_DICTIONARY_COLUMNS = ["project", "run_group_id", "run_id", "metric_name", "unit", "source", "split"]
_STATISTICS_COLUMNS = ["metric_name", "step", "wall_time", "value"]  # the reader prunes by metric_name


def parquet_bytes(table: pa.Table) -> bytes:
    """A ``tau.metrics.scalar.v2`` table as Parquet file bytes."""
    sink = io.BytesIO()
    # Row groups of 128k rows keep per-group step statistics useful for range reads. Dictionaries of
    # steps, times, values and tags (every point's tags differ: jsonl.history_line) and min/max
    # statistics of tags would be built only to be thrown away (measured: 2.5x the time to write).
    pq.write_table(table, sink, compression="snappy", row_group_size=131_072, use_dictionary=_DICTIONARY_COLUMNS,
                   write_statistics=_STATISTICS_COLUMNS)
    return sink.getvalue()
