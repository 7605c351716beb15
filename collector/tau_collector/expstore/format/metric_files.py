"""Where a metric file lives in the store (TauGrid's partitioned layout) and how its Parquet bytes are encoded.

The layout is TauGrid's ``metrics/project=<p>/experiment=<e|none>/group=<g>/run=<r>/<file_id>.parquet``.
TauGrid sets no length limit on ids, while a filesystem allows 255 bytes per name and a few KiB per
path: an id whose component would be longer than :data:`MAX_ID_COMPONENT_BYTES` is written as a
readable prefix, ``~`` and 32 hex digits of its SHA-256 (``~`` never occurs in a valid id, so a
shortened component never looks like a real one). The directory name is only for people: readers
find files through ``metric_files.path`` and take the full ids from the index and the Parquet rows.

Inside a file rows are sorted by metric name, then step, and cut into row groups at metric
boundaries (:func:`metric_row_groups`): a group holds whole metrics until it has at least
:data:`METRIC_GROUP_ROWS` rows, and no group holds more than :data:`MAX_GROUP_ROWS`. A reader that
filters by metric name skips, by the groups' min/max statistics, every group that does not hold the
metric: one metric of a 2,000-metric chunk costs a group of a few thousand rows, not the chunk.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from urllib.parse import quote

from tau_collector.expstore.format import schema

__all__ = ["MAX_GROUP_ROWS", "MAX_ID_COMPONENT_BYTES", "METRIC_GROUP_ROWS", "id_component", "metric_file_path",
           "metric_row_groups"]

# 8 bytes of "project=" and this stay far below NAME_MAX (255); four of them and a file name keep a
# relative path under 600 bytes, whatever the ids.
MAX_ID_COMPONENT_BYTES = 120
_DIGEST_HEX = 32
_PARTIAL_ESCAPE = re.compile(r"%[0-9A-F]?\Z")
# A row group's least rows (whole metrics are added until it has them) and most rows. Fewer rows per
# group prune more finely; each group costs ~1 KiB of footer that every reader of the file parses.
METRIC_GROUP_ROWS = 4096
MAX_GROUP_ROWS = 131_072


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


def metric_row_groups(metric_starts: Sequence[int], rows: int, *, least: int = METRIC_GROUP_ROWS,
                      most: int = MAX_GROUP_ROWS) -> list[int]:
    """The first row of each row group of a file of ``rows`` rows sorted by metric, whose metrics start at
    ``metric_starts`` (ascending, the first 0): groups end at a metric boundary once they hold ``least``
    rows; a group longer than ``most`` (one long metric) is cut every ``most`` rows."""
    starts = [0]
    for boundary in [*metric_starts[1:], rows]:
        while boundary - starts[-1] > most:
            starts.append(starts[-1] + most)
        if boundary - starts[-1] >= least and boundary < rows:
            starts.append(boundary)
    return starts
