"""A store's simulated year: millions of small chunks through the writer; index, latencies at start vs end.

The year: ``--chunks`` chunks (``--steps`` steps x 4 metrics each) in jobs of ``--chunks-per-job``, each job
one run and one spool stream (the sink's stream keys, as long as the sink's, so they age past the replay
horizon, and a finished job's stream past the writer's idle horizon, compressed to 2 s),
``--workers`` jobs written at a time by as many writer processes (sidecars of concurrent jobs sharing a
store). Each writer compacts in process after a delivery when due (the sidecar's policy with a retirement
grace of 0: compressed time, what a grace of minutes does over a year, so compacted files and their index
rows go), and at a job's end marks its run completed and clusters it by metric (what ``import`` and
``store compact`` leave a finished run as).

Same probe, same session: before the year the parent writes a probe run of ``--window`` chunks into the empty
store (write latency median / p90 at the start) and reads one metric of it cold (a new reader) 7 times; after
the year it reads that run again the same way, and writes a second probe run alternately, chunk by chunk,
into the aged store and into a young store holding only the first probe run (written the same way), reading
both alternately: the aged/young ratios are what the store's age costs under the same load. Index: bytes in
use (pages minus free pages), the file's bytes, and the tables' row counts, at the start, at the end, and of a
fresh store holding the same points (one chunk per run).

    .venv/bin/python bench/store_simulated_year.py [--chunks 1000000] [--workers 2] [--dir D] [--no-sync]

``--dir`` keeps the store there, and running the command again with the same ``--dir`` resumes the year
where it stopped (each job from its stream's newest recorded sequence, as a restarted spool would).
A file ``stop`` in ``--dir`` ends the year early: each writer ends its job at the chunk it is at, and the
measurements run on what was written (the chunks and jobs are counted from the store).
``--no-sync`` skips fsync (compressed time on a shared disk: latency then shows the index, not the disk).
Writes ``bench/out/store_simulated_year.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
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
from tau_collector.expstore.maintain.metric_clusters import cluster_quietly
from tau_collector.expstore.write.writer import MetricWriter, RunColumns

HERE = Path(__file__).resolve().parent
METRICS = ["acc", "grad_norm", "loss", "lr"]
TABLES = ("idempotency_keys", "idempotency_stream_keys", "idempotency_streams", "metric_files",
          "metric_summary_files", "metric_file_metrics", "metric_file_retirements", "metric_summaries", "runs")
POLICY = CompactionPolicy(grace_seconds=0.0)
# Compressed time: a day without deliveries (the writer's horizon for a finished job's stream keys) is 2 s here;
# a job's stream is written every few ms while it runs, so only finished jobs' streams go idle.
IDLE_STREAM_SECONDS = 2.0


def writer_of(store) -> MetricWriter:
    return MetricWriter(store, compaction=POLICY, idle_stream_seconds=IDLE_STREAM_SECONDS)


def keys(job: str, at: int) -> tuple[str, str]:
    """A chunk key and request hash as long as the sink's (a content digest and a source suffix)."""
    digest = hashlib.sha256(f"{job}/{at}".encode()).hexdigest()
    return f"chunk:{digest}-{digest[:16]}", hashlib.sha256(digest.encode()).hexdigest()


def columns(run: str, first_step: int, steps: int) -> RunColumns:
    step = np.repeat(np.arange(first_step, first_step + steps, dtype=np.int64), len(METRICS))
    return RunColumns(project="proj", experiment_id="year", run_group_id="g", run_id=run, names=list(METRICS),
                      metric=np.tile(np.arange(len(METRICS), dtype=np.int32), steps), step=step,
                      wall_time=1_760_000_000_000_000 + step * 1_000_000, value=step * 0.5,
                      tags=["{}"] * step.size, tag_sets=[{}], source="history")


def open_writable(path: Path, no_sync: bool):
    store = open_store(path, create=True)
    if no_sync:
        store.connection().execute("PRAGMA synchronous = OFF")
    return store


