"""The collector loop: sources → projection → spool → sinks, TauGrid's ``collect`` semantics.

One drain reads every source's new bytes (one chunk per source per drain), projects them into
canonical MetricEvents, spools each chunk as TauGrid's pending manifest, delivers it to every
configured sink, and only then advances ``checkpoint.json``. When the completion file appears
the collector drains once more including unterminated tails, emits the ``tau/run_status``
marker, writes the done file and stops.

Where TauGrid is fatal on a single bad row we record it, count it, report it and keep going
(DESIGN §5); non-finite observations are spooled and delivered beside the chunk (see spool).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
import os
import queue
import signal
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from .completion import (
    RUN_STATUS_METRIC,
    Completion,
    CompletionError,
    cancellation_observation_id,
    read_completion,
)
from .gojson import GoMap, format_time, marshal
from .metric_event import METRIC_EVENT_SCHEMA_V1, MetricEvent, new_metric_event
from .projection import Projected, ProjectionConfig, Projector
from .records import HistoryRow, ProblemKind, SourceProblem
from .sinks.base import Chunk, Sink, SinkError
from .sources.jsonl import expand_history, file_id, history_metric_file_id, read_history
from .sources.tfevents import (
    RunMemory,
    TensorBoardRun,
    discover_runs,
    is_event_file,
    read_segment,
    rebuild_run_memory,
)
from .sources.tfevents import metric_file_id as tfevents_file_id
from .spool import (
    COMPLETION_SOURCE_PREFIX,
    MANIFEST_SCHEMA_V1,
    Checkpoint,
    Manifest,
    SourceCheckpoint,
    Spool,
    SpoolError,
    remove_durable,
    write_file_atomic,
)

__all__ = ["CollectorError", "CollectorOptions", "CollectorResult", "Collector"]

TAU_WORKSPACE_TAG = "tau_workspace"
TAU_NAMESPACE_TAG = "tau_namespace"
TAU_CLUSTER_TAG = "tau_cluster"
# TauGrid waits at most this long for the workload's completion file after a signal.
TERMINAL_DRAIN_GRACE = 30.0


class CollectorError(RuntimeError):
    """A fatal collector condition; the message says what and where."""


@dataclass(slots=True)
class CollectorOptions:
    run: str
    project: str
    experiment: str
    group: str
    out: str
    sinks: list[Sink]
    history: list[str] = field(default_factory=list)
    tfevents: list[str] = field(default_factory=list)
    source: str = "stellar-online"
    tags: dict[str, str] = field(default_factory=dict)
    completion_file: str = ""
    interval: float = 60.0
    baseline_existing_history: bool = False
    ready_file: str = ""
    done_file: str = ""
    status_artifact_uri: str = ""
    status_checkpoint_uri: str = ""
    watch: bool = False
    max_iterations: int = 0
    step_field: str = "_step"
    time_field: str = "_timestamp"
    retry_backoff: float = 1.0  # first sleep after a retryable sink failure (doubles, capped)
    drain_budget: float = 600.0  # how long a shutdown may spend on the final drain


@dataclass(slots=True)
class CollectorResult:
    """TauGrid's status line (chunks, events, completed) plus our counts."""

    chunks: int = 0
    events: int = 0
    completed: bool = False
    non_finite: int = 0
    rejected_rows: int = 0
    non_scalars: int = 0
    corrupt_files: int = 0
    first_non_finite: dict[str, object] | None = None
    problems: list[SourceProblem] = field(default_factory=list)

    def status_line(self) -> bytes:
        return marshal({
            "chunks": self.chunks, "events": self.events, "completed": self.completed,
            "non_finite": self.non_finite, "rejected_rows": self.rejected_rows,
            "non_scalars": self.non_scalars, "corrupt_files": self.corrupt_files,
        })


def _clean_tags(tags: dict[str, str]) -> dict[str, str]:
    return {key.strip(): value.strip() for key, value in tags.items()}


