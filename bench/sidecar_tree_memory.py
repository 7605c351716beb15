"""The sidecar's whole footprint: summed RSS of ``tau-collector collect --watch`` and all its descendants (not a test).

A synthetic job writes 1,000 events/s in one of the two history formats a sidecar reads:

* ``closed`` -- TauGrid's trainers: 10 closed files a second, 25 rows x 4 metrics each (dotfile, fsync, rename);
* ``append`` -- one history file appended 10 times a second, 25 rows x 4 metrics a write.

With ``--prefill N`` the job has already written N closed files (``closed`` mode) and a first collector has
stored them and exited: the measured collector is a sidecar *restarted* on that job. With ``--backlog`` too, no
collector stored them: the measured collector is a fresh sidecar (no checkpoint) on an unstored backlog. Every
0.5 s the script sums VmRSS over the collector's process tree (children found through ``/proc/*/stat``'s parent pid,
so a compaction child, were there one, counts) and reads the tree's CPU (its own and its waited-for children's).
It prints the peak summed RSS, the collector's ``VmHWM`` (the kernel's peak of its RSS, which a spike between two
samples cannot hide from; at catch-up, before the job's end and at its last sample before exiting), the CPU share
of one core over each minute (and over each 20 s), the tree's CPU seconds per 1,000 events written (process CPU
time: the figure to compare on a shared machine), and the delivery latency: from the end of each write to its rows
readable in the store (p50/p95, polled every 20 ms).

A restarted sidecar is sampled from its start: the catch-up (until the store holds the step of the file the job
wrote 2 s before: its time, peak and CPU), the minute that starts a minute after it, and the run's end (the final
drain and the registration of every file, after the completion file appears).

    .venv/bin/python bench/sidecar_tree_memory.py --mode closed --seconds 150 [--prefill 5000]
    .venv/bin/python bench/sidecar_tree_memory.py --mode closed --seconds 210 --prefill 200000 --keep-prefill DIR
    .venv/bin/python bench/sidecar_tree_memory.py --mode closed --seconds 210 --prefill 200000 --keep-prefill DIR \
        --backlog

Writes ``bench/out/sidecar_tree_memory-<mode>[-prefill<N>|-backlog<N>].json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_collector_pipeline import collect_command  # noqa: E402
from bench_collector_soak import METRICS, append_rows, write_closed  # noqa: E402

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


def sample(root: int) -> tuple[int, float, int, int]:
    """(summed RSS bytes, CPU seconds of the tree incl. waited-for children, processes, the collector's own VmHWM
    in bytes: the kernel's peak of its RSS so far, which catches what falls between two samples)."""
    rss, cpu, n, hwm = 0, 0.0, 0, 0
    for pid in tree(root):
        try:
            with open(f"/proc/{pid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/status") as handle:
                for line in handle:
                    if line.startswith("VmRSS:"):
                        rss += int(line.split()[1]) * 1024
                    elif line.startswith("VmHWM:") and pid == root:
                        hwm = int(line.split()[1]) * 1024
        except OSError:
            continue
        n += 1
        # utime, stime (and for the collector cutime, cstime: children it has waited for)
        cpu += sum(int(f) for f in fields[11:15 if pid == root else 13]) / TICKS
    return rss, cpu, n, hwm


def prefill_files(directory: Path, count: int) -> None:
    """``count`` closed files with the bytes ``write_closed`` writes, straight to their names (no dotfile, no
    fsync each: 200,000 files in a minute or two instead of an hour), then one ``sync``."""
    now = time.time()
    for index in range(count):
        first = index * ROWS
        lines = "".join(json.dumps({"_step": s, "_timestamp": now,
                                    **{m: 1 / (s + 1) + i for i, m in enumerate(METRICS)}}) + "\n"
                        for s in range(first, first + ROWS))
        with open(directory / f"chunk-{index:08d}.jsonl", "w") as handle:
            handle.write(lines)
    os.sync()


def prefilled(root: Path, prefill: int, keep: bool, *, stored: bool = True) -> None:
    """``root`` as a job that wrote ``prefill`` closed files and (``stored``) a first collector that stored them and
    exited; without ``stored`` the files are an unstored backlog (no spool, no store, no checkpoint).

    With ``keep`` that state is made once and moved to ``<root>.pristine``; each run then starts from it at the
    same path (the checkpoint names the flags, paths included, and each file by ``dev:ino``): the job's files
    hard-linked (never written again: the job only adds files), the spool and the store copied. Both kinds of run
    share the pristine job's files (``written``); the first collector's state is made when a stored run needs it.
    """
    pristine = root.with_name(root.name + ".pristine")
    clear(root)
    root.mkdir(parents=True, exist_ok=True)
    if not keep:
        (root / "hist").mkdir()
        write_prefill(root / "hist", prefill)
        if stored:
            store_prefill(root)
        return
    if not _marked(pristine / "written", prefill):
        for name in ("hist", "out", "store", "written", "prefilled"):
            path = pristine / name
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
        (pristine / "hist").mkdir(parents=True)
        write_prefill(pristine / "hist", prefill)
        (pristine / "written").write_text(f"{prefill}\n")
    if stored and not _marked(pristine / "prefilled", prefill):
        subprocess.run(["cp", "-al", str(pristine / "hist"), str(root / "hist")], check=True)
        store_prefill(root)
        for name in ("out", "store"):
            (root / name).rename(pristine / name)
        (pristine / "prefilled").write_text(f"{prefill}\n")
        clear(root)
    started = time.perf_counter()
    subprocess.run(["cp", "-al", str(pristine / "hist"), str(root / "hist")], check=True)
    if stored:
        for name in ("out", "store"):
            subprocess.run(["cp", "-a", str(pristine / name), str(root / name)], check=True)
    print(f"prefill linked/copied from {pristine} in {time.perf_counter() - started:.0f} s", file=sys.stderr)


def _marked(marker: Path, prefill: int) -> bool:
    return marker.exists() and marker.read_text().strip() == str(prefill)


def write_prefill(directory: Path, prefill: int) -> None:
    started = time.perf_counter()
    prefill_files(directory, prefill)
    print(f"{prefill} files written in {time.perf_counter() - started:.0f} s", file=sys.stderr)


def store_prefill(root: Path) -> None:
    """A first, one-pass collector stores ``root``'s files and exits."""
    started = time.perf_counter()
    first = subprocess.run(collect_command(root, "--closed-after", "1s"), capture_output=True, text=True)
    if first.returncode:
        raise SystemExit(f"the first collector failed: {first.stderr[-2000:]}")
    print(f"the first collector stored them in {time.perf_counter() - started:.0f} s", file=sys.stderr)


def clear(root: Path) -> None:
    """Empty a kept run's folder (the job's links, spool, store, ready and completion files)."""
    for name in ("hist", "out", "store", "ready", "completion.json"):
        path = root / name
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()


def caught_up(root: Path, step: int) -> bool:
    """Whether the store holds ``step`` of ``loss`` (the index's summary of the run's files)."""
    import sqlite3

    try:
        with sqlite3.connect(f"file:{root / 'store' / 'index.sqlite'}?mode=ro", uri=True, timeout=1) as conn:
            row = conn.execute("SELECT MAX(max_step) FROM metric_files").fetchone()
    except sqlite3.Error:
        return False
    return row is not None and row[0] is not None and row[0] >= step


def poll_latency(index_path: Path, first_unit: int, written: dict[int, float], stop: threading.Event,
                 delays: list[float]) -> None:
    """Every 20 ms until ``stop``: the newest step the store holds; each unit of rows (``ROWS`` steps) that became
    visible adds the seconds since the job finished writing it to ``delays`` (write to readable in the store)."""
    import sqlite3

    unit = first_unit  # the next unit not seen yet
    conn = None
    while not stop.wait(0.02):
        try:
            if conn is None:
                if not index_path.exists():
                    continue
                conn = sqlite3.connect(f"file:{index_path}?mode=ro", uri=True, timeout=1)
            newest = conn.execute("SELECT max(max_step) FROM metric_summaries WHERE run_id = 'bench'").fetchone()[0]
        except sqlite3.Error:
            continue
        now = time.perf_counter()
        while newest is not None and (unit + 1) * ROWS - 1 <= newest and unit in written:
            delays.append(now - written[unit])
            unit += 1
    if conn is not None:
        conn.close()


def run(mode: str, seconds: float, prefill: int, keep: Path | None = None, *, backlog: bool = False) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        root = keep if keep is not None else Path(tmp)
        index = 0
        if prefill:
            prefilled(root, prefill, keep is not None, stored=not backlog)
            index = prefill
        else:
            (root / "hist").mkdir()
        proc = subprocess.Popen(collect_command(root, "--watch", "--interval", "30s", "--closed-after", "60s",
                                                "--ready-file", str(root / "ready")),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        started = time.perf_counter()
        start_samples = []  # (t, rss, cpu, processes, VmHWM) from the collector's start to its ready file
        while not (root / "ready").exists():
            if proc.poll() is not None:
                raise SystemExit(f"the collector exited: {proc.stderr.read()[-2000:]}")
            rss, cpu, n, hwm = sample(proc.pid)
            start_samples.append((time.perf_counter() - started, rss, cpu, n, hwm))
            time.sleep(0.5)
        ready_s = time.perf_counter() - started
        stop = threading.Event()
        written = [0]  # units (25 rows x 4 metrics) the job wrote
        written_at: dict[int, float] = {}  # unit index -> when its write ended (perf_counter)

        def job(start_index: int) -> None:
            start = time.perf_counter()
            unit = 0
            while not stop.is_set():
                i = start_index + unit
                if mode == "closed":
                    write_closed(root / "hist", i, i * ROWS, ROWS)
                else:
                    append_rows(root / "hist" / "history.jsonl", i * ROWS, ROWS)
                written_at[i] = time.perf_counter()
                unit += 1
                written[0] = unit
                delay = unit / RATE - (time.perf_counter() - start)
                if delay > 0:
                    time.sleep(delay)

        writer = threading.Thread(target=job, args=(index,), daemon=True)
        delays: list[float] = []
        poller = threading.Thread(target=poll_latency, args=(root / "store" / "index.sqlite", index, written_at, stop,
                                                             delays), daemon=True)
        writer.start()
        poller.start()
        samples = []  # (t, rss, cpu, processes, VmHWM)
        t0 = time.perf_counter()
        load0 = os.getloadavg()[0]
        caught_up_s = None  # when the store first held the step of a file written 2 s before
        while time.perf_counter() - t0 < seconds:
            rss, cpu, n, hwm = sample(proc.pid)
            now = time.perf_counter() - t0
            samples.append((now, rss, cpu, n, hwm))
            if caught_up_s is None and len(samples) % 2 == 0 and now > 2:
                behind = int((now - 2) * RATE)  # units written by 2 s ago
                if behind and caught_up(root, (index + behind) * ROWS - 1):
                    caught_up_s = round(now, 1)
            time.sleep(0.5)
        load1 = os.getloadavg()[0]
        stop.set()
        writer.join()
        poller.join()
        events = written[0] * ROWS * 4
        (root / "completion.json").write_text("")
        finish_started, finish_samples = time.perf_counter(), []  # the final drain and the run's registration
        while proc.poll() is None and time.perf_counter() - finish_started < 1800:
            finish_samples.append(sample(proc.pid))
            time.sleep(0.5)
        finish_s = time.perf_counter() - finish_started
        proc.wait(timeout=300)
        compacted = 0
        index_path = root / "store" / "index.sqlite"
        if index_path.exists():
            import sqlite3

            with sqlite3.connect(index_path) as conn:
                compacted = conn.execute("SELECT COUNT(*) FROM metric_files WHERE file_id LIKE 'compacted-%'"
                                         ).fetchone()[0]
        if keep is not None:
            clear(keep)

    def shares(window: float) -> list[float]:
        out = []
        at = 0
        while at + window <= samples[-1][0] + 1e-9:
            inside = [s for s in samples if at <= s[0] <= at + window]
            if len(inside) >= 2:
                out.append(round(100 * (inside[-1][2] - inside[0][2]) / (inside[-1][0] - inside[0][0]), 2))
            at += window
        return out

    def after(t0: float, t1: float) -> dict:
        inside = [s for s in samples if t0 <= s[0] <= t1]
        if len(inside) < 2:
            return {}
        return {"from_s": round(inside[0][0], 1), "to_s": round(inside[-1][0], 1),
                "peak_tree_rss_mb": round(max(s[1] for s in inside) / 1e6, 1),
                # the collector's peak RSS from its start to the window's end (VmHWM only rises)
                "collector_vmhwm_mb": round(inside[-1][4] / 1e6, 1),
                "cpu_percent": round(100 * (inside[-1][2] - inside[0][2]) / (inside[-1][0] - inside[0][0]), 2)}

    return {
        "mode": mode, "seconds": seconds, "prefill": prefill, "stored": bool(prefill) and not backlog,
        "load": [round(load0, 2), round(load1, 2)],
        "ready_s": round(ready_s, 1),
        "start_peak_tree_rss_mb": round(max((s[1] for s in start_samples), default=0) / 1e6, 1),
        "caught_up_s": caught_up_s,
        "catch_up": after(0, caught_up_s) if caught_up_s is not None else {},
        # the minute that starts a minute after catch-up: what the job's rate costs once caught up
        "minute_after": after(caught_up_s + 60, caught_up_s + 120) if caught_up_s is not None else {},
        "peak_tree_rss_mb": round(max(s[1] for s in start_samples + samples) / 1e6, 1),
        "finish_s": round(finish_s, 1),
        "finish_peak_tree_rss_mb": round(max((s[0] for s in finish_samples), default=0) / 1e6, 1),
        # the collector's VmHWM (peak RSS since its start, MB = 10^6 bytes) before the job ended, and at its last
        # sample before it exited (the run's end: final drain and registration)
        "collector_vmhwm_mb": round(max(s[4] for s in start_samples + samples) / 1e6, 1),
        "collector_vmhwm_at_exit_mb": round(max((s[3] for s in finish_samples), default=0) / 1e6, 1),
        "median_tree_rss_mb": round(sorted(s[1] for s in samples)[len(samples) // 2] / 1e6, 1),
        "most_processes": max(s[3] for s in samples),
        "cpu_percent_per_minute": shares(60.0), "cpu_percent_per_20s": shares(20.0),
        "compacted_files": compacted,
        # from the end of a write to its rows readable in the store (polled every 20 ms, by this script)
        "delivery_latency_ms": {"p50": _percentile(delays, 50), "p95": _percentile(delays, 95), "n": len(delays)},
        # the tree's CPU seconds over the sampled job per 1,000 events it wrote: comparable on a busy machine
        "cpu_s_per_1000_events": round(1000 * (samples[-1][2] - samples[0][2]) / max(1, events), 4),
    }


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(1000 * ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))], 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("closed", "append"), default="closed")
    parser.add_argument("--seconds", type=float, default=150.0)
    parser.add_argument("--prefill", type=int, default=0, help="closed files written (and stored) before")
    parser.add_argument("--backlog", action="store_true",
                        help="the prefilled files were never stored: a fresh sidecar (no checkpoint) starts on them")
    parser.add_argument("--keep-prefill", type=Path, default=None,
                        help="the job's folder: the prefilled job and store are made once (kept beside it, "
                             "'<folder>.pristine') and each run starts from them there")
    args = parser.parse_args()
    if args.keep_prefill is not None and not args.prefill:
        parser.error("--keep-prefill needs --prefill")
    if args.backlog and not args.prefill:
        parser.error("--backlog needs --prefill")
    result = run(args.mode, args.seconds, args.prefill, args.keep_prefill, backlog=args.backlog)
    print(json.dumps(result, indent=2))
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    suffix = f"-{'backlog' if args.backlog else 'prefill'}{args.prefill}" if args.prefill else ""
    (out / f"sidecar_tree_memory-{args.mode}{suffix}.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
