"""A collector stopped at each of its durability points, then restarted: nothing lost, nothing twice.

``crash_points.py`` numbers the instants before and after every fsync, rename, link, unlink and
SQLite COMMIT the collector makes while it creates a store and delivers a backlog of three chunks
(two of history, one completion marker); this test stops a fresh collector at each of them in
turn (``os._exit``, what ``kill -9`` leaves), starts it again with the same flags (each a process
forked from one that imported the collector once), and checks the
store holds every row exactly once, the run completed once, and the spool is empty. The order
that makes this hold across a power loss too (the index is synced at COMMIT before the spooled
chunk is acknowledged) is in docs/data-path.md, "Durability".
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tau_collector.expstore.read.reader import StoreReader
from tau_collector.expstore.store import ExpStore

from .spooled import spooled

HARNESS = str(Path(__file__).with_name("crash_points.py"))
ROWS = 400


def _backlog(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"_step": s, "_timestamp": 1_790_000_000 + s, "loss": 1 / (s + 1),
                                        "acc": s / ROWS}) + "\n" for s in range(ROWS)))


def _collect(work: Path, history: Path, spool_format: str) -> list[str]:
    # 20 kB batches: the 40 kB backlog is two chunks, and the completion marker a third.
    return ["collect", "--run", "r", "--project", "p", "--experiment", "e", "--group", "g",
            "--out", str(work / "out"), "--history", str(history), "--sink", "expstore",
            "--store", str(work / "store"), "--batch-bytes", "20000",
            "--completion-file", str(history.parent / "completion.json"), "--spool-format", spool_format]


def _harness(mode: str, n: int, log: Path, argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, HARNESS, mode, str(n), str(log), "--", *argv],
                          capture_output=True, text=True, timeout=300)


def _check_exactly_once(work: Path, history: Path, where: str) -> None:
    reader = StoreReader(ExpStore(work / "store"))
    summaries = {s.metric_name: s.count for s in reader.metric_summaries("r")}
    # Summaries add up every stored row: a chunk stored twice, or lost, shows here.
    assert summaries == {"loss": ROWS, "acc": ROWS, "tau/run_status": 1}, where
    assert reader.rows("r", "loss").step.tolist() == list(range(ROWS)), where
    assert reader.run("r").state == "succeeded", where
    assert spooled(work / "out") == [], where
    checkpoint = json.loads((work / "out" / "checkpoint.json").read_text())
    offsets = [s["offset"] for s in checkpoint["sources"].values() if "offset" in s]
    assert history.stat().st_size in offsets, where
    with sqlite3.connect(work / "store" / "index.sqlite") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",), where


@pytest.mark.slow
@pytest.mark.parametrize("spool_format", ["auto", "manifest"])
def test_a_restart_after_a_stop_at_any_durability_point_loses_and_duplicates_nothing(tmp_path, spool_format):
    """``auto`` with the expstore alone spools column records; ``manifest`` TauGrid's pending manifests."""
    history = tmp_path / "hist" / "history.jsonl"
    _backlog(history)
    (tmp_path / "hist" / "completion.json").write_text("")
    log = tmp_path / "points.log"

    (tmp_path / "count").mkdir()  # as the sweep's directories are: the same points, in the same order
    counted = _harness("count", 0, log, _collect(tmp_path / "count", history, spool_format))
    assert counted.returncode == 0, counted.stderr
    assert json.loads(counted.stdout)["completed"] is True
    _check_exactly_once(tmp_path / "count", history, "uninterrupted")
    total = int(log.read_text().split()[-1])
    assert total > 30  # store creation, two data chunks and the marker, each spooled, stored, acknowledged

    sweep = _harness("sweep", total, tmp_path / "sweep.log", _collect(Path("{work}"), history, spool_format))
    assert sweep.returncode == 0, sweep.stderr
    for n in range(1, total + 1):
        work = tmp_path / f"stop-{n:03d}"
        where = (work / "point").read_text().strip()
        assert where.startswith(f"{n} "), where
        stopped, restarted = map(int, (work / "restart").read_text().split())
        assert stopped == 137, where
        assert restarted == 0, f"restart after a stop at {where}: {sweep.stderr}"
        assert json.loads((work / "stdout").read_text())["completed"] is True, where
        _check_exactly_once(work, history, f"restart after a stop at {where}")
