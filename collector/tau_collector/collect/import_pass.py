"""One pass of sources into the expstore, checkpointed in the store itself: what ``taunotebook import`` runs.

Each source goes through the same pipeline as the sidecar (:mod:`.pipeline`: bounded batches,
the projection, points in columns) into the expstore sink; no lines are built and nothing is
spooled, because the store itself keeps the checkpoints. Idempotency, at three levels:

* a source whose files are byte for byte the ones of an earlier import into the store (same kind,
  run, project, experiment and group) is skipped without being read (key ``import-source-…``);
* after every batch the import records how far it got in that file (offset, lines or records before
  it, SHA-256 of the bytes up to there; key ``import-file-…-<offset>``), so an import interrupted
  in a large file, or a file that grew since (a run that went on), resumes there when its bytes
  up to there are unchanged; a JSONL file's unterminated last line is read but not checkpointed
  (it may still be completed);
* every batch is delivered under a key that is its content (``import-block-…``), so a batch an
  earlier import wrote is acknowledged as present, not added again.

Histograms, images and text are delivered a few batches at a time (:data:`MEDIA_DELIVERY_BYTES` of the
file, the file's end at the latest: fewer, larger media files, each synced once) by one thread beside the
reading, so the syncs of a delivery overlap the reading of the next; a file's progress is recorded only
once every value read up to there is delivered (the spool's rule: nothing checkpointed is undelivered).

The run's configuration (:meth:`~.sources.base.Source.run_config`) is stored beside its points,
also when its files are unchanged: storing the same configuration again changes nothing, and a
changed one is reported as TauGrid reports it, a write conflict (the run keeps its first).

Files are read as complete: an event file ending inside a record is corrupt, with its offset.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import orjson

from tau_collector.expstore.format.metric_files import id_component
from tau_collector.expstore.maintain.media_compaction import compact_media_quietly
from tau_collector.expstore.maintain.metric_clusters import cluster_quietly, start_clustering
from tau_collector.expstore.store import ExpStore
from tau_collector.expstore.write.artifacts import record_artifacts
from tau_collector.expstore.write.config_rows import ConfigConflictError
from tau_collector.expstore.write.source_files import (
    TENSORBOARD,
    WANDB_MEDIA,
    ReadDigest,
    SourceCopy,
    copy_source_file,
    kept_folder,
)
from tau_collector.expstore.write.writer import MetricWriter
from tau_collector.projection.pipeline import Pipeline, ProjectedBatch
from tau_collector.projection.projector import ProjectionConfig
from tau_collector.sinks.base import Chunk, MediaChunk, RunIdentity
from tau_collector.sinks.expstore import ExpstoreSink
from tau_collector.sources.base import Batch, Position, Source, SourceInput
from tau_collector.sources.records import ProblemKind, SourceProblem
from tau_collector.spool.manifest import non_finite_key
from tau_collector.spool.media_record import media_chunk_key
from tau_collector.taugrid.run_config import ConfigError

__all__ = ["IMPORT_VERSION", "ImportRun", "ImportSummary", "StoreImport"]

IMPORT_VERSION = "taunotebook.import.v1"
_BLOCK = 1 << 20
# Source bytes whose media make one delivery (several 4 MiB batches): a full-size media run's tag then spans
# ~140 files, not ~600, and each delivery's files and image folders are synced once. At most two deliveries'
# records are held (one being written, one gathering): some tens of MB.
MEDIA_DELIVERY_BYTES = 16 * 1024 * 1024


@dataclass(slots=True)
class ImportRun:
    """One future Tau run: a source, the run id it is imported as, and its inputs as discovered
    (a file that vanishes before it is read is reported, not silently missed)."""

    kind: str
    run_id: str
    location: str
    source: Source
    inputs: list[SourceInput] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.inputs:
            self.inputs = self.source.inputs()

    def files(self) -> list[str]:
        return [i.path for i in self.inputs]


@dataclass(slots=True)
class ImportSummary:
    runs: int = 0
    metrics: int = 0
    points: int = 0
    non_finite: int = 0
    rejected_rows: int = 0
    dropped: int = 0
    media: int = 0  # histograms, images and text stored
    corrupt_files: int = 0
    files: int = 0
    bytes: int = 0
    unchanged: int = 0  # sources skipped: the same files were imported before with the same identity
    configs: int = 0  # run configurations stored by this import
    config_conflicts: list[str] = field(default_factory=list)
    run_ids: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # The child clustering the imported runs by metric (``clustering="background"``), not waited for; None
    # when no run needed it. Reads are right whether it has finished or not.
    clustering: subprocess.Popen | None = None

    def text(self) -> str:
        text = (f"imported {self.runs} runs, {self.metrics} metrics, {self.points} points "
                f"({self.non_finite} non-finite); {self.rejected_rows} rejected rows, "
                f"{self.corrupt_files} corrupt files; read {self.files} files, {self.bytes} bytes")
        if self.media:
            text += f"; {self.media} histograms, images and text stored"
        if self.dropped:
            text += f"; {self.dropped} values that are not scalars dropped"
        if self.unchanged:
            text += f"; {self.unchanged} sources unchanged since an earlier import (skipped)"
        if self.configs:
            text += f"; {self.configs} run configurations stored"
        if self.config_conflicts:
            text += f"; {len(self.config_conflicts)} changed run configurations not stored (conflicts)"
        return text


def _about_the_tail(problem: SourceProblem, batch: Batch) -> bool:
    """A problem about the unfinished end of a file (a cut record, a line with no end yet)."""
    return problem.kind in (ProblemKind.TRUNCATED, ProblemKind.BAD_ROW) and problem.offset is not None \
        and problem.offset >= batch.end.offset


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _file_digest(path: str) -> str:
    """SHA-256 hex of the whole file; ``""`` when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError:
        return ""  # unreadable now: the reading reports it, and the source is not marked as imported


