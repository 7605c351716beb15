"""The TensorBoard source: the runs of ``--tfevents`` logdirs, their event files read in bounded blocks.

Its inputs are the event files of every run under its logdirs (:mod:`.logdir`), a run's files in
name order; each input is read a block at a time into columns (:mod:`.event_columns`). A run below
the logdir is first classified by its first records (:mod:`.hparams`): an ``add_hparams`` sub-run
belongs to the logdir's run (its metrics keep their tags), and a directory whose files hold only
their version record so far waits until they say more. The run's configuration is its HParams
session (:meth:`TensorBoardSource.run_config`). A run's
memory (which series each tag belongs to, whether it has started) carries over from one block,
and one file, to the next; the first read of a run at a later position rebuilds it from the bytes
before (:func:`.run.rebuild_run_memory`), so checkpoints stay offsets.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from tau_collector.sources.base import Batch, Position, Source, SourceInput, hash_range
from tau_collector.sources.event_columns import read_block_columns
from tau_collector.sources.hparams import HPARAMS_FORMAT, HParamsScan, scan_hparams
from tau_collector.sources.logdir import discover_runs, run_in
from tau_collector.sources.media import MEDIA_KINDS, MediaRequest
from tau_collector.sources.read_limits import DEFAULT_LIMITS, Limits
from tau_collector.sources.records import ProblemKind
from tau_collector.sources.tensorboard_run import RunMemory, TensorBoardRun, is_event_file, rebuild_run_memory
from tau_collector.sources.tf_record import StopReason
from tau_collector.taugrid.run_config import ConfigError, RunConfig, run_config

__all__ = ["TensorBoardSource"]

# The ``dropped`` bucket (:func:`.data_compat.dropped_bucket`) a value of each media kind was counted in.
_STORED_BUCKET = {"histograms": "histogram", "images": "image", "text": "text"}


class TensorBoardSource(Source):
    kind = "tensorboard"
    artifact_type = "tensorboard"

    def __init__(self, logdirs: list[str] | None = None, *, runs: list[TensorBoardRun] | None = None,
                 limits: Limits = DEFAULT_LIMITS, media: bool = True) -> None:
        """Every run under ``logdirs`` (watched: runs appear), or exactly ``runs``. ``media``: read histograms,
        images and text into the batches' ``media`` (stored beside the scalars), not only count them."""
        super().__init__(limits)
        self.media = MediaRequest(frozenset(MEDIA_KINDS), limits.max_tensor_values) if media else None
        self.logdirs = [os.path.abspath(d) for d in logdirs or []]
        self._runs = runs
        self._memories: dict[str, RunMemory] = {}
        self._scans: dict[str, tuple[int, HParamsScan]] = {}  # event file -> (its size when scanned, the scan)

    def runs(self) -> list[TensorBoardRun]:
        if self._runs is not None:
            return list(self._runs)
        return self._classified(run for logdir in self.logdirs for run in discover_runs(logdir))

    def attach(self, run: TensorBoardRun) -> None:
        """Read ``run`` (an ``add_hparams`` sub-run found beside this source's run) as part of this source."""
        assert self._runs is not None, "only a source of given runs takes more"
        self._runs.append(dataclasses.replace(run, attached=True))

    def _scan(self, path: str) -> HParamsScan:
        try:
            size = os.path.getsize(path)
        except OSError:
            size = -1
        cached = self._scans.get(path)
        if cached is not None and (cached[1].final or cached[0] == size):
            return cached[1]
        scan = scan_hparams(path)
        self._scans[path] = (size, scan)
        return scan

    def _classified(self, runs) -> list[TensorBoardRun]:
        """Runs below a logdir as :mod:`.hparams` classifies them by their first file; undecided ones left out."""
        out = []
        for run in runs:
            if run.relative and run.only_file is None:
                segments = run.segments()
                attached = self._scan(segments[0]).attached if segments else None
                if attached is None:
                    continue  # only a version record so far: nothing to read, and not yet known how to name it
                run = dataclasses.replace(run, attached=attached)
            out.append(run)
        return out

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
            runs = self._classified(found[d] for d in sorted(found))
        return [SourceInput(segment, run.metric_file_id, run.directory, run)
                for run in runs for segment in run.segments()]

    def read(self, source_input: SourceInput, start: Position, *, final: bool, prefix_hash: Any = None) -> Batch:
        run: TensorBoardRun = source_input.group
        memory = self._memories.get(run.directory)
        if memory is None:
            memory = self._memories[run.directory] = rebuild_run_memory(run, source_input.path, start.offset,
                                                                        self.limits.max_row_fields)
        limits = self.limits
        segment, columns = read_block_columns(
            run, source_input.path, memory=memory, offset=start.offset, records_before=start.records,
            max_bytes=limits.batch_bytes, max_records=limits.batch_records, final=final,
            max_record_bytes=limits.max_line_bytes, max_values=limits.max_row_fields, media=self.media)
        for record in segment.media:  # kept, so no longer counted as dropped
            bucket = _STORED_BUCKET[record.kind]
            left = segment.dropped.get(bucket, 0) - 1
            if left > 0:
                segment.dropped[bucket] = left
            else:
                segment.dropped.pop(bucket, None)
        if prefix_hash is not None and segment.checkpoint > start.offset:
            hash_range(prefix_hash, source_input.path, start.offset, segment.checkpoint)
        return Batch(source_input, start, Position(segment.checkpoint, segment.records), columns=columns,
                     problems=segment.problems, dropped=segment.dropped, restarts=segment.restarts,
                     media=segment.media, more=segment.more, stopped=segment.stop == StopReason.CRC_MISMATCH.value,
                     unreadable=segment.stop == ProblemKind.UNREADABLE)

    def owns(self, path: str) -> bool:
        if self._runs is not None:
            return any(os.path.dirname(path) == run.directory for run in self._runs)
        return any(path.startswith(root + os.sep) for root in self.logdirs)

    def watch_roots(self) -> list[str]:
        return list(self.logdirs)

    def run_config(self) -> RunConfig | None:
        """The HParams session of the run's event files (the first records of each file are looked at).

        Several sessions with the same hyperparameters are one configuration (the first file's);
        sessions that disagree are a :class:`ConfigError`, since they cannot all be this run's.
        """
        sessions: list[tuple[str, dict]] = []
        for run in self.runs():
            for segment in run.segments():
                scan = self._scan(segment)
                if scan.hparams is not None and scan.uri is not None:
                    sessions.append((scan.uri, scan.hparams))
        if not sessions:
            return None
        configs = [run_config(hparams, format=HPARAMS_FORMAT, uri=uri) for uri, hparams in sessions]
        distinct = {c.config_hash: c for c in configs}
        if len(distinct) > 1:
            where = ", ".join(c.uri for c in distinct.values())
            raise ConfigError(f"TensorBoard HParams sessions with different hyperparameters in one run ({where}); "
                              "none was stored as the run's configuration. Give each session its own run")
        return configs[0]
