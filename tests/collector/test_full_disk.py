"""A full disk while spooling: a clear error, no corrupt checkpoint or store, and a clean resume once space is back.

The spool and the store live on a small tmpfs the test mounts (CI and developers run as root).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tau_collector.expstore.read.reader import StoreReader
from tau_collector.expstore.store import ExpStore

from .spooled import spooled

ROWS = 2_000


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _free_bytes(disk: Path) -> int:
    st = os.statvfs(disk)
    return st.f_bavail * st.f_frsize


def _history(tmp_path: Path) -> None:
    hist = tmp_path / "hist"
    hist.mkdir()
    for chunk in range(4):
        rows = range(chunk * ROWS, (chunk + 1) * ROWS)
        (hist / f"chunk-{chunk:06d}-1.jsonl").write_text("".join(
            json.dumps({"_step": s, "_timestamp": 1_790_000_000 + s, "loss": 1 / (s + 1)}) + "\n" for s in rows))
    (tmp_path / "completion.json").write_text("")


def collect(tmp_path: Path, disk: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tau_collector", "collect", "--run", "r", "--project", "p", "--experiment", "e",
         "--group", "g", "--out", str(disk / "out"), "--history", str(tmp_path / "hist" / "*.jsonl"),
         "--completion-file", str(tmp_path / "completion.json"), "--store", str(disk / "store")],
        capture_output=True, text=True, timeout=300,
    )


def test_a_full_disk_is_a_clear_error_and_nothing_is_corrupted(tmp_path, small_disk):
    _history(tmp_path)
    ExpStore(small_disk / "store", create=True).close()  # the store fits; the chunks will not
    ballast = small_disk / "ballast"
    ballast.write_bytes(b"\0" * (_free_bytes(small_disk) - 384 * 1024))

    first = collect(tmp_path, small_disk)
    assert first.returncode == 1
    assert "No space left on device" in first.stderr or "disk is full" in first.stderr  # the OS's or SQLite's words
    assert "free space" in first.stderr and str(small_disk) in first.stderr
    checkpoint_path = small_disk / "out" / "checkpoint.json"
    if checkpoint_path.exists():  # whatever was written is whole and parses
        checkpoint = json.loads(checkpoint_path.read_text())
        assert checkpoint["schema_version"] == "tau.experiment.metrics_checkpoint.v1"
    if (small_disk / "store" / "manifest.json").exists():
        delivered = {s.metric_name: s.count for s in StoreReader(ExpStore(small_disk / "store")).metric_summaries("r")}
        assert delivered.get("loss", 0) % ROWS == 0  # only whole chunks were registered

    ballast.unlink()
    second = collect(tmp_path, small_disk)
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["completed"] is True
    reader = StoreReader(ExpStore(small_disk / "store"))
    summaries = {s.metric_name: s.count for s in reader.metric_summaries("r")}
    assert summaries == {"loss": 4 * ROWS, "tau/run_status": 1}
    assert [int(s) for s in reader.rows("r", "loss").step] == list(range(4 * ROWS))
    assert spooled(small_disk / "out") == []


def test_a_store_that_cannot_be_created_on_a_full_disk_is_a_clear_error(tmp_path, small_disk):
    _history(tmp_path)
    ballast = small_disk / "ballast"
    ballast.write_bytes(b"\0" * (_free_bytes(small_disk) - 16 * 1024))  # not even the store's index fits

    first = collect(tmp_path, small_disk)
    assert first.returncode == 1
    assert "Traceback" not in first.stderr
    assert "free space" in first.stderr
    assert f"--store {small_disk / 'store'}" in first.stderr
    assert not list((small_disk / "store").glob(".manifest.json.tmp-*"))  # no temporary manifest left

    ballast.unlink()
    second = collect(tmp_path, small_disk)
    assert second.returncode == 0, second.stderr
    summaries = {s.metric_name: s.count for s in StoreReader(ExpStore(small_disk / "store")).metric_summaries("r")}
    assert summaries == {"loss": 4 * ROWS, "tau/run_status": 1}
