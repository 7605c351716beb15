"""The files a run was read from, kept with it by ``taunotebook import`` (expstore/write/source_files.py): copied on a
thread beside the reading, taking the digest the reading computed when the file has not changed since, and still
the digest and size of the bytes kept whatever happened to the file in between."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest

from fixtures.tb_writers import write_tensorboardx
from tau_collector.expstore import StoreReader
from tau_collector.expstore.store import ExpStore
from tau_collector.expstore.write import source_files
from tau_collector.expstore.write.source_files import (
    METRICS_JSONL,
    TENSORBOARD,
    ReadDigest,
    copy_source_file,
    keep_source_file,
)
from tau_collector.sources.read_limits import Limits
from tau_collector.sources.tensorboard import TensorBoardSource
from taunotebook.importer import import_paths

T0 = 1_700_000_000.0


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _as_read(path: Path) -> ReadDigest:
    """The digest an import's reading computes of the whole of ``path`` (stamped first, then hashed in pieces)."""
    read = ReadDigest.of(str(path))
    data = path.read_bytes()
    for start in range(0, len(data), 1000):
        read.update(memoryview(data)[start:start + 1000])
    return read


def _tick() -> None:
    """Past the filesystem clock's tick, so a write after the stamp gives the file another change time."""
    time.sleep(0.05)


@pytest.fixture
def settled(monkeypatch):
    """Files count as settled at once (a test's files are seconds old at most)."""
    monkeypatch.setattr(source_files, "SETTLED_NS", -1)


@pytest.fixture
def store(tmp_path: Path) -> ExpStore:
    return ExpStore(tmp_path / "store", create=True)


def _leftovers(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if ".tmp-" in p.name]


def test_a_file_just_written_is_not_trusted_to_be_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 10)
    assert ReadDigest.of(str(path)).stamp is None  # changed under SETTLED_NS ago: its copy is hashed
    assert ReadDigest.of(str(tmp_path / "missing")).stamp is None


def test_an_unchanged_file_is_copied_with_the_digest_its_reading_computed(tmp_path: Path, store, settled) -> None:
    path = tmp_path / "events"
    path.write_bytes(os.urandom(300_000))
    read = _as_read(path)
    assert read.stamp is not None and read.size == 300_000
    kept = copy_source_file(store, "r", str(path), "r/events", TENSORBOARD, read=read)
    row = kept.publish()
    assert (row.digest, row.size_bytes) == (_sha(path.read_bytes()), 300_000)
    assert store.absolute(row.uri).read_bytes() == path.read_bytes()
    # The digest is the reading's, not computed again: a reading that hashed other bytes of the same size (which
    # a file with the same stamp cannot have) would show through.
    other = ReadDigest(read.stamp)
    other.update(b"\0" * 300_000)
    again = copy_source_file(store, "r", str(path), "r/events2", TENSORBOARD, read=other)
    assert again.row.digest == _sha(b"\0" * 300_000)
    again.discard()
    assert not _leftovers(store.root)


@pytest.mark.parametrize("change", ["appended", "rewritten in place", "replaced", "hashed in part"])
def test_a_file_changed_after_it_was_read_is_kept_with_the_digest_of_the_bytes_copied(tmp_path: Path, store,
                                                                                       settled, change) -> None:
    path = tmp_path / "events"
    path.write_bytes(b"a" * 5000)
    read = _as_read(path)
    _tick()
    if change == "appended":
        with open(path, "ab") as fh:
            fh.write(b"b" * 100)
    elif change == "rewritten in place":  # same size, same inode
        with open(path, "r+b") as fh:
            fh.write(b"c" * 10)
    elif change == "replaced":
        (tmp_path / "new").write_bytes(b"d" * 5000)
        os.replace(tmp_path / "new", path)
    else:  # the reading stopped before the end (a cut record, an unterminated line): its digest is of a prefix
        read = ReadDigest.of(str(path))
        read.update(b"a" * 4000)
    row = copy_source_file(store, "r", str(path), "r/events", TENSORBOARD, read=read).publish()
    data = path.read_bytes()
    assert (row.digest, row.size_bytes) == (_sha(data), len(data))
    assert store.absolute(row.uri).read_bytes() == data


