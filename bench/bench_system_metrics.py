"""The system-metrics sampler's cost: CPU time per sample of a job's process tree, and its share of a core.

Starts a job of ``--processes`` sleeping Python processes (a parent and its children, like a trainer
with DataLoader workers), then takes ``--samples`` samples the way the sidecar does (process tree,
host, NVML when present) and writes them through a HistoryWriter, timing the sampling thread's own
CPU time. The share of a core at the default 10 s period is CPU-per-sample / 10 s; the target is
at most 1 %. A baseline measured in the same run, one ``os.stat`` of /proc/self per sample-call,
anchors the figure on this (shared) machine.

    python bench/bench_system_metrics.py --processes 9 --samples 200
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tau_collector.job.history_writer import HistoryWriter
from tau_collector.job.system_sampler import GpuSampler, SystemSampler

_JOB = """
import subprocess, sys, time
children = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"]) for _ in range(int(sys.argv[1]))]
time.sleep(600)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--processes", type=int, default=9, help="processes in the job's tree (parent + children)")
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--interval", type=float, default=10.0, help="the period the share of a core is for")
    args = parser.parse_args()

    job = subprocess.Popen([sys.executable, "-c", _JOB, str(args.processes - 1)])
    try:
        import psutil

        deadline = time.monotonic() + 60
        while len(psutil.Process(job.pid).children()) < args.processes - 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        with tempfile.TemporaryDirectory() as history:
            sampler = SystemSampler(history, job.pid, args.interval, gpu=GpuSampler())
            sampler._writer = HistoryWriter(history, max_delay=0.5)
            sampler.row()  # prime, as start() does
            start = time.process_time()  # the whole process: the writer's thread too
            for _ in range(args.samples):
                row = sampler.row()
                assert row is not None and row["system/process_count"] == args.processes, row
                sampler._writer.write(row)
                sampler._writer.flush()  # at a 10 s period every row is its own write and fdatasync
                sampler.samples += 1
            per_sample = (time.process_time() - start) / args.samples
            sampler._writer.close()
        base_start = time.process_time()
        for _ in range(args.samples * 100):
            os.stat("/proc/self")
        per_stat = (time.process_time() - base_start) / (args.samples * 100)
    finally:
        for child in psutil.Process(job.pid).children(recursive=True):
            child.kill()
        job.kill()
        job.wait()

    share = per_sample / args.interval
    result = {
        "processes": args.processes, "samples": args.samples, "cpu_ms_per_sample": per_sample * 1e3,
        "share_of_a_core_at_interval": share, "interval_s": args.interval, "target_share": 0.01,
        "baseline_stat_us": per_stat * 1e6, "sample_vs_stat": per_sample / per_stat if per_stat else None,
        "loadavg": os.getloadavg(),
    }
    print(f"{args.processes} processes: {per_sample * 1e3:.2f} ms CPU per sample (incl. the row's write) = "
          f"{share * 100:.3f} % of a core at {args.interval:g}s (target <= 1 %, {share / 0.01:.3f} of it); "
          f"baseline os.stat {per_stat * 1e6:.1f} us (a sample costs {result['sample_vs_stat']:.0f} of them); "
          f"load average {os.getloadavg()[0]:.2f}")
    out = Path(__file__).parent / "out"
    out.mkdir(exist_ok=True)
    (out / "system_metrics.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
