"""Scalars as TensorBoard reads them: a series whose first metadata says DATA_CLASS_SCALAR is scalars,
whatever its plugin name; one whose data class says otherwise is not, even under the scalars plugin."""

from __future__ import annotations

from tensorboard.compat.proto import event_pb2, summary_pb2

from fixtures.tb_writers import scalar_tensor, write_events
from tau_collector.sources.event_columns import read_block_columns
from tau_collector.sources.logdir import discover_runs
from tau_collector.sources.tensorboard_run import RunMemory, read_run

T0 = 1_790_000_000.0


def _event(tag: str, step: int, value: float, *, plugin: str | None, data_class: int | None) -> event_pb2.Event:
    event = event_pb2.Event(wall_time=T0 + step, step=step)
    summary_value = event.summary.value.add(tag=tag, tensor=scalar_tensor(value, "float32"))
    if plugin is not None or data_class is not None:
        summary_value.metadata.plugin_data.plugin_name = plugin or ""
        summary_value.metadata.data_class = data_class or summary_pb2.DATA_CLASS_UNKNOWN
    return event


def test_a_series_marked_scalar_by_its_data_class_alone_is_read_and_a_tensor_class_is_not(tmp_path):
    events = []
    for step in range(4):
        first = step == 0
        events.append(_event("by_class", step, step / 4, plugin=None if not first else "",
                             data_class=summary_pb2.DATA_CLASS_SCALAR if first else None))
        events.append(_event("tensor_class", step, 9.0, plugin="scalars" if first else None,
                             data_class=summary_pb2.DATA_CLASS_TENSOR if first else None))
        events.append(_event("plugin_only", step, -step, plugin="scalars" if first else None, data_class=None))
    write_events(tmp_path / "run", events)
    (run,) = discover_runs(tmp_path / "run")
    (batch,) = read_run(run)
    got = {}
    for obs in batch.observations:
        got.setdefault(obs.metric, []).append((obs.step, obs.value))
    assert got == {"by_class": [(s, s / 4) for s in range(4)], "plugin_only": [(s, -float(s)) for s in range(4)]}
    assert batch.dropped == {"tensor": 4}
    # The batch form (columns) reads the same.
    _, columns = read_block_columns(run, batch.path, memory=RunMemory(), final=True)
    assert sorted(columns.names) == ["by_class", "plugin_only"] and len(columns) == 8