def _file_digests(paths: list[str]) -> list[str]:
    """:func:`_file_digest` of each of ``paths``, two at a time (hashing lets go of the GIL: both cores hash)."""
    if len(paths) <= 1:
        return [_file_digest(p) for p in paths]
    with ThreadPoolExecutor(2, thread_name_prefix="source-digest") as pool:
        return list(pool.map(_file_digest, paths))


def _kept_files(run: ImportRun, source_input: SourceInput) -> list[tuple[str, str, str]]:
    """(path, name, type) of the input's file and of the files beside it that its rows name, as the run keeps them."""
    kind = run.source.artifact_type
    path = source_input.path
    name = os.path.basename(path)
    group = source_input.group
    if kind == TENSORBOARD:  # the run's directory, so importing the copies rebuilds the same run
        relative = getattr(group, "relative", "") if getattr(group, "attached", False) else ""
        name = "/".join(p for p in (id_component(run.run_id), relative, name) if p)
    return [(path, name, kind)] + [(p, n, WANDB_MEDIA) for p, n in run.source.kept_files(source_input)]


def _copy_files(store: ExpStore, run_id: str, folder: str, kept: list[tuple[str, str, str]],
                read: ReadDigest | None) -> list[SourceCopy | SourceProblem]:
    """``kept`` (:func:`_kept_files`) copied into the store under ``folder``, not yet published: each a
    :class:`SourceCopy`, or the problem that kept it out. ``read``: the digest of the first (the input) as it was
    read, which its copy takes when the file has not changed since."""
    out: list[SourceCopy | SourceProblem] = []
    try:
        for i, (file_path, file_name, file_type) in enumerate(kept):
            try:
                out.append(copy_source_file(store, run_id, file_path, file_name, file_type, folder=folder,
                                            read=read if i == 0 else None))
            except OSError as exc:
                out.append(_not_kept(file_path, exc))
    except BaseException:
        _discard_kept(out)
        raise
    return out


def _not_kept(path: str, exc: OSError) -> SourceProblem:
    return SourceProblem(path, ProblemKind.UNREADABLE, f"not kept with the run: {exc.strerror or exc}")