def test_a_history_is_named_after_the_digest_of_its_copy(tmp_path: Path, store) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text('{"_step": 0, "loss": 1.0}\n')
    row = keep_source_file(store, "r", str(path), "history.jsonl", METRICS_JSONL)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert row.uri == f"artifacts/r/jsonl/{digest[:12]}-history.jsonl"
    assert row.artifact_id == f"jsonl-history-r-{digest[:12]}" and row.digest == "sha256:" + digest
    assert store.absolute(row.uri).read_bytes() == path.read_bytes()
    assert not _leftovers(store.root)


def test_a_file_that_cannot_be_read_leaves_no_temporary_copy(tmp_path: Path, store, settled) -> None:
    path = tmp_path / "events"
    path.write_bytes(b"a" * 100)
    read = _as_read(path)
    path.unlink()
    with pytest.raises(FileNotFoundError):
        copy_source_file(store, "r", str(path), "r/events", TENSORBOARD, read=read)
    assert not _leftovers(store.root)


def _kept_rows(store_dir: Path, run_id: str) -> list:
    return [r for r in StoreReader(store_dir).artifacts(run_id) if r.type in (TENSORBOARD, METRICS_JSONL)]


@pytest.mark.parametrize("batch_bytes", [300, 8 * 1024 * 1024])
def test_an_import_keeps_each_file_with_the_digest_and_size_of_its_bytes_also_when_resumed(tmp_path: Path, settled,
                                                                                           batch_bytes) -> None:
    logdir = tmp_path / "logdir"
    first = write_tensorboardx(logdir / "run", [("loss", s, 1.0 / (s + 1), T0 + s) for s in range(40)])
    write_tensorboardx(logdir / "run", [("loss", s, 1.0, T0 + s) for s in range(40, 60)], name="events.out.tfevents.9999999999.later")
    history = logdir / "history.jsonl"
    history.write_text("".join(json.dumps({"_step": s, "_timestamp": T0 + s, "reward": s}) + "\n" for s in range(9))
                       + '{"_step": 9, "_timestamp": 1700000009, "reward": 9}')  # no newline: read, not hashed
    limits = Limits(batch_bytes=batch_bytes)
    store_dir = tmp_path / "store"
    import_paths([str(logdir)], store_dir, limits=limits, clustering="off")

    def check() -> None:
        rows = _kept_rows(store_dir, "run") + _kept_rows(store_dir, "history")
        assert len(rows) == 3
        for row in rows:
            data = Path(row.tags["original_path"]).read_bytes()
            assert (row.digest, row.size_bytes) == (_sha(data), len(data))
            assert (store_dir / row.uri).read_bytes() == data
        assert not _leftovers(store_dir)

    check()
    # The run went on in its first file: the next import resumes there (its digest from the progress key's).
    later = write_tensorboardx(tmp_path / "later", [("loss", s, 2.0, T0 + s) for s in range(60, 70)])
    from tau_collector.sources.tf_record import scan_frames

    data = later.read_bytes()
    _tick()
    with open(first, "ab") as fh:
        fh.write(data[scan_frames(data).frames[1][0]:])
    again = import_paths([str(logdir)], store_dir, limits=limits, clustering="off")
    assert (again.points, again.unchanged) == (10, 1)  # the history is unchanged: skipped
    check()


def test_an_import_that_fails_leaves_no_copy_behind(tmp_path: Path, monkeypatch) -> None:
    logdir = tmp_path / "logdir" / "run"
    write_tensorboardx(logdir, [("loss", s, 1.0, T0 + s) for s in range(20)], name="events.out.tfevents.1.a")
    write_tensorboardx(logdir, [("loss", s, 1.0, T0 + s) for s in range(20, 40)], name="events.out.tfevents.2.b")
    real_read = TensorBoardSource.read

    def read(self, source_input, start, **kwargs):
        if source_input.path.endswith(".b"):  # the first file read and being copied, the second fails
            raise RuntimeError("the disk went away")
        return real_read(self, source_input, start, **kwargs)

    monkeypatch.setattr(TensorBoardSource, "read", read)
    with pytest.raises(RuntimeError, match="the disk went away"):
        import_paths([str(tmp_path / "logdir")], tmp_path / "store", clustering="off")
    assert not _leftovers(tmp_path / "store")
    assert not list((tmp_path / "store").glob("artifacts/run/tensorboard/**/events.out.*"))
