"""Benchmark: one very long series (default 100M points) read through the real Portal over HTTP.

Builds the store through ``MetricWriter.write_columns`` (``--files`` chunks of equal size, each
with its series levels; 8 single-step spikes planted) unless ``--store`` already holds one, starts
``taunotebook portal`` as its own process on 127.0.0.1, and times with a keep-alive httpx client
(end to end: request, JSON body, parse), each as p50/p95 over ``--repeats`` requests after one
warm-up: the full range (``max_points`` 2000 and 8000), a zoom (the middle 10%), the tail (last 1%)
and a live-pane tail (last 500 steps). Checks that every spike is in the full-range answer. Reports
the Portal's resident memory (VmRSS now, VmHWM peak).

**Baseline, same run**: the read path without levels (``StoreReader`` merging every point, as before
levels existed) in a child process, over the first ``--baseline-points`` steps of the same store
(default 16M: past the ~11.2M-point cliff where the merged series no longer fits the 512 MiB cache),
against the same range read through the Portal (levels). Usage::

    .venv/bin/python bench/bench_long_series.py [--points 100000000] [--files 100] [--store DIR]
        [--repeats 30] [--baseline-points 16000000] [--no-baseline] [--keep]

Memory stays bounded whatever ``--points``: the build holds one chunk (``points / files`` points) at a time,
and prints its progress (points, rate, an estimate of the time left, its resident memory) after each. A build
stopped between chunks leaves a store of the chunks written so far, which ``--store`` then reads as it is
(the series is steps 0..n-1 of whatever it holds). After the reads it prints bytes on disk per stored point
(metric files, levels, index). ``--no-baseline`` skips the no-levels baseline (minutes and gigabytes at a
billion points); ``--keep`` keeps a store the script built in a temporary directory (default: deleted).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_portal import TOKEN, load_average, start_portal  # a sibling script, not a package

METRIC = "train/loss"
RUN = "bench-run"
SPIKES = 8


def spike_steps(points: int) -> list[int]:
    return [int(points * (k + 0.5) / SPIKES) + 7 * k for k in range(SPIKES)]


def build(root: Path, points: int, files: int, *, first: int = 0) -> None:
    """Write chunks ``first``..``files - 1`` of the series (``first`` > 0: resume a build stopped between chunks)."""
    from tau_collector.expstore import open_store
    from tau_collector.expstore.write.writer import MetricWriter, RunColumns

    store = open_store(root, create=True)
    writer = MetricWriter(store)
    per_file = points // files
    rng = np.random.default_rng(0)
    spikes = spike_steps(points)
    started = time.perf_counter()
    for f in range(first, files):
        steps = np.arange(f * per_file, (f + 1) * per_file, dtype=np.int64)
        values = 2.0 * np.exp(-steps / (points / 4)) + rng.normal(0, 0.01, per_file)
        for k, s in enumerate(spikes):
            if steps[0] <= s <= steps[-1]:
                values[s - steps[0]] = 50.0 if k % 2 == 0 else -50.0
        n = steps.size
        writer.write_columns(f"bench-{f}", [RunColumns(
            project="bench", experiment_id="bench", run_group_id="g", run_id=RUN, names=[METRIC],
            metric=np.zeros(n, np.int64), step=steps, wall_time=1_760_000_000_000_000 + steps * 1000, value=values,
            tags=["{}"] * n, tag_sets=[{}], source="history", first_wall_ns=1_760_000_000_000_000_000)],
            request_hash="h")
        done, secs = (f + 1) * per_file, time.perf_counter() - started
        rate = (f + 1 - first) * per_file / secs
        print(f"  wrote chunk {f + 1}/{files}: {done:,} points, {secs:,.0f} s, {rate:,.0f} points/s, "
              f"~{(points - done) / rate:,.0f} s left, RSS {proc_memory(os.getpid())[0]} MiB",
              file=sys.stderr, flush=True)
    secs = time.perf_counter() - started
    store.close()
    du = {d: sum(p.stat().st_size for p in (root / d).rglob("*") if p.is_file()) for d in ("metrics", "series_levels")}
    print(f"build: {points:,} points in {files} files, {secs:.0f} s ({(files - first) * per_file / secs:,.0f} points/s "
          f"through the writer,"
          f" levels included); metric files {du['metrics'] / 2**20:,.0f} MiB, levels {du['series_levels'] / 2**20:,.0f}"
          f" MiB; peak RSS of the build {proc_memory(os.getpid())[1]} MiB")


def bytes_per_point(root: Path, points: int) -> str:
    """Bytes on disk per stored point: metric files, levels, index (after a WAL checkpoint)."""
    import sqlite3

    conn = sqlite3.connect(root / "index.sqlite")
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    du = {d: sum(p.stat().st_size for p in (root / d).rglob("*") if p.is_file()) for d in ("metrics", "series_levels")}
    du["index"] = (root / "index.sqlite").stat().st_size
    total = sum(du.values())
    return (f"bytes per point ({points:,} points): metric files {du['metrics'] / points:.2f}, levels "
            f"{du['series_levels'] / points:.3f}, index {du['index'] / points:.5f}; total {total / points:.2f} "
            f"({total / 2**30:.2f} GiB)")


def proc_memory(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) in MiB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) // 1024, int(fields["VmHWM"].split()[0]) // 1024


def percentiles(samples: list[float]) -> tuple[float, float]:
    samples = sorted(samples)
    return statistics.median(samples), samples[min(len(samples) - 1, math.ceil(0.95 * len(samples)) - 1)]


def baseline(store: Path, end_step: int, max_points: int, repeats: int) -> None:
    """Child process: the read path without levels over steps [0, end_step]; prints one JSON line."""
    from tau_collector.expstore import StoreReader

    reader = StoreReader(store)
    reader.levels.min_points = 2**62  # every range merged point by point, as before levels
    samples = []
    for _ in range(repeats):
        t = time.perf_counter()
        got = reader.series(RUN, METRIC, 0, end_step, max_points, finite_only=True)
        samples.append((time.perf_counter() - t) * 1000)
    p50, p95 = percentiles(samples)
    print(json.dumps({"p50": p50, "p95": p95, "first": samples[0], "points": got.source_points,
                      "hwm_mib": proc_memory(os.getpid())[1]}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--points", type=int, default=100_000_000)
    ap.add_argument("--files", type=int, default=100)
    ap.add_argument("--store", type=Path)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--baseline-points", type=int, default=16_000_000)
    ap.add_argument("--baseline-repeats", type=int, default=3)
    ap.add_argument("--no-baseline", action="store_true", help="skip the no-levels baseline")
    ap.add_argument("--resume", action="store_true",
                    help="--store is a build of --points/--files stopped between chunks: write the chunks it lacks")
    ap.add_argument("--store-built-for", action="store_true",
                    help="--store is a build of --points stopped early: look for the spikes planted below its end")
    ap.add_argument("--keep", action="store_true", help="keep a store built in a temporary directory")
    ap.add_argument("--baseline-child", nargs=3, metavar=("STORE", "END_STEP", "MAX_POINTS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.baseline_child:
        baseline(Path(args.baseline_child[0]), int(args.baseline_child[1]), int(args.baseline_child[2]),
                 args.baseline_repeats)
        return
    tmp = None
    root = args.store
    if root is None:
        if args.keep:
            root = Path(tempfile.mkdtemp(prefix="bench-long-series-")) / "store"
            print(f"store kept at {root}", file=sys.stderr)
        else:
            tmp = tempfile.TemporaryDirectory(prefix="bench-long-series-")
            root = Path(tmp.name) / "store"
    if not (root / "manifest.json").exists():
        print(f"building {args.points:,} points in {args.files} files ...", file=sys.stderr)
        build(root, args.points, args.files)
    elif args.resume:
        import sqlite3

        conn = sqlite3.connect(f"file:{root / 'index.sqlite'}?mode=ro", uri=True)
        (written,) = conn.execute("SELECT COUNT(*) FROM metric_files").fetchone()
        conn.close()
        print(f"resuming at chunk {written + 1}/{args.files} ...", file=sys.stderr)
        build(root, args.points, args.files, first=written)
    print(f"load average before reads: {load_average()} (2-core machine, shared)")
    proc, api = start_portal(root)
    try:
        with httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=600) as client:
            url = f"{api}/runs/{RUN}/series"

            def series(max_points: int, **extra) -> dict:
                r = client.get(url, params={"target": RUN, "metric": METRIC, "max_points": max_points, **extra})
                r.raise_for_status()
                return r.json()

            def report(label: str, max_points: int, **extra) -> dict:
                body = series(max_points, **extra)  # warm-up
                samples = []
                for _ in range(args.repeats):
                    t = time.perf_counter()
                    body = series(max_points, **extra)
                    samples.append((time.perf_counter() - t) * 1000)
                p50, p95 = percentiles(samples)
                print(f"HTTP {label}: p50 {p50:.1f} ms  p95 {p95:.1f} ms "
                      f"({body['source_points']:,} -> {body['returned_points']} points)")
                return body

            t = time.perf_counter()
            body = series(2000)
            print(f"first request of a fresh Portal (full range, max_points=2000): "
                  f"{(time.perf_counter() - t) * 1000:.0f} ms, {body['source_points']:,} -> "
                  f"{body['returned_points']} points")
            n = body["source_points"]
            body = report("full range max_points=2000", 2000)
            kept = {p["step"] for p in body["points"]}
            # the store holds steps 0..n-1; a build stopped early holds the spikes of --points below n
            spikes = [s for s in spike_steps(args.points if args.store_built_for else n) if s < n]
            print(f"spikes kept in the full-range answer: {sum(s in kept for s in spikes)}/{len(spikes)}")
            report("full range max_points=8000", 8000)
            report("zoom: middle 10%", 2000, start_step=int(n * 0.45), end_step=int(n * 0.55))
            report("zoom: 1M steps in the middle", 2000, start_step=n // 2, end_step=n // 2 + 1_000_000 - 1)
            report("tail: last 1%", 2000, start_step=n - n // 100)
            report("live tail: last 500 steps", 2000, start_step=n - 500)
            last = report("the last point", 2000, start_step=n - 1)
            assert [p["step"] for p in last["points"]] == [n - 1], last["points"]
            rss, hwm = proc_memory(proc.pid)
            print(f"Portal memory after the reads: RSS {rss} MiB, peak (VmHWM) {hwm} MiB")
            end = min(args.baseline_points, n) - 1
            levels = report(f"baseline range [0, {end}] through the Portal (levels)", 2000, start_step=0,
                            end_step=end)
        print(bytes_per_point(root, n))
        if args.no_baseline:
            print(f"load average after: {load_average()}")
            return
        out = subprocess.run([sys.executable, __file__, "--baseline-child", str(root), str(end), "2000",
                              "--baseline-repeats", str(args.baseline_repeats)],
                             check=True, capture_output=True, text=True).stdout
        old = json.loads(out.strip().splitlines()[-1])
        print(f"baseline, no levels (in process, merging every point), range [0, {end}] "
              f"({old['points']:,} points): first {old['first']:.0f} ms, p50 {old['p50']:.0f} ms, "
              f"p95 {old['p95']:.0f} ms over {args.baseline_repeats}; peak memory {old['hwm_mib']} MiB")
        print(f"load average after: {load_average()}")
        assert levels["source_points"] == old["points"]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if tmp is not None:
            tmp.cleanup()


if __name__ == "__main__":
    main()
