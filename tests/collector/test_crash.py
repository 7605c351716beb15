"""kill -9 at random instants while a job writes JSONL chunks and an event file: nothing lost, nothing twice."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tau_collector.expstore.read.reader import StoreReader
from tau_collector.expstore.store import ExpStore

JSONL_ROWS = 40_000  # x 2 metrics
TB_SCALARS = 25_000
BATCHES = 250
KILLS = 50

WRITER = textwrap.dedent(
    """
    import json, os, sys, time
    from tensorboardX import SummaryWriter

    hist, tb, rows, scalars, batches = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
    os.makedirs(hist, exist_ok=True)
    writer = SummaryWriter(tb, max_queue=10**6, flush_secs=3600)
    per_rows, per_scalars = rows // batches, scalars // batches
    for b in range(batches):
        lines = []
        for step in range(b * per_rows, (b + 1) * per_rows):
            lines.append(json.dumps({"_step": step, "_timestamp": 1_790_000_000 + step / 64,
                                     "loss": 1.0 / (step + 1), "acc": step / rows}) + "\\n")
        name = f"chunk-{b:06d}-{1_790_000_000_000 + b}.jsonl"
        with open(os.path.join(hist, "." + name + ".tmp"), "w") as handle:
            handle.writelines(lines)
            handle.flush()
            os.fsync(handle.fileno())
        os.rename(os.path.join(hist, "." + name + ".tmp"), os.path.join(hist, name))
        for step in range(b * per_scalars, (b + 1) * per_scalars):
            writer.add_scalar("tb/loss", 2.0 / (step + 1), step, walltime=1_790_000_000 + step / 32)
        writer.flush()
        time.sleep(0.15)
    writer.close()
    """
)


def collector_args(tmp_path: Path) -> list[str]:
    return [sys.executable, "-m", "tau_collector", "collect", "--watch", "--interval", "1s",
            "--run", "crash-run", "--project", "demo", "--experiment", "crash", "--group", "g",
            "--out", str(tmp_path / "out"), "--history", str(tmp_path / "hist" / "*.jsonl"),
            "--tfevents", str(tmp_path / "tb"), "--completion-file", str(tmp_path / "completion.json"),
            "--sink", "expstore", "--store", str(tmp_path / "store")]


@pytest.mark.slow
def test_kill_9_during_a_100k_event_run_loses_nothing_and_duplicates_nothing(tmp_path):
    rng = random.Random(20261130)
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path / "hist"), str(tmp_path / "tb"),
                               str(JSONL_ROWS), str(TB_SCALARS), str(BATCHES)])
    kills = 0
    try:
        while kills < KILLS or writer.poll() is None:
            collector = subprocess.Popen(collector_args(tmp_path), stdout=subprocess.DEVNULL,
                                         stderr=subprocess.PIPE)
            time.sleep(rng.uniform(0.05, 1.2))
            if collector.poll() is not None:
                pytest.fail(f"collector exited by itself: {collector.stderr.read().decode()}")
            collector.send_signal(signal.SIGKILL)
            collector.wait()
            kills += 1
        assert writer.wait() == 0
    finally:
        writer.kill()
    (tmp_path / "completion.json").write_text("")
    final = subprocess.run(collector_args(tmp_path), capture_output=True, text=True, timeout=600)
    assert final.returncode == 0, final.stderr
    assert json.loads(final.stdout)["completed"] is True
    assert kills >= KILLS

    reader = StoreReader(ExpStore(tmp_path / "store"))
    summaries = {s.metric_name: s for s in reader.metric_summaries("crash-run")}
    expected = {"loss": JSONL_ROWS, "acc": JSONL_ROWS, "tb/loss": TB_SCALARS, "tau/run_status": 1}
    # Summaries add up every stored row, so a chunk stored twice would show here.
    assert {name: s.count for name, s in summaries.items()} == expected
    for metric, count in expected.items():
        rows = reader.rows("crash-run", metric)
        assert [int(s) for s in rows.step] == list(range(count))
    loss = reader.rows("crash-run", "loss")
    assert all(abs(v - 1.0 / (s + 1)) < 1e-15 for s, v in zip(loss.step[:1000], loss.value[:1000], strict=True))
    assert os.listdir(tmp_path / "out" / "pending") == []
