"""Histograms, images and text from real writers stored beside the scalars (docs/media.md) and read back as
TensorBoard reads them: by ``taunotebook import`` and by the collector alike, exactly once, never as MetricEvents."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fixtures.tb_writers import (
    reference_media,
    write_tensorboardx_media,
    write_tf_media,
    write_torch_media,
)
from tau_collector.expstore import StoreReader
from tau_collector.expstore.read import media_reads
from tau_collector.expstore.store import ExpStore
from tau_collector.expstore.write.artifacts import local_path_of
from tau_collector.expstore.write.media import write_media
from tau_collector.sinks.base import RunIdentity, Sink
from tau_collector.sources.logdir import discover_runs
from tau_collector.sources.media import MEDIA_KINDS, HistogramRecord, MediaRequest, TextRecord
from tau_collector.sources.tensorboard_run import read_run
from tau_collector.spool.checkpoint import SpoolError
from tau_collector.spool.media_record import decode_media_chunk, encode_media_chunk
from taunotebook.importer import import_paths

from .spooled import spooled
from .wandb_runs import IMAGE_STEPS, WandbRun
from .wandb_runs import wandb_run_fixture as wandb_run_fixture

WRITERS = [write_torch_media, write_tensorboardx_media, write_tf_media]
HARNESS = str(Path(__file__).with_name("crash_points.py"))


def imported(tmp_path: Path, writer=write_torch_media, steps=range(4)) -> tuple[StoreReader, str, Path]:
    path = writer(tmp_path / "logs" / "run", steps=steps)
    summary = import_paths([str(tmp_path / "logs")], tmp_path / "store", clustering="off")
    (run_id,) = summary.run_ids
    return StoreReader(tmp_path / "store"), run_id, path


def stored(reader: StoreReader, run_id: str, kind: str) -> list[dict]:
    """What the store gives back for every step of every tag of ``kind``, in ``dump --kind``'s shape."""
    out = []
    for tag in (t for t in reader.media_tags(run_id) if t.kind == kind):
        if kind == "histograms":
            series = reader.histograms(run_id, tag.tag, max_steps=10_000)
            out += [{"tag": tag.tag, "step": int(s), "wall_time": float(w), "buckets": b.tolist()}
                    for s, w, b in zip(series.steps, series.wall_times, series.buckets, strict=True)]
        elif kind == "text":
            for step in range(tag.step_min, tag.step_max + 1):
                at = reader.text_at(run_id, tag.tag, step)
                if at.step == step:
                    out.append({"tag": tag.tag, "step": step, "wall_time": at.wall_time, "text": list(at.text),
                                "shape": list(at.shape)})
        else:
            for step in range(tag.step_min, tag.step_max + 1):
                at = reader.images_near(run_id, tag.tag, step)
                if at.step != step:
                    continue
                files = [local_path_of(reader.store, row).read_bytes() for row in at.images]
                types = {row.content_type for row in at.images}
                out.append({"tag": tag.tag, "step": step, "wall_time": at.images[0].tags["wall_time"],
                            "width": at.images[0].tags["width"], "height": at.images[0].tags["height"],
                            "images": [hashlib.sha256(f).hexdigest() for f in files],
                            "content_type": types.pop() if len(types) == 1 else None})
    return sorted(out, key=lambda row: (row["tag"], row["step"]))


def by_tag_and_step(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda row: (row["tag"], row["step"]))


# --- stored as TensorBoard reads them ------------------------------------------------------------------------------


@pytest.mark.parametrize("writer", WRITERS, ids=lambda w: w.__name__)
@pytest.mark.parametrize("kind", ["histograms", "images", "text"])
def test_an_import_stores_every_value_tensorboard_reads(tmp_path, writer, kind):
    reader, run_id, path = imported(tmp_path, writer)
    reference = by_tag_and_step(reference_media(path, kind))
    assert reference
    assert stored(reader, run_id, kind) == reference


