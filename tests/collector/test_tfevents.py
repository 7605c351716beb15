"""The TensorBoard source reads what real writers wrote, as TensorBoard shows it, incrementally and safely."""

from __future__ import annotations

import hashlib
import math
import os
import shutil
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tensorboard.compat.proto import event_pb2, summary_pb2

from fixtures.tb_writers import (
    by_tag,
    event_files,
    legacy_reference_scalars,
    raw_tensor,
    reference_scalars,
    restart_event,
    scalar_tensor,
    segment_name,
    tensor_event,
    write_events,
    write_tensorboard_summary,
    write_tensorboardx,
    write_torch,
)
from tau_collector.sources.logdir import discover_runs
from tau_collector.sources.records import HistoryRow, ProblemKind
from tau_collector.sources.tensorboard_run import (
    RunMemory,
    SessionRestart,
    apply_tensorboard_purge,
    in_read_order,
    read_run,
    read_segment,
    rebuild_run_memory,
    to_history_row,
)
from tau_collector.sources.tf_record import encode_frame, scan_frames

T0 = 1_760_000_000.0


def sample_scalars(n: int = 30, tags: tuple[str, ...] = ("train/loss", "lr")) -> list[tuple[str, int, float, float]]:
    out = []
    for i in range(n):
        for k, tag in enumerate(tags):
            out.append((tag, i * 7, 1.0 / (i + 1) + k, T0 + i + 0.125 + k / 1000))
    return out


def only_run(logdir):
    (run,) = discover_runs(logdir)
    return run


def all_observations(batches):
    return [obs for batch in batches for obs in batch.observations]


# --- values, steps and times equal TensorBoard's own reading ----------------------------------------------


@pytest.mark.parametrize("writer", [write_tensorboardx, write_torch, write_tensorboard_summary])
def test_scalars_equal_what_tensorboard_reads(tmp_path, writer):
    writer(tmp_path / "run", sample_scalars())
    run = only_run(tmp_path)
    batches = read_run(run)
    assert by_tag(all_observations(batches), "run") == reference_scalars(tmp_path / "run")
    assert all(batch.stop == "end" and not batch.problems for batch in batches)


@pytest.mark.parametrize("writer", [write_tensorboardx, write_torch, write_tensorboard_summary])
def test_observations_keep_file_order_record_numbers_and_frame_offsets(tmp_path, writer):
    path = writer(tmp_path, sample_scalars(5, ("loss",)))
    (batch,) = read_run(only_run(tmp_path))
    frames = scan_frames(path.read_bytes()).frames
    # Record 1 is the writer's file_version event; each add_scalar is one later record.
    assert [(o.record, o.offset) for o in batch.observations] == [(i + 2, frames[i + 1][0]) for i in range(5)]
    assert batch.records == len(frames)
    assert batch.checkpoint == path.stat().st_size


def test_wall_time_keeps_its_fraction(tmp_path):
    write_tensorboardx(tmp_path, [("loss", 3, 0.5, 1_760_000_000.123456)])
    (obs,) = all_observations(read_run(only_run(tmp_path)))
    assert obs.wall_time == 1_760_000_000.123456
    assert obs.step == 3


def test_nan_and_infinities_are_kept_as_values(tmp_path):
    write_tensorboardx(tmp_path, [("loss", 0, math.nan, T0), ("loss", 1, math.inf, T0), ("loss", 2, -math.inf, T0)])
    values = [obs.value for obs in all_observations(read_run(only_run(tmp_path)))]
    assert math.isnan(values[0])
    assert values[1:] == [math.inf, -math.inf]


@pytest.mark.parametrize("step", [0, 1, 127, 128, 300, 16383, 16384, 2**21 - 1, 2**21, 2**35, 2**62, -1, -(2**40)])
def test_every_step_size_reads_exactly(tmp_path, step):
    # Steps of every varint length, including negative ones (ten-byte varints).
    write_tensorboardx(tmp_path, [("loss", step, 0.25, T0), ("loss", step, 0.5, T0 + 1)])
    got = by_tag(all_observations(read_run(only_run(tmp_path))))
    assert got == reference_scalars(tmp_path)
    assert got == {"loss": [(step, T0, 0.25), (step, T0 + 1, 0.5)]}


