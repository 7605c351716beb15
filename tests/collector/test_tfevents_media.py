"""Histograms, images and text of event files from real writers read as TensorBoard reads them: typed records
and ``tau-collector dump --kind``, never scalars."""

from __future__ import annotations

import hashlib
import io
import json

import numpy as np
import pytest
from tensorboard.compat.proto import event_pb2, summary_pb2

from fixtures.tb_writers import (
    MEDIA_T0,
    accumulator_histograms,
    pictures,
    png,
    reference_media,
    reference_scalars,
    segment_name,
    tf_image_value,
    write_events,
    write_tensorboardx_media,
    write_tf_media,
    write_torch_media,
)
from tau_collector.cli import main
from tau_collector.sources.event_columns import read_block_columns
from tau_collector.sources.logdir import discover_runs
from tau_collector.sources.media import (
    MEDIA_KINDS,
    HistogramRecord,
    ImageRecord,
    MediaRequest,
    TextRecord,
)
from tau_collector.sources.records import ProblemKind
from tau_collector.sources.tensorboard_run import RunMemory, apply_tensorboard_purge, in_read_order, read_run

ALL = MediaRequest(frozenset(MEDIA_KINDS))
WRITERS = [write_torch_media, write_tensorboardx_media, write_tf_media]


def dump(capsysbinary, *args: str) -> tuple[int, list[dict], list[dict]]:
    """``tau-collector dump ARGS``: exit code, stdout and stderr as JSON lines."""
    capsysbinary.readouterr()  # what came before (TensorBoard's own log lines) is not the command's
    code = main(["dump", *args])
    out, err = capsysbinary.readouterr()
    assert all(line.startswith(b"{") for line in err.splitlines()), err
    return code, [json.loads(line) for line in out.splitlines()], [json.loads(line) for line in err.splitlines()]


def without_file(rows: list[dict]) -> list[dict]:
    return [{key: value for key, value in row.items() if key != "file"} for row in rows]


def only_run(logdir):
    (run,) = discover_runs(logdir)
    return run


# --- what TensorBoard reads, from every writer -----------------------------------------------------------------------


@pytest.mark.parametrize("writer", WRITERS, ids=lambda w: w.__name__)
@pytest.mark.parametrize("kind", MEDIA_KINDS)
def test_dump_kind_prints_what_tensorboards_event_file_loader_reads(tmp_path, capsysbinary, writer, kind):
    path = writer(tmp_path / "run")
    reference = reference_media(path, kind)
    assert reference, f"{writer.__name__} wrote no {kind}"
    code, rows, problems = dump(capsysbinary, "--kind", kind, str(path))
    assert (code, problems) == (0, [])
    assert without_file(rows) == reference
    assert {row["file"] for row in rows} == {str(path)}


def test_several_images_of_one_event_and_every_text_shape_are_read(tmp_path, capsysbinary):
    path = write_tf_media(tmp_path / "run", steps=[4])
    _, images, _ = dump(capsysbinary, "--kind", "images", str(path))
    (row,) = images
    assert (row["tag"], row["width"], row["height"], row["content_type"]) == ("inputs", 9, 7, "image/png")
    assert row["images"] == [hashlib.sha256(png(p)).hexdigest() for p in pictures(5, 7, 9, 204)[:3]]
    _, text, _ = dump(capsysbinary, "--kind", "text", str(path))
    assert [(r["tag"], r["shape"], r["text"]) for r in text] == [
        ("scalar_text", [], ["step 4"]), ("table", [2, 2], ["a", "b", "ç", "4"]),
        ("cube", [2, 2, 2], [str(i) for i in range(8)])]