def test_images_are_content_addressed_artifacts_and_the_same_image_is_one_file(tmp_path):
    reader, run_id, _ = imported(tmp_path)
    rows = reader.artifacts(run_id, type="image")
    assert {r.name for r in rows} == {"sample", "batch"}
    assert all(r.uri.startswith("artifacts/sha256/") and r.digest == "sha256:" + r.uri.rsplit("/", 1)[1] for r in rows)
    assert all(local_path_of(reader.store, r).stat().st_size == r.size_bytes for r in rows)
    # A second run logging the same pictures adds rows, not files.
    files = sorted(p for p in (tmp_path / "store" / "artifacts" / "sha256").rglob("*") if p.is_file())
    write_torch_media(tmp_path / "again" / "twin")
    import_paths([str(tmp_path / "again")], tmp_path / "store", clustering="off")
    assert sorted(p for p in (tmp_path / "store" / "artifacts" / "sha256").rglob("*") if p.is_file()) == files


def test_tags_are_listed_with_their_counts_and_never_become_metrics(tmp_path):
    reader, run_id, _ = imported(tmp_path, steps=range(5))
    tags = {(t.kind, t.tag): (t.count, t.step_min, t.step_max) for t in reader.media_tags(run_id)}
    assert tags == {("histograms", name): (5, 0, 4) for name in ("weights", "constant", "ints", "raw")} | {
        ("images", "sample"): (5, 0, 4), ("images", "batch"): (5, 0, 4), ("text", "note/text_summary"): (5, 0, 4)}
    assert reader.metric_names(run_id) == ["loss"]


def test_delivering_the_same_media_again_or_overlapping_adds_nothing_a_reader_sees(tmp_path):
    reader, run_id, path = imported(tmp_path)
    before = {kind: stored(reader, run_id, kind) for kind in ("histograms", "images", "text")}
    records = [HistogramRecord("", "weights", 2, 9.0, np.array([[0.0, 1.0, 3.0]]), 0, 0)]
    # The import's chunk for the whole file again, and the same frames under another delivery key.
    (run,) = discover_runs(path.parent)  # the run as the import names it (its own directory)
    (batch,) = read_run(run, media=MediaRequest(frozenset(MEDIA_KINDS)))
    store = ExpStore(tmp_path / "store", writable=True)
    for key in ("replayed", "read-again-from-an-older-checkpoint"):
        write_media(store, key, run_id, str(path), batch.media)
    fresh = StoreReader(tmp_path / "store")
    assert {kind: stored(fresh, run_id, kind) for kind in before} == before
    assert {t.tag: t.count for t in fresh.media_tags(run_id)}["weights"] == 4
    # A value from another frame at a step already there is a restart's: the later one is shown.
    write_media(store, "restarted", run_id, str(path), records)
    later = StoreReader(tmp_path / "store").histogram_at(run_id, "weights", 2)
    assert later.buckets[0].tolist() == [[0.0, 1.0, 3.0]]


# --- reads shaped for a view -----------------------------------------------------------------------------------------


def test_a_long_histogram_tag_is_reduced_to_max_steps_keeping_the_step_asked_for(tmp_path):
    store = ExpStore(tmp_path / "store", create=True)
    records = [HistogramRecord("", "w", step, 1000.0 + step, np.array([[step, step + 1.0, 2.0]]), step, 10 * step)
               for step in range(1000)]
    write_media(store, "k", "r", "/logs/events", records)
    reader = StoreReader(tmp_path / "store")
    series = reader.histograms("r", "w", max_steps=50, keep=(513,))
    assert len(series.steps) <= 50 and series.total == 1000 and series.reduced
    assert 513 in series.steps.tolist() and series.steps[0] == 0 and series.steps[-1] == 999
    assert [b.tolist() for b in series.buckets] == [[[s, s + 1.0, 2.0]] for s in series.steps.tolist()]
    bands = reader.histograms("r", "w", step_min=100, step_max=199, max_steps=100, buckets=False)
    assert bands.steps.tolist() == list(range(100, 200)) and bands.buckets is None and not bands.reduced
    assert bands.summary[:, 0].tolist() == [2.0] * 100  # each step's count
    assert reader.histogram_at("r", "w", 700).steps.tolist() == [700]
    assert reader.histogram_at("r", "w", 5000) is None