class Collector:
    """Runs one collector over one ``--out`` directory."""

    def __init__(self, options: CollectorOptions, *, log: Callable[[str], None] | None = None) -> None:
        for name in ("run", "project", "experiment", "group", "source", "out"):
            if not getattr(options, name).strip():
                raise CollectorError(f"--{name} is required")
        if not options.history and not options.tfevents:
            raise CollectorError("--history is required (or --tfevents)")
        if options.interval <= 0:
            raise CollectorError("--interval must be positive")
        if options.max_iterations < 0:
            raise CollectorError("--max-iterations must be nonnegative")
        if options.baseline_existing_history and not options.ready_file.strip():
            raise CollectorError("--ready-file is required with --baseline-existing-history")
        if not options.sinks:
            raise CollectorError("at least one --sink is required")
        self.options = options
        self.tags = _clean_tags(options.tags)
        for key, env in ((TAU_WORKSPACE_TAG, "TAU_WORKSPACE"), (TAU_NAMESPACE_TAG, "POD_NAMESPACE"),
                         (TAU_CLUSTER_TAG, "TAU_CLUSTER")):
            value = os.environ.get(env, "").strip()
            if not self.tags.get(key, "").strip() and value:
                self.tags[key] = value
        self._history_patterns = [os.path.abspath(p) for p in options.history]
        self.config_identity = self._config_identity()
        self.source_store_id = self._source_store_id()
        self.spool = Spool(options.out)
        self.result = CollectorResult()
        self._log = log or (lambda message: None)
        self._stop = threading.Event()
        # Per-source state that lives only in memory: verified prefix hashes, tfevents memories,
        # the stat signature of what was read last, files stopped by corruption.
        self._prefix: dict[str, hashlib._Hash] = {}
        self._seen: dict[str, tuple[str, int, int]] = {}
        self._memories: dict[str, RunMemory] = {}
        self._stopped: dict[str, tuple[str, int, int]] = {}
        self._reported: set[tuple[str, int | None, int | None, str]] = set()

    # -- identities --------------------------------------------------------------------

    def _config_identity(self) -> str:
        o = self.options
        sink = "\x01".join(s.name + "\x00" + s.identity() for s in o.sinks)
        doc: dict[str, object] = {
            "version": MANIFEST_SCHEMA_V1, "run": o.run, "project": o.project, "experiment": o.experiment,
            "group": o.group, "source": o.source, "history": list(o.history) or None,
            "completion_file": o.completion_file, "tags": GoMap(self.tags),
            "status_artifact_uri": o.status_artifact_uri, "status_checkpoint_uri": o.status_checkpoint_uri,
            "sink": sink,
        }
        # Our additions join the identity only when used, so a TauGrid-equivalent
        # configuration keeps TauGrid's identity.
        if o.tfevents:
            doc["tfevents"] = list(o.tfevents)
        if o.step_field != "_step" or o.time_field != "_timestamp":
            doc["step_field"], doc["time_field"] = o.step_field, o.time_field
        return hashlib.sha256(marshal(doc)).hexdigest()

    def _source_store_id(self) -> str:
        raw = marshal({
            "schema": METRIC_EVENT_SCHEMA_V1, "workspace_id": self.tags.get(TAU_WORKSPACE_TAG, ""),
            "cluster": self.tags.get(TAU_CLUSTER_TAG, ""), "namespace": self.tags.get(TAU_NAMESPACE_TAG, ""),
            "out": os.path.normpath(self.options.out),
        })
        return "tau-metrics-" + hashlib.sha256(raw).hexdigest()[:16]

    def _projection_config(self) -> ProjectionConfig:
        o = self.options
        return ProjectionConfig(
            project=o.project, experiment_id=o.experiment, run_group_id=o.group, run_id=o.run,
            exported_at=time.time_ns(), workspace_id=self.tags.get(TAU_WORKSPACE_TAG, ""),
            cluster=self.tags.get(TAU_CLUSTER_TAG, ""), namespace=self.tags.get(TAU_NAMESPACE_TAG, ""),
            source_store_id=self.source_store_id, source=o.source, tags=self.tags,
            step_field=o.step_field, time_field=o.time_field,
        )

    # -- the run ---------------------------------------------------------------------------

    def stop(self) -> None:
        """Ask a watching collector to stop (SIGINT/SIGTERM): final drain, then a cancelled marker."""
        self._stop.set()

    def run(self) -> CollectorResult:
        o = self.options
        os.makedirs(o.out, exist_ok=True)
        checkpoint, existed = Checkpoint.load(self.spool.checkpoint_path, self.config_identity)
        replayed = self._replay(checkpoint)
        if o.baseline_existing_history and not existed and not replayed:
            self._baseline(checkpoint)
        if o.ready_file:
            write_file_atomic(o.ready_file, b"ready\n")
        watcher = _ChangeWatcher(self._watch_roots()) if o.watch else None
        try:
            iteration, changed = 0, None
            while True:
                iteration += 1
                self._drain(checkpoint, final=False, changed=changed)
                if self._completion_exists():
                    self._finish(checkpoint)
                    return self.result
                if not o.watch or (o.max_iterations and iteration >= o.max_iterations):
                    return self.result
                assert watcher is not None
                changed = watcher.wait(o.interval, self._stop)
                if self._stop.is_set():
                    self._finish_cancelled(checkpoint)
                    return self.result
        finally:
            if watcher is not None:
                watcher.close()

    def _completion_exists(self) -> bool:
        return bool(self.options.completion_file) and os.path.exists(self.options.completion_file)

    def _finish(self, checkpoint: Checkpoint) -> None:
        self._drain(checkpoint, final=True)
        try:
            completion = read_completion(self.options.completion_file)
        except CompletionError as exc:
            raise CollectorError(str(exc)) from None
        self._publish_terminal(checkpoint, completion, completion.observation_id)
        self.result.completed = True
        if self.options.done_file:
            write_file_atomic(self.options.done_file, b"done\n")

    def _finish_cancelled(self, checkpoint: Checkpoint) -> None:
        """TauGrid's shutdown: wait briefly for the job's own completion, drain, then a marker."""
        deadline = time.monotonic() + min(TERMINAL_DRAIN_GRACE, self.options.drain_budget / 2)
        while not self._completion_exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        if self._completion_exists():
            self._finish(checkpoint)
        else:
            self._drain(checkpoint, final=True)
            completion = Completion("cancelled", "collector_context_cancelled",
                                    "metrics collector received cancellation before workload completion",
                                    time.time_ns())
            self._publish_terminal(checkpoint, completion, cancellation_observation_id(self.config_identity))
        raise CollectorCancelled("collector stopped by a signal")

    # -- replay and baseline -------------------------------------------------------------

    def _replay(self, checkpoint: Checkpoint) -> bool:
        for path, key, events in self.spool.load_non_finite():
            self._deliver(Chunk(0, "non_finite", key, b"", 0, tuple(events)))
            remove_durable(path)
        pending = self.spool.load_pending(self.config_identity)
        if pending is None:
            return False
        path, manifest, events = pending
        if manifest.sequence < checkpoint.next_sequence:
            self._validate_acknowledged(checkpoint, manifest)
            remove_durable(path)
            return True
        if manifest.sequence != checkpoint.next_sequence:
            raise SpoolError(f"pending sequence {manifest.sequence} does not match checkpoint next "
                             f"sequence {checkpoint.next_sequence}")
        following = checkpoint.copy()
        self._advance(following, manifest)
        self._deliver(Chunk(manifest.sequence, manifest.kind, manifest.chunk_digest, manifest.ndjson,
                            manifest.event_count, events=tuple(events)))
        following.save(self.spool.checkpoint_path)
        checkpoint.adopt(following)
        remove_durable(path)
        self.result.chunks += 1
        self.result.events += len(events)
        return True

    @staticmethod
    def _validate_acknowledged(checkpoint: Checkpoint, manifest: Manifest) -> None:
        if manifest.kind == "history":
            source = checkpoint.sources.get(manifest.source_path)
            if source is None or source.sequence != manifest.sequence or \
                    source.chunk_digest != manifest.chunk_digest or source.offset < manifest.end_offset:
                raise SpoolError(f"checkpoint does not acknowledge pending history chunk {manifest.sequence}")
        else:
            observation = manifest.source_file_id.removeprefix(COMPLETION_SOURCE_PREFIX)
            if checkpoint.terminals.get(observation) != (manifest.sequence, manifest.chunk_digest):
                raise SpoolError(f"checkpoint does not acknowledge pending terminal chunk {manifest.sequence}")

    @staticmethod
    def _advance(checkpoint: Checkpoint, manifest: Manifest) -> None:
        if manifest.kind == "history":
            source = checkpoint.sources.get(manifest.source_path)
            if source is not None and (source.file_id != manifest.source_file_id or
                                       source.offset != manifest.start_offset or
                                       source.lines != manifest.start_lines or
                                       source.prefix_sha256 != manifest.start_prefix_sha256):
                raise SpoolError(f"durable manifest start does not match source checkpoint for "
                                 f"{manifest.source_path}")
            if source is None and (manifest.start_offset or manifest.start_lines or manifest.start_prefix_sha256):
                raise SpoolError(f"durable manifest starts after missing source checkpoint for "
                                 f"{manifest.source_path}")
            checkpoint.sources[manifest.source_path] = SourceCheckpoint(
                manifest.source_path, manifest.source_file_id, manifest.end_offset, manifest.prefix_sha256,
                manifest.sequence, manifest.chunk_digest, manifest.end_lines, format_time(time.time_ns()),
            )
        else:
            observation = manifest.source_file_id.removeprefix(COMPLETION_SOURCE_PREFIX)
            if observation in checkpoint.terminals:
                raise SpoolError(f"duplicate terminal observation {observation}")
            checkpoint.terminals[observation] = (manifest.sequence, manifest.chunk_digest)
        checkpoint.next_sequence += 1

    def _baseline(self, checkpoint: Checkpoint) -> None:
        """``--baseline-existing-history``: checkpoint what already exists, silently."""
        for path in self._history_files():
            with open(path, "rb") as handle:
                data = handle.read()
            end = data.rfind(b"\n") + 1
            checkpoint.sources[path] = SourceCheckpoint(
                path, file_id(path), end, hashlib.sha256(data[:end]).hexdigest() if end else "",
                checkpoint.next_sequence - 1, "", data.count(b"\n", 0, end), format_time(time.time_ns()),
            )
        checkpoint.save(self.spool.checkpoint_path)

    # -- draining --------------------------------------------------------------------------

    def _history_files(self) -> list[str]:
        try:
            return expand_history(self.options.history)
        except ValueError as exc:
            raise CollectorError(str(exc)) from None

    def _drain(self, checkpoint: Checkpoint, *, final: bool, changed: set[str] | None = None) -> None:
        """Read every source (``changed`` None), or only the files a watch event named.

        A full drain lists and stats every file, which grows with the run (a chunk file per
        step is common); targeted drains keep a long run's cost proportional to what is new.
        """
        config = self._projection_config()
        if changed is None:
            files = self._history_files()
            present = set(files)
            for path, source in checkpoint.sources.items():
                if source.file_id.startswith(COMPLETION_SOURCE_PREFIX):
                    continue
                if path not in present and not self._is_tfevents_source(path):
                    raise CollectorError(f"checkpointed history source disappeared: {path}")
        else:
            files = sorted(p for p in changed if self._is_history_path(p) and os.path.isfile(p))
        for path in files:
            self._drain_history(checkpoint, config, path, final)
        # Event-file rows always carry TauGrid's field names, whatever --step-field says for JSONL.
        tf_config = dataclasses.replace(config, step_field="_step", time_field="_timestamp")
        for run in self._tensorboard_runs(changed):
            for segment in run.segments():
                self._drain_tfevents(checkpoint, tf_config, run, segment, final)

    def _is_history_path(self, path: str) -> bool:
        for pattern in self._history_patterns:
            if any(ch in pattern for ch in "*?["):
                # Go's Glob, like glob.glob, never matches across a separator.
                if pattern.count(os.sep) == path.count(os.sep) and fnmatch.fnmatchcase(path, pattern):
                    return True
            elif path == pattern:
                return True
        return False

    def _tensorboard_runs(self, changed: set[str] | None) -> list[TensorBoardRun]:
        if changed is None:
            return [run for logdir in self.options.tfevents for run in discover_runs(logdir)]
        runs: dict[str, TensorBoardRun] = {}
        for logdir in self.options.tfevents:
            root = os.path.abspath(logdir)
            for path in changed:
                if is_event_file(path) and path.startswith(root + os.sep):
                    directory = os.path.dirname(path)
                    relative = os.path.relpath(directory, root)
                    relative = "" if relative == os.curdir else relative.replace(os.sep, "/")
                    runs[directory] = TensorBoardRun(directory, relative, tfevents_file_id(directory))
        return [runs[d] for d in sorted(runs)]

    def _is_tfevents_source(self, path: str) -> bool:
        return any(path.startswith(os.path.abspath(d) + os.sep) for d in self.options.tfevents)

    @staticmethod
    def _signature(path: str) -> tuple[str, int, int] | None:
        """(file id "dev:ino", size, mtime): unchanged means nothing new to read."""
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        return (f"{st.st_dev}:{st.st_ino}", st.st_size, st.st_mtime_ns)

    def _verified_prefix(self, checkpoint: Checkpoint, path: str) -> hashlib._Hash:
        """The running prefix hash of a source, verified against its checkpoint on first use."""
        h = self._prefix.get(path)
        if h is not None:
            return h
        h = hashlib.sha256()
        source = checkpoint.sources.get(path)
        if source is not None:
            if file_id(path) != source.file_id:
                raise CollectorError(f"history file identity changed for {path}")
            size = os.path.getsize(path)
            if source.offset > size:
                raise CollectorError(f"checkpoint offset {source.offset} is outside {path} size {size}")
            with open(path, "rb") as handle:
                remaining = source.offset
                while remaining:
                    block = handle.read(min(remaining, 1 << 20))
                    if not block:
                        break
                    h.update(block)
                    remaining -= len(block)
            if (h.hexdigest() if source.offset else "") != source.prefix_sha256:
                raise CollectorError(f"history prefix mismatch for {path} at offset {source.offset}")
        self._prefix[path] = h
        return h

    def _drain_history(self, checkpoint: Checkpoint, config: ProjectionConfig, path: str, final: bool) -> None:
        signature = self._signature(path)
        if signature is None or (not final and self._seen.get(path) == signature):
            return
        source = checkpoint.sources.get(path)
        offset, lines = (source.offset, source.lines) if source else (0, 0)
        prefix = self._verified_prefix(checkpoint, path)
        if source is not None and signature[0] != source.file_id:
            raise CollectorError(f"history file identity changed for {path}")
        running = prefix.copy()
        read = read_history(path, offset, lines, final=final, prefix_hash=running)
        self._seen[path] = signature
        for problem in read.problems:
            if problem.kind == ProblemKind.UNREADABLE:
                raise CollectorError(str(problem))
        if read.offset == offset:
            return
        projector = Projector(config, history_path=path, metric_file_id=history_metric_file_id(path),
                              metric_file_path=path)
        projected, errors = projector.project_rows(read.rows)
        problems = list(read.problems) + [
            SourceProblem(path, ProblemKind.BAD_ROW, str(exc), line=row.line, offset=row.offset)
            for row, exc in errors
        ]
        self.result.rejected_rows += len(problems)
        self._commit(checkpoint, path, signature[0], offset, read.offset, lines, read.lines,
                     prefix, running, projected, problems)

    def _drain_tfevents(self, checkpoint: Checkpoint, config: ProjectionConfig, run: TensorBoardRun,
                        segment: str, final: bool) -> None:
        signature = self._signature(segment)
        if signature is None or self._seen.get(segment) == signature:
            return
        if self._stopped.get(segment) == signature:
            return  # corrupt: stays stopped until the file changes
        source = checkpoint.sources.get(segment)
        offset, records = (source.offset, source.lines) if source else (0, 0)
        prefix = self._verified_prefix(checkpoint, segment)
        memory = self._memories.get(run.directory)
        if memory is None:
            memory = rebuild_run_memory(run, segment, offset)
            self._memories[run.directory] = memory
        batch = read_segment(run, segment, offset=offset, records_before=records, memory=memory)
        self._seen[segment] = signature
        self.result.non_scalars += sum(batch.dropped.values())
        # A tail still being written is normal while the job runs; at the end it means the writer died.
        problems = [p for p in batch.problems if final or p.kind != ProblemKind.TRUNCATED]
        if batch.stop == ProblemKind.CRC_MISMATCH:
            if segment not in self._stopped:
                self.result.corrupt_files += 1
            self._stopped[segment] = signature
        if batch.checkpoint == offset:
            self._report(problems)
            return
        running = prefix.copy()
        with open(segment, "rb") as handle:
            handle.seek(offset)
            running.update(handle.read(batch.checkpoint - offset))
        projector = Projector(config, history_path=segment, metric_file_id=run.metric_file_id,
                              metric_file_path=run.directory)
        rows = [HistoryRow({"_step": o.step, "_timestamp": o.wall_time, o.metric: o.value}, o.record, o.offset)
                for o in batch.observations]
        projected, errors = projector.project_rows(rows)
        problems += [SourceProblem(segment, ProblemKind.BAD_ROW, str(exc), line=row.line, offset=row.offset)
                     for row, exc in errors]
        self.result.rejected_rows += len(errors)
        self._commit(checkpoint, segment, signature[0], offset, batch.checkpoint, records, batch.records,
                     prefix, running, projected, problems)

    def _commit(self, checkpoint: Checkpoint, path: str, source_file_id: str, start: int, end: int,
                start_lines: int, end_lines: int, prefix: hashlib._Hash, running: hashlib._Hash,
                projected: Projected, problems: list[SourceProblem]) -> None:
        """Spool, deliver and checkpoint one source's drain, in TauGrid's order."""
        lines, non_finite = projected.lines, projected.non_finite
        self._report(problems)
        start_prefix = prefix.hexdigest() if start else ""
        end_prefix = running.hexdigest()
        nonfinite_path = None
        if non_finite:
            self._note_non_finite(non_finite)
            nonfinite_path, key = self.spool.write_non_finite(non_finite)
            self._deliver(Chunk(0, "non_finite", key, b"", 0, tuple(non_finite)))
        pending_path = None
        following = checkpoint.copy()
        if lines:
            manifest = Manifest(
                config_identity=self.config_identity, kind="history", sequence=checkpoint.next_sequence,
                source_path=path, source_file_id=source_file_id, ndjson=b"".join(lines), event_count=len(lines),
                start_offset=start, end_offset=end, start_lines=start_lines, end_lines=end_lines,
                start_prefix_sha256=start_prefix, prefix_sha256=end_prefix,
            ).seal()
            pending_path = self.spool.write_pending(manifest)
            self._deliver(Chunk(manifest.sequence, "history", manifest.chunk_digest, manifest.ndjson,
                                manifest.event_count, events=tuple(projected.events)))
            self._advance(following, manifest)
        else:
            # Zero-event reads still advance the checkpoint (TauGrid), keeping the last chunk reference.
            old = checkpoint.sources.get(path)
            following.sources[path] = SourceCheckpoint(
                path, source_file_id, end, end_prefix, old.sequence if old else 0,
                old.chunk_digest if old else "", end_lines, format_time(time.time_ns()),
            )
        following.save(self.spool.checkpoint_path)
        checkpoint.adopt(following)
        self._prefix[path] = running
        if pending_path:
            remove_durable(pending_path)
            self.result.chunks += 1
            self.result.events += len(lines)
        if nonfinite_path:
            remove_durable(nonfinite_path)

    def _publish_terminal(self, checkpoint: Checkpoint, completion: Completion, observation: str) -> None:
        if observation in checkpoint.terminals:
            return
        o = self.options
        tags = dict(self.tags)
        tags["tau.status.state"] = completion.state
        if completion.reason:
            tags["tau.status.reason"] = completion.reason
        if completion.message:
            tags["tau.status.message"] = completion.message
        if o.status_artifact_uri:
            tags["tau.status.artifact_uri"] = o.status_artifact_uri
        if o.status_checkpoint_uri:
            tags["tau.status.checkpoint_uri"] = o.status_checkpoint_uri
        event = new_metric_event(
            workspace_id=tags.get(TAU_WORKSPACE_TAG, ""), cluster=tags.get(TAU_CLUSTER_TAG, ""),
            namespace=tags.get(TAU_NAMESPACE_TAG, ""), source_store_id=self.source_store_id,
            project=o.project, experiment_id=o.experiment, run_group_id=o.group, run_id=o.run,
            metric_name=RUN_STATUS_METRIC, step=0, wall_time=completion.completed_at, value=completion.value,
            source=o.source + "-status", tags=tags, exported_at=completion.completed_at,
        )
        manifest = Manifest(
            config_identity=self.config_identity, kind="terminal", sequence=checkpoint.next_sequence,
            source_path=o.completion_file or o.out, source_file_id=COMPLETION_SOURCE_PREFIX + observation,
            ndjson=event.to_ndjson(), event_count=1,
        ).seal()
        pending_path = self.spool.write_pending(manifest)
        self._deliver(Chunk(manifest.sequence, "terminal", manifest.chunk_digest, manifest.ndjson, 1,
                            events=(event,)))
        following = checkpoint.copy()
        self._advance(following, manifest)
        following.save(self.spool.checkpoint_path)
        checkpoint.adopt(following)
        remove_durable(pending_path)
        self.result.chunks += 1
        self.result.events += 1

    # -- delivery --------------------------------------------------------------------------

    def _deliver(self, chunk: Chunk) -> None:
        """Deliver to every sink; retryable failures back off and retry while watching."""
        delay = self.options.retry_backoff
        for sink in self.options.sinks:
            while True:
                try:
                    sink.deliver(chunk)
                    break
                except SinkError as exc:
                    if not exc.retryable or not self.options.watch:
                        raise CollectorError(
                            f"deliver chunk {chunk.chunk_digest} to {sink.name}: {exc}"
                        ) from None
                    self._log(f"delivery to {sink.name} failed ({exc}); chunk {chunk.sequence} stays "
                              f"spooled, retrying in {delay:.1f}s")
                    if self._stop.wait(delay):
                        raise CollectorError(
                            f"stopped while chunk {chunk.chunk_digest} was undelivered to {sink.name}; "
                            "it stays spooled and is delivered on the next start") from None
                    delay = min(delay * 2, 30.0)

    # -- reporting -------------------------------------------------------------------------

    def _report(self, problems: Iterable[SourceProblem]) -> None:
        new = []
        for problem in problems:
            key = (problem.path, problem.line, problem.offset, problem.kind)
            if key in self._reported:
                continue
            self._reported.add(key)
            self.result.problems.append(problem)
            self._log(str(problem))
            new.append(problem)
        if new:
            for sink in self.options.sinks:
                try:  # telling readers about a problem must never stop the metrics themselves
                    sink.report(self.options.run, new)
                except (SinkError, OSError, RuntimeError) as exc:
                    self._log(f"could not record {len(new)} source problem(s) in {sink.name}: {exc}")

    def _note_non_finite(self, events: list[MetricEvent]) -> None:
        self.result.non_finite += len(events)
        if self.result.first_non_finite is None:
            first = events[0]
            self.result.first_non_finite = {
                "metric": first.metric_name, "step": first.step,
                "file": first.tags.get("jsonl.history_path", ""),
                "line": int(first.tags.get("jsonl.history_line", "0")),
                "value": repr(first.value),
            }
            self._log(f"non-finite value {first.value!r} for {first.metric_name} at step {first.step} "
                      f"({self.result.first_non_finite['file']}:{self.result.first_non_finite['line']}); "
                      "kept in the local store, not sent as a MetricEvent")

    def _watch_roots(self) -> list[str]:
        roots = []
        for pattern in self.options.history:
            head = pattern
            while any(ch in head for ch in "*?["):
                head = os.path.dirname(head)
            roots.append(os.path.dirname(os.path.abspath(head)) if not os.path.isdir(head) else head)
        roots.extend(self.options.tfevents)
        if self.options.completion_file:
            roots.append(os.path.dirname(os.path.abspath(self.options.completion_file)))
        return roots


