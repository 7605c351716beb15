"""Our pending record for a collector whose every sink keeps points (the expstore): a chunk's points in columns.

TauGrid's pending manifest (:mod:`.spool`) holds a chunk as canonical NDJSON in base64, with a SHA-256 of
each line (its event id), of the NDJSON and of the manifest: the bytes an ADX sink sends. A sink that
stores points (:attr:`~.sinks.base.Sink.keeps_points`) never reads those bytes, and building them was most
of a one-pass ``collect``'s time. For such a collector each history chunk is spooled instead as
``<out>/columns/<%020d sequence>-<digest>.columns``: the chunk's ranges (TauGrid's range fields) and its
finite points column by column, ~37 bytes a point. The protocol is TauGrid's, unchanged: write the record
(atomic, fsynced) → deliver → write ``checkpoint.json`` → remove the record; on start a record whose
sequence is ``next_sequence`` is delivered again with the same key, one already acknowledged is removed.

Why nothing is delivered twice: the store's idempotency key is the record's digest (SHA-256 of its bytes)
with the spool sequence (:func:`~.sinks.expstore.chunk_idempotency_key`), so the replay of a delivered
chunk is a no-op in the store; the points come from the record, never from re-reading the sources, so a
source that grew or changed since cannot make a replay differ. The checkpoint keeps TauGrid's shape, the
record's digest standing as each source's ``chunk_digest``; TauGrid's collector never looks in
``columns/`` and resumes from the checkpoint, which a pending record has not advanced (docs/data-path.md).

File layout: ``tau-collector.column_chunk.v1\\n``, the header's length (8 bytes, little-endian), the header
(JSON: identity, sequence, ranges, the run's fields and the per-key tables), then the five columns
(``key`` int32, ``step``/``wall_us``/``line`` int64, ``value`` float64, little-endian), ``event_count``
values each. Every length is checked against the file's own size before anything is allocated.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import orjson

from tau_collector.projection.columns import PointColumns
from tau_collector.sinks.base import Chunk
from tau_collector.spool.checkpoint import Checkpoint, SpoolError
from tau_collector.spool.durable import remove_durable, write_file_atomic
from tau_collector.spool.manifest import Manifest, Replayed, SourceRange, Spool, acknowledged, advance

__all__ = ["COLUMN_CHUNK_SCHEMA", "ColumnChunk", "load_column_chunk", "replay_columns", "write_column_chunk"]

COLUMN_CHUNK_SCHEMA = b"tau-collector.column_chunk.v1\n"
COLUMNS_DIR = "columns"
_NAME = re.compile(r"(\d{20})-([0-9a-f]{64})\.columns\Z")
_HEADER_BYTES = 8
_COLUMNS = (("key", "<i4"), ("step", "<i8"), ("wall_us", "<i8"), ("value", "<f8"), ("line", "<i8"))
_POINT_BYTES = sum(np.dtype(dtype).itemsize for _, dtype in _COLUMNS)
_RUN_FIELDS = ("project", "experiment_id", "run_group_id", "run_id", "source")


@dataclass(slots=True)
class ColumnChunk:
    """One spooled history chunk of a points-keeping collector: its source ranges and its points."""

    config_identity: str
    sequence: int
    ranges: tuple[SourceRange, ...]
    points: PointColumns
    digest: str = ""

    def _pieces(self) -> list[bytes]:
        p = self.points
        header = orjson.dumps({
            "config_identity": self.config_identity, "sequence": self.sequence,
            "ranges": [r.to_go() for r in self.ranges], "event_count": len(p),
            "run": [getattr(p, name) for name in _RUN_FIELDS],
            "names": p.names, "tag_texts": p.tag_texts, "tag_sets": p.tag_sets,
        })
        arrays = [np.ascontiguousarray(getattr(p, name), dtype=dtype).tobytes() for name, dtype in _COLUMNS]
        return [COLUMN_CHUNK_SCHEMA, len(header).to_bytes(_HEADER_BYTES, "little"), header, *arrays]

    def seal(self) -> tuple[ColumnChunk, list[bytes]]:
        """Fill in the digest (SHA-256 of the record's bytes); returns the record and those bytes."""
        pieces = self._pieces()
        digest = hashlib.sha256()
        for piece in pieces:
            digest.update(piece)
        self.digest = digest.hexdigest()
        return self, pieces

    @property
    def file_name(self) -> str:
        return f"{self.sequence:020d}-{self.digest}.columns"

    @property
    def event_count(self) -> int:
        return len(self.points)

    def manifest(self) -> Manifest:
        """The chunk as the checkpoint sees it: TauGrid's range fields, the record's digest as chunk digest."""
        return Manifest.of_ranges(self.config_identity, self.sequence, self.ranges, ndjson=b"",
                                  event_count=self.event_count, chunk_digest=self.digest)

    def chunk(self) -> Chunk:
        """What the sinks receive: no NDJSON, the points, the record's digest (the store's key derives from it)."""
        return Chunk(self.sequence, "history", self.digest, b"", self.event_count, points=self.points)


def write_column_chunk(spool: Spool, record: ColumnChunk, pieces: list[bytes]) -> str:
    path = os.path.join(spool.out, COLUMNS_DIR, record.file_name)
    write_file_atomic(path, pieces)
    return path


def _decode(raw: bytes, where: str) -> ColumnChunk:
    if not raw.startswith(COLUMN_CHUNK_SCHEMA):
        raise SpoolError(f"column spool file {where} does not start with {COLUMN_CHUNK_SCHEMA.strip().decode()}")
    at = len(COLUMN_CHUNK_SCHEMA)
    length = int.from_bytes(raw[at:at + _HEADER_BYTES], "little")
    at += _HEADER_BYTES
    if at + length > len(raw):
        raise SpoolError(f"column spool file {where}: header of {length} bytes at offset {at} runs past the end "
                         f"of the file ({len(raw)} bytes)")
    try:
        doc = orjson.loads(raw[at:at + length])
        count = doc["event_count"]
        if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
            raise TypeError(f"event_count {count!r} is not a positive integer")
        start = at + length
        if len(raw) - start != count * _POINT_BYTES:
            raise SpoolError(f"column spool file {where}: {len(raw) - start} bytes of columns after the header at "
                             f"offset {start}, {count * _POINT_BYTES} expected for {count} points")
        columns = {}
        for name, dtype in _COLUMNS:
            size = count * np.dtype(dtype).itemsize
            columns[name] = np.frombuffer(raw, dtype=dtype, count=count, offset=start).astype(dtype[1:])
            start += size
        names, texts, sets = doc["names"], doc["tag_texts"], doc["tag_sets"]
        if not (len(names) == len(texts) == len(sets)) or not 0 <= columns["key"].min() <= columns["key"].max() \
                < len(names):
            raise TypeError("the per-key tables and the key column disagree")
        points = PointColumns(*doc["run"], names=names, tag_texts=[tuple(t) for t in texts], tag_sets=sets,
                              **columns)
        ranges = tuple(SourceRange(**r) for r in doc["ranges"])
        if not ranges:
            raise TypeError("no source range")
        return ColumnChunk(doc["config_identity"], doc["sequence"], ranges, points)
    except SpoolError:
        raise
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise SpoolError(f"column spool file {where} is missing or has a malformed field: {exc}") from None


def load_column_chunk(spool: Spool, config_identity: str) -> tuple[str, ColumnChunk] | None:
    """The pending column record (at most one), checked: name, digest, configuration, ranges."""
    path = Spool.only_pending(os.path.join(spool.out, COLUMNS_DIR), _NAME, "column spool", "records")
    if path is None:
        return None
    with open(path, "rb") as handle:
        raw = handle.read()
    record = _decode(raw, path)
    record.digest = hashlib.sha256(raw).hexdigest()
    if os.path.basename(path) != record.file_name:
        raise SpoolError(f"column spool file {path} does not match its name (digest or sequence differ)")
    if record.config_identity != config_identity:
        raise SpoolError(f"column spool file {path} was written by a different collector configuration; "
                         "restore the original flags or move the --out directory away")
    manifest = record.manifest()
    manifest.validate_ranges(path)
    return path, record


def replay_columns(spool: Spool, checkpoint: Checkpoint, config_identity: str,
                   deliver: Callable[[Chunk], None]) -> Replayed:
    """The start of a points-keeping collector: deliver the pending column record again, or drop it if acknowledged."""
    done = Replayed()
    loaded = load_column_chunk(spool, config_identity)
    if loaded is None:
        return done
    done.pending = True
    path, record = loaded
    manifest = record.manifest()
    if acknowledged(checkpoint, manifest, path):
        return done
    following = checkpoint.copy()
    advance(following, manifest)
    deliver(record.chunk())
    following.save(spool.checkpoint_path)
    checkpoint.adopt(following)
    remove_durable(path)
    done.chunks, done.events = 1, record.event_count
    return done