@pytest.mark.parametrize("ask", [{"max_steps": 0}, {"max_steps": 10**9}, {"step_min": 2**63}])
def test_a_histogram_ask_out_of_bounds_is_a_clear_error(tmp_path, ask):
    reader, run_id, _ = imported(tmp_path)
    with pytest.raises(ValueError, match="max_steps|int64"):
        reader.histograms(run_id, "weights", **ask)


def test_images_and_text_are_read_at_the_nearest_step(tmp_path):
    reader, run_id, _ = imported(tmp_path, steps=[0, 10, 20])
    assert reader.images_near(run_id, "sample", 14).step == 10
    assert reader.images_near(run_id, "sample", 16).step == 20
    assert reader.images_near(run_id, "sample", -5).step == 0
    assert reader.text_at(run_id, "note/text_summary", 999).text == ("step **20**: naïve ✓",)
    assert reader.images_near(run_id, "no such tag", 1) is None


def test_an_answer_that_would_decode_too_many_buckets_is_refused(tmp_path, monkeypatch):
    store = ExpStore(tmp_path / "store", create=True)
    wide = np.column_stack([np.arange(10_000.0), np.arange(1.0, 10_001.0), np.ones(10_000)])
    write_media(store, "k", "r", "/logs/events", [HistogramRecord("", "w", s, 1.0, wide, s, s) for s in range(3)])
    monkeypatch.setattr(media_reads, "MAX_ANSWER_VALUES", 50_000)
    with pytest.raises(ValueError, match="fewer steps"):
        StoreReader(tmp_path / "store").histograms("r", "w")
    assert StoreReader(tmp_path / "store").histograms("r", "w", max_steps=1).steps.tolist() == [0]


def test_a_store_written_before_media_were_kept_is_read(tmp_path):
    _, run_id, _ = imported(tmp_path)
    with sqlite3.connect(tmp_path / "store" / "index.sqlite") as conn:
        conn.execute("DROP TABLE media_files")
        conn.execute("DELETE FROM artifacts")
    old = StoreReader(tmp_path / "store")
    assert old.media_tags(run_id) == []
    assert old.histograms(run_id, "weights").total == 0
    assert old.text_at(run_id, "note/text_summary", 1) is None
    assert [s.metric_name for s in old.metric_summaries(run_id)] == ["loss"]


# --- the spool record -----------------------------------------------------------------------------------------------


def test_a_media_spool_record_round_trips_and_a_damaged_one_is_refused(tmp_path):
    records = [HistogramRecord("r", "h", 1, 2.5, np.array([[0.0, 1.0, 4.0]]), 3, 40),
               TextRecord("r", "t", 2, 3.5, ("a", "ü"), (2,), 4, 90)]
    key, pieces = encode_media_chunk("run", "/x/events", records)
    chunk = decode_media_chunk(b"".join(pieces), "rec")
    assert chunk.key == key and chunk.run_id == "run" and chunk.source == "/x/events"
    assert chunk.records[0].buckets.tolist() == [[0.0, 1.0, 4.0]] and chunk.records[1].text == ("a", "ü")
    assert chunk.identity is None  # a record written without the run's identity (as before it was carried)
    with pytest.raises(SpoolError, match="rec"):
        decode_media_chunk(b"".join(pieces)[:-3], "rec")
    identity = RunIdentity("p", "e", "g", (("tau.workspace", "w"),))
    key, pieces = encode_media_chunk("run", "/x/events", records, identity)
    assert decode_media_chunk(b"".join(pieces), "rec").identity == identity


def test_a_sink_of_metric_events_ignores_media():
    assert "deliver_media" not in {name for cls in Sink.__subclasses__() if cls.__module__.startswith(
        "tau_collector.sinks.adx") for name in vars(cls)}