def index_state(store) -> dict:
    conn = sqlite3.connect(store.index_path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        rows = {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in TABLES}
    finally:
        conn.close()
    return {"index_bytes_used": (pages - free) * page, "index_file_bytes": pages * page, "rows": rows}


def cold_read_ms(store, run: str) -> float:
    started = time.perf_counter()
    StoreReader(store).rows(run, "loss")
    return (time.perf_counter() - started) * 1000


def write_probe(writer: MetricWriter, run: str, window: int, steps: int, c: int) -> float:
    key, request_hash = keys(run, c)
    t0 = time.perf_counter()
    writer.write_columns(key, [columns(run, c * steps, steps)], request_hash=request_hash,
                         stream=(f"spool-{run}", c + 1))
    return (time.perf_counter() - t0) * 1000


def latency(lat: list[float]) -> dict:
    return {"write_ms_median": statistics.median(lat), "write_ms_p90": float(np.percentile(lat, 90))}


def job_of(args, worker: int, n: int) -> int:
    return n * args.workers + worker


def worker_main(args, worker: int, root: Path) -> None:
    """Write this worker's jobs (worker, worker + workers, ...), resuming each at its stream's newest sequence."""
    if args.no_sync:
        os.fsync = lambda fd: None  # type: ignore[assignment]
    store = open_writable(root / "aged", args.no_sync)
    writer = writer_of(store)
    conn = store.connection()
    jobs = (args.chunks + args.chunks_per_job - 1) // args.chunks_per_job
    started, written, n = time.perf_counter(), 0, 0
    while (job := job_of(args, worker, n)) < jobs:
        n += 1
        run, stream = f"job-{job}", f"spool-job-{job}"
        state = conn.execute("SELECT state FROM runs WHERE run_id = ?", (run,)).fetchone()
        if state is not None and state[0] == "completed":
            continue
        row = conn.execute("SELECT last_sequence FROM idempotency_streams WHERE stream = ?", (stream,)).fetchone()
        first = max(0, row[0] - 1) if row else 0  # the newest recorded chunk again: a replay, a no-op
        count = min(args.chunks_per_job, args.chunks - job * args.chunks_per_job)
        for at in range(first, count):
            if (root / "stop").exists():  # end the year here: this job ends at this chunk
                break
            key, request_hash = keys(run, at)
            writer.write_columns(key, [columns(run, at * args.steps, args.steps)],
                                 request_hash=request_hash, stream=(stream, at + 1))
            written += 1
            if written % 10_000 == 0:
                took = time.perf_counter() - started
                load = Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "?"
                print(f"  worker {worker}: {written:,} chunks this sitting, job {job}/{jobs}, "
                      f"{took / written * 1000:.2f} ms a chunk, {took:.0f} s, load {load}", flush=True)
        writer.mark_completed(run)
        cluster_quietly(store, run)
        if (root / "stop").exists():
            break
    writer.close()


def chunks_written(store) -> dict[str, int]:
    """Each job's chunks in the aged store (its stream's newest sequence: chunks are written in order)."""
    return {stream.removeprefix("spool-"): last for stream, last in store.connection().execute(
        "SELECT stream, last_sequence FROM idempotency_streams WHERE stream LIKE 'spool-job-%'")}


def fresh_index(args, root: Path, jobs: dict[str, int]) -> dict:
    fresh = open_writable(root / "fresh", args.no_sync)
    writer = MetricWriter(fresh)
    writer.write_columns("probe", [columns("probe", 0, args.window * args.steps)], request_hash="h")
    for run, n in sorted(jobs.items()):
        writer.write_columns(f"all-{run}", [columns(run, 0, n * args.steps)], request_hash="h")
        writer.mark_completed(run)
    return index_state(fresh)


def reads(store, run: str, times: int = 7) -> float:
    cold_read_ms(store, run)  # warm: the first read of a process imports pyarrow
    return statistics.median(cold_read_ms(store, run) for _ in range(times))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=1_000_000)
    ap.add_argument("--chunks-per-job", type=int, default=5_000)
    ap.add_argument("--workers", type=int, default=2, help="writer processes, one job each at a time")
    ap.add_argument("--steps", type=int, default=2, help="steps per chunk (x4 metrics)")
    ap.add_argument("--window", type=int, default=500, help="chunks of each probe run")
    ap.add_argument("--dir", type=Path, help="keep the store here; the same --dir again resumes")
    ap.add_argument("--no-sync", action="store_true")
    ap.add_argument("--repeat", type=int, default=0,
                    help="no year: with the stores a finished year left in --dir, write this many more probe runs "
                         "alternately into the aged and the young store and read them cold alternately (same session)")
    args = ap.parse_args()
    if args.chunks < 1 or args.chunks_per_job < 1 or args.workers < 1 or args.window < 2:
        raise SystemExit("--chunks, --chunks-per-job and --workers must be at least 1, --window at least 2")
    if args.no_sync:
        os.fsync = lambda fd: None  # type: ignore[assignment]
    tmp = None
    if args.dir is None:
        tmp = tempfile.mkdtemp(prefix="simyear-")
        root = Path(tmp)
    else:
        root = args.dir
        root.mkdir(parents=True, exist_ok=True)
    try:
        if args.repeat:
            repeat_probes(args, root)
        else:
            run_year(args, root)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def run_year(args, root: Path) -> None:
    start_file = root / "start.json"
    if start_file.exists():
        start = json.loads(start_file.read_text())
        print(f"resuming the year in {root}", flush=True)
    else:  # a sitting stopped before the start was measured: the probe would be a replay, begin afresh
        shutil.rmtree(root / "aged", ignore_errors=True)
        store = open_writable(root / "aged", args.no_sync)
        writer = writer_of(store)
        lat = [write_probe(writer, "probe", args.window, args.steps, c) for c in range(args.window)]
        writer.close()
        start = {**latency(lat), "read_probe_ms": reads(store, "probe"), **index_state(store)}
        store.close()
        start_file.write_text(json.dumps(start))
    began = time.perf_counter()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=worker_main, args=(args, w, root)) for w in range(args.workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    if any(p.exitcode for p in procs):
        raise SystemExit(f"a writer process failed ({[p.exitcode for p in procs]}); run again to resume")
    year_seconds = time.perf_counter() - began
    aged = open_writable(root / "aged", args.no_sync)
    jobs = chunks_written(aged)
    end = {"chunks": sum(jobs.values()), "jobs": len(jobs), "read_probe_ms": reads(aged, "probe"), **index_state(aged)}
    shutil.rmtree(root / "young", ignore_errors=True)
    young = open_writable(root / "young", args.no_sync)
    young_writer = writer_of(young)
    for c in range(args.window):
        write_probe(young_writer, "probe", args.window, args.steps, c)
    writers = {"aged": writer_of(aged), "young": young_writer}
    stores = {"aged": aged, "young": young}
    lat: dict[str, list[float]] = {"aged": [], "young": []}
    for c in range(args.window):
        for name in (("aged", "young") if c % 2 else ("young", "aged")):
            lat[name].append(write_probe(writers[name], "probe2", args.window, args.steps, c))
    rd: dict[str, dict[str, list[float]]] = {n: {"probe": [], "probe2": []} for n in stores}
    for name in stores:
        cold_read_ms(stores[name], "probe")
    for r in range(9):
        for name in (("aged", "young") if r % 2 else ("young", "aged")):
            for run in ("probe", "probe2"):
                rd[name][run].append(cold_read_ms(stores[name], run))
    same = {n: {**latency(lat[n]), "read_probe_ms": statistics.median(rd[n]["probe"]),
                "read_probe2_ms": statistics.median(rd[n]["probe2"])} for n in stores}
    same["ratio_aged_to_young"] = {k: same["aged"][k] / same["young"][k] for k in same["aged"]}
    end.update(latency(lat["aged"]))
    shutil.rmtree(root / "fresh", ignore_errors=True)
    fresh = fresh_index(args, root, jobs)
    result = {"args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
              "year_seconds_last_sitting": year_seconds, "start": start, "end": end, "fresh_same_data": fresh,
              "same_run": same, "loadavg": Path("/proc/loadavg").read_text().split()[:3]}
    (HERE / "out").mkdir(exist_ok=True)
    (HERE / "out" / "store_simulated_year.json").write_text(json.dumps(result, indent=2))
    report(args, result)


def alternate_probe(args, stores: dict, writers: dict, run: str, reads_of: tuple[str, ...]) -> dict:
    """A probe run of ``--window`` chunks written alternately, chunk by chunk, into each store, then 9 alternating
    cold reads of each of ``reads_of``; medians and p90 per store, and aged / young."""
    lat: dict[str, list[float]] = {n: [] for n in stores}
    for c in range(args.window):
        for name in (("aged", "young") if c % 2 else ("young", "aged")):
            lat[name].append(write_probe(writers[name], run, args.window, args.steps, c))
    rd: dict[str, dict[str, list[float]]] = {n: {r: [] for r in reads_of} for n in stores}
    for name in stores:
        cold_read_ms(stores[name], reads_of[0])
    for r in range(9):
        for name in (("aged", "young") if r % 2 else ("young", "aged")):
            for read in reads_of:
                rd[name][read].append(cold_read_ms(stores[name], read))
    out = {n: {**latency(lat[n]), **{f"read_{r}_ms": statistics.median(rd[n][r]) for r in reads_of}} for n in stores}
    out["ratio_aged_to_young"] = {k: out["aged"][k] / out["young"][k] for k in out["aged"]}
    return out


def repeat_probes(args, root: Path) -> None:
    """Same-session repeats on the stores a year left in ``--dir`` (``--repeat`` more probe runs)."""
    stores = {name: open_writable(root / name, args.no_sync) for name in ("aged", "young")}
    for name, store in stores.items():
        if store.connection().execute("SELECT 1 FROM runs WHERE run_id = 'probe2'").fetchone() is None:
            raise SystemExit(f"{root / name} holds no finished year's probes: run the year first")
    writers = {name: writer_of(store) for name, store in stores.items()}
    taken = {r for (r,) in stores["aged"].connection().execute("SELECT run_id FROM runs WHERE run_id LIKE 'probe%'")}
    results = []
    for _ in range(args.repeat):
        run = next(f"probe{n}" for n in range(3, 10_000) if f"probe{n}" not in taken)
        taken.add(run)
        one = alternate_probe(args, stores, writers, run, ("probe", "probe2", run))
        one["run"], one["loadavg"] = run, Path("/proc/loadavg").read_text().split()[:3]
        results.append(one)
        ratio = one["ratio_aged_to_young"]
        print(f"{run} (load {' '.join(one['loadavg'])}): " + ", ".join(
            f"{key} {one['aged'][key]:.2f} / {one['young'][key]:.2f} = {ratio[key]:.2f}" for key in ratio), flush=True)
    for writer in writers.values():
        writer.close()
    (HERE / "out").mkdir(exist_ok=True)
    (HERE / "out" / "store_simulated_year_repeats.json").write_text(json.dumps(results, indent=2))


def report(args, result: dict) -> None:
    s, e, f = result["start"], result["end"], result["fresh_same_data"]
    print(f"\n{e['chunks']:,} chunks in {e['jobs']:,} jobs, "
          f"{result['year_seconds_last_sitting']:.0f} s (last sitting), load {' '.join(result['loadavg'])}")
    print("| | start (probe run only) | end of the year | fresh store, same data |")
    print("|---|---|---|---|")
    for key in ("index_bytes_used", "index_file_bytes"):
        print(f"| {key} | {s[key]:,} | {e[key]:,} | {f[key]:,} |")
    for t in TABLES:
        print(f"| {t} rows | {s['rows'][t]:,} | {e['rows'][t]:,} | {f['rows'][t]:,} |")
    print(f"| write ms median / p90 (probe run) | {s['write_ms_median']:.2f} / {s['write_ms_p90']:.2f} | "
          f"{e['write_ms_median']:.2f} / {e['write_ms_p90']:.2f} | |")
    print(f"| cold read of the probe run (ms) | {s['read_probe_ms']:.1f} | {e['read_probe_ms']:.1f} | |")
    p = result["same_run"]
    print(f"\nsame run: a probe run of {args.window:,} chunks alternately into the aged store and a young one:")
    print("| | aged | young | aged / young |")
    print("|---|---|---|---|")
    for key, label in (("write_ms_median", "write ms, median"), ("write_ms_p90", "write ms, p90"),
                       ("read_probe_ms", "cold read, first probe run (ms)"),
                       ("read_probe2_ms", "cold read, second probe run (ms)")):
        print(f"| {label} | {p['aged'][key]:.2f} | {p['young'][key]:.2f} | {p['ratio_aged_to_young'][key]:.2f} |")


if __name__ == "__main__":
    main()
