"""The collector loop: sources → projection → spool → sinks, TauGrid's ``collect`` semantics.

This module only sequences. Each drain asks every source (:mod:`.sources`) for its inputs (a bounded slice of a
listing, or those a :class:`~.watcher.ChangeWatcher` saw change), reads each input from its checkpoint in bounded
batches, projects each batch (:mod:`.pipeline`), spools it as TauGrid's pending manifest (:mod:`.spool`; or, when
every sink keeps points, as our column record, :mod:`.column_record`), delivers it to every sink (:mod:`.delivery`)
and only then advances ``checkpoint.json`` -- one chunk per batch, so a backlog of any size is a sequence of bounded
chunks, one pending record at a time. Small batches of several files read in one drain make one chunk, within the
same bounds (:mod:`.chunk_grouping`). Which file is which is :mod:`.fingerprint`'s business; files closed and
completely read are folded out of the checkpoint (:mod:`.checkpoint_folding`, :mod:`.covered_files`), so a drain
costs the same on a job's first day and on its hundredth. When the completion file appears the collector drains
once more including unterminated tails, emits the ``tau/run_status`` marker, writes the done file and stops. The
options and the wait between drains live in :mod:`.options`; what is recorded of the run besides its points in
:mod:`.run_records`. A bad row is recorded, counted and reported, and the collector goes on (DESIGN §5).
"""

from __future__ import annotations

import hashlib
import os
import signal
import time
from collections.abc import Callable, Iterable

from tau_collector.collect.checkpoints import CheckpointScanner
from tau_collector.collect.completion_file import (
    TERMINAL_DRAIN_GRACE,
    Completion,
    CompletionError,
    cancellation_observation_id,
    read_completion,
)
from tau_collector.collect.covered_files import Covered
from tau_collector.collect.delivery import Delivery, DeliveryError
from tau_collector.collect.options import (
    CollectorError,
    CollectorOptions,
    collector_sources,
    config_identity,
    drain_wait,
    projection_config,
    run_tags,
    source_store_id,
    spools_columns,
    validate,
)
from tau_collector.collect.read_ahead import ReadAhead
from tau_collector.collect.run_records import (
    CollectorResult,
    first_non_finite,
    run_files,
    settle_config,
    terminal_event,
)
from tau_collector.collect.signal_stop import StopFlag
from tau_collector.collect.watcher import ChangeWatcher
from tau_collector.projection.metric_event import MetricEvent
from tau_collector.projection.pipeline import Pipeline, ProjectedBatch, merge_points
from tau_collector.sinks.base import Chunk, MediaChunk, RunIdentity
from tau_collector.sources.base import Batch, Position, Source, SourceInput
from tau_collector.sources.jsonl import HistoryPathError, complete_lines
from tau_collector.sources.records import ProblemKind, SourceProblem
from tau_collector.spool.checkpoint import Checkpoint, SourceCheckpoint
from tau_collector.spool.checkpoint_folding import ClosedFiles, is_mark, marks
from tau_collector.spool.chunk_grouping import Part, cannot_join, history_columns, history_manifest
from tau_collector.spool.column_record import replay_columns, write_column_chunk
from tau_collector.spool.durable import make_dirs, remove_durable, write_file_atomic
from tau_collector.spool.fingerprint import FingerprintError, Fingerprints, signature
from tau_collector.spool.manifest import COMPLETION_SOURCE_PREFIX, Manifest, Spool, advance, replay
from tau_collector.spool.media_record import replay_media, write_media_record
from tau_collector.taugrid.gojson import format_time

__all__ = ["CollectorError", "CollectorOptions", "CollectorResult", "Collector"]

KEEP_BATCH = 256  # a watching collector registers the files it read once this many wait...
KEEP_WAIT = 5.0  # ... or the first of them has waited this many seconds
# A full listing takes at most this many files not read before (the first in reading order), and a drain that left
# some goes on at once: a fresh sidecar on 200,000 unread files holds a slice of them, never their whole list.
LISTING_LIMIT = 1024