def _discard_kept(kept: list) -> None:
    for item in kept:
        if isinstance(item, SourceCopy):
            item.discard()


def _discard(copies: list[Future]) -> None:
    """Delete the copies not published (an import that failed): wait for each, whatever its outcome."""
    for future in copies:
        try:
            kept = future.result()
        except BaseException:  # its own error: the import's is the one raised
            continue
        _discard_kept(kept)


class StoreImport:
    """Imports runs into the store at ``store_dir`` under one project/experiment/group.

    ``on_bytes(n)`` is told as each batch's bytes are read (and the bytes of skipped files).

    ``clustering`` says when the imported runs' files are rewritten by metric (:mod:`.expstore.metric_clusters`):
    ``"background"`` in a child started by :meth:`close` and not waited for (``summary.clustering``), ``"wait"``
    at the end of each run, in this process, ``"off"`` never.
    """

    def __init__(self, store_dir: str | os.PathLike[str], *, project: str, experiment: str | None,
                 group: str | None, on_bytes: Callable[[int], None] | None = None,
                 clustering: str = "background") -> None:
        if clustering not in ("background", "wait", "off"):
            raise ValueError(f"clustering: {clustering!r} is none of 'background', 'wait', 'off'")
        self.clustering = clustering
        self._to_cluster: list[str] = []
        self.sink = ExpstoreSink(store_dir, source_id="taunotebook-import")
        self.sink.store.whole_filesystem_syncs = True  # a delivery's thousand images: two syncs, not a thousand
        self.keys = MetricWriter(self.sink.store)
        self.project = project
        self.group = group or experiment or "imported"
        self.experiment = experiment or self.group
        self.summary = ImportSummary()
        self._with_media: set[str] = set()
        self._media_newest: dict[str, float] = {}  # run -> its newest media wall time (s): a media-only run ends there
        self._on_bytes = on_bytes or (lambda n: None)
        self._media = _MediaDeliveries(self.sink, self.keys)

    def close(self) -> None:
        try:
            self._media.close()
            if self.clustering == "background" and self._to_cluster:
                # Every imported row is committed: the child only rewrites files already readable.
                self.summary.clustering = start_clustering(self.sink.store, self._to_cluster)
        finally:
            self.sink.close()

    def config(self, run: ImportRun) -> ProjectionConfig:
        return ProjectionConfig(
            project=self.project, experiment_id=self.experiment, run_group_id=self.group, run_id=run.run_id,
            exported_at=0, source="tensorboard" if run.kind == "tensorboard" else "jsonl",
            tags={"import.kind": run.kind},
        )

    def _identity(self, run: ImportRun) -> bytes:
        return orjson.dumps([IMPORT_VERSION, run.kind, self.project, self.experiment, self.group, run.run_id])

    def run(self, run: ImportRun) -> None:
        """Import one run; problems are recorded beside it in the store and counted."""
        identity = self._identity(run)
        inputs = run.inputs
        digests = _file_digests([i.path for i in inputs])
        key = None
        if all(digests):
            payload = orjson.dumps([identity.decode(), [[i.path, d] for i, d in zip(inputs, digests, strict=True)]])
            key = "import-source-" + hashlib.sha256(payload).hexdigest()
        if key is not None and self.keys.recorded(key):
            self.summary.unchanged += 1
            self._to_cluster.append(run.run_id)  # in case an earlier import's clustering was stopped
            for source_input in inputs:
                self._file_done(source_input.path, 0)
            problems = self._store_config(run)
            if problems:
                self.sink.report(run.run_id, problems)
                self.summary.problems.extend(str(p) for p in problems)
            return
        pipeline = Pipeline(self.config(run), lines=False, points=True)
        problems: list[SourceProblem] = []
        metrics: set[str] = set()
        # Each file is copied into the store (its run artifact) on a thread of its own once it is read, while the
        # next is read: the copy's reading, hashing and syncing (hashlib and file I/O let go of the GIL) beside it.
        copies: list[Future] = []
        self._reads: dict[str, ReadDigest] = {}  # each input's digest as read (:meth:`_resume_point`)
        with ThreadPoolExecutor(1, thread_name_prefix="source-copy") as pool:
            try:
                for source_input in inputs:
                    self._read_input(run, pipeline, identity, source_input, problems, metrics)
                    copies.append(pool.submit(_copy_files, self.sink.store, run.run_id,
                                              kept_folder(run.source.artifact_type), _kept_files(run, source_input),
                                              self._reads.pop(source_input.path, None)))
                problems.extend(self._store_config(run))
                problems.extend(self._keep_files(run, copies))
            except BaseException:
                _discard(copies)
                raise
            finally:
                self._reads.clear()
        if problems:
            self.sink.report(run.run_id, problems)
            self.summary.problems.extend(str(p) for p in problems)
        if metrics or run.run_id in self._with_media:
            self.summary.runs += 1
            self.summary.run_ids.append(run.run_id)
            self.summary.metrics += len(metrics)
        if metrics:
            self._to_cluster.append(run.run_id)
            # The run's history is all written: its files are rewritten by metric (a wide run's metric is
            # then read from one file, not from every batch's), here or by the child :meth:`close` starts.
            if self.clustering == "wait":
                cluster_quietly(self.sink.store, run.run_id)
        if run.run_id in self._with_media:
            # A delivery's media file holds a few steps of every tag: merged, a tag is read from a few files.
            compact_media_quietly(self.sink.store, run.run_id)
        if metrics or run.run_id in self._with_media:
            # Imported history has ended: the Portal and panes show it done, not running forever.
            self.keys.mark_completed(run.run_id, self._media_newest.get(run.run_id))
        if key is not None and not any(p.kind == ProblemKind.UNREADABLE for p in problems):
            # Everything these bytes hold is in the store now: the next import of them reads nothing.
            self.keys.record_key(key, command="taunotebook import", target_type="import_source",
                                 target_id=run.run_id, request_hash=key)

    def _keep_files(self, run: ImportRun, copies: list[Future]) -> list[SourceProblem]:
        """Publish the copies of the files the run was read from (:func:`_copy_files` of each input, in order) as its
        artifacts, as TauGrid's JSONL import keeps them, beside them the files their rows name (a W&B run's
        ``files/media/``); record their rows. A file that could not be kept is a problem, not an error."""
        rows, problems = [], []
        for future in copies:
            for kept in future.result():
                if isinstance(kept, SourceProblem):
                    problems.append(kept)
                    continue
                try:
                    rows.append(kept.publish())
                except OSError as exc:
                    problems.append(_not_kept(kept.path, exc))
        record_artifacts(self.sink.store, rows)
        return problems

    def _store_config(self, run: ImportRun) -> list[SourceProblem]:
        """Store the run's configuration; what stood in the way, as problems."""
        try:
            config = run.source.run_config()
            if config is not None and self.keys.put_run_config(run.run_id, config):
                self.summary.configs += 1
        except ConfigConflictError as exc:
            self.summary.config_conflicts.append(f"{run.run_id}: {exc}")
            return [SourceProblem(run.location, ProblemKind.CONFIG_CONFLICT, str(exc))]
        except ConfigError as exc:
            return [SourceProblem(run.location, ProblemKind.BAD_CONFIG, f"configuration not stored: {exc}")]
        except OSError as exc:
            return [SourceProblem(run.location, ProblemKind.BAD_CONFIG,
                                  f"configuration not stored: cannot read it ({exc.strerror or exc})")]
        return []

    def _read_input(self, run: ImportRun, pipeline: Pipeline, identity: bytes, source_input: SourceInput,
                    problems: list[SourceProblem], metrics: set[str]) -> None:
        path = source_input.path
        source = run.source
        key_prefix = "import-file-" + hashlib.sha256(identity + b"\0" + path.encode()).hexdigest()[:32] + "-"
        position, running = self._resume_point(key_prefix, path)
        read = position.offset
        self._on_bytes(read)
        # Complete lines and records first (each batch checkpointed), then what a finished file has
        # beyond them: an unterminated last line, or a cut record (corrupt).
        for final in (False, True):
            while True:
                batch = source.read(source_input, position, final=final, prefix_hash=None if final else running)
                if not final:  # a tail past the batch's end is read again, as complete, right after
                    batch.problems = [p for p in batch.problems if not _about_the_tail(p, batch)]
                self._deliver(pipeline, source, identity, batch, problems, metrics)
                read += batch.consumed
                self._on_bytes(batch.consumed)
                if batch.end.offset > position.offset and not final:
                    # Recorded once the media read so far are delivered (at once when none wait).
                    self._media.after_delivery((key_prefix + str(batch.end.offset), str(batch.end.records),
                                                running.hexdigest()))
                position = batch.end
                if batch.unreadable or batch.stopped or not batch.more:
                    break
            if batch.unreadable or batch.stopped:
                break
        self._media.flush(wait=True)
        self._file_done(path, read)

    def _resume_point(self, key_prefix: str, path: str) -> tuple[Position, ReadDigest]:
        """Where the furthest earlier import of ``path`` stopped, if its bytes up to there are unchanged,
        and the running digest of those bytes (kept for the file's copy: :func:`_copy_files`)."""
        position, running = self._verified_start(key_prefix, path)
        self._reads[path] = running
        return position, running

    def _verified_start(self, key_prefix: str, path: str) -> tuple[Position, ReadDigest]:
        fresh = ReadDigest.of(path)  # stamped before any byte is read
        size = _size(path)
        points = []
        for key, digest, count in self.keys.keys_with_prefix(key_prefix):
            offset = int(key[len(key_prefix):])
            if 0 < offset <= size:
                points.append((offset, digest, int(count)))
        points.sort(reverse=True)
        if points:
            # One pass over the file up to the furthest candidate, checking each candidate on the way.
            wanted = {offset: (digest, count) for offset, digest, count in points}
            best: tuple[Position, ReadDigest] | None = None
            running = fresh.copy()
            position = 0
            stops = sorted(wanted)
            try:
                with open(path, "rb", buffering=0) as handle:
                    for stop in stops:
                        while position < stop:
                            piece = os.pread(handle.fileno(), min(_BLOCK, stop - position), position)
                            if not piece:
                                raise OSError("file shrank")
                            running.update(piece)
                            position += len(piece)
                        digest, count = wanted[stop]
                        if running.hexdigest() == digest:
                            best = (Position(stop, count), running.copy())
            except OSError:
                pass
            if best is not None:
                return best
        return Position(), fresh

    def _deliver(self, pipeline: Pipeline, source: Source, identity: bytes, batch: Batch,
                 problems: list[SourceProblem], metrics: set[str]) -> None:
        problems.extend(batch.problems)
        self.summary.dropped += sum(batch.dropped.values())
        if batch.stopped or any(p.kind in (ProblemKind.UNREADABLE, ProblemKind.CORRUPT) for p in batch.problems):
            self.summary.corrupt_files += 1
        if batch.media:  # never MetricEvents: stored beside the points, under a key that is their content
            config = pipeline.config
            where = RunIdentity(config.project, config.experiment_id, config.run_group_id,
                                tuple(sorted(config.tags.items())))
            self._media.add(config.run_id, batch.input.path, where, batch.media, batch.consumed)
            self.summary.media += len(batch.media)
            self._with_media.add(config.run_id)
            newest = max(r.wall_time for r in batch.media)
            self._media_newest[config.run_id] = max(newest, self._media_newest.get(config.run_id, newest))
        if batch.rows or (batch.columns is not None and len(batch.columns)):
            projected = pipeline.project(source, batch)
            problems.extend(projected.rejected)
            self.summary.rejected_rows += projected.bad_rows
            self._write(projected, identity, metrics)
        else:
            self.summary.rejected_rows += sum(1 for p in batch.problems if p.kind in ProblemKind.REJECTED)

    def _write(self, projected: ProjectedBatch, identity: bytes, metrics: set[str]) -> None:
        if projected.non_finite:
            events = tuple(projected.non_finite)
            self.sink.deliver(Chunk(0, "non_finite", non_finite_key(list(events)), b"", 0, events))
            self.summary.non_finite += len(events)
            metrics.update(e.metric_name for e in events)
        points = projected.points
        if points is None:
            return
        batch = projected.batch
        content = hashlib.sha256(identity)
        content.update(orjson.dumps([batch.input.path, batch.start.offset, points.names]))
        for array in (points.key, points.step, points.wall_us, points.value, points.line):
            content.update(array.tobytes())
        self.sink.deliver(Chunk(0, "history", "", b"", len(points), points=points,
                                key="import-block-" + content.hexdigest()))
        self.summary.points += len(points)
        metrics.update(points.names[k] for k in set(points.key.tolist()))

    def _file_done(self, path: str, read: int) -> None:
        size = _size(path)
        self.summary.files += 1
        self.summary.bytes += size
        self._on_bytes(max(size - read, 0))