def test_events_with_several_values_yield_each_scalar(tmp_path):
    event = event_pb2.Event(wall_time=T0, step=4)
    event.summary.value.add(tag="a", simple_value=1.0)
    event.summary.value.add(tag="b", simple_value=2.0)
    event.summary.value.add(tag="c", tensor=scalar_tensor(3.0, np.float32),
                            metadata=tensor_event("c", 0, 0, scalar_tensor(0, np.float32)).summary.value[0].metadata)
    write_events(tmp_path, [event])
    observations = all_observations(read_run(only_run(tmp_path)))
    assert [(o.metric, o.value, o.record) for o in observations] == [("a", 1.0, 2), ("b", 2.0, 2), ("c", 3.0, 2)]
    assert by_tag(observations) == reference_scalars(tmp_path)


# --- tensor dtypes -------------------------------------------------------------------------------------------

TENSOR_CASES = {
    "float32": (scalar_tensor(1.25, np.float32), 1.25),
    "float64": (scalar_tensor(0.1, np.float64), 0.1),
    "half": (scalar_tensor(-2.5, np.float16), -2.5),
    "int8": (scalar_tensor(-7, np.int8), -7.0),
    "uint8": (scalar_tensor(250, np.uint8), 250.0),
    "int16": (scalar_tensor(-30000, np.int16), -30000.0),
    "uint16": (scalar_tensor(65000, np.uint16), 65000.0),
    "int32": (scalar_tensor(-123456, np.int32), -123456.0),
    "int64": (scalar_tensor(2**40 + 1, np.int64), float(2**40 + 1)),
    "bool": (scalar_tensor(True, np.bool_), 1.0),
    "uint32": (raw_tensor(22, uint32_val=[4_000_000_000]), 4_000_000_000.0),
    "uint64": (raw_tensor(23, uint64_val=[2**63 + 2**11]), float(2**63 + 2**11)),
    # bfloat16 bit patterns are the high halves of float32s: 0x3FC0 is 1.5, 0xC030 is -2.75.
    "bfloat16": (raw_tensor(14, half_val=[0x3FC0]), 1.5),
    "bfloat16-negative": (raw_tensor(14, half_val=[0xC030]), -2.75),
    "half-nan": (raw_tensor(19, half_val=[0x7E00]), math.nan),
    "half-inf": (raw_tensor(19, half_val=[0xFC00]), -math.inf),
    "content-float32": (raw_tensor(1, tensor_content=struct.pack("<f", 0.75)), 0.75),
    "content-double": (raw_tensor(2, tensor_content=struct.pack("<d", 1e-300)), 1e-300),
    "content-half": (raw_tensor(19, tensor_content=struct.pack("<e", 0.5)), 0.5),
    "content-bfloat16": (raw_tensor(14, tensor_content=(0x4049).to_bytes(2, "little")), 3.140625),
    "content-int64": (raw_tensor(9, tensor_content=struct.pack("<q", -5)), -5.0),
    "content-uint64": (raw_tensor(23, tensor_content=struct.pack("<Q", 2**64 - 1)), float(2**64 - 1)),
    "content-bool": (raw_tensor(10, tensor_content=b"\x01"), 1.0),
}


@pytest.mark.parametrize("case", sorted(TENSOR_CASES))
def test_rank0_scalar_tensors_of_every_numeric_dtype(tmp_path, case):
    tensor, expected = TENSOR_CASES[case]
    write_events(tmp_path, [tensor_event("m", 9, T0, tensor)])
    (batch,) = read_run(only_run(tmp_path))
    assert not batch.problems
    (obs,) = batch.observations
    assert (obs.metric, obs.step, obs.wall_time) == ("m", 9, T0)
    assert obs.value == expected or (math.isnan(expected) and math.isnan(obs.value))


def test_tensor_dtypes_tensorboard_can_decode_match_its_reading(tmp_path):
    decodable = ["float32", "float64", "half", "int8", "uint8", "int16", "uint16", "int32", "int64", "bool",
                 "content-float32", "content-double", "content-half", "content-int64"]
    write_events(tmp_path, [tensor_event(case, i, T0 + i, TENSOR_CASES[case][0])
                            for i, case in enumerate(decodable)])
    assert by_tag(all_observations(read_run(only_run(tmp_path)))) == reference_scalars(tmp_path)


def test_a_scalar_tensor_of_a_non_numeric_dtype_is_a_bad_value_and_reading_goes_on(tmp_path):
    path = write_events(tmp_path, [
        tensor_event("name", 1, T0, raw_tensor(7, string_val=[b"hello"])),
        tensor_event("loss", 2, T0, scalar_tensor(0.5, np.float32)),
    ])
    (batch,) = read_run(only_run(tmp_path))
    assert [(o.metric, o.value) for o in batch.observations] == [("loss", 0.5)]
    (problem,) = batch.problems
    assert problem.kind == ProblemKind.BAD_VALUE
    assert problem.path == str(path)
    assert problem.line == 2
    assert problem.offset == scan_frames(path.read_bytes()).frames[1][0]
    assert "'name'" in problem.message and "dtype 7" in problem.message


