"""A live 10,000-metric run appended for a simulated hour: a cold read of one metric, with and without clustering.

Not a test. Two stores receive the same deliveries -- ``--metrics`` metrics logged every 10 simulated seconds,
one delivery per step (an hour: 360 steps, 3.6M rows, the 1,000 events/s of issue 30) -- and after every six
deliveries (the sidecar thread's minute between passes) each runs what the sidecar's maintenance thread runs:
compaction (``compact_all``, pyarrow-free) in both, then one bounded pass of ``cluster_live`` in the second only.
Time is compressed: the deliveries follow each other as fast as the writer takes them.

The clustering's own CPU (``time.process_time`` around ``cluster_live``) is kept per pass: a pass stands for a
simulated minute, so its CPU seconds / 60 is the share of a core it would take over the real hour (issue 30 §1:
the sidecar <= 5 %). Printed for the first and last ten passes and the worst pass.

At the end, a cold read (a new :class:`StoreReader`, nothing cached) of each of ``--probes`` metrics is timed in
both stores and against the metric *alone*: a third store holding just that metric's rows in one file, measured in
the same run. The ratio cold/alone is the figure of issue 30 §5 (target: within 3x after clustering). Also printed:
the files a read of one metric opens, the rows the clustering passes rewrote (its work), and the largest pass.

    .venv/bin/python bench/live_wide_clustering.py [--metrics 10000] [--steps 360] [--probes 7] [--repeat 3] \
        [--skip-compaction-only] [--max-deltas N]

Writes ``bench/out/live_wide_clustering.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT / "collector")]

from tau_collector.expstore import MetricWriter, RunColumns, StoreReader, open_store  # noqa: E402
from tau_collector.expstore.maintain.compaction import CompactionPolicy, compact_all  # noqa: E402
from tau_collector.expstore.maintain.live_clusters import LivePolicy, cluster_live  # noqa: E402

RUN = "wide"
PASS_EVERY = 6  # deliveries between maintenance passes: a minute at one delivery per 10 s


def names(metrics: int) -> list[str]:
    return [f"blocks.{i // 8:04d}/param{i % 8}" for i in range(metrics)]


def delivery(all_names: list[str], step: int, metrics: np.ndarray | None = None) -> RunColumns:
    chosen = np.arange(len(all_names)) if metrics is None else metrics
    n = chosen.size
    return RunColumns(project="p", experiment_id="e", run_group_id="g", run_id=RUN, names=all_names,
                      metric=chosen.astype(np.int32), step=np.full(n, step, np.int64),
                      wall_time=np.full(n, 1_790_000_000_000_000 + step * 10_000_000, np.int64),
                      value=np.sin(chosen * 0.37 + step * 0.01), tags=["{}"] * n, tag_sets=[{}], source="history")


def fill(root: Path, metrics: int, steps: int, clustered: bool, live: LivePolicy | None = None) -> dict:
    store = open_store(root, create=True)
    writer = MetricWriter(store, compaction=CompactionPolicy(min_files=10**9))  # the passes below do it
    policy = CompactionPolicy()
    live = live or LivePolicy()
    all_names = names(metrics)
    passes, rewrites, longest, maintenance = 0, 0, 0.0, 0.0
    cpu: list[float] = []  # the clustering's CPU seconds, a pass (a simulated minute) each
    for step in range(steps):
        writer.write_columns(f"d{step}", [delivery(all_names, step)], request_hash="h")
        if (step + 1) % PASS_EVERY == 0:
            start = time.perf_counter()
            compact_all(store, RUN, policy=policy, pyarrow_fallback=False)
            if clustered:
                cpu_start = time.process_time()
                rewrites += cluster_live(store, RUN, live)
                cpu.append(time.process_time() - cpu_start)
            took = time.perf_counter() - start
            maintenance += took
            longest = max(longest, took)
            passes += 1
    files = store.connection().execute("SELECT COUNT(*) FROM metric_files WHERE run_id = ?", (RUN,)).fetchone()[0]
    store.close()
    out = {"files": files, "passes": passes, "clustering_steps": rewrites, "maintenance_s": round(maintenance, 2),
           "longest_pass_s": round(longest, 2)}
    if cpu:
        first, last = cpu[:10], cpu[-10:]
        out |= {"clustering_cpu_s": round(sum(cpu), 2),
                "cpu_pct_first_10_min": round(100 * sum(first) / (60 * len(first)), 2),
                "cpu_pct_last_10_min": round(100 * sum(last) / (60 * len(last)), 2),
                "cpu_pct_worst_minute": round(100 * max(cpu) / 60, 2),
                "cpu_per_pass_s": [round(c, 3) for c in cpu]}
    return out


def files_holding(root: Path, metric: str) -> int:
    store = open_store(root)
    (n,) = store.connection().execute(
        "SELECT COUNT(*) FROM metric_files f LEFT JOIN metric_file_metrics m ON m.file_id = f.file_id "
        "WHERE f.run_id = ? AND (m.first_metric IS NULL OR (m.first_metric <= ? AND m.last_metric >= ?))",
        (RUN, metric, metric)).fetchone()
    store.close()
    return n


def cold_read(root: Path, metric: str) -> float:
    """One read of the whole metric through a new reader (no cache)."""
    start = time.perf_counter()
    reader = StoreReader(root)
    rows = reader.rows(RUN, metric)
    took = time.perf_counter() - start
    assert rows.step.size > 0
    reader.store.close()
    return took


def cold_reads(roots: list[Path], metric: str, repeat: int) -> list[float]:
    """The fastest of ``repeat`` cold reads of ``metric`` in each store, the stores read in turn each round (a
    busy machine's bursts then fall on all of them alike)."""
    best = [float("inf")] * len(roots)
    for _ in range(repeat):
        for i, root in enumerate(roots):
            best[i] = min(best[i], cold_read(root, metric))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--metrics", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=360)
    parser.add_argument("--probes", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=7, help="cold reads of each probe and store, in turn")
    parser.add_argument("--skip-compaction-only", action="store_true",
                        help="no compaction-only store (its ratio is then not printed)")
    parser.add_argument("--max-deltas", type=int, default=None, help="LivePolicy.max_deltas (default: the policy's)")
    parser.add_argument("--out", default="live_wide_clustering.json", help="file name under bench/out/")
    args = parser.parse_args()
    all_names = names(args.metrics)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        before = None
        if not args.skip_compaction_only:
            before = fill(base / "compacted", args.metrics, args.steps, clustered=False)
            print("compaction only:", before, flush=True)
        live = LivePolicy() if args.max_deltas is None else LivePolicy(max_deltas=args.max_deltas)
        after = fill(base / "clustered", args.metrics, args.steps, clustered=True, live=live)
        print("with clustering:", {k: v for k, v in after.items() if k != "cpu_per_pass_s"}, flush=True)
        stores = [base / "clustered"] if before is None else [base / "compacted", base / "clustered"]
        probes = [all_names[i] for i in np.linspace(0, args.metrics - 1, args.probes).astype(int)]
        rows = []
        for metric in probes:
            alone_root = base / f"alone-{len(rows)}"
            store = open_store(alone_root, create=True)
            code = all_names.index(metric)
            steps = np.arange(args.steps, dtype=np.int64)
            one = delivery([metric], 0, np.zeros(args.steps, np.int64))
            one.step = steps
            one.wall_time = 1_790_000_000_000_000 + steps * 10_000_000
            one.value = np.sin(code * 0.37 + steps * 0.01)
            MetricWriter(store).write_columns("alone", [one], request_hash="h")
            store.close()
            alone, *read, clustered = cold_reads([alone_root, *stores], metric, args.repeat)
            rows.append({"metric": metric, "alone_ms": alone * 1e3, "after_ms": clustered * 1e3,
                         "after_ratio": clustered / alone, "files_after": files_holding(base / "clustered", metric)})
            r = rows[-1]
            if read:
                r |= {"before_ms": read[0] * 1e3, "before_ratio": read[0] / alone,
                      "files_before": files_holding(base / "compacted", metric)}
                print(f"{metric}: before {read[0] * 1e3:.1f} ms ({r['files_before']} files, {r['before_ratio']:.1f}x)",
                      flush=True)
            print(f"{metric}: alone {alone * 1e3:.1f} ms, after {clustered * 1e3:.1f} ms ({r['files_after']} files, "
                  f"{r['after_ratio']:.2f}x)", flush=True)
    summary = {"metrics": args.metrics, "steps": args.steps, "rows": args.metrics * args.steps, "before": before,
               "after": after, "probes": rows,
               "median_before_ratio": statistics.median(r["before_ratio"] for r in rows) if before else None,
               "median_after_ratio": statistics.median(r["after_ratio"] for r in rows),
               "worst_after_ratio": max(r["after_ratio"] for r in rows)}
    print(json.dumps({k: v for k, v in summary.items() if k != "probes"}, indent=1))
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    (out / args.out).write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
