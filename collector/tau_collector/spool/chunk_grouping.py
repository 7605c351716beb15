"""Which batches read in one drain share a chunk, and the pending record (manifest or columns) of a chunk.

Small closed files (TauGrid's trainers write one per step, a few kB) share a chunk; a larger file, or a
batch that filled the batch bounds (its file has more), stays a chunk of its own. The collector
(:mod:`.collector`) gathers the parts and commits each chunk in TauGrid's order.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from tau_collector.projection.pipeline import ProjectedBatch, merge_points
from tau_collector.sources.base import Source, SourceInput
from tau_collector.sources.read_limits import Limits
from tau_collector.spool.column_record import ColumnChunk
from tau_collector.spool.manifest import Manifest, SourceRange

# Batches of several files join one chunk up to these source sizes (and the batch bounds): small closed files
# (TauGrid's trainers write one per step, a few kB) share a chunk, a larger file stays a chunk of its own, so a
# chunk's pending manifest (~10x its source bytes as NDJSON, base64) stays as large as one file's was.
GROUP_MAX_BYTES = 64 * 1024
GROUP_MAX_ROWS = 2_000


@dataclass(slots=True)
class Part:
    """One batch read in a drain, waiting to be committed with the others of its chunk."""

    source: Source
    source_input: SourceInput
    file_id: str
    prefix: hashlib._Hash  # the file's digest up to the batch's start
    running: hashlib._Hash  # ... and up to its end
    projected: ProjectedBatch

    def range(self) -> SourceRange:
        batch = self.projected.batch
        return SourceRange(self.source_input.path, self.file_id, batch.start.offset, batch.end.offset,
                           batch.start.records, batch.end.records,
                           self.prefix.hexdigest() if batch.start.offset else "", self.running.hexdigest())


def cannot_join(group: list[Part], part: Part, limits: Limits) -> bool:
    """Whether ``part`` must start a chunk of its own rather than join the non-empty ``group``.

    Batches of different files of one source join while they fit GROUP_MAX_BYTES / GROUP_MAX_ROWS (and
    the batch bounds) together; a batch that filled the bounds (its file has more) never joins.
    """
    rows = sum(p.projected.batch.end.records - p.projected.batch.start.records for p in group)
    size = sum(p.projected.batch.end.offset - p.projected.batch.start.offset for p in group)
    batch = part.projected.batch
    return group[0].source is not part.source or batch.more \
        or any(p.source_input.path == part.source_input.path for p in group) \
        or rows + batch.end.records - batch.start.records > min(limits.batch_records, GROUP_MAX_ROWS) \
        or size + batch.end.offset - batch.start.offset > min(limits.batch_bytes, GROUP_MAX_BYTES)


def history_columns(with_events: list[Part], config_identity: str, sequence: int) -> tuple[ColumnChunk, list[bytes]]:
    """The sealed column record of one chunk (a collector whose sinks all keep points) and its bytes."""
    points = merge_points([part.projected.points for part in with_events])
    assert points is not None, "a projection without lines always gives points"
    return ColumnChunk(config_identity, sequence, tuple(part.range() for part in with_events), points).seal()


def history_manifest(with_events: list[Part], config_identity: str, sequence: int) -> Manifest:
    """The sealed pending manifest of one chunk: the first part's range in TauGrid's fields, the rest beside.

    Takes the parts' NDJSON (each part's blocks are handed over once).
    """
    ndjson = b"".join([block for part in with_events for block in part.projected.take_ndjson()])
    return Manifest.of_ranges(config_identity, sequence, tuple(part.range() for part in with_events), ndjson=ndjson,
                              event_count=sum(part.projected.event_count for part in with_events)).seal()