@pytest.mark.parametrize("tensor", [
    raw_tensor(1, tensor_content=b"\x00\x00"),  # two bytes for a float32
    raw_tensor(1),  # no value at all: TensorBoard's make_ndarray fails on it too
    raw_tensor(1, float_val=[1.0, 2.0]),  # two values for rank 0
], ids=["short-content", "no-value", "two-values"])
def test_a_rank0_tensor_without_exactly_one_value_is_a_bad_value(tmp_path, tensor):
    write_events(tmp_path, [tensor_event("m", 1, T0, tensor)])
    (batch,) = read_run(only_run(tmp_path))
    assert batch.observations == []
    assert [p.kind for p in batch.problems] == [ProblemKind.BAD_VALUE]


def test_non_rank0_tensors_under_the_scalars_plugin_are_dropped_and_counted(tmp_path):
    write_events(tmp_path, [
        tensor_event("vec", 1, T0, scalar_tensor([1.0, 2.0], np.float32)),
        tensor_event("one", 1, T0, raw_tensor(1, shape=(1,), float_val=[3.0])),
    ])
    (batch,) = read_run(only_run(tmp_path))
    assert batch.observations == []
    assert batch.dropped == {"non_scalar_tensor": 2}


# --- plugin metadata only on a tag's first event --------------------------------------------------------------


def first_only(tag, steps, *, start=0):
    return [tensor_event(tag, s, T0 + s, scalar_tensor(s / 10, np.float32), plugin="scalars" if s == start else None)
            for s in steps]


def test_plugin_metadata_on_the_first_event_only_still_makes_every_value_a_scalar(tmp_path):
    write_events(tmp_path, first_only("loss", range(5)))
    observations = all_observations(read_run(only_run(tmp_path)))
    assert [o.step for o in observations] == [0, 1, 2, 3, 4]
    assert by_tag(observations) == reference_scalars(tmp_path)


def test_a_tensor_tag_without_any_plugin_metadata_is_not_a_scalar(tmp_path):
    write_events(tmp_path, [tensor_event("x", 1, T0, scalar_tensor(1.0, np.float32), plugin=None)])
    (batch,) = read_run(only_run(tmp_path))
    assert batch.observations == []
    assert batch.dropped == {"tensor": 1}
    assert reference_scalars(tmp_path) == {}


def test_plugin_metadata_is_remembered_across_rotated_segments(tmp_path):
    write_events(tmp_path, first_only("loss", range(3)), name=segment_name(1))
    write_events(tmp_path, first_only("loss", range(3, 6), start=-1), name=segment_name(2))
    batches = read_run(only_run(tmp_path))
    assert [[o.step for o in b.observations] for b in batches] == [[0, 1, 2], [3, 4, 5]]
    assert by_tag(all_observations(batches)) == reference_scalars(tmp_path)


def test_a_later_different_plugin_metadata_does_not_change_the_tags_plugin(tmp_path):
    # TensorBoard keeps a tag's first metadata only (a restarted writer sends it again).
    events = first_only("loss", range(2))
    events.append(tensor_event("loss", 2, T0 + 2, scalar_tensor(0.2, np.float32), plugin="text"))
    write_events(tmp_path, events)
    observations = all_observations(read_run(only_run(tmp_path)))
    assert [o.step for o in observations] == [0, 1, 2]
    assert by_tag(observations) == reference_scalars(tmp_path)


def test_resuming_from_a_checkpoint_rebuilds_plugin_memory_from_earlier_bytes(tmp_path):
    write_events(tmp_path, first_only("loss", range(3)), name=segment_name(1))
    path2 = write_events(tmp_path, first_only("loss", range(3, 9), start=-1), name=segment_name(2))
    run = only_run(tmp_path)
    full = read_run(run)
    frames = scan_frames(path2.read_bytes()).frames
    checkpoint = frames[3][0]  # after file_version and steps 3 and 4
    memory = rebuild_run_memory(run, str(path2), checkpoint)
    assert memory.tag_plugins == {"loss": "scalars"}
    resumed = read_segment(run, str(path2), offset=checkpoint, records_before=3, memory=memory)
    assert resumed.observations == full[1].observations[2:]
    assert [o.record for o in resumed.observations] == [4, 5, 6, 7]


