"""The collector sidecar end to end (not a test): latency, footprint, throughput.

1. latency  — from a history chunk's rename (and from a tfevents append+flush) to the point being
   visible through the expstore read API, p50/p95 over N points, collector in ``--watch`` mode.
2. footprint — the collector's RSS and CPU (and, apart, its compaction children's) while a job writes 1,000 events/s
   as 10 or 2 new history files a second (``new files``: 50 rows x 2 metrics; ``taugrid chunks``: TauGrid's
   trainers' house format, 25 rows x 4 metrics, each a closed file: dotfile, fsync, rename), as 10 or 2
   appends a second to one history file, or row by row
   through the normalizer's writer (``HistoryWriter``, as ``tau-collector wrap`` runs a job).
3. ingest   — sustained events/s of a one-shot collector over pre-written history.
4. sink     — CPU per chunk of the expstore sink alone (in-process, 100 events a chunk), the share of
   a chunk's cost that is the store's rather than the spool's.

    .venv/bin/python bench/bench_collector_pipeline.py [--points 200] [--seconds 30] [--events 500000]

Prints a table and writes ``bench/out/collector_pipeline.json``.
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
from tau_collector.job.history_writer import HistoryWriter

HERE = Path(__file__).resolve().parent
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def collect_command(root: Path, *extra: str) -> list[str]:
    """``tau-collector collect`` over ``root``'s history into ``root/store`` (one-shot unless ``--watch``)."""
    return [
        sys.executable, "-m", "tau_collector", "collect", "--run", "bench", "--project", "bench",
        "--experiment", "bench", "--group", "g", "--out", str(root / "out"),
        "--history", str(root / "hist" / "*.jsonl"), "--completion-file", str(root / "completion.json"),
        "--sink", "expstore", "--store", str(root / "store"), *extra,
    ]


def start_collector(root: Path) -> subprocess.Popen:
    command = collect_command(root, "--watch", "--interval", "30s", "--tfevents", str(root / "tb"),
                              "--ready-file", str(root / "ready"))
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_ready(root: Path) -> None:
    while not (root / "ready").exists():
        time.sleep(0.01)


def finish(root: Path, proc: subprocess.Popen) -> None:
    (root / "completion.json").write_text("")
    proc.wait(timeout=120)


def write_chunk(directory: Path, index: int, rows: list[dict]) -> None:
    name = f"chunk-{index:06d}-{int(time.time() * 1000)}.jsonl"
    tmp = directory / f".{name}.tmp"
    with tmp.open("w") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in rows)
        handle.flush()
        os.fsync(handle.fileno())
    os.rename(tmp, directory / name)


def visible_steps(store: Path, metric: str) -> int:
    if not (store / "manifest.json").exists():
        return 0
    reader = StoreReader(ExpStore(store))
    if reader.run("bench") is None:
        return 0
    return len(reader.rows("bench", metric).step)


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": 1000 * statistics.median(ordered),
        "p95_ms": 1000 * ordered[int(0.95 * (len(ordered) - 1))],
        "max_ms": 1000 * ordered[-1],
        "n": len(ordered),
    }


def latency(points: int) -> dict[str, dict[str, float]]:
    # torch's writer: tensorboardX 2.6's flush() leaves queued scalars unwritten
    from torch.utils.tensorboard import SummaryWriter

    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "hist").mkdir()
        (root / "tb").mkdir()
        proc = start_collector(root)
        wait_ready(root)
        jsonl, tfevents = [], []
        writer = SummaryWriter(str(root / "tb"), flush_secs=3600)
        for step in range(points):
            write_chunk(root / "hist", step, [{"_step": step, "_timestamp": time.time(), "loss": 1 / (step + 1)}])
            written = time.perf_counter()
            while visible_steps(root / "store", "loss") < step + 1:
                time.sleep(0.005)
            jsonl.append(time.perf_counter() - written)
            writer.add_scalar("tb_loss", 1 / (step + 1), step)
            writer.flush()
            written = time.perf_counter()
            while visible_steps(root / "store", "tb_loss") < step + 1:
                time.sleep(0.005)
            tfevents.append(time.perf_counter() - written)
        writer.close()
        finish(root, proc)
        results["jsonl_rename_to_visible"] = percentiles(jsonl)
        results["tfevents_append_to_visible"] = percentiles(tfevents)
    return results


def proc_usage(pid: int, *, children: bool = False) -> tuple[float, float, dict[str, int]]:
    """(user CPU s, system CPU s, memory counters in bytes) of a process, from /proc; with ``children``,
    the CPU of its children that have exited instead (the collector's compaction processes)."""
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    with open(f"/proc/{pid}/status") as handle:
        memory = {
            line.split(":")[0]: int(line.split()[1]) * 1024
            for line in handle
            if line.startswith(("VmRSS:", "RssAnon:", "RssFile:"))
        }
    at = 13 if children else 11
    return int(fields[at]) / CLOCK_TICKS, int(fields[at + 1]) / CLOCK_TICKS, memory