class CollectorCancelled(CollectorError):
    """The collector was stopped by a signal after its shutdown drain."""


class _ChangeWatcher:
    """Wakes the loop when watched directories change (inotify via watchfiles), else every interval.

    Directories that do not exist yet cannot be watched; while any is missing the loop falls back
    to polling every 250 ms, which keeps the "seen within 250 ms of the rename" promise.
    """

    POLL = 0.25

    def __init__(self, roots: list[str]) -> None:
        self._roots = sorted({os.path.abspath(r) for r in roots})
        self._events: queue.Queue[object] = queue.Queue()
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None
        self._start()

    def _start(self) -> None:
        existing = [r for r in self._roots if os.path.isdir(r)]
        self._complete = len(existing) == len(self._roots)
        if not existing:
            return
        try:
            from watchfiles._rust_notify import RustNotify
        except ImportError:  # without the native watcher the loop polls
            self._complete = False
            return
        # Registered here, synchronously, so that nothing written after the first drain can be
        # missed while a thread is still setting up (watchfiles.watch registers lazily).
        notify = RustNotify(existing, False, False, 300, True, True)
        self._thread = threading.Thread(target=self._run, args=(notify,), daemon=True, name="tau-watch")
        self._thread.start()

    def _run(self, notify: object) -> None:
        try:
            while not self._closing.is_set():
                raw = notify.watch(50, 10, 5000, self._closing)  # type: ignore[attr-defined]
                if isinstance(raw, set):
                    paths = {path for _change, path in raw if not os.path.basename(path).startswith(".")}
                    if paths:  # atomic writers create and fill a dotfile; only the rename is news
                        self._events.put(paths)
        except Exception as exc:  # a broken watcher degrades to polling, never kills a run
            self._complete = False
            self._events.put(exc)
        finally:
            notify.close()  # type: ignore[attr-defined]

    def wait(self, interval: float, stop: threading.Event) -> set[str] | None:
        """The paths that changed, or None when the loop should rescan everything.

        Everything is rescanned when the interval passes without news (TauGrid's polling),
        while directories cannot be watched, and after a watcher failure.
        """
        timeout = interval if self._complete else min(interval, self.POLL)
        deadline = time.monotonic() + timeout
        changed: set[str] | None = None
        while not stop.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                item = self._events.get(timeout=min(remaining, 0.1))
            except queue.Empty:
                continue
            changed = item if isinstance(item, set) else None
            break
        while changed is not None and not self._events.empty():  # coalesce a burst into one drain
            item = self._events.get_nowait()
            changed = changed | item if isinstance(item, set) else None
        if not self._complete:
            changed = None
            if self._thread is None and all(os.path.isdir(r) for r in self._roots):
                self._start()
        return changed

    def close(self) -> None:
        self._closing.set()
        if self._thread is not None:
            self._thread.join(timeout=2)


def install_signal_handlers(collector: Collector) -> None:
    def handler(signum: int, frame: object) -> None:
        collector.stop()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
