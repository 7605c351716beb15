"""Benchmark: reduced series reads from an expstore holding one 10M-point metric.

Builds the store through the real writer (``--files`` chunks of equal size, as a collector
would deliver them), then times ``StoreReader.series(..., max_points=8000)`` over the full range
and a tail request, each as p50/p95 over ``--repeats`` calls after one warm-up, plus the cold
first call of a fresh reader and the first call after a live append (which adds a chunk to the
store, so a reused ``--store`` grows by 10k points per run). Usage::

    .venv/bin/python bench/bench_expstore_read.py [--points 10000000] [--files 100] [--store DIR]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from tau_collector.expstore import StoreReader, open_store
from tau_collector.expstore.write.writer import MetricWriter
from tau_collector.projection.metric_event import MetricEvent

BASE_NS = 1_760_000_000_000_000_000
METRIC = "train/loss"
RUN = "bench-run"


def build(root: Path, points: int, files: int) -> float:
    store = open_store(root, create=True)
    writer = MetricWriter(store)  # no compaction: the files are large already
    per_file = points // files
    rng = np.random.default_rng(0)
    started = time.perf_counter()
    for f in range(files):
        steps = range(f * per_file, (f + 1) * per_file)
        values = (2.0 * np.exp(-np.arange(f * per_file, (f + 1) * per_file) / (points / 4))
                  + rng.normal(0, 0.01, per_file)).tolist()
        # MetricEvents as the spool decodes them (already validated upstream).
        events = [
            MetricEvent(project="bench", experiment_id="bench", run_group_id="g", run_id=RUN, metric_name=METRIC,
                        step=s, wall_time=BASE_NS + s * 1_000_000, value=v, exported_at=BASE_NS,
                        schema_version="tau.experiment.metric.v1", event_id="x", source="history")
            for s, v in zip(steps, values, strict=True)
        ]
        writer.write_chunk(f"bench-{f}", events, [], request_hash="h")
        print(f"  wrote file {f + 1}/{files}", end="\r", file=sys.stderr)
    store.close()
    return time.perf_counter() - started


def prepare_store(store: Path | None, points: int, files: int, prefix: str):
    """(store root, TemporaryDirectory to clean up or None): ``store`` reused when it holds a store, else built."""
    tmp = None
    root = store
    if root is None:
        tmp = tempfile.TemporaryDirectory(prefix=prefix)
        root = Path(tmp.name) / "store"
    if not (root / "manifest.json").exists():
        print(f"building {points:,} points in {files} files ...", file=sys.stderr)
        secs = build(root, points, files)
        print(f"build: {secs:.1f} s ({points / secs:,.0f} points/s through the writer)")
    return root, tmp


def timed(fn, repeats: int) -> tuple[float, float, object]:
    fn()  # warm-up
    samples = []
    result = None
    for _ in range(repeats):
        t = time.perf_counter()
        result = fn()
        samples.append((time.perf_counter() - t) * 1000)
    samples.sort()
    p95 = samples[min(len(samples) - 1, math.ceil(0.95 * len(samples)) - 1)]
    return statistics.median(samples), p95, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--max-points", type=int, default=8000)
    parser.add_argument("--store", type=Path, help="reuse or create the store here (default: a temp dir)")
    args = parser.parse_args()
    root, tmp = prepare_store(args.store, args.points, args.files, "bench-expstore-")
    last = args.points - 1
    tail_start = last - args.points // 100

    reader = StoreReader(root)
    t = time.perf_counter()
    cold = reader.series(RUN, METRIC, max_points=args.max_points)
    print(f"full range, cold reader (decode {args.files} files + merge + index): "
          f"{(time.perf_counter() - t) * 1000:.0f} ms, {cold.source_points:,} -> {cold.returned_points} points")
    p50, p95, res = timed(lambda: reader.series(RUN, METRIC, max_points=args.max_points), args.repeats)
    print(f"full range series(max_points={args.max_points}): p50 {p50:.1f} ms  p95 {p95:.1f} ms  "
          f"({res.source_points:,} -> {res.returned_points} points)")
    p50, p95, res = timed(lambda: reader.series(RUN, METRIC, tail_start, None, args.max_points), args.repeats)
    print(f"tail series(start_step={tail_start}): p50 {p50:.1f} ms  p95 {p95:.1f} ms  "
          f"({res.source_points:,} -> {res.returned_points} points)")
    fresh = StoreReader(root)
    t = time.perf_counter()
    res = fresh.series(RUN, METRIC, tail_start, None, args.max_points)
    print(f"tail series, cold reader (skips files by step range): {(time.perf_counter() - t) * 1000:.0f} ms")
    # A live run: one more chunk arrives after the last step; the next poll extends the cached series.
    appended = 10_000
    first = int(reader.series(RUN, METRIC, max_points=1).step[-1]) + 1  # after earlier appends too
    events = [
        MetricEvent(project="bench", experiment_id="bench", run_group_id="g", run_id=RUN, metric_name=METRIC,
                    step=s, wall_time=BASE_NS + s * 1_000_000, value=0.5, exported_at=BASE_NS,
                    schema_version="tau.experiment.metric.v1", event_id="x", source="history")
        for s in range(first, first + appended)
    ]
    MetricWriter(open_store(root, writable=True)).write_chunk(f"bench-append-{first}", events, [], request_hash="h")
    t = time.perf_counter()
    res = reader.series(RUN, METRIC, max_points=args.max_points)
    print(f"full range after a live append of {appended:,} points (extends the cache): "
          f"{(time.perf_counter() - t) * 1000:.0f} ms, {res.source_points:,} -> {res.returned_points} points")
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