class _MediaDeliveries:
    """The import's media gathered over batches into deliveries of about :data:`MEDIA_DELIVERY_BYTES` of source,
    each written by one thread beside the reading (at most one at a time), and the file progress keys recorded
    once the media before them are delivered. A delivery's error is raised by the next call that waits for it."""

    def __init__(self, sink: ExpstoreSink, keys: MetricWriter) -> None:
        self._sink, self._keys = sink, keys
        self._gathering: tuple[str, str, RunIdentity] | None = None
        self._records: list = []
        self._bytes = 0
        self._keys_after: list[tuple[str, str, str]] = []  # progress keys waiting for the gathered media
        self._running = None  # (future, the keys recorded once it is done)
        self._pool = None
        self._failed = False  # a delivery failed: no progress is recorded after it (the next import reads it again)

    def add(self, run_id: str, path: str, where: RunIdentity, records: list, consumed: int) -> None:
        if self._gathering is not None and self._gathering[:2] != (run_id, path):
            self.flush()
        self._gathering = (run_id, path, where)
        self._records += records
        self._bytes += consumed

    def after_delivery(self, progress: tuple[str, str, str]) -> None:
        """Record ``progress`` (key, records, digest) once every media value read before it is delivered."""
        if self._records:
            self._keys_after.append(progress)
            if self._bytes >= MEDIA_DELIVERY_BYTES:
                self.flush()
        elif self._running is not None:
            self._running[1].append(progress)
        else:
            self._record([progress])

    def flush(self, wait: bool = False) -> None:
        """Start delivering what was gathered (after the delivery before it ends); ``wait``: until it is done."""
        if self._records:
            run_id, path, where = self._gathering  # type: ignore[misc]
            records = tuple(self._records)
            chunk = MediaChunk(media_chunk_key(run_id, path, self._records), run_id, path, records, where)
            self._wait()
            if self._pool is None:
                from concurrent.futures import ThreadPoolExecutor

                self._pool = ThreadPoolExecutor(1, thread_name_prefix="media-delivery")
            self._running = (self._pool.submit(self._sink.deliver_media, chunk), self._keys_after)
            self._gathering, self._records, self._bytes, self._keys_after = None, [], 0, []
        if wait:
            self._wait()

    def _wait(self) -> None:
        if self._running is not None:
            future, keys = self._running
            self._running = None
            try:
                future.result()
            except BaseException:
                self._failed = True
                raise
            self._record(keys)

    def _record(self, progress: list[tuple[str, str, str]]) -> None:
        if self._failed:
            return
        for key, records, digest in progress:
            self._keys.record_key(key, command="taunotebook import", target_type="import_file", target_id=records,
                                  request_hash=digest)

    def close(self) -> None:
        """Deliver what is left (nothing after a failed delivery), then end the thread (and its connection to the
        store)."""
        try:
            if not self._failed:
                self.flush(wait=True)
        finally:
            if self._pool is not None:
                self._pool.submit(self._sink.store.close).result()
                self._pool.shutdown()
                self._pool = None
