"""Benchmark: exporting a 10M-point series (every stored point) -- time and peak memory.

Builds a store holding one metric of ``--points`` points in ``--files`` files (a few NaN/±Inf
among them) through the writer's column path, then measures, each in a process of its own so
its peak RSS is its own (``wait4``'s ``ru_maxrss``):

- baseline: ``StoreReader.rows()`` -- the whole series merged into memory, no text at all;
- ``tau-collector store rows`` (JSON lines, the reader's whole series, then one line per point);
- ``tau-collector store rows --format csv`` (the streaming export, to /dev/null);
- the Portal's ``GET /stellar/data/export/{run}?format=csv`` and ``format=json`` over HTTP to a
  client that discards the body (the Portal's own RSS sampled while it answers);
- ``PortalClient.series_columns`` (the same CSV read into numpy columns).

    .venv/bin/python bench/bench_export.py [--points 10000000] [--files 100] [--store DIR]
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

import httpx
import numpy as np
import psutil

from tau_collector.expstore import open_store
from tau_collector.expstore.write.writer import MetricWriter, RunColumns

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_portal import TOKEN, load_average, start_portal  # noqa: E402 - a sibling script, not a package

RUN, METRIC = "export-run", "train/loss"
BASE_US = 1_760_000_000_000_000


def build(root: Path, points: int, files: int) -> float:
    store = open_store(root, create=True)
    writer = MetricWriter(store)
    per_file = points // files
    rng = np.random.default_rng(0)
    started = time.perf_counter()
    for f in range(files):
        step = np.arange(f * per_file, (f + 1) * per_file, dtype=np.int64)
        value = 2.0 * np.exp(-step / (points / 4)) + rng.normal(0, 0.01, per_file)
        value[::1_000_003 % per_file or 1] = np.nan if f % 2 else np.inf  # a few non-finite values
        writer.write_columns(f"export-{f}", [RunColumns(
            project="bench", experiment_id="bench", run_group_id="g", run_id=RUN, names=[METRIC],
            metric=np.zeros(per_file, dtype=np.int32), step=step, wall_time=BASE_US + step * 1000, value=value,
            tags="{}", tag_sets=[{}], source="history", first_wall_ns=BASE_US * 1000)], request_hash="h")
        print(f"  wrote file {f + 1}/{files}", end="\r", file=sys.stderr)
    store.close()
    return time.perf_counter() - started


def measured(argv: list[str], *, stdout=subprocess.DEVNULL) -> tuple[float, int]:
    """(seconds, peak RSS bytes) of a child process."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=stdout)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{argv[:4]} failed with {proc.returncode}")
    return time.perf_counter() - started, usage.ru_maxrss * 1024


def portal_export(base: str, fmt: str, portal: psutil.Process) -> tuple[float, int, int, int]:
    """(seconds, bytes, Portal RSS before, Portal peak RSS while answering)."""
    before = portal.memory_info().rss
    peak = [before]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.02):
            peak[0] = max(peak[0], portal.memory_info().rss)

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    size = 0
    started = time.perf_counter()
    with httpx.stream("GET", f"{base.rstrip('/').removesuffix('/api/v2/stellar')}/stellar/data/export/{RUN}",
                      params={"metric": METRIC, "format": fmt}, headers={"Authorization": f"Bearer {TOKEN}"},
                      timeout=600) as response:
        response.raise_for_status()
        for chunk in response.iter_raw():
            size += len(chunk)
    seconds = time.perf_counter() - started
    done.set()
    watcher.join()
    return seconds, size, before, peak[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--store", type=Path, help="reuse (or build) the store here")
    args = parser.parse_args()
    tmp = None
    root = args.store
    if root is None:
        tmp = tempfile.TemporaryDirectory(prefix="bench-export-")
        root = Path(tmp.name) / "store"
    if not (root / "manifest.json").exists():
        print(f"building {args.points:,} points in {args.files} files ...", file=sys.stderr)
        print(f"built in {build(root, args.points, args.files):.1f}s", file=sys.stderr)
    py = sys.executable
    results: dict[str, dict] = {}
    load = [load_average()]

    def report(label: str, seconds: float, rss: int, extra: str = "") -> None:
        results[label] = {"seconds": seconds, "peak_rss_mb": rss / 2**20}
        print(f"{label:<46} {seconds:8.2f} s  {args.points / seconds / 1e6:6.2f} M points/s  "
              f"peak RSS {rss / 2**20:7.0f} MB {extra}")

    code = (f"from tau_collector.expstore import StoreReader; r = StoreReader({str(root)!r}).rows({RUN!r}, "
            f"{METRIC!r}); assert len(r) == {args.points}")
    report("baseline: StoreReader.rows() (in memory)", *measured([py, "-c", code]))
    store_rows = [py, "-m", "tau_collector", "store", "rows", "--store", str(root), "--run", RUN, "--metric", METRIC]
    report("store rows --format csv (streamed)", *measured([*store_rows, "--format", "csv"]))
    report("store rows (JSON lines, whole series)", *measured(store_rows))
    proc, base = start_portal(root)
    try:
        portal = psutil.Process(proc.pid)
        for fmt in ("csv", "json"):
            seconds, size, before, peak = portal_export(base, fmt, portal)
            results[f"portal {fmt}"] = {"seconds": seconds, "bytes": size, "portal_rss_before_mb": before / 2**20,
                                        "portal_rss_peak_mb": peak / 2**20}
            print(f"{'Portal GET export format=' + fmt:<46} {seconds:8.2f} s  {args.points / seconds / 1e6:6.2f} "
                  f"M points/s  Portal RSS {before / 2**20:.0f} -> peak {peak / 2**20:.0f} MB, body "
                  f"{size / 2**20:.0f} MB")
        code = (f"from taunotebook.client import PortalClient\n"
                f"with PortalClient({base!r}, {TOKEN!r}) as c:\n"
                f"    cols = c.series_columns({RUN!r}, {METRIC!r})\n"
                f"assert len(cols) == {args.points}\n")
        report("PortalClient.series_columns (client process)", *measured([py, "-c", code]))
    finally:
        proc.terminate()
        proc.wait(30)
    load.append(load_average())
    print(f"load average before/after: {load[0]} / {load[1]} (2 cores, shared)")
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    (out / "export.json").write_text(json.dumps({"points": args.points, "files": args.files, "load": load,
                                                 "results": results}, indent=2))
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