def test_records_hold_the_bytes_buckets_and_strings_a_store_keeps(tmp_path):
    from PIL import Image

    write_tf_media(tmp_path / "run", steps=[0, 1])
    (batch,) = read_run(only_run(tmp_path / "run"), media=ALL)
    images = [r for r in batch.media if isinstance(r, ImageRecord)]
    assert [(r.tag, r.step, r.wall_time, len(r.images)) for r in images] == [("inputs", 0, MEDIA_T0, 3),
                                                                          ("inputs", 1, MEDIA_T0 + 1, 3)]
    decoded = np.asarray(Image.open(io.BytesIO(images[1].images[2])))
    assert np.array_equal(decoded, pictures(5, 7, 9, 201)[2])
    assert images[0].content_types == ("image/png",) * 3
    histograms = [r for r in batch.media if isinstance(r, HistogramRecord) and r.tag == "dense/kernel"]
    assert [h.buckets.shape for h in histograms] == [(12, 3), (12, 3)] and histograms[0].buckets.dtype == np.float64
    assert histograms[0].buckets[:, 2].sum() == 600
    texts = [r for r in batch.media if isinstance(r, TextRecord) and r.tag == "table"]
    assert [(t.text, t.shape) for t in texts] == [(("a", "b", "ç", "0"), (2, 2)), (("a", "b", "ç", "1"), (2, 2))]
    # every record is where the file has it
    assert [r.offset for r in batch.media] == sorted(r.offset for r in batch.media)


def test_records_are_named_like_the_runs_scalars(tmp_path, capsysbinary):
    write_torch_media(tmp_path / "logs" / "seed-1", steps=[0])
    write_torch_media(tmp_path / "logs" / "seed-2", steps=[0])
    _, rows, _ = dump(capsysbinary, "--kind", "histograms", str(tmp_path / "logs"))
    assert sorted({row["tag"] for row in rows}) == [f"seed-{n}/{tag}" for n in (1, 2)
                                                     for tag in ("constant", "ints", "raw", "weights")]
    (batch,) = read_run(only_run(tmp_path / "logs" / "seed-1"), media=ALL)  # a run of its own: no prefix
    assert {r.name for r in batch.media} == {"weights", "constant", "ints", "raw", "sample", "batch", "note/text_summary"}


def test_an_old_histo_loses_its_empty_end_buckets_and_takes_min_and_max_as_outer_edges(tmp_path, capsysbinary):
    path = write_torch_media(tmp_path / "run", steps=[0])
    _, rows, _ = dump(capsysbinary, "--kind", "histograms", str(path))
    raw = next(row for row in rows if row["tag"] == "raw")
    assert raw["buckets"] == [[-1.0, 0.5, 2.0], [0.5, 1.5, 0.0], [1.5, 3.0, 5.0]]


# --- scalars unchanged, media never scalars --------------------------------------------------------------------------


@pytest.mark.parametrize("writer", WRITERS, ids=lambda w: w.__name__)
def test_scalars_and_dropped_counts_are_unchanged_when_media_are_read(tmp_path, capsysbinary, writer):
    path = writer(tmp_path / "run")
    run = only_run(tmp_path / "run")
    (plain,) = read_run(run)
    (with_media,) = read_run(run, media=ALL)
    assert plain.observations == with_media.observations and plain.dropped == with_media.dropped
    assert plain.media == [] and len(with_media.media) == sum(plain.dropped.values())
    assert {o.metric for o in with_media.observations} == {"loss"}
    code, rows, _ = dump(capsysbinary, str(path))
    assert code == 0 and {row["metric"] for row in rows} == {"loss"}
    assert [(r["step"], r["value"]) for r in rows] == [(s, v) for s, _, v in reference_scalars(path.parent)["loss"]]


def test_the_column_reader_yields_the_records_of_the_frame_reader_in_any_block_size(tmp_path):
    path = write_torch_media(tmp_path / "run", steps=range(6))
    run = only_run(tmp_path / "run")
    (whole,) = read_run(run, media=ALL)
    expected = [(type(r).__name__, r.tag, r.step, r.offset) for r in whole.media]
    for block in (700, 4096, 1 << 20):
        memory, offset, records, got = RunMemory(), 0, 0, []
        while True:
            batch, _ = read_block_columns(run, str(path), memory=memory, offset=offset, records_before=records,
                                          max_bytes=block, media=ALL)
            got += [(type(r).__name__, r.tag, r.step, r.offset) for r in batch.media]
            if not batch.more:
                break
            offset, records = batch.checkpoint, batch.records
        assert got == expected, block


def test_a_request_reads_only_its_kinds(tmp_path):
    write_tensorboardx_media(tmp_path / "run", steps=[0])
    (batch,) = read_run(only_run(tmp_path / "run"), media=MediaRequest(frozenset({"text"})))
    assert [type(r) for r in batch.media] == [TextRecord]
    with pytest.raises(ValueError, match="unknown media kinds"):
        MediaRequest(frozenset({"audio"}))


