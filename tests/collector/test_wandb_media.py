"""W&B histograms and images (``wandb.Histogram``, ``wandb.Image``, lists of images) read from a real offline run's
``.wandb`` log and from JSONL history, compared with wandb's own records; hostile values refused in words."""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from tau_collector.cli import main
from tau_collector.expstore.read.reader import StoreReader
from tau_collector.sources.base import Position
from tau_collector.sources.history import HistorySource
from tau_collector.sources.leveldb_log import read_log
from tau_collector.sources.read_limits import Limits
from tau_collector.sources.records import ProblemKind
from tau_collector.sources.wandb import WandbLogSource, WandbSource
from tau_collector.sources.wandb_log import FILE_HEADER
from tau_collector.sources.wandb_media import ImageWaits, histogram_buckets, read_image_file
from taunotebook import cli

from .wandb_runs import GRID_STEP, IMAGE_STEPS, STEPS, WandbRun, wandb_items, wandb_records
from .wandb_runs import wandb_run_fixture as wandb_run_fixture

T0 = 1_760_000_000.25


# -- what wandb itself wrote -------------------------------------------------------------------------------------


def wandb_rows(run: WandbRun) -> list[dict]:
    """The history rows as wandb's own generated classes decode them (``_step`` from the record's step)."""
    log = read_log(run.log, 0, max_bytes=1 << 30, max_records=1 << 30, max_record_bytes=1 << 24,
                   file_header=FILE_HEADER)
    rows = []
    for record in wandb_records([p for _, _, p in log.records]):
        if record.WhichOneof("record_type") == "history":
            row = wandb_items(record.history.item)
            row.setdefault("_step", record.history.step.num)
            rows.append(row)
    return rows


def wandb_buckets(value: dict) -> list[list[float]]:
    """A wandb histogram value as TensorBoard-style ``[left, right, count]`` rows, computed here from its fields."""
    bins, counts = value["bins"], value["values"]
    return [[bins[i], bins[i + 1], float(counts[i])] for i in range(len(counts))]


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def reference(run: WandbRun) -> tuple[dict, dict]:
    """(histograms by step, images by (tag, step) as (width, height, [sha256…], [caption…])) from wandb's records."""
    histograms, images = {}, {}
    files = run.folder / "files"
    for row in wandb_rows(run):
        step = row["_step"]
        histograms[step] = wandb_buckets(row["weights"])
        one = row.get("samples/one")
        if one is not None:
            assert one["_type"] == "image-file"
            images[("samples/one", step)] = (one["width"], one["height"], [sha256_of(files / one["path"])],
                                             [one["caption"]])
        grid = row.get("samples/grid")
        if grid is not None:
            assert grid["_type"] == "images/separated"
            images[("samples/grid", step)] = (grid["width"], grid["height"],
                                              [sha256_of(files / name) for name in grid["filenames"]],
                                              grid["captions"])
    return histograms, images


def read_all(source, source_input=None) -> list:
    """Every batch of a source's (only) input, from the start, as a finished run's."""
    source_input = source_input or source.inputs()[0]
    batches, start = [], Position()
    while True:
        batch = source.read(source_input, start, final=True)
        batches.append(batch)
        if not batch.more:
            return batches
        assert batch.end != start
        start = batch.end


def media_of(batches: list) -> tuple[dict, dict]:
    histograms, images = {}, {}
    for batch in batches:
        for record in batch.media:
            if record.kind == "histograms":
                histograms[record.step] = record.buckets.tolist()
            else:
                images[(record.tag, record.step)] = (record.width, record.height,
                                                     [hashlib.sha256(i).hexdigest() for i in record.images],
                                                     list(record.captions))
    return histograms, images