def test_resuming_without_the_memory_would_lose_tensor_scalars(tmp_path):
    # The reason rebuild_run_memory exists: later events of a tag carry no plugin metadata.
    path = write_events(tmp_path, first_only("loss", range(4)))
    run = only_run(tmp_path)
    checkpoint = scan_frames(path.read_bytes()).frames[2][0]
    blind = read_segment(run, str(path), offset=checkpoint, records_before=2, memory=RunMemory())
    assert blind.observations == []
    informed = read_segment(run, str(path), offset=checkpoint, records_before=2,
                            memory=rebuild_run_memory(run, str(path), checkpoint))
    assert [o.step for o in informed.observations] == [1, 2, 3]


# --- non-scalars ----------------------------------------------------------------------------------------------


def test_images_histograms_audio_and_text_are_dropped_and_counted(tmp_path):
    from tensorboardX import SummaryWriter

    writer = SummaryWriter(str(tmp_path))
    writer.add_scalar("loss", 0.5, 1, walltime=T0)
    writer.add_image("img", np.zeros((3, 4, 4), dtype=np.uint8), 1, walltime=T0)
    writer.add_histogram("weights", np.arange(10.0), 1, walltime=T0)
    writer.add_histogram("weights", np.arange(5.0), 2, walltime=T0)
    writer.add_text("note", "hello", 1, walltime=T0)
    writer.add_scalar("loss", 0.25, 2, walltime=T0)
    writer.close()
    (batch,) = read_run(only_run(tmp_path))
    assert [(o.metric, o.step, o.value) for o in batch.observations] == [("loss", 1, 0.5), ("loss", 2, 0.25)]
    assert batch.dropped == {"image": 1, "histogram": 2, "text": 1}
    assert not batch.problems


def test_old_style_audio_and_histograms_and_other_plugins_tensors_are_dropped_and_counted(tmp_path):
    event = event_pb2.Event(wall_time=T0, step=1)
    event.summary.value.add(tag="sound", audio=summary_pb2.Summary.Audio(sample_rate=8000.0, num_channels=1))
    event.summary.value.add(tag="old", obsolete_old_style_histogram=b"\x08\x01")
    event.summary.value.add(tag="loss", simple_value=2.0)
    write_events(tmp_path, [
        event,
        tensor_event("clip", 1, T0, scalar_tensor([0.0, 0.5], np.float32), plugin="audio"),
        tensor_event("pr", 1, T0, scalar_tensor(1.0, np.float32), plugin="pr_curves"),
    ])
    (batch,) = read_run(only_run(tmp_path))
    assert [(o.metric, o.value) for o in batch.observations] == [("loss", 2.0)]
    assert batch.dropped == {"audio": 2, "histogram": 1, "tensor": 1}


# --- runs, prefixes and metric file ids --------------------------------------------------------------------------


def test_discover_runs_finds_every_directory_with_event_files_sorted_by_relative_path(tmp_path):
    write_tensorboardx(tmp_path / "b" / "eval", sample_scalars(1))
    write_tensorboardx(tmp_path / "a", sample_scalars(1))
    write_tensorboardx(tmp_path, sample_scalars(1))
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "notes.txt").write_text("no event files here")
    (tmp_path / "d.tfevents.dir").mkdir()  # a directory is never an event file
    runs = discover_runs(tmp_path)
    assert [r.relative for r in runs] == ["", "a", "b/eval"]
    assert [r.prefix for r in runs] == ["", "a", "b/eval"]
    assert [r.directory for r in runs] == [str(tmp_path), str(tmp_path / "a"), str(tmp_path / "b" / "eval")]


def test_metric_file_id_hashes_the_absolute_run_directory(tmp_path):
    write_tensorboardx(tmp_path / "run", sample_scalars(1))
    run = only_run(tmp_path)
    expected = "tfevents-" + hashlib.sha256(str(tmp_path / "run").encode("utf-8")).hexdigest()[:16]
    assert run.metric_file_id == expected


def test_tune_style_trials_get_distinct_prefixes_and_metric_file_ids_and_never_merge(tmp_path):
    for trial in ("trial_0001", "trial_0002"):
        write_tensorboardx(tmp_path / trial, [("loss", s, float(s) + (trial == "trial_0002"), T0 + s)
                                              for s in range(3)])
    runs = discover_runs(tmp_path)
    assert [r.relative for r in runs] == ["trial_0001", "trial_0002"]
    assert runs[0].metric_file_id != runs[1].metric_file_id
    first, second = (all_observations(read_run(r)) for r in runs)
    assert {o.metric for o in first} == {"trial_0001/loss"}
    assert {o.metric for o in second} == {"trial_0002/loss"}
    assert [o.value for o in second] == [1.0, 2.0, 3.0]