# --- the collector: crash-safe by the spool's rules ----------------------------------------------------------------


def _collect(work: Path, logdir: Path, batch_bytes: int = 4000) -> list[str]:
    # Small batches: the event file is several chunks, each with histograms, images and text.
    return ["collect", "--run", "r", "--project", "p", "--experiment", "e", "--group", "g",
            "--out", str(work / "out"), "--tfevents", str(logdir), "--sink", "expstore",
            "--store", str(work / "store"), "--batch-bytes", str(batch_bytes),
            "--completion-file", str(logdir / "completion.json")]


def _harness(mode: str, n: int | str, log: Path, argv: list[str], timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, HARNESS, mode, str(n), str(log), "--", *argv],
                          capture_output=True, text=True, timeout=timeout)


def _check_exactly_once(work: Path, reference: dict[str, list[dict]], where: str, steps: int = 6) -> None:
    reader = StoreReader(ExpStore(work / "store"))
    for kind, rows in reference.items():
        assert stored(reader, "r", kind) == rows, f"{kind}: {where}"
    counts = {t.tag: t.count for t in reader.media_tags("r")}
    assert counts == {"weights": steps, "constant": steps, "ints": steps, "raw": steps, "sample": steps,
                      "batch": steps, "note/text_summary": steps}, where
    assert {s.metric_name: s.count for s in reader.metric_summaries("r")} == {"loss": steps,
                                                                              "tau/run_status": 1}, where
    assert spooled(work / "out") == [], where


def test_the_collector_stores_what_the_import_stores(tmp_path):
    path = write_torch_media(tmp_path / "logs", steps=range(6))
    (tmp_path / "logs" / "completion.json").write_text("")
    done = _harness("count", 0, tmp_path / "points.log", _collect(tmp_path, tmp_path / "logs"))
    assert done.returncode == 0, done.stderr
    reference = {kind: by_tag_and_step(reference_media(path, kind)) for kind in ("histograms", "images", "text")}
    _check_exactly_once(tmp_path, reference, "uninterrupted")


def _media_points(trace: str) -> list[int]:
    """The durability points of a trace that concern media: the spool record's write, fsync, rename and removal,
    the image and media files' publication, and every COMMIT (where their rows become visible)."""
    points = []
    for line in trace.splitlines():
        parts = line.split(" ", 3)
        if len(parts) == 4 and (parts[2] == "COMMIT" or any(m in parts[3] for m in ("/media", "/artifacts/"))):
            points.append(int(parts[0]))
    return points


@pytest.mark.slow
def test_a_restart_after_a_stop_at_any_media_durability_point_stores_media_exactly_once(tmp_path):
    """As ``test_crash_points`` for scalars, at every point where media become durable or visible (the others are
    the scalars' and theirs): a chunk of histograms, images and text is stored once whatever instant kill -9 hits."""
    path = write_torch_media(tmp_path / "logs", steps=range(3))
    (tmp_path / "logs" / "completion.json").write_text("")
    reference = {kind: by_tag_and_step(reference_media(path, kind)) for kind in ("histograms", "images", "text")}
    (tmp_path / "trace").mkdir()
    traced = _harness("trace", 0, tmp_path / "trace.log", _collect(tmp_path / "trace", tmp_path / "logs", 16000))
    assert traced.returncode == 0, traced.stderr
    points = _media_points((tmp_path / "trace.log").read_text())
    assert any("/media/" in line and ".media" in line for line in (tmp_path / "trace.log").read_text().splitlines())
    assert len(points) > 30
    sweep = _harness("sweep", ",".join(map(str, points)), tmp_path / "sweep.log",
                     _collect(Path("{work}"), tmp_path / "logs", 16000), timeout=3600)  # ~80 points, 2 runs each
    assert sweep.returncode == 0, sweep.stderr
    for n in points:
        work = tmp_path / f"stop-{n:03d}"
        where = (work / "point").read_text().strip()
        stopped, restarted = map(int, (work / "restart").read_text().split())
        assert (stopped, restarted) == (137, 0), f"restart after a stop at {where}: {sweep.stderr}"
        assert json.loads((work / "stdout").read_text())["completed"] is True, where
        _check_exactly_once(work, reference, f"restart after a stop at {where}", steps=3)