def test_history_files_are_passed_over_by_a_media_dump(tmp_path, capsysbinary):
    history = tmp_path / "history.jsonl"
    history.write_text('{"_step": 0, "_timestamp": 1.0, "loss": 1}\n')
    assert dump(capsysbinary, "--kind", "images", str(history)) == (0, [], [])


# --- restarts ---------------------------------------------------------------------------------------------------------


def test_tensorboard_purge_hides_the_media_a_restart_purges_as_tensorboard_does(tmp_path, capsysbinary):
    write_torch_media(tmp_path / "job", steps=range(6), name=segment_name(1), purge_step=0)  # a START: the run began
    write_torch_media(tmp_path / "job", steps=range(3, 5), name=segment_name(2), purge_step=3)
    batches = read_run(only_run(tmp_path / "job"), media=ALL)
    view = apply_tensorboard_purge(in_read_order(batches, media=True))
    weights = [(r.step, r.wall_time, r.buckets.tolist()) for r in view if r.tag == "weights"]
    assert weights == accumulator_histograms(tmp_path / "job")["weights"]
    assert [step for step, _, _ in weights] == [0, 1, 2, 3, 4]  # 3..5 of the first file hidden
    code, rows, _ = dump(capsysbinary, "--kind", "histograms", "--tensorboard-purge", str(tmp_path / "job"))
    assert code == 0 and [r["step"] for r in rows if r["tag"] == "weights"] == [0, 1, 2, 3, 4]
    _, rows, _ = dump(capsysbinary, "--kind", "histograms", str(tmp_path / "job"))
    assert [r["step"] for r in rows if r["tag"] == "weights"] == [0, 1, 2, 3, 4, 5, 3, 4]


# --- values that cannot be read ---------------------------------------------------------------------------------------


def _bad_values() -> list[event_pb2.Event]:
    from tensorboard.plugins.histogram import metadata as histogram_metadata
    from tensorboard.plugins.text import metadata as text_metadata
    from tensorboard.util import tensor_util

    def value(tag, tensor, plugin_metadata):
        return summary_pb2.Summary.Value(tag=tag, tensor=tensor, metadata=plugin_metadata)

    hist = histogram_metadata.create_summary_metadata(display_name="", description="")
    text = text_metadata.create_summary_metadata(display_name="", description="")
    event = event_pb2.Event(wall_time=MEDIA_T0, step=3)
    event.summary.value.extend([
        value("two_columns", tensor_util.make_tensor_proto(np.zeros((4, 2))), hist),
        value("string_histogram", tensor_util.make_tensor_proto([[b"a", b"b", b"c"]]), hist),
        value("numbers_as_text", tensor_util.make_tensor_proto(np.arange(3.0)), text),
        tf_image_value("bad_width", pictures(1, 2, 2, 0)),
        value("good", tensor_util.make_tensor_proto(np.ones((2, 3))), hist),
    ])
    event.summary.value[3].tensor.string_val[0] = b"9e9"
    return [event]


def test_a_value_that_cannot_be_read_is_a_bad_value_naming_tag_step_file_and_offset(tmp_path, capsysbinary):
    path = write_events(tmp_path / "run", _bad_values())
    (batch,) = read_run(only_run(tmp_path / "run"), media=ALL)
    assert [(r.tag, r.buckets.tolist()) for r in batch.media] == [("good", [[1.0, 1.0, 1.0]] * 2)]
    messages = [str(p) for p in batch.problems]
    assert {p.kind for p in batch.problems} == {ProblemKind.BAD_VALUE} and len(messages) == 4
    offset = batch.problems[0].offset
    assert all(p.offset == offset and p.line == 2 for p in batch.problems)
    assert messages[0] == (f"{path}:2: histograms 'two_columns' at step 3 cannot be read: a histogram tensor has "
                           "shape [k, 3], this one [4, 2]; skipped this value")
    assert "a histogram tensor holds numbers, this one strings" in messages[1]
    assert "a text tensor holds strings, this one dtype 2" in messages[2]
    assert "the image width b'9e9' is not a decimal integer" in messages[3]
    code, rows, problems = dump(capsysbinary, "--kind", "histograms", str(path))
    assert code == 3 and [r["tag"] for r in rows] == ["good"]
    assert [(p["error"], p["offset"]) for p in problems] == [("bad_value", offset)] * 2  # only the kind asked for