def test_add_scalars_sub_runs_get_distinct_prefixes_as_tensorboard_shows_them(tmp_path):
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(tmp_path))
    for step in range(3):
        writer.add_scalars("run", {"train": step * 1.0, "eval": step * 2.0}, step, walltime=T0 + step)
    writer.close()
    runs = {r.relative: r for r in discover_runs(tmp_path)}
    assert set(runs) == {"", "run_train", "run_eval"}
    assert len({r.metric_file_id for r in runs.values()}) == 3
    train = all_observations(read_run(runs["run_train"]))
    evaluated = all_observations(read_run(runs["run_eval"]))
    assert [(o.metric, o.value) for o in train] == [("run_train/run", 0.0), ("run_train/run", 1.0),
                                                    ("run_train/run", 2.0)]
    assert [(o.metric, o.value) for o in evaluated] == [("run_eval/run", 0.0), ("run_eval/run", 2.0),
                                                        ("run_eval/run", 4.0)]
    assert by_tag(train, "run_train") == reference_scalars(tmp_path / "run_train")


def test_rotated_files_are_segments_of_one_run_in_name_order_with_one_metric_file_id(tmp_path):
    write_tensorboardx(tmp_path, [("loss", 0, 1.0, T0)], name=segment_name(1))
    run_before = only_run(tmp_path)
    write_tensorboardx(tmp_path, [("loss", 1, 0.5, T0 + 1)], name=segment_name(2))
    run_after = only_run(tmp_path)
    assert run_after.metric_file_id == run_before.metric_file_id
    assert run_after.segments() == [str(p) for p in event_files(tmp_path)]
    assert [os.path.basename(s) for s in run_after.segments()] == [segment_name(1), segment_name(2)]
    assert [o.step for o in all_observations(read_run(run_after))] == [0, 1]


def test_a_single_event_file_path_is_a_run_of_that_file_in_its_directory(tmp_path):
    path = write_tensorboardx(tmp_path / "job", [("loss", 0, 1.0, T0)], name=segment_name(1))
    write_tensorboardx(tmp_path / "job", [("loss", 1, 2.0, T0)], name=segment_name(2))
    (run,) = discover_runs(path)
    assert run.directory == str(tmp_path / "job")
    assert run.relative == "" and run.prefix == ""
    assert run.segments() == [str(path)]
    assert run.metric_file_id == only_run(tmp_path).metric_file_id
    assert [o.metric for o in all_observations(read_run(run))] == ["loss"]


# --- growing, truncated and corrupt files ------------------------------------------------------------------------


def mixed_events():
    """Simple values, tensors with metadata on the first event only, a restart and an image-like value."""
    events = []
    for s in range(4):
        event = event_pb2.Event(wall_time=T0 + s + 0.5, step=s * 100)
        event.summary.value.add(tag="loss", simple_value=1.0 / (s + 1))
        events.append(event)
        events.append(tensor_event("acc", s * 100, T0 + s, scalar_tensor(s / 4, np.float32),
                                   plugin="scalars" if s == 0 else None))
    events.append(restart_event(200, T0 + 10))
    events.append(tensor_event("note", 5, T0, raw_tensor(7, string_val=[b"x"]), plugin="text"))
    return events


def frame_ends(data: bytes) -> dict[int, int]:
    """frame offset -> offset just past that frame."""
    frames = scan_frames(data).frames
    offsets = [o for o, _ in frames]
    return dict(zip(offsets, [*offsets[1:], len(data)], strict=True))


def test_a_file_being_written_stops_at_the_last_verified_frame_at_every_offset_and_then_continues(tmp_path):
    source = write_events(tmp_path / "src", mixed_events())
    data = source.read_bytes()
    ends = frame_ends(data)
    (truth,) = read_run(only_run(tmp_path / "src"))
    assert len(truth.observations) == 8 and len(truth.restarts) == 1
    logdir = tmp_path / "live"
    logdir.mkdir()
    live = logdir / segment_name(1)
    for cut in range(len(data) + 1):
        live.write_bytes(data[:cut])
        run = only_run(logdir)
        first = read_segment(run, str(live))
        complete = [o for o in truth.observations if ends[o.offset] <= cut]
        assert first.observations == complete, cut
        assert first.checkpoint <= cut and first.checkpoint in {0, *ends.values()}
        if first.stop == "truncated":
            (problem,) = first.problems
            assert problem.kind == ProblemKind.TRUNCATED and problem.offset == first.checkpoint
        else:
            assert first.stop == "end" and not first.problems and first.checkpoint == cut
        # The writer finishes the file; the reader resumes from its checkpoint alone.
        live.write_bytes(data)
        memory = rebuild_run_memory(run, str(live), first.checkpoint)
        rest = read_segment(run, str(live), offset=first.checkpoint, records_before=first.records, memory=memory)
        assert first.observations + rest.observations == truth.observations, cut
        assert first.restarts + rest.restarts == truth.restarts, cut
        assert rest.stop == "end" and rest.records == truth.records


