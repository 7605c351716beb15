"""What a durable acknowledgement costs (not a test): SQLite ``synchronous=FULL`` against ``NORMAL``.

The collector acknowledges a chunk (deletes its spooled copy, advances the checkpoint) once the
store's COMMIT that records it returns. Under WAL, ``NORMAL`` does not sync at COMMIT (only at
checkpoints); ``FULL`` syncs the WAL once per COMMIT. Two measures, each mode alternated in rounds
so that a shared machine's load falls on both alike:

1. writer — ``MetricWriter.write_chunk`` alone, chunks of 100 events (25 rows x 4 metrics, the
   house format's chunk), wall milliseconds per chunk;
2. collect — a one-shot ``tau-collector collect`` of a backlog of small chunks (the whole per-chunk
   path: spool manifest, Parquet file, index, acknowledgement), wall milliseconds per chunk.

    .venv/bin/python bench/bench_durability.py [--chunks 150] [--rounds 3]

Stores go in a directory beside this script (``bench/out/``): a tmpfs ``/tmp`` would make every
fsync free. Prints a table and writes ``bench/out/durability.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tau_collector.expstore import open_store
from tau_collector.expstore.write.writer import MetricWriter
from tau_collector.projection.metric_event import new_metric_event

HERE = Path(__file__).resolve().parent
MODES = ("NORMAL", "FULL")
T0_NS = 1_790_000_000_000_000_000

# A collect whose writer connection uses the given synchronous mode (FULL is the shipped one).
_COLLECT_WITH = """
import sys
from tau_collector.expstore import store

mode = sys.argv[1]
connect = store.ExpStore._connect_for_writing

def connect_with(self):
    conn = connect(self)
    conn.execute(f"PRAGMA synchronous = {mode}")
    return conn

store.ExpStore._connect_for_writing = connect_with
from tau_collector.cli import main
sys.exit(main(sys.argv[2:]))
"""


def _events(chunk: int) -> list:
    return [new_metric_event(project="p", experiment_id="e", run_group_id="g", run_id="r", metric_name=metric,
                             step=chunk * 25 + row, wall_time=T0_NS + (chunk * 25 + row) * 1_000_000, value=0.5,
                             exported_at=T0_NS, source="history", tags={})
            for row in range(25) for metric in ("loss", "acc", "lr", "grad_norm")]


def writer_ms_per_chunk(root: Path, mode: str, chunks: int) -> float:
    store = open_store(root, create=True)
    store.connection().execute(f"PRAGMA synchronous = {mode}")
    writer = MetricWriter(store)
    batches = [_events(c) for c in range(chunks)]
    start = time.perf_counter()
    for c, events in enumerate(batches):
        writer.write_chunk(f"chunk-{c}", events, [], request_hash=f"h{c}")
    elapsed = time.perf_counter() - start
    writer.close()
    return elapsed * 1000 / chunks


def collect_ms_per_chunk(root: Path, mode: str, chunks: int) -> float:
    history = root / "history.jsonl"
    root.mkdir(parents=True)
    with open(history, "w") as handle:  # ~4 kB a chunk: 25 rows x 4 metrics
        for s in range(chunks * 25):
            handle.write(json.dumps({"_step": s, "_timestamp": 1_790_000_000 + s, "loss": 1 / (s + 1),
                                     "acc": s / 1e5, "lr": 0.001, "grad_norm": s % 7}) + "\n")
    size = history.stat().st_size
    argv = ["collect", "--run", "r", "--project", "p", "--experiment", "e", "--group", "g",
            "--out", str(root / "out"), "--history", str(history), "--sink", "expstore",
            "--store", str(root / "store"), "--batch-bytes", str(size // chunks + 1)]
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _COLLECT_WITH, mode, *argv], capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    delivered = json.loads(done.stdout)["chunks"]
    return elapsed * 1000 / delivered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    (HERE / "out").mkdir(exist_ok=True)
    figures: dict[str, dict[str, list[float]]] = {"writer": {m: [] for m in MODES}, "collect": {m: [] for m in MODES}}
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(dir=HERE / "out", prefix="durability-") as tmp:
        for r in range(args.rounds):
            for mode in MODES if r % 2 == 0 else MODES[::-1]:
                root = Path(tmp) / f"{mode}-{r}"
                figures["writer"][mode].append(writer_ms_per_chunk(root / "w", mode, args.chunks))
                figures["collect"][mode].append(collect_ms_per_chunk(root / "c", mode, args.chunks))
                shutil.rmtree(root)
    load_after = os.getloadavg()
    result = {"chunks": args.chunks, "rounds": args.rounds, "load_before": load_before, "load_after": load_after}
    print(f"{args.chunks} chunks x {args.rounds} rounds; load average {load_before[0]:.2f} before, "
          f"{load_after[0]:.2f} after (a shared machine)")
    print(f"{'measure':<10} {'NORMAL ms/chunk':>16} {'FULL ms/chunk':>14} {'FULL - NORMAL':>14} {'ratio':>6}")
    for measure, by_mode in figures.items():
        normal, full = (statistics.median(by_mode[m]) for m in MODES)
        result[measure] = {"normal_ms": normal, "full_ms": full, "runs": by_mode}
        print(f"{measure:<10} {normal:>16.2f} {full:>14.2f} {full - normal:>14.2f} {full / normal:>6.2f}")
    (HERE / "out" / "durability.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
