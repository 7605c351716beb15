"""The crash-safe spool: TauGrid's ``checkpoint.json`` and pending-manifest protocol, byte for byte.

Order of durable writes for every chunk (TAUGRID-REFERENCE §2.3–2.4): write
``pending/<%020d seq>-<digest>.json`` → deliver to every sink → write ``checkpoint.json``
(``next_sequence`` + 1) → delete the pending file. On start the pending file (at most one) is
validated — digests, file name, configuration identity, canonical NDJSON, ranges — and either
re-delivered (its sequence is ``next_sequence``) or, already acknowledged, deleted.

Our addition (DESIGN §5): non-finite observations cannot be MetricEvents, so a drain's
non-finite observations are spooled beside it in ``nonfinite/<key>.ndjson`` before delivery
and deleted after the checkpoint. Their key hashes event ids and values but not the export
time, so re-reading the same rows after a crash yields the same key and sinks stay idempotent.
TauGrid's collector never looks in ``nonfinite/``.

Our addition (issue 22): closed history files that arrive together are read together, one chunk
for several files. Such a chunk's manifest names its first file in TauGrid's fields and the others
in ``more_sources`` (each with TauGrid's range fields); a chunk of one file has no such field and
is TauGrid's manifest byte for byte. TauGrid's collector, which refuses unknown fields, refuses to
replay a several-file manifest rather than deliver it differently (see docs/data-path.md).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import math
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import orjson
import pybase64

from tau_collector.projection.metric_event import MetricEvent, NotCanonicalError, decode_canonical_ndjson
from tau_collector.sinks.base import Chunk
from tau_collector.spool.checkpoint import Checkpoint, SourceCheckpoint, SpoolError, valid_digest
from tau_collector.spool.checkpoint_folding import marks
from tau_collector.spool.durable import remove_durable, write_file_atomic
from tau_collector.taugrid.gojson import RawJSON, format_time, marshal, parse_time

__all__ = [
    "MANIFEST_SCHEMA_V1",
    "Manifest",
    "Replayed",
    "SpoolError",
    "SourceRange",
    "Spool",
    "advance",
]

MANIFEST_SCHEMA_V1 = "tau.experiment.metric_chunk_manifest.v1"
COMPLETION_SOURCE_PREFIX = "completion-status/"
_PENDING_NAME = re.compile(r"(\d{20})-([0-9a-f]{64})\.json\Z")
_NONFINITE_NAME = re.compile(r"([0-9a-f]{64})\.ndjson\Z")


# ---------------------------------------------------------------------------------------
# pending manifests

# Marks where the base64 payload goes (a raw NUL never appears in marshalled JSON: strings escape it).
_PAYLOAD_SLOT = RawJSON("\0")
_PAYLOAD_PIECE = 3 << 20

_MANIFEST_FIELDS = (
    "schema_version", "manifest_digest", "chunk_digest", "config_identity", "kind", "sequence",
    "source_path", "source_file_id", "start_offset", "end_offset", "start_lines", "end_lines",
    "start_prefix_sha256", "prefix_sha256", "more_sources", "event_count", "ndjson",
)
_RANGE_FIELDS = ("source_path", "source_file_id", "start_offset", "end_offset", "start_lines", "end_lines",
                 "start_prefix_sha256", "prefix_sha256")


@dataclass(frozen=True, slots=True)
class SourceRange:
    """One more file's part of a several-file chunk (``more_sources``): TauGrid's range fields."""

    source_path: str
    source_file_id: str
    start_offset: int
    end_offset: int
    start_lines: int
    end_lines: int
    start_prefix_sha256: str = ""
    prefix_sha256: str = ""

    def to_go(self) -> dict[str, object]:
        doc: dict[str, object] = {
            "source_path": self.source_path, "source_file_id": self.source_file_id,
            "start_offset": self.start_offset, "end_offset": self.end_offset,
            "start_lines": self.start_lines, "end_lines": self.end_lines,
        }
        if self.start_prefix_sha256:
            doc["start_prefix_sha256"] = self.start_prefix_sha256
        if self.prefix_sha256:
            doc["prefix_sha256"] = self.prefix_sha256
        return doc


@dataclass(slots=True)
class Manifest:
    """One spooled chunk (TauGrid's ``chunkManifest``); ``ndjson`` is the canonical payload."""

    config_identity: str
    kind: str  # "history" | "terminal"
    sequence: int
    source_path: str
    source_file_id: str
    ndjson: bytes
    event_count: int
    start_offset: int = 0
    end_offset: int = 0
    start_lines: int = 0
    end_lines: int = 0
    start_prefix_sha256: str = ""
    prefix_sha256: str = ""
    chunk_digest: str = ""
    manifest_digest: str = ""
    more_sources: tuple[SourceRange, ...] = ()
    payload_pieces: list[bytes] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def of_ranges(cls, config_identity: str, sequence: int, ranges: tuple[SourceRange, ...], *, ndjson: bytes,
                  event_count: int, chunk_digest: str = "") -> Manifest:
        """A history chunk over ``ranges``: the first in TauGrid's own fields, the rest as ``more_sources``."""
        head = ranges[0]
        return cls(config_identity=config_identity, kind="history", sequence=sequence,
                   source_path=head.source_path, source_file_id=head.source_file_id, ndjson=ndjson,
                   event_count=event_count, start_offset=head.start_offset, end_offset=head.end_offset,
                   start_lines=head.start_lines, end_lines=head.end_lines,
                   start_prefix_sha256=head.start_prefix_sha256, prefix_sha256=head.prefix_sha256,
                   chunk_digest=chunk_digest, more_sources=ranges[1:])

    def _document(self, manifest_digest: str) -> dict[str, object]:
        doc: dict[str, object] = {
            "schema_version": MANIFEST_SCHEMA_V1,
            "manifest_digest": manifest_digest,
            "chunk_digest": self.chunk_digest,
            "config_identity": self.config_identity,
            "kind": self.kind,
            "sequence": self.sequence,
            "source_path": self.source_path,
            "source_file_id": self.source_file_id,
            "start_offset": self.start_offset,
            "end_offset": self.end_offset,
            "start_lines": self.start_lines,
            "end_lines": self.end_lines,
        }
        if self.start_prefix_sha256:
            doc["start_prefix_sha256"] = self.start_prefix_sha256
        if self.prefix_sha256:
            doc["prefix_sha256"] = self.prefix_sha256
        if self.more_sources:
            doc["more_sources"] = [r.to_go() for r in self.more_sources]
        doc["event_count"] = self.event_count
        doc["ndjson"] = _PAYLOAD_SLOT
        return doc

    def _frame(self, manifest_digest: str, indent: str | None) -> tuple[bytes, bytes]:
        """The document's JSON before and after its base64 payload, marshalled without the payload
        (tens of megabytes for a large chunk: it is encoded a piece at a time, never held whole)."""
        head, tail = marshal(self._document(manifest_digest), indent=indent).split(b"\0")
        return head + b'"', b'"' + tail

    def _payload(self) -> list[bytes]:
        """base64 of ``ndjson`` in pieces (slices of a multiple of 3 bytes encode to exact prefixes),
        encoded once for the digest and the file; :meth:`release` lets them go."""
        if self.payload_pieces is None:
            view = memoryview(self.ndjson)
            # pybase64: the same bytes as base64.b64encode (a test holds it to that), SIMD-fast.
            self.payload_pieces = [pybase64.b64encode(view[start:start + _PAYLOAD_PIECE])
                                   for start in range(0, len(view), _PAYLOAD_PIECE)]
        return self.payload_pieces

    def release(self) -> None:
        self.payload_pieces = None

    def seal(self) -> Manifest:
        """Fill in both digests (chunk: sha256 of the NDJSON; manifest: of its compact JSON)."""
        self.chunk_digest = hashlib.sha256(self.ndjson).hexdigest()
        self.manifest_digest = self.compute_manifest_digest()
        return self

    def compute_manifest_digest(self) -> str:
        head, tail = self._frame("", None)
        digest = hashlib.sha256(head)
        for piece in self._payload():
            digest.update(piece)
        digest.update(tail)
        return digest.hexdigest()

    def to_bytes(self) -> bytes:
        return b"".join(self.to_pieces())

    def to_pieces(self) -> Iterator[bytes]:
        """:meth:`to_bytes` in pieces, for writing without a copy of the whole payload."""
        head, tail = self._frame(self.manifest_digest, "  ")
        yield head
        yield from self._payload()
        yield tail + b"\n"

    @property
    def file_name(self) -> str:
        return f"{self.sequence:020d}-{self.chunk_digest}.json"

    @classmethod
    def from_bytes(cls, raw: bytes, where: str) -> Manifest:
        try:
            doc = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise SpoolError(f"spool manifest {where} is not valid JSON: {exc}") from None
        if not isinstance(doc, dict):
            raise SpoolError(f"spool manifest {where} is not a JSON object")
        unknown = set(doc) - set(_MANIFEST_FIELDS)
        if unknown:
            raise SpoolError(f"spool manifest {where} has unknown fields {sorted(unknown)}")
        if doc.get("schema_version") != MANIFEST_SCHEMA_V1:
            raise SpoolError(f"spool manifest {where} has schema {doc.get('schema_version')!r}")
        try:
            ndjson = base64.b64decode(doc.get("ndjson") or "", validate=True)
            more = doc.get("more_sources", [])
            if not isinstance(more, list) or not all(isinstance(r, dict) and not set(r) - set(_RANGE_FIELDS)
                                                     for r in more):
                raise TypeError("more_sources must be a list of source ranges")
            return cls(
                more_sources=tuple(SourceRange(**r) for r in more),
                config_identity=doc["config_identity"], kind=doc["kind"], sequence=doc["sequence"],
                source_path=doc["source_path"], source_file_id=doc["source_file_id"], ndjson=ndjson,
                event_count=doc["event_count"], start_offset=doc["start_offset"], end_offset=doc["end_offset"],
                start_lines=doc["start_lines"], end_lines=doc["end_lines"],
                start_prefix_sha256=doc.get("start_prefix_sha256", ""), prefix_sha256=doc.get("prefix_sha256", ""),
                chunk_digest=doc["chunk_digest"], manifest_digest=doc["manifest_digest"],
            )
        except (KeyError, binascii.Error, TypeError) as exc:
            raise SpoolError(f"spool manifest {where} is missing or has a malformed field: {exc}") from None

    def validate(self, where: str, config_identity: str) -> list[MetricEvent]:
        """TauGrid's replay checks; returns the decoded events."""
        ints = (self.sequence, self.event_count, self.start_offset, self.end_offset, self.start_lines, self.end_lines)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in ints):
            raise SpoolError(f"spool manifest {where} has non-integer counters")
        if self.sequence < 1 or not valid_digest(self.chunk_digest) or not valid_digest(self.manifest_digest) \
                or self.manifest_digest != self.compute_manifest_digest() or self.event_count <= 0:
            raise SpoolError(f"spool manifest {where} has invalid schema, digest, or configuration")
        if self.config_identity != config_identity:
            raise SpoolError(
                f"spool manifest {where} was written by a different collector configuration; "
                "restore the original flags or move the --out directory away")
        if os.path.basename(where) != self.file_name:
            raise SpoolError(f"spool manifest {where} has invalid chunk reference")
        if hashlib.sha256(self.ndjson).hexdigest() != self.chunk_digest:
            raise SpoolError(f"spool manifest {where} payload digest mismatch")
        try:
            events = decode_canonical_ndjson(self.ndjson)
        except NotCanonicalError as exc:
            raise SpoolError(f"spool manifest {where} has invalid events: {exc}") from None
        if len(events) != self.event_count:
            raise SpoolError(f"spool manifest {where} has invalid events: count={len(events)}")
        if self.kind == "history":
            self.validate_ranges(where)
        elif self.kind == "terminal" and not self.more_sources:
            observation = self.source_file_id.removeprefix(COMPLETION_SOURCE_PREFIX)
            if not self.source_path or not self.source_file_id.startswith(COMPLETION_SOURCE_PREFIX) \
                    or not valid_digest(observation) or self.start_offset or self.end_offset \
                    or self.start_lines or self.end_lines:
                raise SpoolError(f"spool manifest {where} has invalid terminal metadata")
        else:
            raise SpoolError(f"spool manifest {where} has unknown kind {self.kind!r}")
        return events

    def validate_ranges(self, where: str) -> None:
        """A history chunk's ranges: each names a file once, starts where it may and moves forward."""
        paths = [self.source_path] + [r.source_path for r in self.more_sources]
        if len(set(paths)) != len(paths):
            raise SpoolError(f"spool manifest {where} names a source twice")
        for r in (self, *self.more_sources):
            counters = (r.start_offset, r.end_offset, r.start_lines, r.end_lines)
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in counters) \
                    or not r.source_path or not r.source_file_id or r.start_offset < 0 \
                    or r.end_offset <= r.start_offset or r.start_lines < 0 \
                    or r.end_lines <= r.start_lines or not r.prefix_sha256:
                raise SpoolError(f"spool manifest {where} has invalid history range")