def jsonl_run(folder: Path, rows: list[dict], files: Path | None = None) -> Path:
    """A W&B run folder whose ``files/wandb-history.jsonl`` holds ``rows`` (older clients' layout), with the media
    files of ``files`` beside it."""
    target = folder / "files"
    if files is not None:
        shutil.copytree(files, target)
    target.mkdir(parents=True, exist_ok=True)
    (target / "wandb-history.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


# -- a real offline run ------------------------------------------------------------------------------------------


def test_the_logs_histograms_and_images_are_wandbs_own(wandb_run: WandbRun) -> None:
    histograms, images = reference(wandb_run)
    assert sorted(histograms) == list(range(STEPS)) and len(images) == len(IMAGE_STEPS) + 1
    batches = read_all(WandbLogSource(str(wandb_run.folder)))
    assert not any(b.problems for b in batches) and not any(b.dropped for b in batches)
    got_histograms, got_images = media_of(batches)
    assert got_histograms == histograms
    assert got_images == images
    # What wandb.Histogram made of the logged values: numpy's 64-bin histogram.
    for step in (0, 7, STEPS - 1):
        counts, edges = np.histogram(np.arange(step + 3), bins=64)
        assert np.array(got_histograms[step]).tolist() == np.column_stack([edges[:-1], edges[1:], counts]).tolist()
    assert got_images[("samples/grid", GRID_STEP)][3] == ["cell 0", "cell 1", "cell 2"]
    assert got_images[("samples/one", 10)][:2] == (8, 12) and got_images[("samples/one", 10)][3] == ["step 10"]
    # The media carry the row's place, as a scalar of the row does.
    record = next(r for b in batches for r in b.media if r.kind == "images" and r.step == 10)
    row = next(r for b in batches for r in b.rows if r.fields["_step"] == 10)
    assert (record.record, record.offset, record.wall_time) == (row.line, row.offset, row.fields["_timestamp"])


def test_a_jsonl_history_gives_the_same_media(wandb_run: WandbRun, tmp_path: Path) -> None:
    folder = jsonl_run(tmp_path / "run", wandb_rows(wandb_run), wandb_run.folder / "files")
    batches = read_all(WandbSource(str(folder)))
    assert not any(b.problems for b in batches)
    assert media_of(batches) == reference(wandb_run)
    assert [r.fields["loss"] for b in batches for r in b.rows][:2] == [1.0, 0.5]  # the scalars are unchanged


def test_image_bytes_bound_a_batch_and_nothing_is_lost(wandb_run: WandbRun, tmp_path: Path) -> None:
    folder = jsonl_run(tmp_path / "run", wandb_rows(wandb_run), wandb_run.folder / "files")
    for source in (WandbSource(str(folder), limits=Limits(batch_bytes=100)),
                   WandbLogSource(str(wandb_run.folder), limits=Limits(batch_bytes=100))):
        whole = read_all(type(source)(source.run_folder))
        batches = read_all(source)
        # Every image row ends a batch (each image is more than 100 bytes), and the batches add up to the whole.
        assert len(batches) >= len(IMAGE_STEPS) + 1
        assert media_of(batches) == media_of(whole)
        assert [r.fields for b in batches for r in b.rows] == [r.fields for b in whole for r in b.rows]
        assert batches[-1].end == whole[-1].end and not any(b.problems for b in batches)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("layout", ["log", "jsonl"])
def test_a_live_rows_image_file_written_after_the_row_is_waited_for(wandb_run: WandbRun, tmp_path: Path,
                                                                   layout: str) -> None:
    if layout == "log":
        folder = tmp_path / "run"
        shutil.copytree(wandb_run.folder, folder)
        source = WandbLogSource(str(folder))
    else:
        folder = jsonl_run(tmp_path / "run", wandb_rows(wandb_run), wandb_run.folder / "files")
        source = WandbSource(str(folder))
    clock = Clock()
    source.image_waits = ImageWaits(wait_seconds=30, clock=clock)
    (late,) = (folder / "files" / "media" / "images" / "samples").glob("one_10_*.png")
    aside = tmp_path / "aside.png"
    late.rename(aside)  # the job has logged step 10's row, not yet its image file
    (source_input,) = source.inputs()
    _, images = reference(wandb_run)
    whole = media_of(read_all(WandbLogSource(str(wandb_run.folder))))

    first = source.read(source_input, Position(), final=False)
    assert not first.more and not first.problems
    assert max(r.fields["_step"] for r in first.rows) == 9  # the batch ends before step 10's row
    assert sorted(step for tag, step in media_of([first])[1]) == [0, 5]
    again = source.read(source_input, first.end, final=False)  # read again before the file is there
    assert again.end == first.end and not again.rows and not again.problems
    aside.rename(late)
    clock.now = 29.0
    rest = read_all_live(source, source_input, first.end)
    assert media_of([first, *rest]) == whole
    assert media_of([first, *rest])[1][("samples/one", 10)] == images[("samples/one", 10)]
    assert not any(b.problems for b in rest)


def read_all_live(source, source_input, start: Position) -> list:
    batches = []
    while True:
        batch = source.read(source_input, start, final=False)
        batches.append(batch)
        if not batch.more:
            return batches
        start = batch.end


@pytest.mark.parametrize("final", [False, True])
def test_an_image_file_that_never_appears_is_reported_after_the_wait_or_at_the_end(wandb_run: WandbRun,
                                                                                   tmp_path: Path,
                                                                                   final: bool) -> None:
    folder = tmp_path / "run"
    shutil.copytree(wandb_run.folder, folder)
    source = WandbLogSource(str(folder))
    clock = Clock()
    source.image_waits = ImageWaits(wait_seconds=30, clock=clock)
    (gone,) = (folder / "files" / "media" / "images" / "samples").glob("one_10_*.png")
    gone.unlink()
    (source_input,) = source.inputs()
    waited = source.read(source_input, Position(), final=False)
    assert max(r.fields["_step"] for r in waited.rows) == 9
    clock.now = 30.0 if not final else 1.0  # the wait is over, or the run has completed
    batch = source.read(source_input, waited.end, final=final)
    assert [r.fields["_step"] for r in batch.rows][:1] == [10] and batch.end.offset > waited.end.offset
    (problem,) = batch.problems
    assert problem.kind is ProblemKind.BAD_VALUE
    assert f"image file 'media/images/samples/{gone.name}' is missing from" in problem.message
    assert "the image was skipped" in problem.message
    assert ("samples/one", 10) not in media_of([batch])[1] and ("samples/one", 20) in media_of([batch])[1]


def test_image_waits_hold_one_row_per_input_for_a_bounded_time() -> None:
    clock = Clock()
    waits = ImageWaits(wait_seconds=5, clock=clock)
    assert waits.wait("a", 100, final=False)
    clock.now = 4.9
    assert waits.wait("a", 100, final=False)
    clock.now = 5.0
    assert not waits.wait("a", 100, final=False)  # waited long enough: read it now, without its image
    assert waits.wait("a", 200, final=False)  # another row: waits afresh (clock 5.0)
    assert not waits.wait("a", 200, final=True)  # the run is complete: nothing more will be written
    assert waits.wait("b", 7, final=False)
    waits.passed("b", 8)  # read past it
    clock.now = 100.0
    assert waits.wait("b", 7, final=False)  # a new wait, not the old one's


def test_dump_kind_prints_wandbs_histograms_and_images(wandb_run: WandbRun, tmp_path: Path, capsysbinary) -> None:
    histograms, images = reference(wandb_run)
    folder = jsonl_run(tmp_path / "run", wandb_rows(wandb_run), wandb_run.folder / "files")
    for path in (wandb_run.log, folder / "files" / "wandb-history.jsonl", wandb_run.folder):
        capsysbinary.readouterr()
        assert main(["dump", "--kind", "histograms", str(path)]) == 0
        out, err = capsysbinary.readouterr()
        rows = [json.loads(line) for line in out.splitlines()]
        assert not err and {r["step"]: r["buckets"] for r in rows} == histograms and len(rows) == STEPS
        assert {r["tag"] for r in rows} == {"weights"}
        assert main(["dump", "--kind", "images", str(path)]) == 0
        out, err = capsysbinary.readouterr()
        rows = [json.loads(line) for line in out.splitlines()]
        assert not err and {(r["tag"], r["step"]): (r["width"], r["height"], r["images"], r["captions"])
                            for r in rows} == {k: tuple(v) for k, v in images.items()}
        assert {r["content_type"] for r in rows} == {"image/png"}
    # Scalars of the log: what the projection reads (nested keys joined with ".").
    capsysbinary.readouterr()
    assert main(["dump", str(wandb_run.log)]) == 0
    rows = [json.loads(line) for line in capsysbinary.readouterr().out.splitlines()]
    acc = [r["value"] for r in rows if r["metric"] == "val.acc"]
    assert acc == [r["val"]["acc"] for r in wandb_run.logged["rows"]]


def test_import_stores_the_histograms_and_captioned_images(wandb_run: WandbRun, tmp_path: Path, capsys) -> None:
    histograms, images = reference(wandb_run)
    store = tmp_path / "store"
    assert cli.main(["import", str(wandb_run.folder.parent.parent), "--store", str(store), "-q"]) == 0
    assert f"{STEPS + len(images)} histograms, images and text stored" in capsys.readouterr().out
    reader = StoreReader(store)
    series = reader.histograms("wandblog-run", "weights", max_steps=STEPS)
    assert series.steps.tolist() == list(range(STEPS))
    assert [b.tolist() for b in series.buckets] == [histograms[s] for s in range(STEPS)]
    for (tag, step), (width, height, digests, captions) in images.items():
        found = reader.images_near("wandblog-run", tag, step)
        assert found is not None and found.step == step
        assert [(i.digest, i.caption, i.tags["width"], i.tags["height"]) for i in found.images] == [
            ("sha256:" + d, c, width, height) for d, c in zip(digests, captions, strict=True)]


# -- shapes by hand: packedBins, the TauGrid history --------------------------------------------------------------


def test_packed_bins_are_evenly_spaced_edges() -> None:
    value = {"_type": "histogram", "packedBins": {"min": -1.0, "size": 0.5, "count": 4}, "values": [1, 0, 2, 5]}
    assert histogram_buckets(value, 100).tolist() == [[-1.0, -0.5, 1.0], [-0.5, 0.0, 0.0], [0.0, 0.5, 2.0],
                                                      [0.5, 1.0, 5.0]]
    plain = {"_type": "histogram", "bins": [-1.0, -0.5, 0.0, 0.5, 1.0], "values": [1, 0, 2, 5]}
    assert histogram_buckets(plain, 100).tolist() == histogram_buckets(value, 100).tolist()


def row(step: int, **values) -> dict:
    return {"_step": step, "_timestamp": T0 + step, "loss": 1.0 / (step + 1), **values}


def png_bytes(seed: int) -> bytes:
    return b"\x89PNG\r\n\x1a\n" + bytes([seed]) * 40


def image_file(files: Path, name: str, data: bytes, caption: str | None = None) -> dict:
    path = files / "media" / "images" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    value = {"_type": "image-file", "path": f"media/images/{name}", "sha256": hashlib.sha256(data).hexdigest(),
             "size": len(data), "width": 3, "height": 2, "format": "png"}
    return value if caption is None else {**value, "caption": caption}


def test_packed_bins_nested_keys_and_tables_in_a_jsonl_history(tmp_path: Path) -> None:
    files = tmp_path / "run" / "files"
    files.mkdir(parents=True)
    packed = {"_type": "histogram", "packedBins": {"min": 0, "size": 2, "count": 2}, "values": [3, 4]}
    rows = [row(0, grads={"w": packed, "acc": 0.5}, table={"_type": "table-file", "path": "x"},
                pic=image_file(files, "a.png", png_bytes(1), "first"))]
    folder = jsonl_run(tmp_path / "run", rows)
    (batch,) = read_all(WandbSource(str(folder)))
    assert not batch.problems and batch.dropped == {"wandb_table": 1}
    (histogram,) = [m for m in batch.media if m.kind == "histograms"]
    (image,) = [m for m in batch.media if m.kind == "images"]
    assert (histogram.tag, histogram.step, histogram.buckets.tolist()) == ("grads.w", 0, [[0, 2, 3], [2, 4, 4]])
    assert (image.tag, image.images, image.captions, image.wall_time) == ("pic", (png_bytes(1),), ("first",), T0)
    assert batch.rows[0].fields == {"_step": 0, "_timestamp": T0, "loss": 1.0, "grads.acc": 0.5}


def test_the_tau_history_reads_top_level_media_beside_its_files(tmp_path: Path) -> None:
    history = tmp_path / "metrics-history-attempt-0"
    history.mkdir()
    value = {"_type": "histogram", "bins": [0, 1, 2], "values": [5, 6]}
    rows = [row(3, w=value, pic=image_file(history, "p.png", png_bytes(2))), row(4, nested={"w": value})]
    (history / "chunk-000001-1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (batch,) = read_all(HistorySource([str(history / "*.jsonl")]))
    assert not batch.problems
    assert [(m.kind, m.tag, m.step) for m in batch.media] == [("histograms", "w", 3), ("images", "pic", 3)]
    assert batch.media[1].images == (png_bytes(2),)


# -- hostile values ---------------------------------------------------------------------------------------------

HOSTILE_HISTOGRAMS = {
    "a million buckets": ({"bins": list(range(1_000_001)), "values": [0] * 1_000_000}, "more than the limit"),
    "packedBins.count of 2^31": ({"packedBins": {"min": 0, "size": 1, "count": 2**31}, "values": [1]},
                                 "outside 0..33333"),
    "packedBins.count not the values": ({"packedBins": {"min": 0, "size": 1, "count": 3}, "values": [1]},
                                        "not the number of values"),
    "negative size": ({"packedBins": {"min": 0, "size": -1, "count": 1}, "values": [1]}, "the size positive"),
    "NaN size": ({"packedBins": {"min": 0, "size": math.nan, "count": 1}, "values": [1]}, "must be finite"),
    "zero size": ({"packedBins": {"min": 0, "size": 0, "count": 1}, "values": [1]}, "the size positive"),
    "infinite min": ({"packedBins": {"min": -math.inf, "size": 1, "count": 1}, "values": [1]}, "must be finite"),
    "fractional count": ({"packedBins": {"min": 0, "size": 1, "count": 1.5}, "values": [1]}, "not a whole number"),
    "packedBins not a mapping": ({"packedBins": [0, 1, 1], "values": [1]}, "not {min, size, count}"),
    "one edge short": ({"bins": [0, 1], "values": [1, 2]}, "2 bin edges for 2 values"),
    "string counts": ({"bins": [0, 1], "values": ["1"]}, "not all numbers"),
    "boolean counts": ({"bins": [0, 1], "values": [True]}, "not all numbers"),
    "NaN count": ({"bins": [0, 1], "values": [math.nan]}, "not all finite"),
    "negative count": ({"bins": [0, 1], "values": [-1]}, "negative"),
    "decreasing edges": ({"bins": [2, 1, 0], "values": [1, 1]}, "decrease"),
    "no values": ({"bins": [0, 1]}, "without a list of values"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_HISTOGRAMS))
def test_a_hostile_histogram_is_refused_in_words_and_the_row_goes_through(case: str, tmp_path: Path) -> None:
    fields, words = HOSTILE_HISTOGRAMS[case]
    with pytest.raises(ValueError, match=words.replace("{", r"\{").replace("^", r"\^")):
        histogram_buckets({"_type": "histogram", **fields}, Limits().max_tensor_values)
    good = {"_type": "histogram", "bins": [0, 1], "values": [1]}
    folder = jsonl_run(tmp_path / "run", [row(0, bad={"_type": "histogram", **fields}, good=good), row(1)])
    batches = read_all(WandbSource(str(folder)))
    (problem,) = [p for b in batches for p in b.problems]
    assert problem.kind == ProblemKind.BAD_VALUE and problem.line == 1 and "'bad'" in problem.message
    assert [m.tag for b in batches for m in b.media] == ["good"]
    assert [r.fields["loss"] for b in batches for r in b.rows] == [1.0, 0.5]


def hostile_images(files: Path, outside: Path) -> dict[str, tuple[dict, str]]:
    good = image_file(files, "ok.png", png_bytes(3))
    (files / "media" / "images" / "out.png").symlink_to(outside)
    (files / "media" / "images" / "dir.png").mkdir()
    os.mkfifo(files / "media" / "images" / "fifo.png")
    return {
        "escaping with ..": ({**good, "path": "../../etc/passwd"}, "leaves"),
        "absolute": ({**good, "path": "/etc/passwd"}, "not a relative path"),
        "dot-dot inside": ({**good, "path": "media/../../outside.png"}, "leaves"),
        "a symbolic link out": ({**good, "path": "media/images/out.png"}, "symbolic link out"),
        "a directory": ({**good, "path": "media/images/dir.png"}, "not a regular file"),
        "a fifo": ({**good, "path": "media/images/fifo.png"}, "not a regular file"),
        "another size": ({**good, "size": 7}, "its row says 7"),
        "missing": ({**good, "path": "media/images/gone.png"}, "is missing from"),
        "no path": ({k: v for k, v in good.items() if k != "path"}, "without a path"),
        "a list without filenames": ({"_type": "images/separated", "count": 2}, "without a list of filenames"),
    }


def test_a_hostile_image_reference_is_refused_in_words_and_the_row_goes_through(tmp_path: Path) -> None:
    outside = tmp_path / "secret.png"
    outside.write_bytes(png_bytes(9))
    files = tmp_path / "run" / "files"
    cases = hostile_images(files, outside)
    rows = [row(step, bad=value, good=image_file(files, "ok.png", png_bytes(3)))
            for step, (value, _) in enumerate(cases.values())]
    folder = jsonl_run(tmp_path / "run", rows)
    (batch,) = read_all(WandbSource(str(folder)))
    assert [(p.kind, p.line) for p in batch.problems] == [(ProblemKind.BAD_VALUE, n + 1) for n in range(len(cases))]
    for problem, (case, (_, words)) in zip(batch.problems, cases.items(), strict=True):
        assert words in problem.message and "'bad'" in problem.message, case
    # Every row's good image and every scalar went through; nothing outside files/ was read.
    assert [(m.tag, m.images) for m in batch.media] == [("good", (png_bytes(3),))] * len(cases)
    assert len(batch.rows) == len(cases) and all("loss" in r.fields for r in batch.rows)


def test_image_files_and_lists_larger_than_the_limits_are_refused(tmp_path: Path) -> None:
    files = tmp_path / "run" / "files"
    big = image_file(files, "big.png", png_bytes(4) * 25)
    with pytest.raises(ValueError, match="more than the limit of 1000"):
        read_image_file(str(files), big["path"], max_bytes=1000)
    many = {"_type": "images/separated", "filenames": ["media/images/big.png"] * 11, "width": 1, "height": 1}
    folder = jsonl_run(tmp_path / "run", [row(0, big=big, many=many)])
    (batch,) = read_all(WandbSource(str(folder), limits=Limits(max_line_bytes=1000, max_tensor_values=10)))
    assert sorted(p.message.split(":")[0] for p in batch.problems) == ["W&B media value 'big'",
                                                                        "W&B media value 'many'"]
    assert "more than the limit of 1000" in batch.problems[0].message
    assert "11 images, more than the limit of 10" in batch.problems[1].message
    assert not batch.media and batch.rows[0].fields["loss"] == 1.0


def test_captions_survive_the_spool() -> None:
    from tau_collector.sources.media import ImageRecord
    from tau_collector.spool.media_record import decode_media_chunk, encode_media_chunk

    record = ImageRecord("", "pic", 3, T0, 3, 2, (png_bytes(1), png_bytes(2)), 4, 100, captions=("a", None))
    _, pieces = encode_media_chunk("run", "h.jsonl", [record, ImageRecord("", "x", 1, T0, 1, 1, (png_bytes(3),), 1, 0)])
    chunk = decode_media_chunk(b"".join(pieces), "test")
    assert [(r.tag, r.images, r.captions) for r in chunk.records] == [
        ("pic", (png_bytes(1), png_bytes(2)), ("a", None)), ("x", (png_bytes(3),), ())]
