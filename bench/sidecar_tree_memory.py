"""The sidecar's whole footprint: summed RSS of ``tau-collector collect --watch`` and all its descendants (not a test).

A synthetic job writes 1,000 events/s in one of the two history formats a sidecar reads:

* ``closed`` -- TauGrid's trainers: 10 closed files a second, 25 rows x 4 metrics each (dotfile, fsync, rename);
* ``append`` -- one history file appended 10 times a second, 25 rows x 4 metrics a write.

With ``--prefill N`` the job has already written N closed files (``closed`` mode) and a first collector has
stored them and exited: the measured collector is a sidecar *restarted* on that job. Every 0.5 s the script
sums VmRSS over the collector's process tree (children found through ``/proc/*/stat``'s parent pid, so a
compaction child, were there one, counts) and reads the tree's CPU (its own and its waited-for children's).
It prints the peak summed RSS, the CPU share of one core over each minute (and over each 20 s), and the tree's
CPU seconds per 1,000 events written (process CPU time: the figure to compare on a shared machine).

    .venv/bin/python bench/sidecar_tree_memory.py --mode closed --seconds 150 [--prefill 5000]

Writes ``bench/out/sidecar_tree_memory-<mode>[-prefill].json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_collector_pipeline import collect_command, wait_ready  # noqa: E402
from bench_collector_soak import append_rows, write_closed  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")
ROWS, RATE = 25, 10.0  # 25 rows x 4 metrics, 10 a second: 1,000 events/s


def tree(root: int) -> list[int]:
    """``root`` and its descendants now."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        parents.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(parents.get(pid, []))
    return out


def sample(root: int) -> tuple[int, float, int]:
    """(summed RSS bytes, CPU seconds of the tree incl. waited-for children, processes)."""
    rss, cpu, n = 0, 0.0, 0
    for pid in tree(root):
        try:
            with open(f"/proc/{pid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/status") as handle:
                rss += sum(int(line.split()[1]) * 1024 for line in handle if line.startswith("VmRSS:"))
        except OSError:
            continue
        n += 1
        # utime, stime (and for the collector cutime, cstime: children it has waited for)
        cpu += sum(int(f) for f in fields[11:15 if pid == root else 13]) / TICKS
    return rss, cpu, n


def run(mode: str, seconds: float, prefill: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "hist").mkdir()
        index = 0
        if prefill:
            for index in range(prefill):
                write_closed(root / "hist", index, index * ROWS, ROWS)
            index = prefill
            first = subprocess.run(collect_command(root, "--closed-after", "1s"), capture_output=True, text=True)
            if first.returncode:
                raise SystemExit(f"the first collector failed: {first.stderr[-2000:]}")
        proc = subprocess.Popen(collect_command(root, "--watch", "--interval", "30s", "--closed-after", "60s",
                                                "--ready-file", str(root / "ready")),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_ready(root)
        stop = threading.Event()
        written = [0]  # units (25 rows x 4 metrics) the job wrote

        def job(start_index: int) -> None:
            start = time.perf_counter()
            unit = 0
            while not stop.is_set():
                i = start_index + unit
                if mode == "closed":
                    write_closed(root / "hist", i, i * ROWS, ROWS)
                else:
                    append_rows(root / "hist" / "history.jsonl", i * ROWS, ROWS)
                unit += 1
                written[0] = unit
                delay = unit / RATE - (time.perf_counter() - start)
                if delay > 0:
                    time.sleep(delay)

        writer = threading.Thread(target=job, args=(index,), daemon=True)
        writer.start()
        samples = []  # (t, rss, cpu, processes)
        t0 = time.perf_counter()
        load0 = os.getloadavg()[0]
        while time.perf_counter() - t0 < seconds:
            rss, cpu, n = sample(proc.pid)
            samples.append((time.perf_counter() - t0, rss, cpu, n))
            time.sleep(0.5)
        load1 = os.getloadavg()[0]
        stop.set()
        writer.join()
        events = written[0] * ROWS * 4
        (root / "completion.json").write_text("")
        proc.wait(timeout=300)
        compacted = 0
        index_path = root / "store" / "index.sqlite"
        if index_path.exists():
            import sqlite3

            with sqlite3.connect(index_path) as conn:
                compacted = conn.execute("SELECT COUNT(*) FROM metric_files WHERE file_id LIKE 'compacted-%'"
                                         ).fetchone()[0]

    def shares(window: float) -> list[float]:
        out = []
        at = 0
        while at + window <= samples[-1][0] + 1e-9:
            inside = [s for s in samples if at <= s[0] <= at + window]
            if len(inside) >= 2:
                out.append(round(100 * (inside[-1][2] - inside[0][2]) / (inside[-1][0] - inside[0][0]), 2))
            at += window
        return out

    return {
        "mode": mode, "seconds": seconds, "prefill": prefill, "load": [round(load0, 2), round(load1, 2)],
        "peak_tree_rss_mb": round(max(s[1] for s in samples) / 1e6, 1),
        "median_tree_rss_mb": round(sorted(s[1] for s in samples)[len(samples) // 2] / 1e6, 1),
        "most_processes": max(s[3] for s in samples),
        "cpu_percent_per_minute": shares(60.0), "cpu_percent_per_20s": shares(20.0),
        "compacted_files": compacted,
        # the tree's CPU seconds over the sampled job per 1,000 events it wrote: comparable on a busy machine
        "cpu_s_per_1000_events": round(1000 * (samples[-1][2] - samples[0][2]) / max(1, events), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("closed", "append"), default="closed")
    parser.add_argument("--seconds", type=float, default=150.0)
    parser.add_argument("--prefill", type=int, default=0, help="closed files written (and stored) before")
    args = parser.parse_args()
    result = run(args.mode, args.seconds, args.prefill)
    print(json.dumps(result, indent=2))
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    suffix = "-prefill" if args.prefill else ""
    (out / f"sidecar_tree_memory-{args.mode}{suffix}.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
