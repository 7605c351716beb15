"""The TensorBoard source: the runs of ``--tfevents`` logdirs, their event files read in bounded blocks.

Its inputs are the event files of every run under its logdirs (:mod:`.logdir`), a run's files in
name order; each input is read a block at a time into columns (:mod:`.event_columns`). A run's
memory (which series each tag belongs to, whether it has started) carries over from one block,
and one file, to the next; the first read of a run at a later position rebuilds it from the bytes
before (:func:`.run.rebuild_run_memory`), so checkpoints stay offsets.
"""

from __future__ import annotations

import os
from typing import Any

from ..limits import DEFAULT_LIMITS, Limits
from ..records import ProblemKind
from .base import Batch, Position, Source, SourceInput
from .event_columns import read_block_columns
from .logdir import discover_runs, run_in
from .run import RunMemory, TensorBoardRun, is_event_file, rebuild_run_memory
from .tf_record import StopReason

__all__ = ["TensorBoardSource"]


class TensorBoardSource(Source):
    kind = "tensorboard"

    def __init__(self, logdirs: list[str] | None = None, *, runs: list[TensorBoardRun] | None = None,
                 limits: Limits = DEFAULT_LIMITS) -> None:
        """Every run under ``logdirs`` (watched: runs appear), or exactly ``runs``."""
        super().__init__(limits)
        self.logdirs = [os.path.abspath(d) for d in logdirs or []]
        self._runs = runs
        self._memories: dict[str, RunMemory] = {}

    def runs(self) -> list[TensorBoardRun]:
        if self._runs is not None:
            return list(self._runs)
        return [run for logdir in self.logdirs for run in discover_runs(logdir)]

    def inputs(self, changed: set[str] | None = None) -> list[SourceInput]:
        if changed is None or self._runs is not None:
            runs = self.runs()
        else:
            found: dict[str, TensorBoardRun] = {}
            for root in self.logdirs:
                for path in changed:
                    if is_event_file(path) and path.startswith(root + os.sep):
                        directory = os.path.dirname(path)
                        found[directory] = run_in(root, directory)
            runs = [found[d] for d in sorted(found)]
        return [SourceInput(segment, run.metric_file_id, run.directory, run)
                for run in runs for segment in run.segments()]

    def read(self, source_input: SourceInput, start: Position, *, final: bool, prefix_hash: Any = None) -> Batch:
        run: TensorBoardRun = source_input.group
        memory = self._memories.get(run.directory)
        if memory is None:
            memory = self._memories[run.directory] = rebuild_run_memory(run, source_input.path, start.offset)
        limits = self.limits
        segment, columns = read_block_columns(
            run, source_input.path, memory=memory, offset=start.offset, records_before=start.records,
            max_bytes=limits.batch_bytes, max_records=limits.batch_records, final=final,
            max_record_bytes=limits.max_line_bytes)
        if prefix_hash is not None and segment.checkpoint > start.offset:
            _hash_range(prefix_hash, source_input.path, start.offset, segment.checkpoint)
        return Batch(source_input, start, Position(segment.checkpoint, segment.records), columns=columns,
                     problems=segment.problems, dropped=segment.dropped, restarts=segment.restarts,
                     more=segment.more, stopped=segment.stop == StopReason.CRC_MISMATCH.value,
                     unreadable=segment.stop == ProblemKind.UNREADABLE)

    def owns(self, path: str) -> bool:
        if self._runs is not None:
            return any(os.path.dirname(path) == run.directory for run in self._runs)
        return any(path.startswith(root + os.sep) for root in self.logdirs)

    def watch_roots(self) -> list[str]:
        return list(self.logdirs)


def _hash_range(digest: Any, path: str, start: int, end: int) -> None:
    """Add the bytes ``[start, end)`` of ``path`` to ``digest`` (bytes just read: the page cache has them)."""
    with open(path, "rb", buffering=0) as handle:
        position = start
        while position < end:
            piece = os.pread(handle.fileno(), min(1 << 20, end - position), position)
            if not piece:
                raise OSError(f"{path} shrank below byte {end} while it was read")
            digest.update(piece)
            position += len(piece)
