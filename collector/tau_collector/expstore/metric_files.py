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
import re
from urllib.parse import quote

from . import schema

__all__ = ["MAX_ID_COMPONENT_BYTES", "id_component", "metric_file_path"]

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
