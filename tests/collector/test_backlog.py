"""A backlog of any size goes out as a sequence of bounded chunks, in bounded memory, and resumes exactly."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.collector import measured
from tau_collector.expstore.read.reader import StoreReader
from tau_collector.expstore.store import ExpStore

from ..polling import wait_until
from .spooled import spooled

T0 = 1_790_000_000.0
KILLS = 5
CRASH_POINTS = str(Path(__file__).with_name("crash_points.py"))


def write_backlog(path: Path, rows: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        for s in range(rows):
            handle.write(json.dumps({"_step": s, "_timestamp": T0 + s * 0.25, "loss": 1.0 / (s + 1), "acc": s / rows,
                                     "lr": 0.001 * (1 - s / rows), "grad_norm": (s % 97) / 7.0}) + "\n")


def collect_args(tmp_path: Path, history: Path, *extra: str) -> list[str]:
    return ["tau_collector", "collect", "--run", "r", "--project", "p", "--experiment", "e", "--group", "g",
            "--out", str(tmp_path / "out"), "--history", str(history), "--sink", "expstore",
            "--store", str(tmp_path / "store"), *extra]


@pytest.mark.slow
def test_a_30_mb_backlog_is_collected_and_imported_in_bounded_chunks_and_memory(tmp_path: Path):
    history = tmp_path / "hist" / "history.jsonl"
    write_backlog(history, 200_000)
    assert history.stat().st_size > 29_000_000
    code, out, err, peak = measured(collect_args(tmp_path, history), tmp_path)
    assert code == 0, err
    status = json.loads(out)
    # One pending record per bounded batch of 512 KiB: dozens of chunks, never the whole backlog at once.
    assert status["events"] == 800_000 and status["chunks"] >= 50
    assert peak < 400, f"collect peaked at {peak} MiB (it was 4.7 GB before batches were bounded)"
    reader = StoreReader(ExpStore(tmp_path / "store"))
    assert {s.metric_name: s.count for s in reader.metric_summaries("r")} == dict.fromkeys(
        ("acc", "grad_norm", "loss", "lr"), 200_000)
    assert spooled(tmp_path / "out") == []

    code, out, err, peak = measured(["taunotebook", "import", str(history), "--store", str(tmp_path / "s2"), "-q"],
                                    tmp_path)
    assert code == 0 and "800000 points" in out, err
    assert peak < 400, f"import peaked at {peak} MiB (it was 2.3 GB)"


@pytest.mark.slow
@pytest.mark.parametrize("spool_format", ["auto", "manifest"])
def test_kill_9_in_the_middle_of_a_many_chunk_backlog_loses_and_duplicates_nothing(tmp_path: Path, spool_format):
    """With the expstore alone, ``auto`` spools column records (no NDJSON, no event ids: the store's key is the
    record's digest); ``manifest`` is TauGrid's pending manifest. Both must lose and duplicate nothing."""
    rows = 30_000
    history = tmp_path / "hist" / "history.jsonl"
    write_backlog(history, rows)
    # 64 KiB batches: the backlog is ~70 chunks. Each round pauses the collector at a random one of its
    # first 30..80 durability points (crash_points.py: before or after an fsync, rename, unlink or
    # COMMIT; a chunk makes about 24), i.e. inside its first few chunks, and kill -9s it there: the kills
    # follow the collector's own progress, not a clock, so however fast the machine, every round kills it
    # in the middle of the backlog.
    flags = ("--batch-bytes", "65536", "--spool-format", spool_format)
    argv = collect_args(tmp_path, history, *flags)[1:]
    rng = random.Random(20261201)
    for kill in range(KILLS):
        paused = tmp_path / f"paused-{kill}"
        stop_at = rng.randint(30, 80)
        with open(tmp_path / f"stderr-{kill}", "w+") as err:  # a file, not a pipe: a paused child never fills it
            proc = subprocess.Popen([sys.executable, CRASH_POINTS, "pause", str(stop_at), str(paused), "--", *argv],
                                    stdout=subprocess.DEVNULL, stderr=err)
            try:
                wait_until(lambda paused=paused, proc=proc: paused.exists() or proc.poll() is not None,
                           f"the collector to reach its durability point {stop_at}")
                assert proc.poll() is None, f"the collector ended before point {stop_at}: {err.read()}"
            finally:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
            assert proc.returncode == -signal.SIGKILL
    # Every kill landed before the end of the backlog, after some progress.
    reader = StoreReader(ExpStore(tmp_path / "store"))
    stored = {s.metric_name: s.count for s in reader.metric_summaries("r")}.get("loss", 0)
    assert 0 < stored < rows
    args = [sys.executable, "-m", *collect_args(tmp_path, history, *flags)]
    final = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert final.returncode == 0, final.stderr
    reader = StoreReader(ExpStore(tmp_path / "store"))
    summaries = {s.metric_name: s.count for s in reader.metric_summaries("r")}
    # Summaries add up every stored row: a chunk stored twice, or one lost, would show here.
    assert summaries == dict.fromkeys(("acc", "grad_norm", "loss", "lr"), rows)
    assert reader.rows("r", "loss").step.tolist() == list(range(rows))
    assert spooled(tmp_path / "out") == []
    assert (tmp_path / "out" / ("columns" if spool_format == "auto" else "pending")).is_dir()
    checkpoint = json.loads((tmp_path / "out" / "checkpoint.json").read_text())
    (source,) = checkpoint["sources"].values()
    assert source["offset"] == history.stat().st_size and source["lines"] == rows
