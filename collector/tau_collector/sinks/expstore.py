"""The ``expstore`` sink: delivers spooled chunks into a local expstore (the embedded default).

Idempotency key: ``"collector-chunk-" + chunk_digest + "-" + <16 hex>``, the suffix being the
first 16 hex digits of sha256 over ``{"source", "sequence", "non_finite"}`` -- the sink's
``source_id`` (what the collector reads: e.g. the spool directory or the source file id), the
chunk's spool sequence, and a digest of its non-finite rows. A redelivered chunk (after a crash
the spool re-delivers the same sequence with the same bytes) maps to the same key and is a
no-op. Two sources never collide: even byte-identical NDJSON from different sources, or chunks
whose NDJSON is identical but whose non-finite rows differ (they are not in the digest), get
different keys. The request hash covers the NDJSON and the non-finite rows, so a key reused for
different content is reported as a conflict rather than silently dropped.
"""

from __future__ import annotations

import errno
import hashlib
import math
import os
import sqlite3

import orjson

from tau_collector.expstore.maintain.compaction import CompactionPolicy
from tau_collector.expstore.store import ExpStore, StoreError, unwritable_reason, utc_now_rfc3339
from tau_collector.expstore.write.artifacts import read_artifacts, record_artifacts
from tau_collector.expstore.write.config_rows import ConfigConflictError
from tau_collector.expstore.write.run_events import record_run_events
from tau_collector.expstore.write.writer import IdempotencyConflictError, MetricWriter
from tau_collector.projection.metric_event import MetricEvent, NotCanonicalError
from tau_collector.reads import SOURCE_PROBLEM, RunEvent
from tau_collector.reads.rows import ArtifactRow
from tau_collector.sinks.base import Chunk, MediaChunk, RunConfigConflict, Sink, SinkError
from tau_collector.sources.records import ProblemKind, SourceProblem
from tau_collector.taugrid.run_config import RunConfig

__all__ = ["ExpstoreSink", "chunk_idempotency_key", "chunk_request_hash"]

SIDECAR_MERGE_ROWS = 12_000
SIDECAR_MEDIA_MERGE_ROWS = 2_048  # a media tag's rows a merge holds in the sidecar (~3 MB of 64-bucket histograms)

KEY_PREFIX = "collector-chunk-"
# OS errors on the store's paths that no retry can fix: the store is not writable by this process,
# or a path it needs cannot exist on its filesystem. A full disk or an I/O error is worth a retry.
_NOT_WRITABLE = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})
_IMPOSSIBLE_PATH = frozenset({errno.ENAMETOOLONG, errno.ENOTDIR, errno.EISDIR, errno.ELOOP})


