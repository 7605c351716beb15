"""A store's simulated year: millions of small chunks through the writer; index, latencies at start vs end.

Jobs follow one another, each a spool stream (``--chunks-per-job`` chunks of ``--steps`` steps x 4 metrics)
written through :class:`MetricWriter` with the sink's stream keys and in-process compaction whose retirement
grace is 0 (compressed time: what a grace of minutes does over a year). Measured over the first and the last
``--window`` chunks: the median and p90 write latency, and a cold one-metric read (a new reader) of the job
being written and of the first job. Index: bytes in use (pages minus free pages) and the tables' row counts,
at the start, at the end, and of a fresh store holding the same points (one chunk per job).

Start and end lie minutes apart on a shared machine, and the job being written holds fewer points at the
start, so their ratio mixes age with load and size. **Same-run comparison**: when the first job is done the
store is copied (a store one job old); at the end a probe job of ``--window`` chunks is written into the aged
store and into that copy, chunk by chunk alternately, and cold reads of the first job (the same points in
both) and of the probe job alternate too: the aged/young ratios are what the store's age costs.

    .venv/bin/python bench/store_simulated_year.py [--chunks 1000000] [--chunks-per-job 20000] [--no-sync]

``--no-sync`` skips fsync (compressed time on a shared disk: latency then shows the index, not the disk).
Writes ``bench/out/store_simulated_year.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from tau_collector.expstore import StoreReader, open_store
from tau_collector.expstore.maintain.compaction import CompactionPolicy
from tau_collector.expstore.write.writer import MetricWriter, RunColumns

HERE = Path(__file__).resolve().parent
METRICS = ["acc", "grad_norm", "loss", "lr"]
TABLES = ("idempotency_keys", "metric_files", "metric_summary_files", "metric_file_metrics",
          "metric_file_retirements", "metric_summaries", "runs")


def columns(run: str, first_step: int, steps: int) -> RunColumns:
    step = np.repeat(np.arange(first_step, first_step + steps, dtype=np.int64), len(METRICS))
    return RunColumns(project="proj", experiment_id="year", run_group_id="g", run_id=run, names=list(METRICS),
                      metric=np.tile(np.arange(len(METRICS), dtype=np.int32), steps), step=step,
                      wall_time=1_760_000_000_000_000 + step * 1_000_000, value=step * 0.5,
                      tags=["{}"] * step.size, tag_sets=[{}], source="history")


def index_state(store) -> dict:
    conn = sqlite3.connect(store.index_path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        used = conn.execute("PRAGMA page_count").fetchone()[0] - conn.execute("PRAGMA freelist_count").fetchone()[0]
        rows = {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in TABLES}
    finally:
        conn.close()
    return {"index_bytes_used": used * page, "rows": rows}


def cold_read_ms(store, run: str) -> float:
    started = time.perf_counter()
    StoreReader(store).rows(run, "loss")
    return (time.perf_counter() - started) * 1000


def probe(aged, young, args) -> dict:
    """The same probe job written into both stores, chunk by chunk alternately; then alternating cold reads."""
    writers = {"aged": MetricWriter(aged, compaction=CompactionPolicy(grace_seconds=0.0)),
               "young": MetricWriter(young, compaction=CompactionPolicy(grace_seconds=0.0))}
    lat: dict[str, list[float]] = {"aged": [], "young": []}
    for c in range(args.window):
        for name in (("aged", "young") if c % 2 else ("young", "aged")):
            t0 = time.perf_counter()
            writers[name].write_columns(f"probe-{c}", [columns("probe", c * args.steps, args.steps)],
                                        request_hash=f"p{c}", stream=("spool-probe", c + 1))
            lat[name].append((time.perf_counter() - t0) * 1000)
    reads: dict[str, dict[str, list[float]]] = {n: {"job-0": [], "probe": []} for n in lat}
    stores = {"aged": aged, "young": young}
    for name in lat:
        cold_read_ms(stores[name], "job-0")  # warm-up
    for r in range(7):
        for name in (("aged", "young") if r % 2 else ("young", "aged")):
            for run in ("job-0", "probe"):
                reads[name][run].append(cold_read_ms(stores[name], run))
    out = {n: {"write_ms_median": statistics.median(lat[n]), "write_ms_p90": float(np.percentile(lat[n], 90)),
               "read_first_job_ms": statistics.median(reads[n]["job-0"]),
               "read_probe_job_ms": statistics.median(reads[n]["probe"])} for n in lat}
    out["ratio_aged_to_young"] = {k: out["aged"][k] / out["young"][k] for k in out["aged"]}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=1_000_000)
    ap.add_argument("--chunks-per-job", type=int, default=20_000)
    ap.add_argument("--steps", type=int, default=2, help="steps per chunk (x4 metrics)")
    ap.add_argument("--window", type=int, default=500, help="chunks measured at the start and at the end")
    ap.add_argument("--no-sync", action="store_true")
    args = ap.parse_args()
    if args.chunks < 2 * args.window or args.chunks_per_job < 1 or args.chunks < 2 * args.chunks_per_job:
        raise SystemExit("--chunks must be at least twice --window and twice --chunks-per-job, "
                         "--chunks-per-job at least 1")
    if args.no_sync:
        os.fsync = lambda fd: None  # type: ignore[assignment]
    with tempfile.TemporaryDirectory(prefix="simyear-") as tmp:
        store = open_store(Path(tmp) / "aged", create=True)
        if args.no_sync:
            store.connection().execute("PRAGMA synchronous = OFF")
        writer = MetricWriter(store, compaction=CompactionPolicy(grace_seconds=0.0))
        lat: list[float] = []
        phases: dict[str, dict] = {}
        started = time.perf_counter()
        for c in range(args.chunks):
            job, at = divmod(c, args.chunks_per_job)
            t0 = time.perf_counter()
            writer.write_columns(f"chunk-{job}-{at}", [columns(f"job-{job}", at * args.steps, args.steps)],
                                 request_hash=f"h{c}", stream=(f"spool-{job}", at + 1))
            lat.append((time.perf_counter() - t0) * 1000)
            if c + 1 in (args.window, args.chunks):
                name = "start" if c + 1 == args.window else "end"
                cold_read_ms(store, "job-0")  # warm: the first read of a process imports pyarrow
                part = lat[-args.window:]
                phases[name] = {
                    "chunks_written": c + 1,
                    "write_ms_median": statistics.median(part),
                    "write_ms_p90": float(np.percentile(part, 90)),
                    "read_current_job_ms": statistics.median(cold_read_ms(store, f"job-{job}") for _ in range(5)),
                    "read_first_job_ms": statistics.median(cold_read_ms(store, "job-0") for _ in range(5)),
                    **index_state(store),
                }
                lat.clear()
            if c + 1 == args.chunks_per_job:  # the first job done: keep a copy, a store one job old
                store.connection().execute("PRAGMA wal_checkpoint(TRUNCATE)")
                shutil.copytree(store.root, Path(tmp) / "young")
            if (c + 1) % 10_000 == 0:
                print(f"  {c + 1:,} chunks, {time.perf_counter() - started:.0f} s", flush=True)
        fresh = open_store(Path(tmp) / "fresh", create=True)
        fresh_writer = MetricWriter(fresh)
        jobs = (args.chunks - 1) // args.chunks_per_job + 1
        for job in range(jobs):
            n = min(args.chunks_per_job, args.chunks - job * args.chunks_per_job)
            fresh_writer.write_columns(f"all-{job}", [columns(f"job-{job}", 0, n * args.steps)], request_hash="h",
                                       stream=(f"spool-{job}", 1))
        phases["fresh_same_data"] = index_state(fresh)
        young = open_store(Path(tmp) / "young", create=True)
        if args.no_sync:
            young.connection().execute("PRAGMA synchronous = OFF")
        phases["same_run"] = probe(store, young, args)
    result = {"args": vars(args), **phases}
    (HERE / "out").mkdir(exist_ok=True)
    (HERE / "out" / "store_simulated_year.json").write_text(json.dumps(result, indent=2))
    s, e, f = phases["start"], phases["end"], phases["fresh_same_data"]
    print(f"\n| | start ({s['chunks_written']:,} chunks) | end ({e['chunks_written']:,}) | fresh store, same data |")
    print("|---|---|---|---|")
    print(f"| index bytes in use | {s['index_bytes_used']:,} | {e['index_bytes_used']:,} | {f['index_bytes_used']:,} |")
    for t in TABLES:
        print(f"| {t} rows | {s['rows'][t]:,} | {e['rows'][t]:,} | {f['rows'][t]:,} |")
    print(f"| write ms median / p90 | {s['write_ms_median']:.2f} / {s['write_ms_p90']:.2f} | "
          f"{e['write_ms_median']:.2f} / {e['write_ms_p90']:.2f} | |")
    print(f"| cold read, job being written (ms) | {s['read_current_job_ms']:.1f} | {e['read_current_job_ms']:.1f} | |")
    print(f"| cold read, first job (ms) | {s['read_first_job_ms']:.1f} | {e['read_first_job_ms']:.1f} | |")
    p = phases["same_run"]
    print(f"\nsame run, a probe job of {args.window:,} chunks alternately into the aged store and a copy one job old:")
    print("| | aged | young | aged / young |")
    print("|---|---|---|---|")
    for key, label in (("write_ms_median", "write ms, median"), ("write_ms_p90", "write ms, p90"),
                       ("read_first_job_ms", "cold read, first job (ms)"),
                       ("read_probe_job_ms", "cold read, probe job (ms)")):
        print(f"| {label} | {p['aged'][key]:.2f} | {p['young'][key]:.2f} | {p['ratio_aged_to_young'][key]:.2f} |")


if __name__ == "__main__":
    main()