@pytest.mark.parametrize("size", [1, 13, 64, 100])
def test_small_reads_give_the_same_result_as_one_read(tmp_path, size):
    write_tensorboardx(tmp_path, sample_scalars(20))
    run = only_run(tmp_path)
    (whole,) = read_run(run)
    (path,) = run.segments()
    chunked = read_segment(run, path, read_size=size)
    assert chunked.observations == whole.observations
    assert (chunked.checkpoint, chunked.records, chunked.stop, chunked.more) == (
        whole.checkpoint, whole.records, "end", False)


@pytest.mark.parametrize("bound", [1, 57, 500])
def test_a_byte_bound_splits_reading_into_calls_that_resume_from_their_checkpoints(tmp_path, bound):
    write_tensorboardx(tmp_path, sample_scalars(20))
    run = only_run(tmp_path)
    (whole,) = read_run(run)
    (path,) = run.segments()
    memory, offset, records, observations, calls = RunMemory(), 0, 0, [], 0
    while True:
        batch = read_segment(run, path, offset=offset, records_before=records, memory=memory, max_bytes=bound)
        calls += 1
        assert batch.checkpoint > offset or not batch.more
        assert batch.checkpoint - offset <= max(bound, 56)  # one 40-byte scalar frame is 56 bytes
        observations += batch.observations
        offset, records = batch.checkpoint, batch.records
        if not batch.more:
            break
    assert observations == whole.observations
    assert (offset, records, batch.stop) == (whole.checkpoint, whole.records, "end")
    assert calls > 1


def test_crc_mismatch_names_file_and_offset_and_other_files_keep_flowing(tmp_path):
    bad_path = write_tensorboardx(tmp_path / "bad", sample_scalars(5, ("loss",)))
    write_tensorboardx(tmp_path / "good", sample_scalars(5, ("loss",)))
    data = bytearray(bad_path.read_bytes())
    frames = scan_frames(bytes(data)).frames
    bad_offset = frames[3][0]
    data[bad_offset + 14] ^= 0x20
    bad_path.write_bytes(bytes(data))
    bad_run, good_run = discover_runs(tmp_path)
    (bad,) = read_run(bad_run)
    assert bad.stop == "crc_mismatch"
    assert bad.checkpoint == bad_offset
    assert [o.step for o in bad.observations] == [0, 7]
    (problem,) = bad.problems
    assert problem.kind == ProblemKind.CRC_MISMATCH
    assert (problem.path, problem.offset, problem.line) == (str(bad_path), bad_offset, 4)
    assert f"byte {bad_offset}" in problem.message and "Restore or remove" in problem.message
    assert str(problem).startswith(f"{bad_path}:4: ")
    assert problem.to_json()["offset"] == bad_offset
    (good,) = read_run(good_run)
    assert good.stop == "end" and len(good.observations) == 5
    # Reading again from the checkpoint stays stopped at the same frame: no advance past it.
    again = read_segment(bad_run, str(bad_path), offset=bad.checkpoint, records_before=bad.records)
    assert (again.checkpoint, again.observations, again.stop) == (bad_offset, [], "crc_mismatch")


def test_a_verified_frame_that_is_not_an_event_is_skipped_and_reading_goes_on(tmp_path):
    source = write_tensorboardx(tmp_path / "src", sample_scalars(4, ("loss",)))
    (truth,) = read_run(only_run(tmp_path / "src"))
    data = source.read_bytes()
    insert_at = scan_frames(data).frames[2][0]
    junk = encode_frame(b"\x0a\xff\xff\xff")  # wall_time field with a wire type protobuf rejects
    target = tmp_path / "run" / source.name
    target.parent.mkdir()
    target.write_bytes(data[:insert_at] + junk + data[insert_at:])
    (batch,) = read_run(only_run(tmp_path / "run"))
    (problem,) = batch.problems
    assert problem.kind == ProblemKind.BAD_EVENT
    assert (problem.offset, problem.line) == (insert_at, 3)
    assert [(o.step, o.value, o.wall_time) for o in batch.observations] == [
        (o.step, o.value, o.wall_time) for o in truth.observations
    ]
    assert batch.stop == "end"


