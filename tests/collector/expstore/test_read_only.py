"""A store this process cannot write: every reader opens it read-only and serves it; every writer says so and writes nothing.

The store is made read-only for real: a read-only bind mount in a private mount namespace
(``tests/read_only_mount.py``), and, for the permission case, the user ``nobody`` reading a
store owned by root.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tau_collector.expstore import StoreReader, open_store

from ...read_only_mount import as_nobody, require_root, run_read_only, snapshot
from .events import event, new_store

TAU = [sys.executable, "-m", "tau_collector"]


@pytest.fixture
def shared_tmp():
    """A directory other users can enter (pytest's own temporary root is private to root)."""
    base = Path(tempfile.mkdtemp(prefix="tau-shared-"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _write(root: Path) -> None:
    store, writer = new_store(root)
    writer.write_chunk("k1", [event(s, 1.0 / (s + 1)) for s in range(50)], [], request_hash="h")
    writer.write_chunk("k2", [event(s, 0.5, metric="acc") for s in range(10)], [], request_hash="h")
    store.close()


def _store_commands(store: Path) -> list[list[str]]:
    return [
        [*TAU, "store", "runs", "--store", str(store)],
        [*TAU, "store", "metrics", "--store", str(store), "--run", "seed-1"],
        [*TAU, "store", "rows", "--store", str(store), "--run", "seed-1", "--metric", "train/loss"],
        [*TAU, "store", "series", "--store", str(store), "--run", "seed-1", "--metric", "train/loss",
         "--max-points", "8"],
    ]


def test_a_closed_store_on_a_read_only_mount_is_read_by_every_store_command(tmp_path):
    require_root()
    _write(tmp_path)
    store = tmp_path / "store"
    assert not (store / "index.sqlite-wal").exists()  # closed cleanly: SQLite cannot create the WAL files there
    reference = tmp_path / "reference"
    shutil.copytree(store, reference / "store")
    before = snapshot(store)
    for argv in _store_commands(store):
        writable = subprocess.run([str(reference / "store") if a == str(store) else a for a in argv],
                                  capture_output=True, text=True, check=True)
        ro = run_read_only(store, argv)
        assert ro.returncode == 0, ro.stderr
        assert ro.stdout == writable.stdout and ro.stdout
        assert ro.stderr == ""
    assert snapshot(store) == before


def test_a_store_whose_writer_is_still_open_is_read_through_its_wal(tmp_path):
    require_root()
    store_dir = tmp_path / "store"
    store, writer = new_store(tmp_path)
    writer.write_chunk("k1", [event(s, float(s)) for s in range(20)], [], request_hash="h")
    assert (store_dir / "index.sqlite-wal").exists()  # the writer's connection is open
    probe = ("import sys; from tau_collector.expstore import StoreReader; r = StoreReader(sys.argv[1]); "
             "last = r.rows('seed-1', 'train/loss').step.tolist()[-1]; "
             "print(r.store.immutable, last, r.run('seed-1').state)")
    result = run_read_only(store_dir, [sys.executable, "-c", probe, str(store_dir)])
    assert result.returncode == 0, result.stderr
    # -wal and -shm exist: a mode=ro reader sees what is only in the WAL (an immutable one would not)
    assert result.stdout.split() == ["False", "19", "running"]
    store.close()


def test_a_reader_on_a_read_only_medium_without_wal_files_reads_an_immutable_snapshot(tmp_path):
    require_root()
    _write(tmp_path)
    store = tmp_path / "store"
    probe = ("import sys; from tau_collector.expstore import StoreReader; r = StoreReader(sys.argv[1]); "
             "n = len(r.rows('seed-1', 'train/loss')); "
             "print(r.store.immutable, n, [m.metric_name for m in r.metric_summaries('seed-1')])")
    result = run_read_only(store, [sys.executable, "-c", probe, str(store)])
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True 50 ['acc', 'train/loss']"


def test_readers_of_a_writable_store_change_nothing_in_it(tmp_path):
    _write(tmp_path)
    store = tmp_path / "store"
    index = store / "index.sqlite"
    # a store left in rollback-journal mode stays so: a reader switches no journal mode and migrates nothing
    with sqlite3.connect(index) as conn:
        conn.execute("PRAGMA journal_mode = DELETE")
        conn.execute("DROP TABLE metric_file_retirements")  # ours; a TauGrid-made store lacks it
    reader = StoreReader(store)
    assert len(reader.rows("seed-1", "train/loss")) == 50
    reader.store.close()
    with sqlite3.connect(index) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "metric_file_retirements" not in tables


def _collect(tmp_path: Path, store: Path) -> list[str]:
    hist = tmp_path / "hist"
    hist.mkdir(exist_ok=True)
    (hist / "chunk-000000-1.jsonl").write_text('{"_step": 0, "_timestamp": 1760000000.5, "loss": 1.0}\n')
    return [*TAU, "collect", "--run", "seed-1", "--project", "proj", "--experiment", "exp-a",
            "--group", "baseline", "--out", str(tmp_path / "out"), "--history", str(hist / "*.jsonl"),
            "--store", str(store)]


def test_collect_into_a_read_only_store_says_so_in_one_line_and_writes_nothing(tmp_path):
    require_root()
    _write(tmp_path)
    store = tmp_path / "store"
    before = snapshot(store)
    result = run_read_only(store, _collect(tmp_path, store))
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert f"expstore {store} is read-only" in line and "read-only filesystem" in line
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert not (tmp_path / "out").exists()  # not even the spool directory
    assert snapshot(store) == before


def test_collect_cannot_create_a_store_on_a_read_only_mount(tmp_path):
    require_root()
    parent = tmp_path / "media"
    parent.mkdir()
    result = run_read_only(parent, _collect(tmp_path, parent / "store"))
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert f"expstore {parent / 'store'} is read-only (cannot create it: Read-only file system)" in line
    assert not (parent / "store").exists() and not (tmp_path / "out").exists()


def test_another_users_store_is_read_and_not_written(shared_tmp):
    require_root()
    _write(shared_tmp)
    store = shared_tmp / "store"
    before = snapshot(store)
    runs = subprocess.run(as_nobody([*TAU, "store", "runs", "--store", str(store)]), capture_output=True,
                          text=True, timeout=120)
    assert runs.returncode == 0, runs.stderr
    assert json.loads(runs.stdout)["run_id"] == "seed-1"
    collect = subprocess.run(as_nobody(_collect(shared_tmp, store)), capture_output=True, text=True, timeout=120)
    assert collect.returncode == 1
    (line,) = collect.stderr.strip().splitlines()
    assert f"expstore {store} is read-only (no write permission on {store} for uid 65534)" in line
    assert snapshot(store) == before


def test_a_reader_never_writes_and_a_writer_must_be_asked_for(tmp_path):
    _write(tmp_path)
    reader_store = open_store(tmp_path / "store")
    assert not reader_store.writable
    with pytest.raises(Exception, match="opened for reading"):
        with reader_store.write_transaction():
            pass
    assert open_store(tmp_path / "store", writable=True).writable


def test_create_if_missing_for_reading_leaves_an_existing_read_only_store_alone(tmp_path):
    require_root()
    # What the on-demand and the proxied Portal do: make a missing store, read an existing one.
    _write(tmp_path)
    store = tmp_path / "store"
    probe = ("import sys; from tau_collector.expstore import open_store, StoreReader; "
             "s = open_store(sys.argv[1], create=True, writable=False); "
             "print(s.writable, [r.run_id for r in StoreReader(s).runs()])")
    result = run_read_only(store, [sys.executable, "-c", probe, str(store)])
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False ['seed-1']"


def test_a_store_without_its_index_is_a_clear_error_for_readers(tmp_path):
    _write(tmp_path)
    store = tmp_path / "store"
    (store / "index.sqlite").unlink()
    result = subprocess.run([*TAU, "store", "runs", "--store", str(store)], capture_output=True, text=True)
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert f"{store / 'index.sqlite'} is missing: the store is incomplete" in line
    assert not (store / "index.sqlite").exists()  # a reader did not create it
