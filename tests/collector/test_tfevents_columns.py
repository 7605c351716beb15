"""The bulk (columnar) event-file reader reads exactly what the per-frame reader reads, block by block."""

from __future__ import annotations

import math
import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tensorboard.compat.proto import event_pb2

from fixtures.tb_writers import (
    restart_event,
    scalar_tensor,
    tensor_event,
    write_events,
    write_tensorboard_summary,
    write_tensorboardx,
    write_torch,
)
from tau_collector.sources.event_columns import read_block_columns
from tau_collector.sources.logdir import discover_runs
from tau_collector.sources.records import ProblemKind
from tau_collector.sources.tensorboard_run import RunMemory, read_segment
from tau_collector.sources.tf_record import encode_frame, scan_frames

T0 = 1_760_000_000.0


def _value_key(value: float) -> object:
    return "nan" if math.isnan(value) else value


def per_frame(run, path, memory):
    batch = read_segment(run, path, memory=memory)
    rows = [(o.metric, o.step, o.wall_time, _value_key(o.value), o.record, o.offset) for o in batch.observations]
    return batch, rows


def in_blocks(run, path, memory, max_bytes):
    offset = records = 0
    rows, restarts, problems, dropped, blocks = [], [], [], {}, 0
    while True:
        batch, cols = read_block_columns(run, path, memory=memory, offset=offset, records_before=records,
                                         max_bytes=max_bytes)
        blocks += 1
        assert batch.observations == []
        assert cols.metric.dtype == np.int32 and cols.step.dtype == np.int64
        rows += [(cols.names[m], s, w, _value_key(v), r, o) for m, s, w, v, r, o in zip(
            cols.metric.tolist(), cols.step.tolist(), cols.wall_time.tolist(), cols.value.tolist(),
            cols.record.tolist(), cols.offset.tolist(), strict=True)]
        restarts += batch.restarts
        problems += batch.problems
        for bucket, n in batch.dropped.items():
            dropped[bucket] = dropped.get(bucket, 0) + n
        offset, records = batch.checkpoint, batch.records
        if not batch.more:
            return batch, rows, restarts, problems, dropped, blocks


def assert_same_reading(run_dir, max_bytes=1 << 24):
    (run,) = discover_runs(run_dir)
    truth_memory, bulk_memory = RunMemory(), RunMemory()
    for path in run.segments():
        truth, truth_rows = per_frame(run, path, truth_memory)
        last, rows, restarts, problems, dropped, blocks = in_blocks(run, path, bulk_memory, max_bytes)
        assert rows == truth_rows
        assert restarts == truth.restarts
        assert [(p.kind, p.line, p.offset, p.message) for p in problems] == [
            (p.kind, p.line, p.offset, p.message) for p in truth.problems]
        assert dropped == truth.dropped
        assert (last.checkpoint, last.records, last.stop) == (truth.checkpoint, truth.records, truth.stop)
    assert bulk_memory == truth_memory
    return blocks


def _mixed_events():
    """Every kind of frame a run can hold, interleaved with canonical scalars of known and new tags."""
    events = []
    for i in range(40):
        step = [0, 1, 127, 128, 16_383, 16_384, 2**21, 2**35, 2**62, -3][i % 10]
        wall = T0 + i * 0.25
        event = event_pb2.Event(wall_time=wall, step=step)
        event.summary.value.add(tag=["loss", "acc", "a/b", "ünï/çødé"][i % 4],
                                simple_value=[0.5, float("nan"), float("inf"), -1e-30][i % 4] * (i + 1))
        events.append(event)
        if i % 7 == 3:
            several = event_pb2.Event(wall_time=wall, step=i)
            several.summary.value.add(tag="x", simple_value=1.0)
            several.summary.value.add(tag="y", simple_value=2.0)
            events.append(several)
        if i % 9 == 4:
            events.append(tensor_event("tensor/loss", i, wall, scalar_tensor(i / 3, np.float64),
                                       plugin="scalars" if i < 10 else None))
        if i == 20:
            events.append(restart_event(10, wall))
            image = event_pb2.Event(wall_time=wall, step=i)
            image.summary.value.add(tag="img").image.height = 2
            events.append(image)
        if i % 11 == 5:
            no_step = event_pb2.Event(wall_time=wall)
            no_step.summary.value.add(tag="nostep", simple_value=float(i))
            events.append(no_step)
    return events