def test_an_unreadable_segment_is_a_problem_not_an_exception(tmp_path):
    write_tensorboardx(tmp_path, sample_scalars(1))
    run = only_run(tmp_path)
    missing = str(tmp_path / segment_name(99))
    batch = read_segment(run, missing, offset=40, records_before=2)
    assert batch.stop == "unreadable"
    assert (batch.checkpoint, batch.records) == (40, 2)
    (problem,) = batch.problems
    assert problem.kind == ProblemKind.UNREADABLE and problem.offset == 40 and problem.path == missing


# --- restarts and TensorBoard's purge -------------------------------------------------------------------------------


def write_restarted_torch_run(run_dir, *, first_purge_step):
    write_torch(run_dir, [("loss", s, float(s), T0 + s) for s in range(10)], name=segment_name(1),
                purge_step=first_purge_step)
    write_torch(run_dir, [("loss", s, 100.0 + s, T0 + 100 + s) for s in range(5, 12)], name=segment_name(2),
                purge_step=5)


def test_restarts_are_reported_with_run_step_time_and_offset(tmp_path):
    write_restarted_torch_run(tmp_path / "job", first_purge_step=0)
    run = only_run(tmp_path)
    batches = read_run(run)
    restarts = [r for b in batches for r in b.restarts]
    assert [(r.run, r.step, r.first_in_run) for r in restarts] == [("job", 0, True), ("job", 5, False)]
    second = scan_frames(open(run.segments()[1], "rb").read()).frames
    start_payload = second[restarts[1].record - 1]
    assert restarts[1].offset == start_payload[0]
    assert event_pb2.Event.FromString(bytes(start_payload[1])).session_log.status == event_pb2.SessionLog.START
    assert restarts[1].wall_time > T0 + 11  # torch stamps the START with the time of the restart


def test_purge_reproduces_tensorboards_view_of_a_torch_purge_step_run(tmp_path):
    write_restarted_torch_run(tmp_path / "job", first_purge_step=0)
    batches = read_run(only_run(tmp_path))
    view = apply_tensorboard_purge(in_read_order(batches))
    reference = reference_scalars(tmp_path / "job")
    assert by_tag(view, "job") == reference
    assert [s for s, _, _ in reference["loss"]] == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
    assert len(all_observations(batches)) == 17  # the store keeps all; the view hides 5 points


def test_the_first_start_of_a_run_is_not_a_restart_for_tensorboard(tmp_path):
    write_restarted_torch_run(tmp_path / "job", first_purge_step=None)
    batches = read_run(only_run(tmp_path))
    restarts = [r for b in batches for r in b.restarts]
    assert [(r.step, r.first_in_run) for r in restarts] == [(5, True)]
    assert by_tag(apply_tensorboard_purge(in_read_order(batches)), "job") == reference_scalars(tmp_path / "job")


def test_the_legacy_accumulator_purges_on_every_start(tmp_path):
    write_restarted_torch_run(tmp_path / "job", first_purge_step=None)
    batches = read_run(only_run(tmp_path))
    view = apply_tensorboard_purge(in_read_order(batches), first_start_purges=True)
    legacy = legacy_reference_scalars(tmp_path / "job")
    assert by_tag(view, "job") == legacy
    assert [s for s, _, _ in legacy["loss"]] == list(range(12))


def test_purge_keeps_points_after_the_restart_and_uses_read_order():
    def obs(step, offset):
        from tau_collector.sources.tensorboard_run import ScalarObservation

        return ScalarObservation("m", step, T0, float(step), 1, offset)

    items = [obs(1, 0), obs(5, 10), SessionRestart("", 0, T0, 1, 15, True), obs(6, 20),
             SessionRestart("", 3, T0, 1, 25, False), obs(3, 30)]
    assert [o.step for o in apply_tensorboard_purge(items)] == [1, 3]
    assert [o.step for o in apply_tensorboard_purge(items[:4])] == [1, 5, 6]


# --- into the projection ----------------------------------------------------------------------------------------------


