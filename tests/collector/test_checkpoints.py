"""A job's checkpoints registered as run artifacts with their step: the glob, the step rule, stability, deletion."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from fixtures.collector import RecordingSink, options, row
from tau_collector.collect.checkpoints import CheckpointScanner, latest_checkpoint, step_of
from tau_collector.collect.loop import Collector
from tau_collector.expstore.read.reader import StoreReader
from tau_collector.expstore.store import ExpStore
from tau_collector.sinks.expstore import ExpstoreSink


@pytest.mark.parametrize(("name", "step"), [
    ("ckpt-1000.pt", 1000), ("step_1000", 1000), ("checkpoint-1000", 1000), ("epoch=3-step=1000.ckpt", 1000),
    ("model-0042.safetensors", 42), ("ckpt-7.tar.gz", 7), ("last.pt", None), ("resnet50-final.pt", None),
    ("model.pt", None),
])
def test_the_step_is_the_number_ending_the_name(tmp_path, name, step):
    path = tmp_path / name
    path.write_bytes(b"x")
    assert step_of(str(path)) == step


def test_a_file_without_a_step_takes_its_directorys(tmp_path):
    (tmp_path / "step_1500").mkdir()
    (tmp_path / "step_1500" / "model.pt").write_bytes(b"w")
    assert step_of(str(tmp_path / "step_1500" / "model.pt")) == 1500
    assert step_of(str(tmp_path / "step_1500")) == 1500


class Registry:
    def __init__(self) -> None:
        self.rows: list = []

    def __call__(self, rows) -> None:
        self.rows.extend(rows)


def _scanner(tmp_path, pattern="ckpt/*", **kw):
    registry, messages = Registry(), []
    return CheckpointScanner("seed-1", [str(tmp_path / pattern)], registry, log=messages.append, settle=0, **kw), \
        registry, messages


def test_a_file_still_growing_is_registered_once_it_is_stable(tmp_path):
    (tmp_path / "ckpt").mkdir()
    path = tmp_path / "ckpt" / "ckpt-100.pt"
    scanner, _registry, _ = _scanner(tmp_path)
    path.write_bytes(b"a" * 10)
    assert scanner.scan() == []  # first sight: not known to be stable yet
    with open(path, "ab") as fh:
        fh.write(b"b" * 10)
    os.utime(path, ns=(1, 2_000_000_000))  # a different mtime whatever the file system's resolution
    assert scanner.scan() == []  # it grew since the last scan
    [row_] = scanner.scan()  # unchanged since: stable
    data = b"a" * 10 + b"b" * 10
    assert (row_.type, row_.step, row_.uri, row_.size_bytes, row_.digest) == (
        "checkpoint", 100, str(path), 20, "sha256:" + hashlib.sha256(data).hexdigest())
    assert scanner.scan() == []  # registered once
    assert scanner.last == row_


def test_settle_keeps_a_recently_modified_file_back(tmp_path):
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "ckpt-1.pt").write_bytes(b"x")
    registry = Registry()
    scanner = CheckpointScanner("seed-1", [str(tmp_path / "ckpt" / "*")], registry, settle=3600)
    scanner.scan()
    assert scanner.scan() == []
    assert [r.step for r in scanner.scan(final=True)] == [1]  # the job ended: everything found counts


def test_a_deleted_checkpoint_stays_listed_and_is_tagged_deleted(tmp_path):
    (tmp_path / "ckpt").mkdir()
    for step in (100, 200):
        (tmp_path / "ckpt" / f"ckpt-{step}.pt").write_bytes(b"%d" % step)
    scanner, registry, messages = _scanner(tmp_path)
    scanner.scan()
    assert [r.step for r in scanner.scan()] == [100, 200]
    os.unlink(tmp_path / "ckpt" / "ckpt-200.pt")
    [gone] = scanner.scan()
    assert (gone.step, gone.tags["deleted"], gone.artifact_id) == (200, True, registry.rows[1].artifact_id)
    assert scanner.last.step == 100  # the last one still on disk
    assert any("deleted" in m for m in messages)
    assert scanner.scan() == []


def test_a_checkpoint_deleted_before_it_was_stable_is_never_registered(tmp_path):
    (tmp_path / "ckpt").mkdir()
    scanner, registry, _ = _scanner(tmp_path)
    (tmp_path / "ckpt" / "ckpt-5.pt").write_bytes(b"x")
    scanner.scan()
    os.unlink(tmp_path / "ckpt" / "ckpt-5.pt")
    assert scanner.scan() == [] and scanner.scan(final=True) == [] and registry.rows == []


def test_a_name_without_a_step_is_registered_with_none_and_said_so(tmp_path):
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "last.pt").write_bytes(b"x")
    scanner, _registry, messages = _scanner(tmp_path)
    [r] = scanner.scan(final=True)
    assert r.step is None
    assert [m for m in messages if "carries no step" in m] == [f"checkpoint {tmp_path / 'ckpt' / 'last.pt'}: its "
                                                               "name carries no step (e.g. ckpt-1000.pt, step_1000/); "
                                                               "registered without one"]


def test_names_being_written_are_skipped_and_a_directory_digest_is_its_manifest(tmp_path):
    root = tmp_path / "ckpt"
    (root / "step_300" / "shards").mkdir(parents=True)
    (root / "step_300" / "model.bin").write_bytes(b"model")
    (root / "step_300" / "shards" / "0.bin").write_bytes(b"zero")
    (root / "ckpt-400.pt.tmp").write_bytes(b"half")
    (root / ".ckpt-500.pt").write_bytes(b"hidden")
    scanner, _registry, _ = _scanner(tmp_path)
    [r] = scanner.scan(final=True)
    lines = "".join(f"{hashlib.sha256(data).hexdigest()} {len(data)} {rel}\n"
                    for rel, data in (("model.bin", b"model"), (os.path.join("shards", "0.bin"), b"zero")))
    assert (r.step, r.size_bytes, r.tags["kind"]) == (300, 9, "directory")
    assert r.digest == "sha256:" + hashlib.sha256(lines.encode()).hexdigest()


def test_latest_checkpoint_is_the_highest_step(tmp_path):
    for name in ("ckpt-900.pt", "ckpt-1000.pt", "last.pt"):
        (tmp_path / name).write_bytes(b"x")
    assert latest_checkpoint([str(tmp_path / "*.pt")]).step == 1000
    assert latest_checkpoint([str(tmp_path / "none-*")]) is None


def test_the_collector_registers_them_in_the_store_and_the_terminal_status_names_the_last(tmp_path):
    (tmp_path / "hist").mkdir()
    (tmp_path / "hist" / "h.jsonl").write_text(row(0, loss=1.0) + "\n")
    (tmp_path / "ckpt").mkdir()
    for step in (10, 20):
        (tmp_path / "ckpt" / f"ckpt-{step}.pt").write_bytes(b"w" * step)
    (tmp_path / "completion.json").write_text(json.dumps({"state": "failed"}))
    store = tmp_path / "store"
    recording = RecordingSink()
    Collector(options(tmp_path, [ExpstoreSink(str(store)), recording],
                      checkpoints=[str(tmp_path / "ckpt" / "ckpt-*.pt")])).run()
    rows = StoreReader(ExpStore(store)).artifacts("seed-1", type="checkpoint")
    assert [(r.step, r.size_bytes, r.uri) for r in rows] == [
        (10, 10, str(tmp_path / "ckpt" / "ckpt-10.pt")), (20, 20, str(tmp_path / "ckpt" / "ckpt-20.pt"))]
    marker = recording.events()[-1]
    assert marker.metric_name == "tau/run_status"
    assert marker.tags["tau.status.checkpoint_uri"] == str(tmp_path / "ckpt" / "ckpt-20.pt")


def test_a_given_status_checkpoint_uri_wins(tmp_path):
    (tmp_path / "hist").mkdir()
    (tmp_path / "hist" / "h.jsonl").write_text(row(0, loss=1.0) + "\n")
    (tmp_path / "ckpt-10.pt").write_bytes(b"w")
    (tmp_path / "completion.json").write_text("succeeded")
    recording = RecordingSink()
    Collector(options(tmp_path, [recording], checkpoints=[str(tmp_path / "ckpt-*.pt")],
                      status_checkpoint_uri="az://bucket/ckpt")).run()
    assert recording.events()[-1].tags["tau.status.checkpoint_uri"] == "az://bucket/ckpt"


def test_a_restarted_collector_hashes_again_only_what_changed(tmp_path, monkeypatch):
    """The second collector of the run reads the rows back from the store: unchanged checkpoints (same size and
    mtime) are not hashed again, a changed one is, and one deleted while no collector ran is tagged deleted."""
    import tau_collector.collect.checkpoints as checkpoints

    (tmp_path / "hist").mkdir()
    (tmp_path / "hist" / "h.jsonl").write_text(row(0, loss=1.0) + "\n")
    (tmp_path / "ckpt").mkdir()
    for step in (10, 20, 30):
        (tmp_path / "ckpt" / f"ckpt-{step}.pt").write_bytes(b"w" * step)
    (tmp_path / "completion.json").write_text(json.dumps({"state": "failed"}))
    store = tmp_path / "store"

    def collect():
        Collector(options(tmp_path, [ExpstoreSink(str(store))],
                          checkpoints=[str(tmp_path / "ckpt" / "ckpt-*.pt")])).run()

    collect()
    hashed: list[str] = []
    real = checkpoints.file_digest
    monkeypatch.setattr(checkpoints, "file_digest", lambda path: (hashed.append(path), real(path))[1])
    (tmp_path / "ckpt" / "ckpt-20.pt").write_bytes(b"v" * 21)
    os.utime(tmp_path / "ckpt" / "ckpt-20.pt", ns=(1, 5_000_000_000))
    (tmp_path / "ckpt" / "ckpt-30.pt").unlink()
    collect()
    assert hashed == [str(tmp_path / "ckpt" / "ckpt-20.pt")]
    rows = {r.step: r for r in StoreReader(ExpStore(store)).artifacts("seed-1", type="checkpoint")}
    assert rows[20].size_bytes == 21 and rows[10].size_bytes == 10
    assert rows[30].tags.get("deleted") is True and not rows[10].tags.get("deleted")
