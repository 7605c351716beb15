"""System metrics: the job's process tree (real processes), NVML's absence, and ``system/`` rows through wrap."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from tau_collector.expstore.read.reader import StoreReader
from tau_collector.expstore.store import ExpStore
from tau_collector.job.system_sampler import ProcessTreeSampler

MIB = 1 << 20

# The job: a parent that starts a grandchild-to-be (its child) which holds 200 MiB, burns 0.5 s of CPU
# once told to, then says so and waits to be killed.
_PARENT = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", sys.argv[1], *sys.argv[2:]])
child.wait()
"""
_CHILD = """
import os, sys, time
held = b"x" * (200 << 20)  # written, so resident
open(sys.argv[1], "w").close()
while not os.path.exists(sys.argv[2]):
    time.sleep(0.01)
start = time.process_time()
while time.process_time() - start < 0.5:
    pass
open(sys.argv[3], "w").close()
time.sleep(600)
"""


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)


@pytest.fixture
def job(tmp_path):
    held, go, burned = tmp_path / "held", tmp_path / "go", tmp_path / "burned"
    proc = subprocess.Popen([sys.executable, "-c", _PARENT, _CHILD, str(held), str(go), str(burned)])
    _wait_for(held)
    yield proc, go, burned
    for child in psutil.Process(proc.pid).children(recursive=True):
        child.kill()
    proc.kill()
    proc.wait()


def test_the_process_tree_includes_grandchildren_and_their_resident_memory(job):
    proc, _, _ = job
    sample = ProcessTreeSampler(proc.pid).sample()
    assert sample["process_count"] == 2
    assert sample["rss_bytes"] >= 200 * MIB


def test_cpu_time_burnt_by_a_grandchild_between_samples_is_counted(job):
    proc, go, burned = job
    sampler = ProcessTreeSampler(proc.pid)
    sampler.sample()  # before the burn
    go.touch()
    _wait_for(burned)
    sample = sampler.sample()
    assert sampler.last_cpu_seconds >= 0.48  # the grandchild's 0.5 s, within the kernel's 10 ms accounting tick
    assert sample["cpu_percent"] > 0


def test_a_job_that_has_exited_gives_no_sample(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert ProcessTreeSampler(proc.pid).sample() == {}


# -- NVML: absent, failing, and (with a stand-in module) the mapping of its readings ------------------------

_SAMPLE_GPU = """
import logging, sys, json
logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
from tau_collector.job.system_sampler import GpuSampler
gpu = GpuSampler()
print(json.dumps([gpu.sample(), gpu.sample(), gpu.sample()]))
gpu.close()
"""


def _sample_gpu(tmp_path: Path, pynvml_source: str | None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if pynvml_source is not None:
        (tmp_path / "pynvml.py").write_text(textwrap.dedent(pynvml_source))
        env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", _SAMPLE_GPU], capture_output=True, text=True, env=env, check=True,
                          timeout=60)


def test_without_nvidias_library_the_sampler_says_so_once_and_samples_nothing(tmp_path):
    # A pynvml that cannot be imported: what a machine without nvidia-ml-py sees.
    out = _sample_gpu(tmp_path, "raise ImportError('No module named pynvml')\n")
    assert json.loads(out.stdout) == [{}, {}, {}]
    lines = [line for line in out.stderr.splitlines() if "GPU" in line]
    assert lines == ["tau_collector.job.system_sampler: no GPU metrics: NVIDIA's management library is not installed "
                     "(pip install nvidia-ml-py to sample NVIDIA GPUs)"]


def test_when_nvml_does_not_initialise_the_sampler_says_why_once_and_goes_on(tmp_path):
    out = _sample_gpu(tmp_path, """
        class NVMLError(Exception):
            pass
        def nvmlInit():
            raise NVMLError("Driver Not Loaded")
    """)
    assert json.loads(out.stdout) == [{}, {}, {}]
    lines = [line for line in out.stderr.splitlines() if "GPU" in line]
    assert lines == ["tau_collector.job.system_sampler: no GPU metrics: NVML did not initialise (Driver Not Loaded); "
                     "sampling CPU and memory only"]


def test_nvml_readings_map_to_per_gpu_metrics_and_an_unsupported_reading_is_dropped_once(tmp_path):
    # This machine has no GPU: a stand-in pynvml module tests only how NVML's readings become metrics
    # (indexes, units: bytes, Celsius, milliwatts -> watts), not NVML itself.
    out = _sample_gpu(tmp_path, """
        from types import SimpleNamespace
        NVML_TEMPERATURE_GPU = 0
        class NVMLError(Exception):
            pass
        def nvmlInit(): pass
        def nvmlShutdown(): pass
        def nvmlDeviceGetCount(): return 2
        def nvmlDeviceGetHandleByIndex(i): return i
        def nvmlDeviceGetUtilizationRates(h): return SimpleNamespace(gpu=[87, 3][h], memory=40)
        def nvmlDeviceGetMemoryInfo(h): return SimpleNamespace(used=[5 << 30, 1 << 20][h], total=16 << 30)
        def nvmlDeviceGetTemperature(h, sensor): return [71, 35][h]
        def nvmlDeviceGetPowerUsage(h):
            if h == 1:
                raise NVMLError("Not Supported")
            return 251500
    """)
    first, second, third = json.loads(out.stdout)
    assert first == {
        "gpu.0.utilization_percent": 87.0, "gpu.0.memory_used_bytes": float(5 << 30),
        "gpu.0.temperature_celsius": 71.0, "gpu.0.power_watts": 251.5,
        "gpu.1.utilization_percent": 3.0, "gpu.1.memory_used_bytes": float(1 << 20),
        "gpu.1.temperature_celsius": 35.0,
    }
    assert second == third == first
    assert [line for line in out.stderr.splitlines() if "GPU" in line] == [
        "tau_collector.job.system_sampler: GPU 1: power_watts not sampled (Not Supported)"]


# -- through wrap: system/ rows take the one path into the store ---------------------------------------------

_NO_PYNVML = "raise ImportError('No module named pynvml')\n"

# The trainer logs a loss, holds 64 MiB, and ends once a sampled row on disk shows them (no sleeps to guess at).
_TRAINER = """
import glob, json, os, time
print(json.dumps({"step": 0, "loss": 1.0}), flush=True)
held = b"x" * (64 << 20)
def seen():
    for path in glob.glob(os.environ["TAU_HISTORY_DIR"] + "/chunk-*"):
        for line in open(path):
            if json.loads(line).get("system/rss_bytes", 0) >= 64 << 20:
                return True
while not seen():
    time.sleep(0.05)
"""


def _wrap(tmp_path: Path, *extra: str, env_extra: dict[str, str] | None = None,
          script: str = _TRAINER) -> subprocess.CompletedProcess:
    (tmp_path / "train.py").write_text(script)
    fake = tmp_path / "fake"
    fake.mkdir(exist_ok=True)
    (fake / "pynvml.py").write_text(_NO_PYNVML)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(fake), os.environ.get("PYTHONPATH", "")]),
               **(env_extra or {}))
    return subprocess.run(
        [sys.executable, "-m", "tau_collector", "wrap", "-v", "--run-dir", str(tmp_path / "run"), "--interval", "1s",
         "--run", "r1", "--project", "demo", "--experiment", "e", "--group", "g", "--store", str(tmp_path / "store"),
         *extra, "--", sys.executable, str(tmp_path / "train.py")],
        capture_output=True, text=True, env=env, timeout=180)