def test_to_history_row_gives_step_time_and_the_prefixed_metric(tmp_path):
    path = write_tensorboardx(tmp_path / "trial_0001", [("train/loss", 12, 0.5, 1_760_000_000.25)])
    (obs,) = all_observations(read_run(only_run(tmp_path)))
    row = to_history_row(obs)
    assert isinstance(row, HistoryRow)
    assert row.fields == {"_step": 12, "_timestamp": 1_760_000_000.25, "trial_0001/train/loss": 0.5}
    assert row.line == 2
    assert row.offset == scan_frames(path.read_bytes()).frames[1][0]


# --- properties ----------------------------------------------------------------------------------------------------------

_scalar_values = st.one_of(st.floats(width=32), st.integers(-(2**24), 2**24).map(float))
_scalar_rows = st.lists(
    st.tuples(st.sampled_from(["loss", "acc", "a/b"]), st.integers(-(2**40), 2**40), _scalar_values,
              st.floats(0, 2e9, allow_nan=False)),
    min_size=1, max_size=8,
)


def _same(a, b) -> bool:
    return [(o.metric, o.step, o.wall_time, o.record, o.offset) for o in a] == [
        (o.metric, o.step, o.wall_time, o.record, o.offset) for o in b
    ] and all(x.value == y.value or (math.isnan(x.value) and math.isnan(y.value)) for x, y in zip(a, b, strict=True))


def _one_file(tmp_path_factory, rows):
    root = tmp_path_factory.mktemp("tb")
    path = write_tensorboardx(root / "src", rows)
    (truth,) = read_run(only_run(root / "src"))
    return root, path, truth


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=_scalar_rows, data=st.data())
def test_property_every_truncation_yields_exactly_the_verified_prefix(tmp_path_factory, rows, data):
    root, path, truth = _one_file(tmp_path_factory, rows)
    raw = path.read_bytes()
    ends = frame_ends(raw)
    cut = data.draw(st.integers(0, len(raw)))
    live = root / "live" / path.name
    live.parent.mkdir()
    live.write_bytes(raw[:cut])
    (batch,) = read_run(only_run(root / "live"))
    assert _same(batch.observations, [o for o in truth.observations if ends[o.offset] <= cut])
    assert all(p.kind == ProblemKind.TRUNCATED for p in batch.problems)
    shutil.rmtree(root)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=_scalar_rows, data=st.data())
def test_property_no_single_byte_corruption_yields_a_wrong_value(tmp_path_factory, rows, data):
    root, path, truth = _one_file(tmp_path_factory, rows)
    raw = bytearray(path.read_bytes())
    where = data.draw(st.integers(0, len(raw) - 1))
    raw[where] ^= data.draw(st.integers(1, 255))
    live = root / "live" / path.name
    live.parent.mkdir()
    live.write_bytes(bytes(raw))
    (batch,) = read_run(only_run(root / "live"))
    got = batch.observations
    assert _same(got, truth.observations[: len(got)])
    (problem,) = batch.problems
    assert problem.kind == ProblemKind.CRC_MISMATCH
    assert problem.offset <= where < frame_ends(path.read_bytes())[problem.offset]
    shutil.rmtree(root)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=_scalar_rows, junk=st.binary(max_size=40), data=st.data())
def test_property_frames_after_a_skipped_or_odd_payload_are_still_true(tmp_path_factory, rows, junk, data):
    root, path, truth = _one_file(tmp_path_factory, rows)
    raw = path.read_bytes()
    boundaries = sorted(frame_ends(raw))
    at = data.draw(st.sampled_from([*boundaries, len(raw)]))
    frame = encode_frame(junk)
    live = root / "live" / path.name
    live.parent.mkdir()
    live.write_bytes(raw[:at] + frame + raw[at:])
    (batch,) = read_run(only_run(root / "live"))
    # Whatever the junk frame decodes to (or fails to), every other frame reads exactly as before.
    others = [o for o in batch.observations if o.offset != at]
    shifted = [o._replace(offset=o.offset + (len(frame) if o.offset >= at else 0),
                          record=o.record + (1 if o.offset >= at else 0)) for o in truth.observations]
    assert _same(others, shifted)
    assert all(p.kind in (ProblemKind.BAD_EVENT, ProblemKind.BAD_VALUE) and p.offset == at for p in batch.problems)
    assert batch.stop == "end"
    shutil.rmtree(root)


def test_reading_leaves_the_garbage_collector_as_it_found_it(tmp_path):
    import gc

    write_tensorboardx(tmp_path, sample_scalars(3))
    run = only_run(tmp_path)
    assert gc.isenabled()
    read_run(run)
    assert gc.isenabled()
    gc.disable()
    try:
        read_run(run)
        assert not gc.isenabled()
    finally:
        gc.enable()
