"""System metrics of a job: its process tree's CPU and memory, the host's memory and NVIDIA GPUs, as house rows.

The sampler reads, every ``interval`` seconds, what the job beside the sidecar uses and writes one
house row (``{"_step": n, "_timestamp": t, "system/...": value, ...}``) through a
:class:`~tau_collector.job.history_writer.HistoryWriter` into the run's history directory. The
collector then reads those rows like any trainer's: projection, spool and sinks, so system
metrics reach the expstore and ADX by the one path every metric takes. ``_step`` counts samples
from 0 (MLflow's rule), so a system series is drawn against its own sample number.

Names (documented in docs/collector-flags.md, "System metrics"):

- ``system/cpu_percent``: CPU time of the job's process tree over the last interval, in percent
  of one core (``top``'s convention: a job busy on 4 cores shows 400).
- ``system/rss_bytes``: resident memory of the tree (sum over its processes; shared pages count
  once per process, as ``ps`` shows them).
- ``system/process_count``: processes in the tree (the job and every descendant).
- ``system/host_cpu_percent``, ``system/host_memory_used_bytes``, ``system/host_memory_percent``:
  the whole machine (percent of all cores; psutil's ``virtual_memory``).
- ``system/gpu.<i>.utilization_percent``, ``system/gpu.<i>.memory_used_bytes``,
  ``system/gpu.<i>.temperature_celsius``, ``system/gpu.<i>.power_watts``: each NVIDIA GPU, read
  through NVML (``nvidia-ml-py``, imported as ``pynvml``) when it is installed and initialises.
  Without it the sampler logs once why, and samples the rest.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import psutil

from tau_collector.collect.signal_stop import leave_stop_signals_to_main_thread
from tau_collector.job.history_writer import HistoryWriter

__all__ = ["ProcessTreeSampler", "GpuSampler", "SystemSampler", "PREFIX"]

PREFIX = "system/"
log = logging.getLogger("tau_collector.job.system_sampler")


class ProcessTreeSampler:
    """CPU and RSS of a process and all its descendants, CPU as the change of CPU time between calls."""

    def __init__(self, root_pid: int):
        self.root_pid = root_pid
        self._root: psutil.Process | None = None
        # (pid, create_time) -> (Process, CPU seconds at the last sample): a reused pid is a new process
        self._seen: dict[tuple[int, float], tuple[psutil.Process, float]] = {}
        self._at = 0.0
        self.last_cpu_seconds = 0.0  # CPU time the tree spent in the last sample's interval

    def _tree(self) -> list[psutil.Process]:
        if self._root is None:
            self._root = psutil.Process(self.root_pid)
        if not self._root.is_running():
            return []
        try:
            return [self._root, *self._root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def sample(self) -> dict[str, float]:
        """``{cpu_percent, rss_bytes, process_count}``; the first call's CPU is the average since each
        process started. Empty when the root process is gone."""
        try:
            processes = self._tree()
        except psutil.NoSuchProcess:
            return {}
        now = time.time()
        first = not self._at
        earliest = now
        seen: dict[tuple[int, float], tuple[psutil.Process, float]] = {}
        cpu_seconds = 0.0
        rss = 0
        for process in processes:
            try:
                with process.oneshot():
                    key = (process.pid, process.create_time())
                    times = process.cpu_times()
                    rss += process.memory_info().rss
            except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
                continue  # exited between listing and reading: its last interval is not counted
            total = times.user + times.system
            previous = self._seen.get(key)
            # a process new since the last sample started within the interval: all its CPU time is in it
            cpu_seconds += total - previous[1] if previous is not None else total
            earliest = min(earliest, key[1])
            seen[key] = (process, total)
        if not seen:
            return {}
        # the first sample averages over the tree's life so far
        elapsed = now - (earliest if first else self._at)
        self._seen, self._at, self.last_cpu_seconds = seen, now, cpu_seconds
        cpu = 100.0 * cpu_seconds / elapsed if elapsed > 0 else 0.0
        return {"cpu_percent": max(cpu, 0.0), "rss_bytes": float(rss), "process_count": float(len(seen))}


class GpuSampler:
    """Each NVIDIA GPU's utilisation, memory used, temperature and power through NVML, if it is there."""

    def __init__(self, import_nvml: Callable[[], Any] | None = None):
        self._nvml: Any = None
        self._handles: list[Any] = []
        self._unsupported: set[tuple[int, str]] = set()
        try:
            nvml = (import_nvml or _import_pynvml)()
        except ImportError:
            log.info("no GPU metrics: NVIDIA's management library is not installed "
                     "(pip install nvidia-ml-py to sample NVIDIA GPUs)")
            return
        try:
            nvml.nvmlInit()
            count = nvml.nvmlDeviceGetCount()
            self._handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        except Exception as exc:  # NVMLError and its many subclasses: no driver, no device, no permission
            log.info(f"no GPU metrics: NVML did not initialise ({exc}); sampling CPU and memory only")
            return
        if not self._handles:
            log.info("no GPU metrics: NVML sees no GPU; sampling CPU and memory only")
            return
        self._nvml = nvml

    @property
    def available(self) -> bool:
        return self._nvml is not None

    def sample(self) -> dict[str, float]:
        if self._nvml is None:
            return {}
        nvml = self._nvml
        readings = (
            ("utilization_percent", lambda h: nvml.nvmlDeviceGetUtilizationRates(h).gpu),
            ("memory_used_bytes", lambda h: nvml.nvmlDeviceGetMemoryInfo(h).used),
            ("temperature_celsius", lambda h: nvml.nvmlDeviceGetTemperature(h, nvml.NVML_TEMPERATURE_GPU)),
            ("power_watts", lambda h: nvml.nvmlDeviceGetPowerUsage(h) / 1000.0),  # NVML reports milliwatts
        )
        values: dict[str, float] = {}
        for index, handle in enumerate(self._handles):
            for name, read in readings:
                if (index, name) in self._unsupported:
                    continue
                try:
                    values[f"gpu.{index}.{name}"] = float(read(handle))
                except Exception as exc:  # NVML_ERROR_NOT_SUPPORTED (e.g. power on some boards): stop asking
                    self._unsupported.add((index, name))
                    log.info(f"GPU {index}: {name} not sampled ({exc})")
        return values

    def close(self) -> None:
        if self._nvml is not None:
            try:
                self._nvml.nvmlShutdown()
            except Exception:
                pass
            self._nvml = None