def children_rss(pid: int) -> int:
    """Resident bytes of ``pid``'s running children (a compaction process, when one runs)."""
    total = 0
    try:
        kids = open(f"/proc/{pid}/task/{pid}/children").read().split()
        for kid in kids:
            with open(f"/proc/{kid}/status") as handle:
                total += sum(int(line.split()[1]) * 1024 for line in handle if line.startswith("VmRSS:"))
    except OSError:
        pass  # it exited between the listing and the read
    return total


PATTERNS = ("new files", "taugrid chunks", "appends to one file", "normalizer")
TAUGRID_METRICS = ("loss", "acc", "lr", "grad_norm")


def footprint(seconds: float, chunks_per_s: float, pattern: str) -> dict[str, float]:
    """The collector while a job writes 1,000 events/s: ``chunks_per_s`` new history files a second,
    that many appends a second to one history file (as W&B and TensorBoard write), or (``normalizer``)
    that many batches of rows a second through a :class:`HistoryWriter` row by row, as a job run by
    ``tau-collector wrap`` prints them (the writer decides when it appends)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "hist").mkdir()
        (root / "tb").mkdir()
        proc = start_collector(root)
        wait_ready(root)
        stop = threading.Event()

        # rows x 2 metrics (x 4 for TauGrid's trainers), chunks_per_s times a second = 1,000 events/s
        per_chunk = int((250 if pattern == "taugrid chunks" else 500) / chunks_per_s)

        def job() -> None:
            step, index = 0, 0
            while not stop.is_set():
                tick = time.perf_counter()
                rows = [
                    {"_step": s, "_timestamp": time.time(), "loss": 1 / (s + 1), "acc": s * 1e-6}
                    for s in range(step, step + per_chunk)
                ]
                if pattern == "taugrid chunks":  # TauGrid's trainers: 4 metrics a row, a closed file a step
                    rows = [{"_step": r["_step"], "_timestamp": r["_timestamp"],
                             **{m: r["loss"] * (i + 1) for i, m in enumerate(TAUGRID_METRICS)}} for r in rows]
                if pattern == "normalizer":
                    for row in rows:
                        writer.write(row)
                elif pattern == "appends to one file":
                    with open(root / "hist" / "history.jsonl", "a") as handle:
                        handle.writelines(json.dumps(r) + "\n" for r in rows)
                else:
                    write_chunk(root / "hist", index, rows)
                step, index = step + per_chunk, index + 1
                stop.wait(max(0.0, 1 / chunks_per_s - (time.perf_counter() - tick)))

        writer = HistoryWriter(root / "hist") if pattern == "normalizer" else None
        thread = threading.Thread(target=job)
        thread.start()
        time.sleep(3)  # warm-up: imports, first drains
        user0, sys0, _ = proc_usage(proc.pid)
        kids0 = sum(proc_usage(proc.pid, children=True)[:2])
        start = time.perf_counter()
        peak = child_peak = 0
        compactions, running = 0, False
        while time.perf_counter() - start < seconds:
            time.sleep(0.5)
            peak = max(peak, proc_usage(proc.pid)[2]["VmRSS"])
            child = children_rss(proc.pid)
            compactions += bool(child) and not running
            running = bool(child)
            child_peak = max(child_peak, child)
        user1, sys1, memory = proc_usage(proc.pid)
        kids1 = sum(proc_usage(proc.pid, children=True)[:2])
        elapsed = time.perf_counter() - start
        stop.set()
        thread.join()
        if writer is not None:
            writer.close()
        finish(root, proc)
    return {
        "events_per_s": 1000,
        "chunks_per_s": chunks_per_s,
        "pattern": pattern,
        "seconds": elapsed,
        "cpu_fraction_of_core": (user1 - user0 + sys1 - sys0) / elapsed,
        "user_fraction": (user1 - user0) / elapsed,
        "system_fraction": (sys1 - sys0) / elapsed,
        "rss_mb": memory["VmRSS"] / 2**20,
        "rss_anon_mb": memory["RssAnon"] / 2**20,
        "rss_file_mb": memory["RssFile"] / 2**20,
        "peak_rss_mb": peak / 2**20,
        "compaction_child_peak_rss_mb": child_peak / 2**20,
        "compaction_children_seen": compactions,
        "compaction_children_cpu_s": kids1 - kids0,  # those that exited within the window
    }


def ingest(events: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "hist").mkdir()
        (root / "tb").mkdir()
        rows_per_file = 5000
        rows_total = events // 2
        for index, first in enumerate(range(0, rows_total, rows_per_file)):
            write_chunk(
                root / "hist",
                index,
                [
                    {"_step": s, "_timestamp": 1_790_000_000 + s / 10, "loss": 1 / (s + 1), "acc": s / rows_total}
                    for s in range(first, min(first + rows_per_file, rows_total))
                ],
            )
        (root / "completion.json").write_text("")
        start = time.perf_counter()
        out = subprocess.run(
            collect_command(root),
            capture_output=True,
            text=True,
            check=True,
        )
        elapsed = time.perf_counter() - start
        status = json.loads(out.stdout)
    return {"events": status["events"], "seconds": elapsed, "events_per_s": status["events"] / elapsed}


def sink(chunks: int) -> dict[str, float]:
    import hashlib

    from tau_collector.projection.metric_event import encode_ndjson_many, new_metric_event
    from tau_collector.sinks.base import Chunk
    from tau_collector.sinks.expstore import ExpstoreSink

    def chunk(sequence: int) -> Chunk:
        first = sequence * 50
        events = [new_metric_event(project="bench", experiment_id="bench", run_group_id="g", run_id="bench",
                                   metric_name=metric, step=s, wall_time=1_790_000_000_000_000_000 + s * 1000,
                                   value=1 / (s + 1), exported_at=1_790_000_000_000_000_000, source="bench")
                  for s in range(first, first + 50) for metric in ("loss", "acc")]
        ndjson = encode_ndjson_many(events)
        return Chunk(sequence, "history", hashlib.sha256(ndjson).hexdigest(), ndjson, len(events),
                     events=tuple(events))

    with tempfile.TemporaryDirectory() as tmp:
        expstore = ExpstoreSink(Path(tmp) / "store", source_id="bench", background_compaction=True)  # as collect
        expstore.deliver(chunk(0))  # imports, store creation
        cpu = wall = 0.0
        for sequence in range(1, chunks + 1):
            c = chunk(sequence)
            cpu0, wall0 = time.process_time(), time.perf_counter()
            expstore.deliver(c)
            cpu += time.process_time() - cpu0
            wall += time.perf_counter() - wall0
        expstore.close()
    return {"chunks": chunks, "cpu_ms_per_chunk": 1000 * cpu / chunks, "wall_ms_per_chunk": 1000 * wall / chunks}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--events", type=int, default=500_000)
    parser.add_argument("--chunks-per-s", type=float, action="append",
                        help="footprint: chunk files per second carrying the 1,000 events/s (default 10 and 2)")
    parser.add_argument("--pattern", choices=PATTERNS, action="append",
                        help="footprint: how the job writes (default: each)")
    parser.add_argument("--sink-chunks", type=int, default=400)
    parser.add_argument("--only", choices=("latency", "footprint", "ingest", "sink"))
    args = parser.parse_args()
    phases = {
        "latency": lambda: latency(args.points),
        "footprint": lambda: [footprint(args.seconds, rate, pattern) for pattern in args.pattern or PATTERNS
                              for rate in args.chunks_per_s or (10.0, 2.0)],
        "ingest": lambda: ingest(args.events),
        "sink": lambda: sink(args.sink_chunks),
    }
    results = {name: run() for name, run in phases.items() if args.only in (None, name)}
    for name, stats in results.get("latency", {}).items():
        print(
            f"{name:28s} p50 {stats['p50_ms']:7.1f} ms  p95 {stats['p95_ms']:7.1f} ms  "
            f"max {stats['max_ms']:7.1f} ms  (n={stats['n']})"
        )
    for fp in results.get("footprint", []):
        print(
            f"1k events/s, {fp['chunks_per_s']:g}/s {fp['pattern']:19s} "
            f"collector CPU {100 * fp['cpu_fraction_of_core']:.1f}% "
            f"(user {100 * fp['user_fraction']:.1f}%, system {100 * fp['system_fraction']:.1f}%), "
            f"RSS {fp['rss_mb']:.0f} MB = anon {fp['rss_anon_mb']:.0f} + files {fp['rss_file_mb']:.0f} "
            f"(peak {fp['peak_rss_mb']:.0f} MB) over {fp['seconds']:.0f} s; {fp['compaction_children_seen']} "
            f"compaction child(ren), {fp['compaction_children_cpu_s']:.2f} s CPU, "
            f"peak {fp['compaction_child_peak_rss_mb']:.0f} MB"
        )
    ing = results.get("ingest")
    if ing:
        print(
            f"one-shot ingest              {ing['events']:,} events in {ing['seconds']:.1f} s = "
            f"{ing['events_per_s']:,.0f} events/s"
        )
    sk = results.get("sink")
    if sk:
        print(f"expstore sink alone          {sk['cpu_ms_per_chunk']:.1f} ms CPU, "
              f"{sk['wall_ms_per_chunk']:.1f} ms wall per 100-event chunk ({sk['chunks']} chunks)")
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    (out / "collector_pipeline.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