class Collector:
    """Runs one collector over one ``--out`` directory."""

    def __init__(self, options: CollectorOptions, *, log: Callable[[str], None] | None = None) -> None:
        validate(options)
        self.options = options
        self.tags = run_tags(options)
        self.config_identity = config_identity(options, self.tags)
        self.source_store_id = source_store_id(options, self.tags)
        # Carried with the media, so a run that logs only histograms/images/text is listed like one with points.
        self.identity = RunIdentity(options.project, options.experiment, options.group,
                                    tuple(sorted(self.tags.items())))
        self.spool = Spool(options.out)
        self.columns = spools_columns(options)
        self.result = CollectorResult()
        self._log = log or (lambda message: None)
        self._stop = StopFlag()  # set by a signal handler: no lock (see stop_flag)
        self.sources: list[Source] = collector_sources(options)
        self.delivery = Delivery(options.sinks, retry=options.watch, backoff=options.retry_backoff, stop=self._stop,
                                 log=self._log)
        # What lives only in memory: verified prefix digests and last signatures, files stopped by
        # corruption (until they change), problems already reported.
        self._fingerprints = Fingerprints()
        self._stopped: dict[str, tuple[str, int, int]] = {}
        self._reported: set[tuple[str, int | None, int | None, str]] = set()
        self._closed = ClosedFiles(keep=options.keep_entries, closed_after=options.closed_after)
        self._marks_checked = False  # covered files were checked once against their complete-through entry
        self._group: list[Part] = []
        self._config_settled = False  # the run's configuration was stored, or found in conflict
        self.checkpoints = CheckpointScanner(options.run, list(options.checkpoints), self.delivery.put_artifacts,
                                             log=self._log, settle=options.checkpoint_settle,
                                             known=lambda: self.delivery.known_artifacts(options.run, "checkpoint")) \
            if options.checkpoints else None
        # Input files registered as the run's artifacts (not those folded since: a drain never lists them again),
        # and those read but not registered yet: a watching collector registers them in batches (KEEP_BATCH files
        # or KEEP_WAIT seconds), not in an index transaction of their own every drain.
        self._kept: set[str] = set()
        self._unkept: dict[str, tuple[Source, SourceInput]] = {}
        self._unkept_since = 0.0
        self._folded_now: set[str] = set()  # folded during this drain, perhaps before they were registered

    # -- the run ---------------------------------------------------------------------------

    def stop(self) -> None:
        """Ask a watching collector to stop (SIGINT/SIGTERM): final drain, then a cancelled marker."""
        self._stop.set()

    def run(self) -> CollectorResult:
        o = self.options
        make_dirs(o.out)  # durable in its parent: the spool in it holds unacknowledged chunks
        checkpoint, existed = Checkpoint.load(self.spool.checkpoint_path, self.config_identity)
        pending = False
        replay_media(o.out, self._deliver_media)  # before the chunk whose checkpoint they precede
        for replay_ in (replay, replay_columns):  # at most one record is pending, of either kind
            replayed = replay_(self.spool, checkpoint, self.config_identity, self._deliver)
            self.result.chunks += replayed.chunks
            self.result.events += replayed.events
            pending = pending or replayed.pending
        if o.baseline_existing_history and not existed and not pending:
            self._baseline(checkpoint)
        if o.ready_file:
            write_file_atomic(o.ready_file, b"ready\n")
        watcher = ChangeWatcher(self._watch_roots(), ignore=self._own_directories(),
                                files=[o.completion_file] if o.completion_file else []) if o.watch else None
        try:
            iteration, changed = 0, None
            drained_cpu = time.process_time()  # the process's CPU when the last drain ended (every thread)
            while True:
                iteration += 1
                started = time.monotonic()
                background_cpu = time.process_time() - drained_cpu  # compaction, watcher, checkpoint scans
                appended_cpu, drain_cpu = self._drain(checkpoint, final=False, changed=changed)
                drained_cpu = time.process_time()
                wait = drain_wait(o, appended_cpu, drain_cpu, background_cpu)
                self._scan_checkpoints(final=not o.watch)
                if self._completion_exists():
                    self._finish(checkpoint)
                    return self.result
                if not o.watch or (o.max_iterations and iteration >= o.max_iterations):
                    return self.result
                assert watcher is not None
                changed = watcher.wait(o.interval, self._stop, not_before=started + wait)
                if self._stop.is_set():
                    self._finish_cancelled(checkpoint)
                    return self.result
        finally:
            if watcher is not None:
                watcher.close()

    def per_file_entries(self) -> dict[str, int]:
        """How many entries per input file the collector holds in memory now (verified digests, registered files,
        files not folded yet); folding bounds each near ``2 * keep_entries`` per history directory."""
        return {"fingerprints": len(self._fingerprints.seen), "kept": len(self._kept),
                "unkept": len(self._unkept), "closed": self._closed.pending()}

    def _completion_exists(self) -> bool:
        return bool(self.options.completion_file) and os.path.exists(self.options.completion_file)

    def _scan_checkpoints(self, *, final: bool) -> None:
        """Register the job's checkpoints that became stable (all of them once the job ended)."""
        if self.checkpoints is None:
            return
        try:
            self.checkpoints.scan(final=final)
        except DeliveryError as exc:
            self._log(f"{exc}; trying again on the next pass")

    def _finish(self, checkpoint: Checkpoint) -> None:
        self._drain(checkpoint, final=True)
        self._scan_checkpoints(final=True)
        self._keep_every_file()
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
            self._scan_checkpoints(final=True)
            completion = Completion("cancelled", "collector_context_cancelled",
                                    "metrics collector received cancellation before workload completion",
                                    time.time_ns())
            self._publish_terminal(checkpoint, completion, cancellation_observation_id(self.config_identity))
        raise CollectorCancelled("collector stopped by a signal")

    def _baseline(self, checkpoint: Checkpoint) -> None:
        """``--baseline-existing-history``: checkpoint what already exists, silently."""
        for source in self.sources:
            if not source.strict:
                continue
            for source_input in self._inputs(source, None):
                path = source_input.path
                end, lines, digest = complete_lines(path)
                checkpoint.sources[path] = SourceCheckpoint(
                    path, signature(path)[0], end, digest, checkpoint.next_sequence - 1, "", lines,  # type: ignore[index]
                    format_time(time.time_ns()),
                )
        checkpoint.save(self.spool.checkpoint_path)

    # -- draining --------------------------------------------------------------------------

    def _inputs(self, source: Source, changed: set[str] | None) -> list[SourceInput]:
        try:
            return source.inputs(changed)
        except HistoryPathError as exc:
            raise CollectorError(str(exc)) from None

    def _drain(self, checkpoint: Checkpoint, *, final: bool, changed: set[str] | None = None) -> tuple[float, float]:
        """Read every source (``changed`` None), or only the files a watch event named; returns the CPU
        seconds spent on files read before (appends, delivering them included: what waiting would have gathered
        into fewer chunks) and on the whole drain.

        A full drain reads every directory, which grows with the run (a chunk file per step is common), but
        holds and stats only the files not folded as completely read (the first after a start checks the
        folded ones' times, one at a time); targeted drains keep a long run's cost proportional to what is new.
        A full listing takes at most ``LISTING_LIMIT`` files not read before, the first in reading order: when it
        left some out the drain goes on at once with the next listing (a collector asked to stop: its final drain).
        """
        appended_cpu = drain_cpu = 0.0
        while True:
            appended, spent, cut = self._drain_listing(checkpoint, final=final, changed=changed)
            appended_cpu, drain_cpu = appended_cpu + appended, drain_cpu + spent
            if not cut or (not final and self._stop.is_set()):
                return appended_cpu, drain_cpu

    def _drain_listing(self, checkpoint: Checkpoint, *, final: bool,
                       changed: set[str] | None) -> tuple[float, float, bool]:
        """One listing's part of :meth:`_drain`; also says whether the listing left new files for the next."""
        drain_cpu = time.process_time()
        pipeline = Pipeline(projection_config(self.options, self.tags, self.source_store_id), lines=not self.columns)
        current = marks(checkpoint)
        covered = Covered(current, check_times=changed is not None or not self._marks_checked) if current else None
        seen = self._fingerprints.seen  # read before: checkpointed, or looked at (an empty file) and in memory
        for source in self.sources:
            source.prepare(covered, read=lambda path: path in checkpoint.sources or path in seen, limit=LISTING_LIMIT)
        inputs = [(source, self._inputs(source, changed)) for source in self.sources]
        cuts = [(source, source.cut_after) for source in self.sources if source.cut_after is not None]
        if covered is not None:
            # What a listing left out was counted (and checked) as it went; the rest is filtered here.
            inputs = [(source, [i for i in found if not covered(i.path)] if source.strict else found)
                      for source, found in inputs]
            if changed is None:
                covered.check_counts()
                self._marks_checked = True
        if changed is None:
            present = {i.path for source, found in inputs if source.strict for i in found}
            for path, source_checkpoint in checkpoint.sources.items():
                if source_checkpoint.file_id.startswith(COMPLETION_SOURCE_PREFIX) or is_mark(path):
                    continue
                if path not in present and not any(s.owns(path) for s in self.sources if not s.strict) \
                        and not any(path > last and source.owns(path) for source, last in cuts):  # left for later
                    raise CollectorError(f"checkpointed history source disappeared: {path}")
        appended_cpu = 0.0
        appended: set[str] = set()
        for source, found in inputs:
            for source_input in found:
                if source.strict:
                    self._closed.note(source_input.path)
                if source_input.path in checkpoint.sources:  # read before: an append
                    appended.add(source_input.path)
                    cpu = time.process_time()
                    self._drain_input(checkpoint, pipeline, source, source_input, final)
                    appended_cpu += time.process_time() - cpu
                else:
                    self._drain_input(checkpoint, pipeline, source, source_input, final)
                pipeline.release(source, source_input)
        # Delivering appends is CPU spent on them too (most of it: the chunk's spool record, store write and
        # checkpoint), so a chunk holding appended rows counts against the budget's longer wait.
        delivers_appends = any(part.source_input.path in appended for part in self._group)
        cpu = time.process_time()
        self._flush(checkpoint, fold=self._closed.ready())  # a fold joins the chunk's checkpoint write
        if delivers_appends:
            appended_cpu += time.process_time() - cpu
        self._keep_new([(source, i) for source, found in inputs for i in found if i.path not in self._kept],
                       now=final or not self.options.watch)
        self._kept.difference_update(self._folded_now)
        self._folded_now.clear()
        if not self._config_settled:
            self._store_config()
        return appended_cpu, time.process_time() - drain_cpu, bool(cuts)

    def _keep_every_file(self) -> None:
        """Once the run ended: register every input file with digest and size, also those folded as completely
        read, KEEP_BATCH files at a time as the sources list them (never the job's whole list at once)."""
        batch: list[tuple[Source, SourceInput]] = []
        for source in self.sources:
            for source_input in source.every_input():
                batch.append((source, source_input))
                if len(batch) >= KEEP_BATCH:
                    self._keep_files(batch, closed=True, remember=False)
                    batch = []
        if batch:
            self._keep_files(batch, closed=True, remember=False)

    def _keep_new(self, inputs: list[tuple[Source, SourceInput]], *, now: bool) -> None:
        """Register the files first read in this drain, with those waiting: ``now``, or once enough wait."""
        if inputs and not self._unkept:
            self._unkept_since = time.monotonic()
        self._unkept.update((i.path, (source, i)) for source, i in inputs)
        if self._unkept and (now or len(self._unkept) >= KEEP_BATCH
                             or time.monotonic() - self._unkept_since >= KEEP_WAIT):
            if self._keep_files(list(self._unkept.values())):
                self._unkept.clear()

    def _keep_files(self, inputs: list[tuple[Source, SourceInput]], *, closed: bool = False,
                    remember: bool = True) -> bool:
        """Register the files the run is read from as its artifacts (docs/media.md): where they are when first
        read, with digest and size once the run is complete (then not ``remember``ed: the run is over). Failing
        to never stops the metrics."""
        files = run_files(inputs)
        if not files:
            return True
        try:
            self.delivery.keep_run_files(self.options.run, files, closed=closed)
        except DeliveryError as exc:
            self._log(f"{exc}; trying again on the next pass")
            return False
        if remember:
            self._kept.update(f.path for f in files)
        return True

    def _fold(self, checkpoint: Checkpoint) -> None:
        """Fold the oldest closed, completely read history files into complete-through entries (a drain that
        delivered nothing: otherwise the fold is saved with its last chunk's checkpoint, see :meth:`_flush`)."""
        following = checkpoint.copy()
        folded = self._closed.fold(following)
        if not folded:
            return
        following.save(self.spool.checkpoint_path)
        checkpoint.adopt(following)
        self._forget(folded)

    def _forget(self, folded: list[str]) -> None:
        """Drop what is kept in memory per file for files folded as completely read (never read again)."""
        for path in folded:
            self._fingerprints.forget(path)
            self._stopped.pop(path, None)
            self._kept.discard(path)
        self._folded_now.update(folded)

    def _store_config(self) -> None:
        """Store the run's configuration once (:func:`.run_records.settle_config`)."""
        self._config_settled = settle_config(self.options, self.sources, self.delivery, self._report, self._log)

    def _drain_input(self, checkpoint: Checkpoint, pipeline: Pipeline, source: Source, source_input: SourceInput,
                     final: bool) -> None:
        """Everything new in one input, one bounded batch (one chunk) at a time."""
        path = source_input.path
        now = signature(path)
        if now is None or (not final and self._fingerprints.seen.get(path) == now):
            return
        if self._stopped.get(path) == now:
            return  # corrupt: stays stopped until the file changes
        known = checkpoint.sources.get(path)
        if known is not None and now[0] != known.file_id:
            raise CollectorError(f"history file identity changed for {path}")
        try:
            prefix = self._fingerprints.prefix(
                path, file_id_=known.file_id if known else None, offset=known.offset if known else 0,
                prefix_sha=known.prefix_sha256 if known else "")
        except FingerprintError as exc:
            raise CollectorError(str(exc)) from None
        self._fingerprints.seen[path] = now
        position = Position(known.offset, known.lines) if known else Position()

        def read_and_project(position: Position, prefix: hashlib._Hash
                             ) -> tuple[hashlib._Hash, Batch, ProjectedBatch | None]:
            running = prefix.copy()
            batch = source.read(source_input, position, final=final, prefix_hash=running)
            moved = batch.end.offset != position.offset
            return running, batch, pipeline.project(source, batch) if moved else None

        ahead: ReadAhead | None = None
        while True:
            running, batch, projected = ahead.result() if ahead else read_and_project(position, prefix)
            ahead = None
            if batch.unreadable and source.strict:
                raise CollectorError(str(next(p for p in batch.problems if p.kind == ProblemKind.UNREADABLE)))
            self.result.non_scalars += sum(batch.dropped.values())
            if batch.stopped or any(p.kind == ProblemKind.CORRUPT for p in batch.problems):
                if path not in self._stopped:
                    self.result.corrupt_files += 1
                self._stopped[path] = now
            # A tail still being written is normal while the job runs; at the end it means the writer died.
            batch.problems = [p for p in batch.problems if final or p.kind != ProblemKind.TRUNCATED]
            if batch.end.offset == position.offset or projected is None:
                self._report(batch.problems)
                return
            self.result.rejected_rows += projected.bad_rows
            if batch.more and not batch.stopped:  # the next batch, read while this one is committed
                ahead = ReadAhead(lambda end=batch.end, at=running: read_and_project(end, at))
            try:
                self._add(checkpoint, Part(source, source_input, now[0], prefix, running, projected))
            except BaseException:
                if ahead is not None:
                    ahead.wait()  # nothing of it was kept; let it end before the input is given up
                raise
            prefix, position = running, batch.end
            if not batch.more:
                return

    def _add(self, checkpoint: Checkpoint, part: Part) -> None:
        """Join ``part`` to the chunk being gathered, committing that first when ``part`` cannot join it.

        Which batches share a chunk is :mod:`.chunk_group`'s rule.
        """
        self._report(part.projected.problems)
        # Folding as chunks commit, not only at the drain's end: a restarted sidecar catching up on thousands of
        # closed files in one drain keeps a checkpoint (and what it holds per file) of ~2 * keep_entries entries.
        if self._group and cannot_join(self._group, part, self.options.limits):
            self._flush(checkpoint, fold=self._closed.ready())
        self._group.append(part)
        if part.projected.batch.more:
            self._flush(checkpoint, fold=self._closed.ready())

    def _flush(self, checkpoint: Checkpoint, *, fold: bool = False) -> None:
        """Spool, deliver and checkpoint the gathered batches as one chunk, in TauGrid's order. With ``fold``, the
        closed files ready to be folded are folded in the same checkpoint write (one write and fsync, not two)."""
        parts, self._group = self._group, []
        if not parts:
            if fold:
                self._fold(checkpoint)
            return
        non_finite = [event for part in parts for event in part.projected.non_finite]
        nonfinite_path = None
        if non_finite:
            self._note_non_finite(non_finite)
            nonfinite_path, key = self.spool.write_non_finite(non_finite)
            # Under the sequence of the history chunk it goes with: the store prunes its key with that one's.
            self._deliver(Chunk(checkpoint.next_sequence, "non_finite", key, b"", 0, tuple(non_finite)))
        media_paths = []
        for part in parts:
            batch = part.projected.batch
            if batch.media:  # histograms, images, text: spooled and delivered before the checkpoint passes them
                media_path, media_chunk = write_media_record(self.options.out, self.options.run, batch.input.path,
                                                             batch.media, self.identity, order=len(media_paths))
                self._deliver_media(media_chunk)
                media_paths.append(media_path)
                self.result.media += len(batch.media)
        pending_path = None
        following = checkpoint.copy()
        with_events = [part for part in parts if part.projected.event_count]
        event_count = sum(part.projected.event_count for part in with_events)
        if with_events and self.columns:
            record, pieces = history_columns(with_events, self.config_identity, checkpoint.next_sequence)
            pending_path = write_column_chunk(self.spool, record, pieces)
            del pieces
            self._deliver(record.chunk())
            advance(following, record.manifest())
        elif with_events:
            manifest = history_manifest(with_events, self.config_identity, checkpoint.next_sequence)
            pending_path = self.spool.write_pending(manifest)
            self._deliver(Chunk(manifest.sequence, "history", manifest.chunk_digest, manifest.ndjson,
                                manifest.event_count,
                                points=merge_points([part.projected.points for part in with_events])))
            advance(following, manifest)
        for part in parts:
            if part.projected.event_count:
                continue
            # Zero-event reads still advance the checkpoint (TauGrid), keeping the last chunk reference.
            path, end = part.source_input.path, part.projected.batch.end
            old = following.sources.get(path)
            following.sources[path] = SourceCheckpoint(
                path, part.file_id, end.offset, part.running.hexdigest(), old.sequence if old else 0,
                old.chunk_digest if old else "", end.records, format_time(time.time_ns()),
            )
        folded = self._closed.fold(following) if fold else []
        following.save(self.spool.checkpoint_path)
        checkpoint.adopt(following)
        for part in parts:
            self._fingerprints.advance(part.source_input.path, part.running)
        self._forget(folded)
        if pending_path:
            remove_durable(pending_path)
            self.result.chunks += 1
            self.result.events += event_count
        if nonfinite_path:
            remove_durable(nonfinite_path)
        for media_path in media_paths:
            remove_durable(media_path)

    def _publish_terminal(self, checkpoint: Checkpoint, completion: Completion, observation: str) -> None:
        if observation in checkpoint.terminals:
            return
        o = self.options
        last = self.checkpoints.last if self.checkpoints is not None else None
        event = terminal_event(o, self.tags, self.source_store_id, completion,
                               o.status_checkpoint_uri or (last.uri if last is not None else ""))
        manifest = Manifest(
            config_identity=self.config_identity, kind="terminal", sequence=checkpoint.next_sequence,
            source_path=o.completion_file or o.out, source_file_id=COMPLETION_SOURCE_PREFIX + observation,
            ndjson=event.to_ndjson(), event_count=1,
        ).seal()
        pending_path = self.spool.write_pending(manifest)
        self._deliver(Chunk(manifest.sequence, "terminal", manifest.chunk_digest, manifest.ndjson, 1,
                            events=(event,)))
        following = checkpoint.copy()
        advance(following, manifest)
        following.save(self.spool.checkpoint_path)
        checkpoint.adopt(following)
        remove_durable(pending_path)
        self.result.chunks += 1
        self.result.events += 1

    # -- delivery and reporting -----------------------------------------------------------

    def _deliver(self, chunk: Chunk) -> None:
        try:
            self.delivery.deliver(chunk)
        except DeliveryError as exc:
            raise CollectorError(str(exc)) from None
        if self.options.on_delivered is not None:
            self.options.on_delivered(chunk)

    def _deliver_media(self, chunk: MediaChunk) -> None:
        try:
            self.delivery.deliver_media(chunk)
        except DeliveryError as exc:
            raise CollectorError(str(exc)) from None

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
            self.delivery.report(self.options.run, new)

    def _note_non_finite(self, events: list[MetricEvent]) -> None:
        self.result.non_finite += len(events)
        if self.result.first_non_finite is None:
            first = events[0]
            self.result.first_non_finite = first_non_finite(first)
            self._log(f"non-finite value {first.value!r} for {first.metric_name} at step {first.step} "
                      f"({self.result.first_non_finite['file']}:{self.result.first_non_finite['line']}); "
                      "kept in the local store, not sent as a MetricEvent")

    def _watch_roots(self) -> list[str]:
        """The sources' directories; the completion file is looked for by the watcher, its directory not watched."""
        return [root for source in self.sources for root in source.watch_roots()]

    def _own_directories(self) -> list[str]:
        """Where this collector writes (the spool, a local store): its own writes there are not news -- unless a
        source reads from there too (history under ``--out``), whose changes must wake the collector."""
        roots = [os.path.abspath(root) for root in self._watch_roots()]
        own = [os.path.abspath(d) for d in (self.options.out, *(d for sink in self.options.sinks
                                                                 for d in sink.local_directories()))]
        return [d for d in own if not any(root == d or root.startswith(d.rstrip(os.sep) + os.sep) for root in roots)]


class CollectorCancelled(CollectorError):
    """The collector was stopped by a signal after its shutdown drain."""


def install_signal_handlers(collector: Collector) -> None:
    def handler(signum: int, frame: object) -> None:
        collector.stop()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