def _import_pynvml() -> Any:
    import pynvml  # nvidia-ml-py; optional

    return pynvml


def host_sample() -> dict[str, float]:
    memory = psutil.virtual_memory()
    return {"host_cpu_percent": psutil.cpu_percent(interval=None),
            "host_memory_used_bytes": float(memory.total - memory.available),
            "host_memory_percent": float(memory.percent)}


class SystemSampler:
    """A thread that writes one ``system/`` house row every ``interval`` seconds while the job runs.

    ``start()`` begins, ``stop()`` ends it and closes its history writer (its rows are then on disk
    for the collector's final drain). A sample that fails (a ``/proc`` read refused) is logged once
    and skipped; the sampler never stops the job or the collector.
    """

    def __init__(self, history_dir: str, root_pid: int, interval: float, *,
                 gpu: GpuSampler | None = None, max_delay: float = 0.5):
        if not interval > 0:
            raise ValueError(f"interval must be a positive number of seconds, got {interval}")
        self.interval = interval
        self.samples = 0
        self._tree = ProcessTreeSampler(root_pid)
        self._gpu = gpu
        self._history_dir = history_dir
        self._max_delay = max_delay
        self._writer: HistoryWriter | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="tau-system-metrics", daemon=True)
        self._failed = False

    def start(self) -> SystemSampler:
        self._writer = HistoryWriter(self._history_dir, max_delay=self._max_delay)
        if self._gpu is None:
            self._gpu = GpuSampler()
        self._tree.sample()  # prime the CPU times: the first row covers the first interval
        psutil.cpu_percent(interval=None)
        self._thread.start()
        return self

    def row(self) -> dict[str, Any] | None:
        """The next house row, or None when the job's process is gone."""
        tree = self._tree.sample()
        if not tree:
            return None
        values = {**tree, **host_sample(), **(self._gpu.sample() if self._gpu else {})}
        row: dict[str, Any] = {"_step": self.samples, "_timestamp": time.time()}
        row.update((PREFIX + name, value) for name, value in values.items())
        return row

    def _loop(self) -> None:
        leave_stop_signals_to_main_thread()
        while not self._stop.wait(self.interval):
            try:
                row = self.row()
                if row is None:
                    return
                assert self._writer is not None
                self._writer.write(row)
                self.samples += 1
            except Exception as exc:  # never the job's problem: say so once, keep trying
                if not self._failed:
                    log.warning(f"system metrics sample failed ({exc}); trying again every {self.interval:g}s")
                    self._failed = True

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        if self._writer is not None:
            try:
                self._writer.close()
            except OSError as exc:
                log.warning(f"system metrics rows could not be written: {exc}")
        if self._gpu is not None:
            self._gpu.close()