# ---------------------------------------------------------------------------------------
# non-finite observations (ours)


def _nonfinite_value(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def encode_non_finite(events: list[MetricEvent]) -> bytes:
    """One JSON line per non-finite observation: MetricEvent fields, value as "NaN"/"±Infinity"."""
    lines = []
    for e in events:
        lines.append(orjson.dumps({
            "event_id": e.event_id, "workspace_id": e.workspace_id, "cluster": e.cluster,
            "namespace": e.namespace, "source_store_id": e.source_store_id, "project": e.project,
            "experiment_id": e.experiment_id, "run_group_id": e.run_group_id, "run_id": e.run_id,
            "metric_name": e.metric_name, "step": e.step, "wall_time": format_time(e.wall_time),  # type: ignore[arg-type]
            "value": _nonfinite_value(e.value), "source": e.source, "metric_file_id": e.metric_file_id,
            "metric_file_path": e.metric_file_path, "tags": e.tags,
            "exported_at": format_time(e.exported_at),  # type: ignore[arg-type]
        }, option=orjson.OPT_APPEND_NEWLINE))
    return b"".join(lines)


def decode_non_finite(raw: bytes, where: str) -> list[MetricEvent]:
    events = []
    for number, line in enumerate(raw.splitlines(), 1):
        try:
            doc = orjson.loads(line)
            doc["value"] = float(doc["value"].replace("Infinity", "inf"))
            doc["wall_time"] = parse_time(doc["wall_time"])
            doc["exported_at"] = parse_time(doc["exported_at"])
            event = MetricEvent(schema_version="tau.experiment.metric.v1", **doc)
        except Exception as exc:
            raise SpoolError(f"non-finite spool file {where} line {number} is malformed: {exc}") from None
        if math.isfinite(event.value) or event.event_id != event.deterministic_event_id():
            raise SpoolError(f"non-finite spool file {where} line {number} does not hold a non-finite observation")
        events.append(event)
    return events


def non_finite_key(events: list[MetricEvent]) -> str:
    """Idempotency key of a set of non-finite observations: ids and values, not export time."""
    h = hashlib.sha256()
    for e in events:
        h.update(f"{e.event_id}\0{_nonfinite_value(e.value)}\n".encode())
    return h.hexdigest()


# ---------------------------------------------------------------------------------------
# the spool directory


class Spool:
    """``<out>/pending`` (TauGrid's, one file at most) and ``<out>/nonfinite`` (ours)."""

    def __init__(self, out: str) -> None:
        self.out = out
        self.pending_dir = os.path.join(out, "pending")
        self.nonfinite_dir = os.path.join(out, "nonfinite")
        self.checkpoint_path = os.path.join(out, "checkpoint.json")

    def write_pending(self, manifest: Manifest) -> str:
        path = os.path.join(self.pending_dir, manifest.file_name)
        write_file_atomic(path, manifest.to_pieces())
        manifest.release()
        return path

    def load_pending(self, config_identity: str) -> tuple[str, Manifest, list[MetricEvent]] | None:
        path = self.only_pending(self.pending_dir, _PENDING_NAME, "pending spool", "manifests")
        if path is None:
            return None
        with open(path, "rb") as handle:
            manifest = Manifest.from_bytes(handle.read(), path)
        events = manifest.validate(path, config_identity)
        return path, manifest, events

    def write_non_finite(self, events: list[MetricEvent]) -> tuple[str, str]:
        key = non_finite_key(events)
        path = os.path.join(self.nonfinite_dir, key + ".ndjson")
        write_file_atomic(path, encode_non_finite(events))
        return path, key

    def load_non_finite(self) -> list[tuple[str, str, list[MetricEvent]]]:
        out = []
        for name in self.list_dir(self.nonfinite_dir):
            path = os.path.join(self.nonfinite_dir, name)
            if name.startswith(".") and ".tmp-" in name:
                os.unlink(path)
                continue
            match = _NONFINITE_NAME.match(name)
            if not match:
                raise SpoolError(f"unexpected file in non-finite spool: {path}; remove it if you put it there")
            with open(path, "rb") as handle:
                events = decode_non_finite(handle.read(), path)
            if non_finite_key(events) != match.group(1):
                raise SpoolError(f"non-finite spool file {path} does not match its name")
            out.append((path, match.group(1), events))
        return out

    @classmethod
    def only_pending(cls, directory: str, name: re.Pattern[str], what: str, records: str) -> str | None:
        """The one pending record in ``directory`` (None: none). An interrupted atomic write (a dotfile temp,
        never renamed) is removed; any other file, or a second record, is fatal: nothing is guessed."""
        pending = []
        for entry in cls.list_dir(directory):
            path = os.path.join(directory, entry)
            if entry.startswith(".") and ".tmp-" in entry:
                os.unlink(path)  # an interrupted atomic write: the rename never happened
                continue
            if not name.match(entry) or not os.path.isfile(path) or os.path.islink(path):
                raise SpoolError(f"unexpected file in {what}: {path}; remove it if you put it there")
            pending.append(path)
        if len(pending) > 1:
            raise SpoolError(f"{what} holds {len(pending)} {records}, at most one is allowed: {pending}")
        return pending[0] if pending else None

    @staticmethod
    def list_dir(directory: str) -> list[str]:
        try:
            return sorted(os.listdir(directory))
        except FileNotFoundError:
            return []


# ---------------------------------------------------------------------------------------
# the protocol: advancing a checkpoint by a manifest, and replay after a crash


def advance(checkpoint: Checkpoint, manifest: Manifest) -> None:
    """Move ``checkpoint`` past ``manifest`` (TauGrid's ``advanceCheckpoint``), checking that it continues it."""
    if manifest.kind == "history":
        now = format_time(time.time_ns())
        for r in (manifest, *manifest.more_sources):
            source = checkpoint.sources.get(r.source_path)
            if source is not None and (source.file_id != r.source_file_id or
                                       source.offset != r.start_offset or
                                       source.lines != r.start_lines or
                                       source.prefix_sha256 != r.start_prefix_sha256):
                raise SpoolError(f"durable manifest start does not match source checkpoint for {r.source_path}")
            if source is None and (r.start_offset or r.start_lines or r.start_prefix_sha256):
                raise SpoolError(f"durable manifest starts after missing source checkpoint for {r.source_path}")
            checkpoint.sources[r.source_path] = SourceCheckpoint(
                r.source_path, r.source_file_id, r.end_offset, r.prefix_sha256,
                manifest.sequence, manifest.chunk_digest, r.end_lines, now,
            )
    else:
        observation = manifest.source_file_id.removeprefix(COMPLETION_SOURCE_PREFIX)
        if observation in checkpoint.terminals:
            raise SpoolError(f"duplicate terminal observation {observation}")
        checkpoint.terminals[observation] = (manifest.sequence, manifest.chunk_digest)
    checkpoint.next_sequence += 1


def _folded(checkpoint: Checkpoint, path: str) -> bool:
    mark = marks(checkpoint).get(os.path.dirname(path))
    return mark is not None and mark.covers(path)


def _validate_acknowledged(checkpoint: Checkpoint, manifest: Manifest) -> None:
    if manifest.kind == "history":
        for r in (manifest, *manifest.more_sources):
            source = checkpoint.sources.get(r.source_path)
            if source is None and _folded(checkpoint, r.source_path):
                continue  # acknowledged, and since folded into a complete-through entry
            if source is None or source.sequence != manifest.sequence or \
                    source.chunk_digest != manifest.chunk_digest or source.offset < r.end_offset:
                raise SpoolError(f"checkpoint does not acknowledge pending history chunk {manifest.sequence}")
    else:
        observation = manifest.source_file_id.removeprefix(COMPLETION_SOURCE_PREFIX)
        if checkpoint.terminals.get(observation) != (manifest.sequence, manifest.chunk_digest):
            raise SpoolError(f"checkpoint does not acknowledge pending terminal chunk {manifest.sequence}")


def acknowledged(checkpoint: Checkpoint, manifest: Manifest, path: str) -> bool:
    """Whether the pending chunk at ``path`` was acknowledged already (then it is removed); raises if
    it neither was nor is the checkpoint's next."""
    if manifest.sequence < checkpoint.next_sequence:
        _validate_acknowledged(checkpoint, manifest)
        remove_durable(path)
        return True
    if manifest.sequence != checkpoint.next_sequence:
        raise SpoolError(f"pending sequence {manifest.sequence} does not match checkpoint next "
                         f"sequence {checkpoint.next_sequence}")
    return False


@dataclass(slots=True)
class Replayed:
    """What a start found in the spool: whether a pending chunk was there, and what was re-delivered."""

    pending: bool = False
    chunks: int = 0
    events: int = 0


def replay(spool: Spool, checkpoint: Checkpoint, config_identity: str, deliver: Callable[[Chunk], None]) -> Replayed:
    """TauGrid's start: re-deliver the non-finite files and the pending manifest, or drop it if acknowledged.

    ``deliver`` hands a chunk to every sink and raises if one refuses it.
    """
    done = Replayed()
    for path, key, events in spool.load_non_finite():
        deliver(Chunk(checkpoint.next_sequence, "non_finite", key, b"", 0, tuple(events)))
        remove_durable(path)
    pending = spool.load_pending(config_identity)
    if pending is None:
        return done
    done.pending = True
    path, manifest, events = pending
    if acknowledged(checkpoint, manifest, path):
        return done
    following = checkpoint.copy()
    advance(following, manifest)
    deliver(Chunk(manifest.sequence, manifest.kind, manifest.chunk_digest, manifest.ndjson, manifest.event_count,
                  events=tuple(events)))
    following.save(spool.checkpoint_path)
    checkpoint.adopt(following)
    remove_durable(path)
    done.chunks, done.events = 1, len(events)
    return done