def test_wrap_samples_the_trainer_into_system_metrics_in_the_store(tmp_path):
    out = _wrap(tmp_path, "--system-interval", "0.2")
    assert out.returncode == 0, out.stderr[-3000:]
    reader = StoreReader(ExpStore(tmp_path / "store"))
    names = set(reader.run("r1").metric_names)
    assert {"loss", "system/cpu_percent", "system/rss_bytes", "system/process_count", "system/host_cpu_percent",
            "system/host_memory_used_bytes", "system/host_memory_percent"} <= names
    assert not any(name.startswith("system/gpu.") for name in names)
    rss = reader.rows("r1", "system/rss_bytes")
    assert [int(s) for s in rss.step][:1] == [0]  # steps count samples from 0
    assert max(float(v) for v in rss.value) >= 64 * MIB  # the trainer's 64 MiB, seen by the sampler
    assert out.stderr.count("no GPU metrics") == 1


def test_a_system_interval_of_zero_turns_sampling_off(tmp_path):
    out = _wrap(tmp_path, env_extra={"TAU_COLLECTOR_SYSTEM_INTERVAL": "0"},
                script='import json\nprint(json.dumps({"step": 0, "loss": 1.0}))\n')
    assert out.returncode == 0, out.stderr[-3000:]
    names = StoreReader(ExpStore(tmp_path / "store")).run("r1").metric_names
    assert sorted(names) == ["loss", "tau/run_status"]
    assert "no GPU metrics" not in out.stderr


@pytest.mark.parametrize("value", ["ten", "-1", "inf"])
def test_a_bad_system_interval_is_a_usage_error_naming_the_flag(tmp_path, value):
    out = _wrap(tmp_path, "--system-interval", value)
    assert out.returncode == 2
    assert "argument --system-interval:" in out.stderr
    assert not (tmp_path / "run").exists()


def test_a_bad_system_interval_variable_is_a_usage_error_naming_it(tmp_path):
    out = _wrap(tmp_path, env_extra={"TAU_COLLECTOR_SYSTEM_INTERVAL": "often"})
    assert out.returncode == 2
    assert "$TAU_COLLECTOR_SYSTEM_INTERVAL: invalid duration 'often' (use seconds such as 10" in out.stderr
