"""``tau-collector wrap``: a trainer with the collector beside it, TauGrid's wrapper outcomes and exit codes."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from fixtures.processes import started_at, still_running
from tau_collector.expstore.read.reader import StoreReader
from tau_collector.expstore.store import ExpStore

from ..polling import DEADLINE


def wrap(tmp_path: Path, script: str, *extra: str, run: str = "r1", **popen) -> subprocess.Popen:
    (tmp_path / "train.py").write_text(textwrap.dedent(script))
    return subprocess.Popen(
        [sys.executable, "-m", "tau_collector", "wrap", "--run-dir", str(tmp_path / "run"), "--interval", "1s",
         "--run", run, "--project", "demo", "--experiment", "e", "--group", "g",
         "--store", str(tmp_path / "store"), *extra, "--", sys.executable, str(tmp_path / "train.py")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen,
    )


def reader(tmp_path: Path) -> StoreReader:
    return StoreReader(ExpStore(tmp_path / "store"))


ENDLESS = """
    import json, time
    step = 0
    while True:
        print(json.dumps({"step": step, "loss": 1.0}), flush=True)
        step += 1
        time.sleep(0.05)
"""


def start_endless_run(tmp_path: Path) -> subprocess.Popen:
    """A wrapped trainer that never ends, returned once its first points are in the store."""
    proc = wrap(tmp_path, ENDLESS)
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        if (tmp_path / "store" / "manifest.json").exists() and reader(tmp_path).run("r1") is not None:
            return proc
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"the run's first points never reached the store: {proc.communicate()[1][-2000:]!r}")


def test_rows_printed_by_the_trainer_reach_the_store_and_other_lines_the_log(tmp_path):
    proc = wrap(tmp_path, """
        import json
        print("epoch 1 starting")
        for step in range(5):
            print(json.dumps({"step": step, "loss": 1.0 / (step + 1)}))
        print("progress 100%\\r", end="")
        print()
    """)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert out == b"epoch 1 starting\nprogress 100%\r\n"
    rows = reader(tmp_path).rows("r1", "loss")
    assert [int(s) for s in rows.step] == [0, 1, 2, 3, 4]
    assert reader(tmp_path).run("r1").state == "succeeded"
    completion = json.loads((tmp_path / "run" / "completion.json").read_text())
    assert completion["state"] == "succeeded" and completion["reason"] == "workload-entrypoint-exit"
    assert json.loads((tmp_path / "run" / "collector" / "result.json").read_text())["completed"] is True


def test_a_summary_writer_pointed_at_tau_tensorboard_dir_is_collected(tmp_path):
    proc = wrap(tmp_path, """
        import os
        from torch.utils.tensorboard import SummaryWriter
        writer = SummaryWriter(os.environ["TAU_TENSORBOARD_DIR"])
        for step in range(4):
            writer.add_scalar("train/loss", 0.5 ** step, step)
        writer.close()
    """)
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err
    rows = reader(tmp_path).rows("r1", "train/loss")
    assert [float(v) for v in rows.value] == [1.0, 0.5, 0.25, 0.125]


def test_a_failing_trainer_fails_the_run_and_its_exit_code_is_kept(tmp_path):
    proc = wrap(tmp_path, """
        import json, sys
        print(json.dumps({"step": 0, "loss": 3.0}))
        sys.exit(3)
    """)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, err
    run = reader(tmp_path).run("r1")
    assert run.state == "failed"
    assert [float(v) for v in reader(tmp_path).rows("r1", "tau/run_status").value] == [-1.0]
    assert json.loads((tmp_path / "run" / "completion.json").read_text())["message"] == "entrypoint exited with code 3"


def test_sigterm_cancels_the_trainer_and_the_run(tmp_path):
    proc = start_endless_run(tmp_path)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert reader(tmp_path).run("r1").state == "cancelled"
    completion = json.loads((tmp_path / "run" / "completion.json").read_text())
    assert (completion["state"], completion["reason"]) == ("cancelled", "workload-termination")


def test_a_collector_that_cannot_start_gives_124_and_a_failed_completion(tmp_path):
    proc = wrap(tmp_path, "print('never runs')\n", "--sink", "adx-queued-v1")  # no ADX flags: collect exits 2
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 124
    assert b"metrics collector exited before it was ready" in err
    assert out == b""
    completion = json.loads((tmp_path / "run" / "completion.json").read_text())
    assert (completion["state"], completion["reason"]) == ("failed", "metrics-offloader-not-ready")
    assert "--adx-cluster-uri is required" in (tmp_path / "run" / "collector.log").read_text()


def test_a_missing_command_is_a_usage_error(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "tau_collector", "wrap", "--run-dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "no command given" in proc.stderr


def test_a_killed_wrapper_takes_its_trainer_and_collector_with_it_and_the_run_ends_cancelled(tmp_path):
    proc = start_endless_run(tmp_path)
    children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    assert len(children) == 2  # the collector sidecar and the trainer
    started = {int(pid): started_at(int(pid)) for pid in children}
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline and any(still_running(pid, at) for pid, at in started.items()):
        time.sleep(0.2)
    survivors = [pid for pid, at in started.items() if still_running(pid, at)]
    assert not survivors, [Path(f"/proc/{pid}/cmdline").read_bytes()[:300] for pid in survivors]
    assert reader(tmp_path).run("r1").state == "cancelled"


def test_gpus_and_a_time_limit_apply_to_the_trainer(tmp_path, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    proc = wrap(tmp_path, """
        import os, time
        print("devices", os.environ["CUDA_VISIBLE_DEVICES"], flush=True)
        time.sleep(300)
    """, "--gpus", "3", "--time-limit", "2")
    out, err = proc.communicate(timeout=120)
    assert out == b"devices 0,1,2\n"
    assert proc.returncode == 128 + signal.SIGTERM, err
    completion = json.loads((tmp_path / "run" / "completion.json").read_text())
    assert completion["state"] == "failed"
    assert completion["message"] == f"stopped at its time limit of 2s; entrypoint exited with code {128 + 15}"
