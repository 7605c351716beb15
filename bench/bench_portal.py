"""Benchmark: series requests over HTTP against ``taunotebook portal`` for one 10M-point metric.

Builds the store with the expstore benchmark's builder (the real writer, ``--files`` chunks)
unless ``--store`` already holds one, starts the Portal as its own process on 127.0.0.1 (as a
user runs it), and times, end to end with a keep-alive httpx client (request, JSON body, parse):

- the full range with ``max_points=8000`` (target p50 < 60 ms),
- a tail request (``start_step`` 1% before the end, target p50 < 10 ms),

- a live-pane poll (``start_step`` 500 steps before the end),

each as p50/p95 over ``--repeats`` requests after one warm-up, end to end (including the
client's JSON parse) and transfer only (httpx ``elapsed``: request sent to body received). The
first request of a fresh server, which decodes and indexes the files, is printed separately. Usage::

    .venv/bin/python bench/bench_portal.py [--points 10000000] [--files 100] [--store DIR] [--repeats 30]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_expstore_read import METRIC, RUN, prepare_store, timed  # a sibling script, not a package

TOKEN = "bench-token"


def start_portal(store: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "taunotebook", "portal", "--store", str(store), "--token", TOKEN],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    text = "".join(proc.stdout.readline() for _ in range(3))
    match = re.search(r"API base: (\S+)", text)
    if match is None:
        proc.kill()
        raise SystemExit(f"the Portal did not start: {text!r}")
    return proc, match.group(1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--max-points", type=int, default=8000)
    parser.add_argument("--store", type=Path, help="reuse or create the store here (default: a temp dir)")
    args = parser.parse_args()
    root, tmp = prepare_store(args.store, args.points, args.files, "bench-portal-")
    proc, api = start_portal(root)
    try:
        with httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120) as client:
            url = f"{api}/runs/{RUN}/series"

            transfer: list[float] = []

            def series(**extra):
                r = client.get(url, params={"target": RUN, "metric": METRIC, "max_points": args.max_points,
                                            **extra})
                r.raise_for_status()
                transfer.append(r.elapsed.total_seconds() * 1000)  # request sent -> body received
                return r.json()

            def report(label: str, fn) -> dict:
                transfer.clear()
                p50, p95, body = timed(fn, args.repeats)
                print(f"HTTP {label}: p50 {p50:.1f} ms  p95 {p95:.1f} ms end to end "
                      f"(transfer only p50 {statistics.median(transfer[1:]):.1f} ms; "
                      f"{body['source_points']:,} -> {body['returned_points']} points)")
                return body

            t = time.perf_counter()
            body = series()
            print(f"first request of a fresh Portal (decode + merge + index): "
                  f"{(time.perf_counter() - t) * 1000:.0f} ms, {body['source_points']:,} -> "
                  f"{body['returned_points']} points")
            last = body["points"][-1]["step"]
            report(f"full range max_points={args.max_points}", series)
            report(f"tail start_step={last - args.points // 100} (last 1%)",
                   lambda: series(start_step=last - args.points // 100))
            report(f"live tail start_step={last - 500} (last 500 steps)", lambda: series(start_step=last - 500))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if tmp is not None:
            tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
