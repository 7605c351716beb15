"""The Ray Tune source: a trial's ``result.json``, one row per reported result.

``training_iteration`` is the step. Tune writes ``timestamp`` in whole seconds, but its own
TensorBoard logger (on by default with tensorboardX installed) writes every result into the
trial's event file at the time it arrives, to the microsecond: the k-th ``ray/tune/time_this_iter_s``
scalar there is the k-th result (the logger's step is ``timesteps_total`` or else
``training_iteration``, and the value is the result's ``time_this_iter_s``). A row whose match
agrees on both, and lies within two seconds of its ``timestamp``, takes that wall time; any
other row keeps its whole second. Nested results are flattened as ``a/b`` (the names Tune's
logger gives them); Tune's bookkeeping fields are not metrics. The trial's configuration is its
``params.json``.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from tau_collector.sources.base import Batch, Position, Source, SourceInput
from tau_collector.sources.event_columns import read_block_columns
from tau_collector.sources.flatten import NESTED_TOO_DEEP, flatten_rows
from tau_collector.sources.history import history_input, read_history_batch
from tau_collector.sources.logdir import run_in
from tau_collector.sources.read_limits import DEFAULT_LIMITS, Limits
from tau_collector.sources.records import HistoryRow
from tau_collector.sources.tensorboard_run import RunMemory
from tau_collector.taugrid.run_config import RunConfig, read_config_file

__all__ = ["TUNE_PARAMS", "TUNE_RESULT", "TuneSource"]

TUNE_RESULT = "result.json"
TUNE_PARAMS = "params.json"  # the trial's config, json.dump'ed by Tune beside its results
_BOOKKEEPING = frozenset({
    "config", "pid", "hostname", "node_ip", "date", "trial_id", "experiment_id", "experiment_tag", "done",
    "should_checkpoint", "checkpoint_dir_name",
})
_ANCHOR = "ray/tune/time_this_iter_s"


class TuneSource(Source):
    kind = "tune"
    step_field = "training_iteration"
    time_field = "timestamp"

    def __init__(self, trial_dir: str, *, limits: Limits = DEFAULT_LIMITS) -> None:
        super().__init__(limits)
        self.trial_dir = os.path.abspath(trial_dir)
        self.result = os.path.join(self.trial_dir, TUNE_RESULT)
        self._anchors: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    @staticmethod
    def detect(directory: str) -> bool:
        return os.path.isfile(os.path.join(directory, TUNE_RESULT))

    def inputs(self, changed: set[str] | None = None) -> list[SourceInput]:
        if changed is not None and self.result not in changed:
            return []
        return [history_input(self.result)]

    def read(self, source_input: SourceInput, start: Position, *, final: bool, prefix_hash: Any = None) -> Batch:
        batch = read_history_batch(self, source_input, start, final=final, prefix_hash=prefix_hash)
        rows, too_deep = flatten_rows(batch.rows, separator="/", max_depth=self.limits.max_depth, skip=_BOOKKEEPING)
        if too_deep:
            batch.drop(NESTED_TOO_DEEP, too_deep)
        batch.rows = self._precise_times(rows)
        return batch

    def owns(self, path: str) -> bool:
        return path == self.result

    def run_config(self) -> RunConfig | None:
        """The trial's ``params.json`` (the config Tune gave it), None when the trial has none."""
        params = os.path.join(self.trial_dir, TUNE_PARAMS)
        if not os.path.isfile(params):
            return None
        return read_config_file(params, format="json")

    def _precise_times(self, rows: list[HistoryRow]) -> list[HistoryRow]:
        steps, walls, values = self._anchor_columns()
        if not len(steps):
            return rows
        for row in rows:
            fields = row.fields
            k = row.line - 1
            if k >= len(steps):
                continue
            step = fields.get("timesteps_total") or fields.get("training_iteration")
            seconds = fields.get("timestamp")
            took = fields.get("time_this_iter_s")
            if type(step) is not int or type(seconds) not in (int, float) or type(took) not in (int, float):
                continue
            if steps[k] == step and np.float32(took) == values[k] and abs(walls[k] - seconds) < 2.0:
                fields["timestamp"] = float(walls[k])
        return rows

    def _anchor_columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(step, wall time, value) of every ``ray/tune/time_this_iter_s`` scalar of the trial's event
        files, in file order; read once, in bounded blocks."""
        if self._anchors is not None:
            return self._anchors
        run = run_in(self.trial_dir, self.trial_dir)
        memory = RunMemory()
        parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        for segment in run.segments():
            offset = records = 0
            while True:
                batch, columns = read_block_columns(run, segment, memory=memory, offset=offset, records_before=records,
                                                    max_bytes=self.limits.batch_bytes, final=True,
                                                    max_record_bytes=self.limits.max_line_bytes,
                                                    max_values=self.limits.max_row_fields)
                if _ANCHOR in columns.names:
                    at = columns.metric == columns.names.index(_ANCHOR)
                    parts.append((columns.step[at], columns.wall_time[at], columns.value[at].astype(np.float32)))
                if not batch.more:
                    break
                offset, records = batch.checkpoint, batch.records
        if parts:
            self._anchors = tuple(np.concatenate(column) for column in zip(*parts, strict=True))  # type: ignore[assignment]
        else:
            self._anchors = (np.zeros(0, np.int64), np.zeros(0, np.float64), np.zeros(0, np.float32))
        return self._anchors  # type: ignore[return-value]