# --- the files themselves kept with the run -------------------------------------------------------------------------


def history(path: Path, rows: int = 5) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"_step": s, "_timestamp": 1_790_000_000 + s, "loss": 1 / (s + 1)}) + "\n"
                            for s in range(rows)))
    return path


def test_an_import_copies_the_files_it_read_into_the_run_as_taugrid_does(tmp_path):
    source = history(tmp_path / "in" / "history.jsonl")
    reader, run_id, event_file = imported(tmp_path)
    summary = import_paths([str(source)], tmp_path / "store", clustering="off")
    (jsonl_run,) = summary.run_ids
    (row,) = reader.artifacts(jsonl_run, type="metrics-jsonl")
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    assert row.uri == f"artifacts/{jsonl_run}/jsonl/{digest[:12]}-history.jsonl"
    assert row.artifact_id == f"jsonl-history-{jsonl_run}-{digest[:12]}"
    assert (row.digest, row.size_bytes) == ("sha256:" + digest, source.stat().st_size)
    assert local_path_of(reader.store, row).read_bytes() == source.read_bytes()
    (events,) = reader.artifacts(run_id, type="tensorboard")
    assert events.uri == f"artifacts/{run_id}/tensorboard/{run_id}/{event_file.name}"
    assert local_path_of(reader.store, events).read_bytes() == event_file.read_bytes()
    assert events.digest == "sha256:" + hashlib.sha256(event_file.read_bytes()).hexdigest()


def test_a_store_rebuilt_from_a_runs_artifacts_equals_the_original(tmp_path):
    original, run_id, _ = imported(tmp_path, steps=range(6))
    kept = tmp_path / "store" / "artifacts" / run_id / "tensorboard"
    (rebuilt_id,) = import_paths([str(kept)], tmp_path / "rebuilt", clustering="off").run_ids
    rebuilt = StoreReader(tmp_path / "rebuilt")
    assert rebuilt_id == run_id
    assert rebuilt.media_tags(run_id) == original.media_tags(run_id)
    for kind in ("histograms", "images", "text"):
        assert stored(rebuilt, run_id, kind) == stored(original, run_id, kind)
    assert rebuilt.metric_names(run_id) == original.metric_names(run_id)
    for metric in original.metric_names(run_id):
        a, b = original.rows(run_id, metric), rebuilt.rows(run_id, metric)
        assert (a.step.tolist(), a.value.tolist()) == (b.step.tolist(), b.value.tolist())


def _kept(reader: StoreReader, run_id: str) -> list[tuple]:
    return sorted((r.type, r.name, r.digest, r.size_bytes) for r in reader.artifacts(run_id, limit=10_000))


def test_a_store_rebuilt_from_a_wandb_runs_artifacts_equals_the_original_with_its_images(wandb_run: WandbRun,
                                                                                        tmp_path):
    assert import_paths([str(wandb_run.folder)], tmp_path / "store", clustering="off").run_ids == ["wandblog-run"]
    original, run_id = StoreReader(tmp_path / "store"), "wandblog-run"
    kept = _kept(original, run_id)
    media = [(name, size) for kind, name, _, size in kept if kind == "wandb-media"]
    on_disk = sorted(("files/" + p.relative_to(wandb_run.folder / "files").as_posix(), p.stat().st_size)
                     for p in (wandb_run.folder / "files" / "media").rglob("*") if p.is_file())
    assert media == on_disk and len(media) == len(IMAGE_STEPS) + 3  # every file the history's images name
    folder = tmp_path / "store" / "artifacts" / run_id / "wandb-log"
    (rebuilt_id,) = import_paths([str(folder)], tmp_path / "rebuilt", clustering="off").run_ids
    rebuilt = StoreReader(tmp_path / "rebuilt")
    assert rebuilt_id == run_id
    assert rebuilt.media_tags(run_id) == original.media_tags(run_id)
    assert len(stored(original, run_id, "images")) == len(IMAGE_STEPS) + 1
    for kind in ("histograms", "images", "text"):
        assert stored(rebuilt, run_id, kind) == stored(original, run_id, kind)
    assert rebuilt.metric_names(run_id) == original.metric_names(run_id)
    for metric in original.metric_names(run_id):
        a, b = original.rows(run_id, metric), rebuilt.rows(run_id, metric)
        assert (a.step.tolist(), a.value.tolist()) == (b.step.tolist(), b.value.tolist())
    assert _kept(rebuilt, run_id) == kept


