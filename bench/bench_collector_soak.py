"""A job's whole life through ``tau-collector collect --watch``, in compressed time (not a test).

Two writers, each against its own collector and store:

* ``closed`` — TauGrid's trainers: a closed history file per step (25 rows x 4 metrics, dotfile, fsync,
  rename), ``--rate`` files a second, ``--files`` in all (the issue asks for 200,000).
* ``append`` — one history file appended ``--rate`` times a second, 100 rows x 4 metrics a write,
  ``--events`` in all (the issue asks for 50M).

The collector runs with ``--closed-after`` scaled to the compressed clock. At ``--windows`` points
along the run it reports, per window: the collector's CPU per 1,000 events it read in the window,
its RSS (median and max of samples every 0.5 s through the window), ``checkpoint.json``'s size and
entries, the store's index size (``index.sqlite`` with its WAL) and a tail read's latency (a fresh
:class:`StoreReader` reading the newest 1,000 steps of one metric, median of 5), and then the slope
of each from the first window to the last (change per 100,000 files or 10M events, and end / start).
Flat is the target: CPU and RSS within 10 %, the checkpoint bounded, reads flat.

    .venv/bin/python bench/bench_collector_soak.py [--mode closed|append] [--files 200000] [--events 50000000]
        [--rate 250] [--windows 8]

Writes ``bench/out/collector_soak.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from tau_collector.expstore.read.reader import StoreReader
from tau_collector.expstore.store import ExpStore

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_collector_pipeline import collect_command, proc_usage, wait_ready  # noqa: E402

METRICS = ("loss", "acc", "lr", "grad_norm")


def write_closed(directory: Path, index: int, first_step: int, rows: int) -> None:
    name = f"chunk-{index:08d}.jsonl"
    tmp = directory / f".{name}.tmp"
    now = time.time()
    with tmp.open("w") as handle:
        handle.writelines(
            json.dumps({"_step": s, "_timestamp": now, **{m: 1 / (s + 1) + i for i, m in enumerate(METRICS)}}) + "\n"
            for s in range(first_step, first_step + rows))
        handle.flush()
        os.fsync(handle.fileno())
    os.rename(tmp, directory / name)


def append_rows(path: Path, first_step: int, rows: int) -> None:
    now = time.time()
    with path.open("a") as handle:
        handle.writelines(
            json.dumps({"_step": s, "_timestamp": now, **{m: 1 / (s + 1) + i for i, m in enumerate(METRICS)}}) + "\n"
            for s in range(first_step, first_step + rows))


def tail_read_ms(store: Path, last_step: int) -> float:
    times = []
    for _ in range(5):
        start = time.perf_counter()
        rows = StoreReader(ExpStore(store)).rows("bench", "loss", start_step=max(0, last_step - 1000))
        times.append(time.perf_counter() - start)
        assert len(rows.step) > 0
    return 1000 * statistics.median(times)


def visible_last_step(store: Path) -> int:
    reader = StoreReader(ExpStore(store))
    if reader.run("bench") is None:
        return -1
    summary = reader.metric_summary("bench", "loss")
    return -1 if summary is None or summary.max_step is None else int(summary.max_step)


def store_processes(store: Path) -> list[int]:
    """Processes working on ``store`` (the collector's compaction children run in sessions of their own)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and str(store).encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def wait_store_children(store: Path, timeout: float) -> float:
    """Wait until no process works on ``store`` (the temporary directory is removed after); returns the wait."""
    start = time.perf_counter()
    while store_processes(store) and time.perf_counter() - start < timeout:
        time.sleep(0.5)
    return time.perf_counter() - start


def soak(mode: str, units: int, rate: float, windows: int, closed_after: str) -> dict:
    """``units``: files (closed) or writes (append); each carries ``rows`` rows of 4 metrics."""
    rows = 25 if mode == "closed" else 100
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "hist").mkdir()
        command = collect_command(root, "--watch", "--interval", "30s", "--closed-after", closed_after,
                                  "--ready-file", str(root / "ready"))
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_ready(root)
        written = [0]
        stop = threading.Event()

        def job() -> None:
            start = time.perf_counter()
            for unit in range(units):
                if stop.is_set():
                    return
                if mode == "closed":
                    write_closed(root / "hist", unit, unit * rows, rows)
                else:
                    append_rows(root / "hist" / "history.jsonl", unit * rows, rows)
                written[0] = unit + 1
                delay = (unit + 1) / rate - (time.perf_counter() - start)
                if delay > 0:
                    time.sleep(delay)

        thread = threading.Thread(target=job)
        thread.start()
        samples = []
        mark_units = [round(units * (k + 1) / windows) for k in range(windows)]
        cpu0 = sum(proc_usage(proc.pid)[:2])
        events0, t0 = 0, time.perf_counter()
        for target in mark_units:
            # RSS is sampled through the window (every 0.5 s): one sample lands before or inside a drain at
            # random and moves by the batch being encoded; the window's median is the level, its max the peak.
            rss, anon, sampled = [], [], 0.0
            while written[0] < target and proc.poll() is None:
                if time.perf_counter() - sampled >= 0.5:
                    sampled = time.perf_counter()
                    memory = proc_usage(proc.pid)[2]
                    rss.append(memory["VmRSS"])
                    anon.append(memory["RssAnon"])
                time.sleep(0.05)
            if proc.poll() is not None:
                raise SystemExit(f"collector exited {proc.returncode}: {proc.stderr.read().decode()[-2000:]}")
            now_units = written[0]
            user, system, memory = proc_usage(proc.pid)
            rss, anon = rss or [memory["VmRSS"]], anon or [memory["RssAnon"]]
            cpu = user + system
            checkpoint = root / "out" / "checkpoint.json"
            doc = json.loads(checkpoint.read_bytes()) if checkpoint.exists() else {"sources": {}}
            # Events the collector has read (all lines checkpointed, folded ones included), not those written:
            # on a shared machine it may lag the writer.
            read_events = sum(e["lines"] for e in doc["sources"].values()) * len(METRICS)
            events, events0 = read_events - events0, read_events
            index_bytes = sum(p.stat().st_size for p in (root / "store").glob("index.sqlite*"))
            last = visible_last_step(root / "store")
            samples.append({
                "units_written": now_units,
                "seconds": time.perf_counter() - t0,
                "cpu_s_per_1k_events": 1000 * (cpu - cpu0) / events if events else 0.0,
                "rss_mb": statistics.median(rss) / 2**20,
                "rss_anon_mb": statistics.median(anon) / 2**20,
                "rss_max_mb": max(rss) / 2**20,
                "checkpoint_bytes": checkpoint.stat().st_size if checkpoint.exists() else 0,
                "checkpoint_entries": len(doc["sources"]),
                "index_mb": index_bytes / 2**20,
                "tail_read_ms": tail_read_ms(root / "store", last) if last >= 0 else 0.0,
                "lag_steps": now_units * rows - read_events // len(METRICS),
            })
            cpu0 = cpu
            s = samples[-1]
            print(f"  {mode} {now_units:>9,} {'files' if mode == 'closed' else 'writes'}: "
                  f"CPU {s['cpu_s_per_1k_events'] * 1000:6.2f} ms/1k events, RSS median {s['rss_mb']:5.1f} MB "
                  f"(anon {s['rss_anon_mb']:5.1f}, max {s['rss_max_mb']:5.1f}), "
                  f"checkpoint {s['checkpoint_bytes']:>8,} B ({s['checkpoint_entries']} entries), "
                  f"index {s['index_mb']:6.1f} MB, tail read {s['tail_read_ms']:6.1f} ms, lag {s['lag_steps']} steps",
                  flush=True)
        stop.set()
        thread.join()
        # The end of the run waits for the store's compaction child (its cost is the store's, not reported here:
        # bench_compaction.py measures it).
        (root / "completion.json").write_text("")
        proc.wait(timeout=1800)
        waited = wait_store_children(root / "store", timeout=1800)
        print(f"  {mode} the store's compaction ended {waited:.0f} s after the collector", flush=True)
    per = 100_000 if mode == "closed" else 10_000_000 // (rows * len(METRICS))
    first, last = samples[0], samples[-1]
    span = (last["units_written"] - first["units_written"]) / per or 1.0
    slopes = {}
    for key in ("cpu_s_per_1k_events", "rss_mb", "rss_anon_mb", "rss_max_mb", "checkpoint_bytes", "index_mb",
                "tail_read_ms"):
        start, end = first[key], last[key]
        slopes[key] = {"start": start, "end": end, "per_unit": (end - start) / span,
                       "end_over_start": end / start if start else None}
    return {"mode": mode, "units": units, "rows_per_unit": rows, "rate_per_s": rate,
            "slope_unit": "100,000 files" if mode == "closed" else "10M events",
            "samples": samples, "slopes": slopes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=("closed", "append"), action="append")
    parser.add_argument("--files", type=int, default=200_000)
    parser.add_argument("--events", type=int, default=50_000_000)
    parser.add_argument("--rate", type=float, default=250.0, help="files (closed) or writes (append) a second")
    parser.add_argument("--windows", type=int, default=8)
    parser.add_argument("--closed-after", default="3s",
                        help="the collector's --closed-after, scaled to the compressed clock (1m at 10 files/s)")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()}")
    results = []
    for mode in args.mode or ("closed", "append"):
        units = args.files if mode == "closed" else args.events // 400
        result = soak(mode, units, args.rate, args.windows, args.closed_after)
        results.append(result)
        for key, slope in result["slopes"].items():
            ratio = slope["end_over_start"]
            print(f"  {mode} {key:22s} start {slope['start']:10.4g}  end {slope['end']:10.4g}  "
                  f"slope {slope['per_unit']:+10.4g} per {result['slope_unit']}  "
                  f"end/start {'-' if ratio is None else f'{ratio:.2f}'}")
    print(f"load average {os.getloadavg()}")
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    (out / "collector_soak.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
