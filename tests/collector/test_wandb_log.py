"""W&B's ``run-<id>.wandb`` log, as wandb itself writes it offline: framing, records, torn tails, bad checksums, import."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from tau_collector.collect.loop import Collector, CollectorOptions
from tau_collector.expstore.read.reader import StoreReader
from tau_collector.sinks.expstore import ExpstoreSink
from tau_collector.sources.base import Position, SourceInput
from tau_collector.sources.leveldb_log import (
    BLOCK_SIZE,
    HEADER_SIZE,
    LogStop,
    encode_log,
    leveldb_checksum,
    read_log,
    wandb_checksum,
)
from tau_collector.sources.read_limits import Limits
from tau_collector.sources.records import ProblemKind
from tau_collector.sources.wandb import WandbLogSource
from tau_collector.sources.wandb_log import FILE_HEADER, apply_items, decode_record
from taunotebook import cli

from .wandb_runs import IMAGE_STEPS, LONG, STEPS, WandbRun, wandb_items, wandb_records
from .wandb_runs import wandb_run_fixture as wandb_run_fixture

BIG = 1 << 30


def read_all(path: Path | str, offset: int = 0, count: int = 0, **limits):
    bounds = {"max_bytes": BIG, "max_records": BIG, "max_record_bytes": 1 << 24, **limits}
    return read_log(path, offset, count, file_header=FILE_HEADER, **bounds)


def test_the_log_is_leveldb_framing_of_wandbs_records(wandb_run: WandbRun) -> None:
    data = wandb_run.log.read_bytes()
    log = read_all(wandb_run.log)
    assert log.stop is LogStop.END and log.checkpoint == len(data) and not log.skipped
    payloads = [p for _, _, p in log.records]
    # The same records framed by our writer are the file, byte for byte (blocks, padding, fragments, checksums).
    assert encode_log(payloads, file_header=FILE_HEADER) == data
    assert [n for n, _, _ in log.records] == list(range(1, len(payloads) + 1))
    # One record (the config with a 70 KB value) spans three blocks: FIRST, MIDDLE, LAST.
    assert max(len(p) for p in payloads) > 2 * BLOCK_SIZE
    # Every payload is a Record to wandb's own generated class.
    kinds = [r.WhichOneof("record_type") for r in wandb_records(payloads)]
    assert kinds.count("history") == STEPS and kinds.count("run") == 1


def test_records_decode_as_wandbs_own_classes_decode_them(wandb_run: WandbRun) -> None:
    payloads = [p for _, _, p in read_all(wandb_run.log).records]
    theirs = wandb_records(payloads)
    ours = [decode_record(p) for p in payloads]
    history = [(o.row, wandb_items(t.history.item)) for o, t in zip(ours, theirs, strict=True)
               if t.WhichOneof("record_type") == "history"]
    assert [o for o, _ in history] == [t for _, t in history]
    summary_ours: dict = {}
    summary_theirs: dict = {}
    for o, t in zip(ours, theirs, strict=True):
        apply_items(summary_ours, o.summary_updates, o.summary_removes)
        kind = t.WhichOneof("record_type")
        if kind == "summary":
            summary_theirs.update(wandb_items(t.summary.update))  # top-level keys only in this run
    assert summary_ours["best"] == summary_theirs["best"] == 0.25
    (run,) = [t.run for t in theirs if t.WhichOneof("record_type") == "run"]
    (info,) = [o.run for o in ours if o.kind == "run"]
    assert (info.run_id, info.project, info.display_name) == (run.run_id, run.project, run.display_name)
    assert (info.run_id, info.project, info.display_name) == (wandb_run.logged["run_id"], "wandblog-proj",
                                                              "wandblog-run")


def test_history_rows_are_what_was_logged_and_media_are_read(wandb_run: WandbRun) -> None:
    source = WandbLogSource(str(wandb_run.folder))
    (source_input,) = source.inputs()
    batch = source.read(source_input, Position(), final=True)
    assert not batch.problems and not batch.more
    logged = wandb_run.logged["rows"]
    assert [r.fields["_step"] for r in batch.rows] == list(range(STEPS))
    for row, expected in zip(batch.rows, logged, strict=True):
        assert row.fields["loss"] == expected["loss"]
        assert row.fields["val.acc"] == expected["val"]["acc"]
        assert row.fields["val.deep.f1"] == expected["val"]["deep"]["f1"]
        assert row.fields["epoch"] == expected["epoch"]
        assert not any(k.startswith("weights") for k in row.fields)
    assert batch.rows[7].fields["loss"] == math.inf
    assert not any(k.startswith("samples") for row in batch.rows for k in row.fields)
    # Histograms and images are media now (tests/collector/test_wandb_media.py), nothing is dropped.
    assert batch.dropped == {}
    assert sorted(m.tag for m in batch.media if m.kind == "histograms") == ["weights"] * STEPS
    assert len([m for m in batch.media if m.kind == "images"]) == len(IMAGE_STEPS) + 1


def test_config_summary_and_identity(wandb_run: WandbRun) -> None:
    source = WandbLogSource(str(wandb_run.folder))
    config = source.run_config()
    assert config is not None and config.format == "json" and config.uri == str(wandb_run.log)
    assert config.values == {**wandb_run.logged["config"], **wandb_run.logged["late"]}
    assert config.values["long"] == LONG
    assert source.summary()["best"] == 0.25
    info = source.run_info()
    assert info is not None and info.run_id == wandb_run.logged["run_id"] and info.display_name == "wandblog-run"


def test_bounded_batches_read_the_same_records(wandb_run: WandbRun) -> None:
    whole = read_all(wandb_run.log).records
    got, offset, count = [], 0, 0
    while True:
        log = read_all(wandb_run.log, offset, count, max_bytes=4000, max_records=5)
        assert log.stop is LogStop.END and len(log.records) <= 5
        got += log.records
        offset, count = log.checkpoint, log.count
        if not log.more:
            break
    assert got == whole


def _cuts(whole: list, data: bytes) -> list[int]:
    """Cut points inside records: a header, a small payload, each fragment of the long record."""
    small = next(o for _, o, p in whole[5:] if len(p) > 50)
    long_start = next(o for _, o, p in whole if len(p) > 2 * BLOCK_SIZE)
    next_block = (long_start // BLOCK_SIZE + 1) * BLOCK_SIZE
    return [small + 3, small + HEADER_SIZE + 20, long_start + 100, next_block + 10, next_block + BLOCK_SIZE + 10,
            len(data) - 1]


def test_a_torn_tail_is_read_again_and_never_checkpointed_past(wandb_run: WandbRun, tmp_path: Path) -> None:
    data = wandb_run.log.read_bytes()
    whole = read_all(wandb_run.log).records
    torn = tmp_path / wandb_run.log.name
    for cut in _cuts(whole, data):
        torn.write_bytes(data[:cut])
        log = read_all(torn)
        assert log.stop is LogStop.TRUNCATED, cut
        assert log.checkpoint <= cut and log.records == whole[:len(log.records)]
        # The record the tail is inside starts at the checkpoint: none was lost.
        assert whole[len(log.records)][1] == log.checkpoint or log.checkpoint == cut
        torn.write_bytes(data)  # the writer finishes
        rest = read_all(torn, log.checkpoint, log.count)
        assert rest.stop is LogStop.END and log.records + rest.records == whole


def test_the_source_reports_a_torn_tail_and_a_cut_complete_run(wandb_run: WandbRun, tmp_path: Path) -> None:
    data = wandb_run.log.read_bytes()
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "files").symlink_to(wandb_run.folder / "files")  # the images its rows name
    log_path = folder / wandb_run.log.name
    log_path.write_bytes(data[:len(data) - 5])
    source = WandbLogSource(str(folder))
    (source_input,) = source.inputs()
    live = source.read(source_input, Position(), final=False)
    assert [p.kind for p in live.problems] == [ProblemKind.TRUNCATED] and not live.stopped
    done = source.read(source_input, Position(), final=True)
    assert [p.kind for p in done.problems] == [ProblemKind.CORRUPT] and not done.stopped
    assert live.end == done.end and live.end.offset < len(data) - 5


def test_a_flipped_checksum_byte_stops_the_file_at_its_offset(wandb_run: WandbRun, tmp_path: Path) -> None:
    data = wandb_run.log.read_bytes()
    whole = read_all(wandb_run.log).records
    long_index = next(i for i, (_, _, p) in enumerate(whole) if len(p) > 2 * BLOCK_SIZE)
    middle = (whole[long_index][1] // BLOCK_SIZE + 1) * BLOCK_SIZE  # the long record's MIDDLE fragment
    cases = [(9, whole[9][1], whole[9][1]), (long_index, middle, whole[long_index][1])]
    folder = tmp_path / "run"
    folder.mkdir()
    bad = folder / wandb_run.log.name
    for index, fragment, start in cases:
        flipped = bytearray(data)
        flipped[fragment + HEADER_SIZE + 2] ^= 0x01
        bad.write_bytes(bytes(flipped))
        log = read_all(bad)
        assert log.stop is LogStop.CRC_MISMATCH
        assert log.records == whole[:index] and log.checkpoint == start and log.error_offset == fragment
        assert str(bad) in log.message and f"byte {fragment}" in log.message
        source = WandbLogSource(str(folder))
        batch = source.read(source.inputs()[0], Position(), final=False)
        assert batch.stopped and [p.kind for p in batch.problems] == [ProblemKind.CRC_MISMATCH]
        assert batch.problems[0].offset == fragment and f"{bad} at byte {fragment}" in str(batch.problems[0])
        assert batch.end == Position(start, index)


def test_hostile_headers_and_records_longer_than_the_limit(wandb_run: WandbRun, tmp_path: Path) -> None:
    path = tmp_path / "run-x.wandb"
    # A length its block cannot hold: corrupt, whatever the file's size.
    path.write_bytes(FILE_HEADER + b"\0\0\0\0" + (65535).to_bytes(2, "little") + b"\x01" + bytes(70_000))
    log = read_all(path)
    assert log.stop is LogStop.CORRUPT and log.error_offset == len(FILE_HEADER) and not log.records
    # A length the block could hold but the file does not (yet): a tail to read again.
    path.write_bytes(FILE_HEADER + b"\0\0\0\0" + (30_000).to_bytes(2, "little") + b"\x01" + bytes(100))
    assert read_all(path).stop is LogStop.TRUNCATED
    # An unknown record type, a fragment out of order, a file that is not a W&B log.
    for kind in (0, 5, 3):
        path.write_bytes(_record(kind, b"payload"))
        log = read_all(path)
        assert log.stop is LogStop.CORRUPT and log.error_offset == len(FILE_HEADER), kind
    path.write_bytes(b"\x00" * 64)
    assert read_all(path).stop is LogStop.CORRUPT
    path.write_bytes(FILE_HEADER[:3])
    assert read_all(path).stop is LogStop.TRUNCATED
    # A record longer than the limit is verified and skipped, never held; the rest is read.
    whole = read_all(wandb_run.log).records
    limited = read_all(wandb_run.log, max_record_bytes=10_000)
    assert [(n, o, len(p)) for n, o, p in whole if len(p) > 10_000] == limited.skipped
    assert [r for r in whole if len(r[2]) <= 10_000] == limited.records


def _record(kind: int, payload: bytes) -> bytes:
    return (FILE_HEADER + wandb_checksum(kind, payload).to_bytes(4, "little") + len(payload).to_bytes(2, "little")
            + bytes([kind]) + payload)


def test_leveldb_checksums_are_a_choice_of_the_reader(tmp_path: Path) -> None:
    path = tmp_path / "log"
    payloads = [b"a" * n for n in (0, 1, 40_000, 7, 100_000)]
    path.write_bytes(encode_log(payloads, checksum=leveldb_checksum))
    log = read_log(path, 0, max_bytes=BIG, max_records=BIG, max_record_bytes=BIG, checksum=leveldb_checksum)
    assert log.stop is LogStop.END and [p for _, _, p in log.records] == payloads
    assert read_log(path, 0, max_bytes=BIG, max_records=BIG, max_record_bytes=BIG).stop is LogStop.CRC_MISMATCH


def test_taunotebook_import_of_an_offline_run_stores_its_scalars_and_config(wandb_run: WandbRun,
                                                                          tmp_path: Path, capsys) -> None:
    store = tmp_path / "store"
    assert cli.main(["import", str(wandb_run.folder.parent.parent), "--store", str(store), "-q"]) == 0
    out = capsys.readouterr().out
    assert "imported 1 runs, 4 metrics" in out and "not scalars dropped" not in out
    assert f"{STEPS + len(IMAGE_STEPS) + 1} histograms, images and text stored" in out
    assert "1 run configurations stored" in out
    reader = StoreReader(store)
    (run,) = reader.runs()
    assert set(run.metric_names) == {"loss", "epoch", "val.acc", "val.deep.f1"}
    logged = wandb_run.logged["rows"]
    acc = reader.rows("wandblog-run", "val.acc")
    assert acc.step.tolist() == list(range(STEPS))
    assert acc.value.tolist() == pytest.approx([r["val"]["acc"] for r in logged])
    loss = reader.rows("wandblog-run", "loss")
    assert loss.step.tolist() == list(range(STEPS))
    assert loss.value.tolist() == pytest.approx([r["loss"] for r in logged])  # the logged inf stays inf
    config = reader.run_config("wandblog-run")
    assert config is not None and config.values == {**wandb_run.logged["config"], **wandb_run.logged["late"]}
    assert json.loads(json.dumps(config.values))["optimizer"] == {"name": "adam", "betas": [0.9, 0.999]}


def test_source_input_is_the_log(wandb_run: WandbRun) -> None:
    source = WandbLogSource(str(wandb_run.folder))
    (source_input,) = source.inputs()
    assert isinstance(source_input, SourceInput) and source_input.path == str(wandb_run.log)
    assert source.owns(str(wandb_run.log)) and not source.owns(str(wandb_run.folder / "files" / "x.wandb"))
    assert source.inputs({str(wandb_run.folder / "other")}) == []
    assert WandbLogSource(str(wandb_run.folder), limits=Limits(batch_records=3)).read(
        source_input, Position(), final=False).more


def test_the_sidecar_reads_a_growing_log_and_never_passes_a_torn_tail(wandb_run: WandbRun, tmp_path: Path) -> None:
    data = wandb_run.log.read_bytes()
    whole = read_all(wandb_run.log).records
    history = [o for (_, o, p), r in zip(whole, wandb_records([p for _, _, p in whole]), strict=True)
               if r.WhichOneof("record_type") == "history"]
    wandb_dir = tmp_path / "job"  # $WANDB_DIR: the run folder appears under wandb/ once the job starts
    folder = wandb_dir / "wandb" / wandb_run.folder.name
    folder.mkdir(parents=True)
    shutil.copytree(wandb_run.folder / "files", folder / "files")  # the images its rows name
    (wandb_dir / "wandb" / "latest-run").symlink_to(folder.name)  # as wandb links it: not a second run
    log_path = folder / wandb_run.log.name
    store = tmp_path / "store"

    def collect() -> None:
        Collector(CollectorOptions(run="seed-1", project="demo", experiment="e", group="g", out=str(tmp_path / "out"),
                                   sinks=[ExpstoreSink(store, source_id="t")], wandb=[str(wandb_dir)])).run()

    cut = history[10] + HEADER_SIZE + 5  # inside the 11th history record
    log_path.write_bytes(data[:cut])
    watched = WandbLogSource(str(wandb_dir), watched=True)
    assert [i.path for i in watched.inputs()] == [str(log_path)]
    assert not watched.owns(str(wandb_dir / "wandb" / "latest-run" / log_path.name))
    collect()
    assert StoreReader(store).rows("seed-1", "val.acc").step.tolist() == list(range(10))
    log_path.write_bytes(data)  # the job wrote on
    collect()
    collect()  # again: nothing new, nothing twice
    reader = StoreReader(store)
    assert reader.rows("seed-1", "val.acc").step.tolist() == list(range(STEPS))
    # The media too, each once: every histogram step, and the images of the tag at its steps.
    assert reader.histograms("seed-1", "weights").steps.tolist() == list(range(STEPS))
    assert [reader.images_near("seed-1", "samples/one", s).step for s in IMAGE_STEPS] == list(IMAGE_STEPS)
    # A run's configuration is stored once: what the log held when the sidecar first read it (wandb.init's).
    config = reader.run_config("seed-1")
    assert config is not None and config.values == wandb_run.logged["config"]


def test_a_row_wider_than_the_limit_is_skipped_before_it_is_decoded(wandb_run: WandbRun) -> None:
    source = WandbLogSource(str(wandb_run.folder), limits=Limits(max_row_fields=3))
    batch = source.read(source.inputs()[0], Position(), final=True)
    assert not batch.rows and len(batch.problems) == STEPS
    assert {p.kind for p in batch.problems} == {ProblemKind.BAD_EVENT}
    assert "more than the limit of 3" in batch.problems[0].message


def test_any_prefix_of_the_log_reads_a_prefix_of_its_records(wandb_run: WandbRun, tmp_path: Path) -> None:
    data = wandb_run.log.read_bytes()
    whole = read_all(wandb_run.log).records
    ends = {o for _, o, _ in whole[1:]} | {len(data)}  # where a complete record ends (the next one starts)
    prefix = tmp_path / "prefix.wandb"
    for cut in [*range(0, len(data), 331), BLOCK_SIZE - 3, BLOCK_SIZE, BLOCK_SIZE + HEADER_SIZE]:
        prefix.write_bytes(data[:cut])
        log = read_all(prefix)
        assert log.records == whole[:len(log.records)] and log.checkpoint <= max(cut, len(FILE_HEADER)), cut
        assert log.stop in (LogStop.END, LogStop.TRUNCATED), cut
        if len(log.records) < len(whole):  # the next record is not all there
            assert whole[len(log.records)][1] >= log.checkpoint and min(e for e in ends if e > log.checkpoint) > cut