def _media_files(reader: StoreReader, run_id: str) -> list[tuple[Path, Path | None]]:
    """Each ``wandb-media`` copy of the run beside the content-addressed file of the same digest (None: none)."""
    out = []
    for row in reader.artifacts(run_id, type="wandb-media", limit=10_000):
        hexdigest = row.digest.removeprefix("sha256:")
        stored = reader.store.absolute(f"artifacts/sha256/{hexdigest[:2]}/{hexdigest}")
        out.append((local_path_of(reader.store, row), stored if stored.exists() else None))
    return out


def test_a_wandb_runs_images_are_stored_once_the_media_copy_a_hard_link(wandb_run: WandbRun, tmp_path):
    import_paths([str(wandb_run.folder)], tmp_path / "store", clustering="off")
    files = _media_files(StoreReader(tmp_path / "store"), "wandblog-run")
    assert len(files) == len(IMAGE_STEPS) + 3 and all(stored is not None for _, stored in files)
    for kept, stored in files:
        assert kept.stat().st_ino == stored.stat().st_ino and kept.stat().st_nlink >= 2
        assert kept.read_bytes() == stored.read_bytes()


def test_where_the_filesystem_cannot_link_the_media_are_copied_with_the_same_rows(wandb_run: WandbRun, tmp_path,
                                                                                   monkeypatch):
    import_paths([str(wandb_run.folder)], tmp_path / "linked", clustering="off")

    real_link = os.link

    def refuse(src, dst, *args, **kwargs):  # only the media copies' links (the store links its own files too)
        if "/artifacts/sha256/" in Path(src).as_posix():
            raise OSError(18, "Invalid cross-device link")
        return real_link(src, dst, *args, **kwargs)

    monkeypatch.setattr("tau_collector.expstore.write.source_files.os.link", refuse)
    import_paths([str(wandb_run.folder)], tmp_path / "copied", clustering="off")
    copied = StoreReader(tmp_path / "copied")
    assert _kept(copied, "wandblog-run") == _kept(StoreReader(tmp_path / "linked"), "wandblog-run")
    files = _media_files(copied, "wandblog-run")
    assert any(stored is not None for _, stored in files)
    for kept, stored in files:
        if stored is not None:
            assert kept.stat().st_ino != stored.stat().st_ino and kept.read_bytes() == stored.read_bytes()


def test_the_collector_registers_the_files_it_reads_with_digest_and_size_once_complete(tmp_path):
    event_file = write_torch_media(tmp_path / "logs", steps=range(3))
    source = history(tmp_path / "hist" / "history.jsonl")
    (tmp_path / "logs" / "completion.json").write_text("")
    argv = [*_collect(tmp_path, tmp_path / "logs"), "--history", str(source)]
    done = _harness("count", 0, tmp_path / "points.log", argv)
    assert done.returncode == 0, done.stderr
    reader = StoreReader(tmp_path / "store")
    rows = {r.type: r for r in reader.artifacts("r") if r.type != "image"}
    assert rows["tensorboard"].uri == str(event_file) and rows["metrics-jsonl"].uri == str(source)
    for row in rows.values():
        data = Path(row.uri).read_bytes()
        assert (row.digest, row.size_bytes) == ("sha256:" + hashlib.sha256(data).hexdigest(), len(data))