@pytest.mark.parametrize("max_bytes", [1, 100, 1000, 1 << 24])
def test_mixed_run_reads_the_same_in_blocks_of_any_size(tmp_path, max_bytes):
    write_events(tmp_path / "run", _mixed_events())
    blocks = assert_same_reading(tmp_path / "run", max_bytes)
    assert blocks > 1 or max_bytes == 1 << 24


@pytest.mark.parametrize("writer", [write_tensorboardx, write_torch, write_tensorboard_summary])
def test_real_writers_read_the_same(tmp_path, writer):
    scalars = [(tag, s * 3, 1.0 / (s + 1) + k, T0 + s + k / 8) for s in range(300) for k, tag in
               enumerate(("train/loss", "lr", "eval/acc"))]
    writer(tmp_path / "run", scalars[:450], name="events.out.tfevents.1.a")
    writer(tmp_path / "run", scalars[450:], name="events.out.tfevents.2.b")  # a rotated second segment
    assert_same_reading(tmp_path / "run", 4096)


def test_a_frame_larger_than_the_block_is_read_whole(tmp_path):
    event = event_pb2.Event(wall_time=T0, step=1)
    event.summary.value.add(tag="big", simple_value=1.0)
    event.summary.value.add(tag="x" * 5000, simple_value=2.0)
    write_events(tmp_path / "run", [event])
    assert_same_reading(tmp_path / "run", 64)


def test_a_corrupt_and_a_truncated_file_stop_where_the_per_frame_reader_stops(tmp_path):
    path = write_tensorboardx(tmp_path / "bad", [("loss", s, float(s), T0 + s) for s in range(50)])
    data = bytearray(path.read_bytes())
    offset = scan_frames(bytes(data)).frames[30][0]
    data[offset + 20] ^= 0x01
    path.write_bytes(bytes(data))
    assert_same_reading(tmp_path / "bad", 300)
    path = write_tensorboardx(tmp_path / "cut", [("loss", s, float(s), T0 + s) for s in range(50)])
    path.write_bytes(path.read_bytes()[:-7])
    assert_same_reading(tmp_path / "cut", 300)
    (run,) = discover_runs(tmp_path / "cut")
    *_, problems, _, _ = in_blocks(run, str(path), RunMemory(), 1 << 20)
    assert [p.kind for p in problems] == [ProblemKind.TRUNCATED]


def test_an_unreadable_file_is_a_problem(tmp_path):
    write_tensorboardx(tmp_path / "run", [("loss", 1, 1.0, T0)])
    (run,) = discover_runs(tmp_path / "run")
    batch, cols = read_block_columns(run, str(tmp_path / "run" / "missing.tfevents"), memory=RunMemory())
    assert batch.stop == "unreadable" and len(cols) == 0
    assert batch.problems[0].kind == ProblemKind.UNREADABLE


_rows = st.lists(
    st.tuples(st.sampled_from(["loss", "acc", "a/b"]), st.integers(-(2**40), 2**40),
              st.one_of(st.floats(width=32), st.integers(-(2**24), 2**24).map(float)),
              st.floats(0, 2e9, allow_nan=False)),
    min_size=1, max_size=12,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=_rows, junk=st.binary(max_size=60), data=st.data())
def test_property_odd_frames_corruption_and_cuts_read_the_same(tmp_path_factory, rows, junk, data):
    root = tmp_path_factory.mktemp("tb")
    path = write_tensorboardx(root / "run", rows)
    raw = bytearray(path.read_bytes())
    ends = [offset + 16 + len(payload) for offset, payload in scan_frames(bytes(raw)).frames]
    at = data.draw(st.sampled_from([0, *ends]))
    raw[at:at] = encode_frame(junk)  # any payload: a non-event, an odd event, or something scalar-shaped
    if data.draw(st.booleans()):
        raw[data.draw(st.integers(0, len(raw) - 1))] ^= data.draw(st.integers(1, 255))
    path.write_bytes(bytes(raw[:data.draw(st.integers(0, len(raw)))]))
    assert_same_reading(root / "run", data.draw(st.sampled_from([16, 200, 1 << 20])))
    shutil.rmtree(root)
