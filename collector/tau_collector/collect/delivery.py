"""Delivering a chunk to every sink, and telling sinks about source problems, as the collector does.

A sink's retryable failure backs off (doubling, at most 30 s) and tries again while the collector
watches; the chunk stays spooled meanwhile, so nothing is lost if the process dies. A one-shot
collector fails instead. Problems a source met are recorded by sinks that keep them (the
expstore shows them beside the run); failing to record them never stops the metrics. A run's artifacts
reach a sink one way (``Sink.put_artifacts``), from two callers with their own rules: the files the run
is read from (:meth:`Delivery.keep_run_files`, backing off and retrying as a chunk does) and its
checkpoints (:meth:`Delivery.put_artifacts`, one try: the scanner registers them again on its next pass).
"""

from __future__ import annotations

from collections.abc import Callable

from tau_collector.collect.signal_stop import StopFlag
from tau_collector.reads.rows import ArtifactRow
from tau_collector.sinks.base import Chunk, MediaChunk, RunConfigConflict, RunFile, Sink, SinkError
from tau_collector.sources.records import SourceProblem
from tau_collector.taugrid.run_config import RunConfig

__all__ = ["Delivery", "DeliveryError"]


class DeliveryError(RuntimeError):
    """A chunk could not be delivered; the message names the chunk and the sink."""


class Delivery:
    def __init__(self, sinks: list[Sink], *, retry: bool, backoff: float, stop: StopFlag,
                 log: Callable[[str], None]) -> None:
        self.sinks = sinks
        self.retry = retry
        self.backoff = backoff
        self.stop = stop
        self.log = log

    def deliver(self, chunk: Chunk) -> None:
        """Returns once every sink acknowledged ``chunk``; raises :class:`DeliveryError` otherwise."""
        self._to_every_sink(f"chunk {chunk.chunk_digest}", f"chunk {chunk.sequence}", lambda sink: sink.deliver(chunk))

    def deliver_media(self, chunk: MediaChunk) -> None:
        """Returns once every sink acknowledged the media of ``chunk`` (sinks without media ignore them)."""
        self._to_every_sink(f"media {chunk.key}", f"media record {chunk.key[:12]}",
                            lambda sink: sink.deliver_media(chunk))

    def keep_run_files(self, run_id: str, files: list[RunFile], *, closed: bool) -> None:
        """Register the files the run is read from (where they are; digest and size when ``closed``) in every sink
        that keeps artifacts, retrying a retryable failure as a chunk's delivery does."""
        sinks = [sink for sink in self.sinks if sink.keeps_artifacts]
        if not sinks:
            return  # nothing keeps them: nothing hashed
        from tau_collector.expstore.write.source_files import source_file_row  # not loaded for ADX alone

        rows = []
        for f in files:
            try:
                rows.append(source_file_row(run_id, f.path, f.name, f.type, closed=closed))
            except OSError:
                continue  # gone before it could be hashed: registered when it was first read, listed as gone
        self._to_every_sink(f"{len(files)} files of run {run_id}", "the registration",
                            lambda sink: sink.put_artifacts(rows), sinks)

    def _to_every_sink(self, what: str, spooled: str, call: Callable[[Sink], None],
                       sinks: list[Sink] | None = None) -> None:
        delay = self.backoff
        for sink in self.sinks if sinks is None else sinks:
            while True:
                try:
                    call(sink)
                    break
                except SinkError as exc:
                    if not exc.retryable or not self.retry:
                        raise DeliveryError(f"deliver {what} to {sink.name}: {exc}") from None
                    self.log(f"delivery to {sink.name} failed ({exc}); {spooled} stays "
                             f"spooled, retrying in {delay:.1f}s")
                    if self.stop.wait(delay):
                        raise DeliveryError(
                            f"stopped while {what} was undelivered to {sink.name}; "
                            "it stays spooled and is delivered on the next start") from None
                    delay = min(delay * 2, 30.0)

    def put_run_config(self, run_id: str, config: RunConfig) -> None:
        """Give the run's configuration to every sink that keeps configurations.

        A conflict (the run already has another one, :class:`RunConfigConflict`) is raised to the caller; a
        sink that cannot write now raises :class:`DeliveryError` (the collector asks again on its next pass).
        """
        for sink in self.sinks:
            try:
                sink.put_run_config(run_id, config)
            except RunConfigConflict:
                raise
            except SinkError as exc:
                raise DeliveryError(f"store the configuration of run {run_id} in {sink.name}: {exc}") from None

    def put_artifacts(self, rows: list[ArtifactRow]) -> None:
        """Register artifacts (checkpoints) in every sink that keeps them; :class:`DeliveryError` when one cannot
        (the collector logs it and registers them on its next pass)."""
        for sink in self.sinks:
            if not sink.keeps_artifacts:
                continue
            try:
                sink.put_artifacts(rows)
            except (SinkError, OSError) as exc:
                raise DeliveryError(f"register {len(rows)} artifact(s) in {sink.name}: {exc}") from None

    def known_artifacts(self, run_id: str, type: str) -> list[ArtifactRow]:
        """The run's artifacts of ``type`` that every sink keeping artifacts already holds (a row one of them
        lacks is registered again); ``[]`` when none keeps any or one cannot be read."""
        known: dict[str, ArtifactRow] | None = None
        for sink in self.sinks:
            try:
                rows = sink.known_artifacts(run_id, type)
            except (SinkError, OSError):
                return []
            if not rows:
                continue
            held = {r.artifact_id: r for r in rows}
            known = held if known is None else {k: r for k, r in known.items() if k in held}
        return list((known or {}).values())

    def report(self, run_id: str, problems: list[SourceProblem]) -> None:
        for sink in self.sinks:
            try:  # telling readers about a problem must never stop the metrics themselves
                sink.report(run_id, problems)
            except (SinkError, OSError, RuntimeError) as exc:
                self.log(f"could not record {len(problems)} source problem(s) in {sink.name}: {exc}")