def _float_text(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(float(value))


def _non_finite_digest(rows: tuple[MetricEvent, ...] | list[MetricEvent]) -> str:
    payload = [
        [e.project, e.experiment_id, e.run_group_id, e.run_id, e.metric_name, e.step, e.wall_time,
         _float_text(e.value), e.unit, e.source, e.split, e.metric_file_id, sorted(e.tags.items())]
        for e in rows
    ]
    return hashlib.sha256(orjson.dumps(payload)).hexdigest()


def chunk_idempotency_key(chunk: Chunk, source_id: str) -> str:
    """The store's key of a spooled chunk. A spool's non-finite observations are keyed without their sequence: a
    start re-delivers their file under the checkpoint's sequence then, which may be one past the first delivery's."""
    sequence = 0 if chunk.kind == "non_finite" else chunk.sequence
    suffix = hashlib.sha256(
        orjson.dumps({"source": source_id, "sequence": sequence,
                      "non_finite": _non_finite_digest(chunk.non_finite)})
    ).hexdigest()[:16]
    return f"{KEY_PREFIX}{chunk.chunk_digest}-{suffix}"


_EMPTY_DIGEST = hashlib.sha256(b"").hexdigest()


def _ndjson_digest(chunk: Chunk) -> str:
    """sha256 hex of the chunk's content. A spooled chunk carries it already (``chunk_digest``: of the NDJSON,
    sealed with the manifest or checked against the payload on replay; of the column record for a chunk
    spooled as columns); hashing the payload again cost about a second per million events. A non-finite
    chunk's ``chunk_digest`` is its key, not a digest."""
    if chunk.kind in ("history", "terminal") and len(chunk.chunk_digest) == 64:
        return chunk.chunk_digest
    if not chunk.ndjson:
        return _EMPTY_DIGEST
    return hashlib.sha256(chunk.ndjson).hexdigest()


def chunk_request_hash(chunk: Chunk) -> str:
    return hashlib.sha256(
        _ndjson_digest(chunk).encode()
        + b"\n"
        + _non_finite_digest(chunk.non_finite).encode()
    ).hexdigest()


class ExpstoreSink(Sink):
    """Writes chunks to the store at ``store_dir`` (created on first use)."""

    name = "expstore"
    keeps_points = True
    keeps_artifacts = True

    def __init__(
        self,
        store_dir: str | os.PathLike[str],
        *,
        source_id: str = "",
        compaction: CompactionPolicy | None = None,
        background_compaction: bool = False,
    ) -> None:
        """``background_compaction``: merge small files in a thread, without pyarrow
        (:mod:`..expstore.maintain.compaction_thread`), as the sidecar does; otherwise after a delivery."""
        self._store = ExpStore(store_dir, create=True)
        self._source_id = source_id
        if compaction is None:
            # In the sidecar's own process a merge's rows are its memory: half the import's bound keeps the
            # collector under its 80 MB with a merge running (docs/collector-flags.md, bench/sidecar_tree_memory.py).
            compaction = CompactionPolicy(max_merge_rows=SIDECAR_MERGE_ROWS,
                                          media_merge_rows=SIDECAR_MEDIA_MERGE_ROWS) if background_compaction \
                else CompactionPolicy()
        self._writer = MetricWriter(self._store, compaction=compaction,
                                    background_compaction=background_compaction)

    @property
    def store(self) -> ExpStore:
        return self._store

    @property
    def writer(self) -> MetricWriter:
        """The store's writer, for bulk importers that write columns rather than spooled chunks."""
        return self._writer

    def identity(self) -> str:
        return str(self._store.root)

    def put_run_config(self, run_id: str, config: RunConfig) -> None:
        try:
            self._writer.put_run_config(run_id, config)
        except ConfigConflictError as exc:
            raise RunConfigConflict(str(exc)) from None
        except sqlite3.OperationalError as exc:
            raise SinkError(f"expstore: {exc}", retryable=True) from None

    def put_artifacts(self, rows: list[ArtifactRow]) -> None:
        try:
            record_artifacts(self._store, rows)
        except sqlite3.OperationalError as exc:
            raise SinkError(f"expstore {self._store.root}: artifacts: {exc}", retryable=True) from None

    def known_artifacts(self, run_id: str, type: str) -> list[ArtifactRow]:
        rows: list[ArtifactRow] = []
        after = None
        try:
            while page := read_artifacts(self._store, run_id, type=type, after_id=after):
                rows.extend(page)
                after = page[-1].artifact_id
        except sqlite3.OperationalError:
            return rows  # what could be read; the rest is hashed again
        return rows

    def report(self, run_id: str, problems: list[SourceProblem]) -> None:
        now = utc_now_rfc3339()
        record_run_events(self._store, [
            RunEvent(run_id, now, SOURCE_PROBLEM, "tau-collector",
                     "warning" if p.kind == ProblemKind.TRUNCATED else "error", str(p), p.to_json())
            for p in problems
        ])

    def deliver_media(self, chunk: MediaChunk) -> None:
        from tau_collector.expstore.write.media import write_media

        try:
            write_media(self._store, chunk.key, chunk.run_id, chunk.source, chunk.records, chunk.identity)
        except (OSError, sqlite3.OperationalError) as exc:
            permanent = self._permanent(exc)
            raise SinkError(permanent or f"expstore {self._store.root}: media of {chunk.source}: {exc}",
                            retryable=permanent is None) from None
        self._writer.media_delivered({chunk.run_id})

    def deliver(self, chunk: Chunk) -> None:
        if not chunk.ndjson and not chunk.non_finite and chunk.points is None:
            return  # nothing to keep; acknowledging must not need the store
        key = chunk.key or chunk_idempotency_key(chunk, self._source_id)
        request_hash = chunk.key or chunk_request_hash(chunk)
        # A spooled chunk's key is pruned once its spool can no longer replay it (expstore.write.idempotency); a
        # spool's non-finite observations come under the sequence of the history chunk they were spooled with
        # (their file is removed once that one is checkpointed). A chunk without a spool sequence (an import's:
        # 0) or with a key of its own is kept -- recorded under sequence 0 it would move the stream's newest
        # sequence back and prune the keys the spool can still replay.
        spooled = not chunk.key and chunk.sequence > 0
        stream = (self._source_id, chunk.sequence) if self._source_id and spooled else None
        try:
            if chunk.points is not None and not chunk.non_finite:
                from tau_collector.sinks.expstore_columns import run_columns

                self._writer.write_columns(key, [run_columns(chunk.points)], request_hash=request_hash,
                                          stream=stream)
                return
            try:
                events = chunk.decoded_events()
            except NotCanonicalError as exc:
                raise SinkError(
                    f"expstore: chunk {chunk.sequence} is not canonical: {exc}", retryable=False
                ) from None
            self._writer.write_chunk(key, events, list(chunk.non_finite), request_hash=request_hash, stream=stream)
        except IdempotencyConflictError as exc:
            raise SinkError(f"expstore {self._store.root}: {exc}", retryable=False) from None
        except (OSError, sqlite3.OperationalError) as exc:
            permanent = self._permanent(exc)
            if permanent is not None:
                raise SinkError(permanent, retryable=False) from None
            # Locked past the busy timeout, disk full, I/O error: worth another attempt later.
            text = f"expstore {self._store.root}: {exc}"
            if getattr(exc, "errno", None) == errno.ENOSPC or getattr(exc, "sqlite_errorname", "") == "SQLITE_FULL":
                text += "; free space on that filesystem and deliver again: the chunk stays spooled, nothing is lost"
            raise SinkError(text, retryable=True) from None
        except (StoreError, sqlite3.DatabaseError) as exc:
            raise SinkError(f"expstore {self._store.root}: {exc}", retryable=False) from None

    def _permanent(self, exc: OSError | sqlite3.OperationalError) -> str | None:
        """What makes ``exc`` impossible to fix by retrying, in words; None when a retry may succeed."""
        store = self._store
        reason = unwritable_reason([store.root, store.index_path, store.metrics_dir])
        if reason is None and getattr(exc, "sqlite_errorname", "").startswith("SQLITE_READONLY"):
            reason = f"{store.index_path}: {exc}"
        elif reason is None and getattr(exc, "errno", None) in _NOT_WRITABLE:
            reason = f"{exc.filename or store.root}: {exc.strerror}"
        if reason is not None:
            return f"expstore {store.root} cannot be written ({reason}); a retry cannot fix this"
        if not isinstance(exc, OSError) or exc.errno not in _IMPOSSIBLE_PATH:
            return None
        where = exc.filename or store.root
        if exc.errno == errno.ENAMETOOLONG:
            return (f"expstore {store.root}: cannot write {where} ({len(os.fsencode(str(where)))} bytes): "
                    f"{exc.strerror}; the path does not fit this filesystem and a retry cannot fix this: nothing "
                    "is lost (the chunk stays spooled), collect into a store at a shorter path and use a new --out")
        return (f"expstore {store.root}: cannot write {where}: {exc.strerror}; the store's layout is damaged "
                "(a file or a link where a directory belongs) and a retry cannot fix this")

    def local_directories(self) -> list[str]:
        return [str(self._store.root)]

    def close(self) -> None:
        self._writer.close()
        self._store.close()
