"""Benchmark: wide runs (thousands of metrics logged at every step) through ``taunotebook import`` and the Portal.

Writes JSONL histories into a temporary directory (or ``--dir``), imports each into one fresh store with
:func:`taunotebook.importer.import_paths` (what ``taunotebook import`` runs, with its default limits;
interpreter start not included) and reports, in the same run and on the same machine:

1. **import**: points/s of a wide history (``--width`` metrics a line, ``--steps`` lines: 2,000 x 1,000 =
   2M points by default), of a 10,000-metric history (``--width2`` x ``--steps2``) and of the narrow-row
   baseline (4 metrics a line, the same number of points): the import itself (until it returns), and with
   the clustering of the run by metric that it leaves to a child process (waited for by the bench before
   the next import and the reads);
2. **cold read** (after the clustering finished): ``StoreReader.rows`` of one metric of the wide run, each
   time from a fresh reader (no decoded slice or index cached; the OS page cache is warm), against the same
   metric imported alone (``--steps`` points, one metric); median and p95 of ``--repeats`` reads, and the ratio;
3. **/metrics**: ``GET /api/v2/stellar/runs/{id}/metrics`` of both wide runs through the real Portal
   (its own process on 127.0.0.1, keep-alive httpx client, from sending the request to the whole body
   received; the client's JSON parsing is not timed): the first request (which builds the catalog),
   then p50/p95 over ``--repeats`` requests.

Targets (issue 19): wide-row import >= 250k points/s; cold read within 3x of the metric alone; ``/metrics``
p95 < 20 ms at 2,000 metrics. Usage::

    .venv/bin/python bench/bench_wide_run.py [--width 2000] [--steps 1000] [--width2 10000] [--steps2 200]
        [--repeats 30] [--dir DIR [--reuse]]

Prints a table with the load average beside it and writes ``bench/out/wide_run.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_portal import TOKEN, load_average, start_portal  # noqa: E402  (a sibling script, not a package)

KINDS = ("grad_norm", "weight_norm", "update_ratio", "act_mean", "act_std", "expert_load", "lr_scale", "clip_frac")


def metric_names(width: int) -> list[str]:
    return [f"layers.{i // 8:04d}/{KINDS[i % 8]}" for i in range(width)]


def write_history(path: Path, names: list[str], steps: int) -> int:
    rng = np.random.default_rng(len(names))
    with open(path, "wb") as fh:
        for step in range(steps):
            row = {"_step": step, "_timestamp": 1_790_000_000 + step * 0.5}
            row.update(zip(names, rng.random(len(names)).tolist(), strict=True))
            fh.write(orjson.dumps(row) + b"\n")
    return len(names) * steps


def import_one(path: Path, store: Path) -> tuple[float, int, float]:
    """Seconds until the import returns, points, and the seconds after that until the clustering child it
    started (the run's files rewritten by metric, not waited for by the import) has finished."""
    from taunotebook.importer import import_paths

    started = time.perf_counter()
    summary = import_paths([str(path)], store)
    seconds = time.perf_counter() - started
    clustering = 0.0
    if summary.clustering is not None:  # waited for here so the next import and the reads find it done
        started = time.perf_counter()
        if summary.clustering.wait() != 0:
            raise SystemExit(f"clustering {path.stem} failed: status {summary.clustering.returncode}")
        clustering = time.perf_counter() - started
    return seconds, summary.points, clustering


def cold_reads(store: Path, metric: str, repeats: int) -> dict[str, list[float]]:
    """Milliseconds of ``repeats`` cold reads of ``metric`` from the wide run and from the run holding it alone,
    interleaved (wide, alone, wide, ...) so that a busy moment of the shared machine hits both alike."""
    from tau_collector.expstore import StoreReader

    times: dict[str, list[float]] = {"wide": [], "alone": []}
    for i in range(repeats + 1):
        for run_id in ("wide", "alone"):
            reader = StoreReader(store)
            started = time.perf_counter()
            rows = reader.rows(run_id, metric)
            elapsed = (time.perf_counter() - started) * 1000
            assert len(rows) > 0
            reader.store.close()
            if i:  # the first round also pays pyarrow's first use
                times[run_id].append(elapsed)
    return times


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--width", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--width2", type=int, default=10_000)
    parser.add_argument("--steps2", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--dir", type=Path)
    parser.add_argument("--reuse", action="store_true", help="read the store an earlier run left in --dir (no imports)")
    args = parser.parse_args()
    tmp = None
    if args.dir is None:
        tmp = tempfile.mkdtemp(prefix="bench-wide-")
        args.dir = Path(tmp)
    args.dir.mkdir(parents=True, exist_ok=True)
    store = args.dir / "store"
    if not args.reuse:
        shutil.rmtree(store, ignore_errors=True)
    names = metric_names(args.width)
    metric = names[len(names) // 2 + 3]
    histories = {  # run id (the file's stem) -> (path, metrics, points)
        # First: the small import pays the process's one-time costs (pyarrow's and the importer's modules
        # loaded, ~1 s), so that no timed import below carries them and the order does not favour a run.
        "alone": (args.dir / "alone.jsonl", [metric], args.steps),
        "wide": (args.dir / "wide.jsonl", names, args.steps),
        "wide10k": (args.dir / "wide10k.jsonl", metric_names(args.width2), args.steps2),
        "narrow": (args.dir / "narrow.jsonl", names[:4], args.width * args.steps // 4),
    }
    results: dict = {"load_before": load_average()}
    try:
        for path, run_names, steps in histories.values():
            if not path.exists():
                write_history(path, run_names, steps)
        for run_id, (path, run_names, _) in histories.items():
            if args.reuse:
                break
            seconds, points, clustering = import_one(path, store)
            whole = seconds + clustering
            results[f"import_{run_id}"] = {"seconds": seconds, "points": points, "metrics": len(run_names),
                                           "points_per_s": points / seconds, "clustering_seconds": clustering,
                                           "with_clustering_points_per_s": points / whole}
            print(f"import {run_id:8s} {len(run_names):6d} metrics {points:>10,} points {seconds:7.2f} s "
                  f"{points / seconds:>10,.0f} points/s; + clustering child {clustering:.2f} s: "
                  f"{points / whole:>10,.0f} points/s   (load {load_average()})")
        reads = cold_reads(store, metric, max(args.repeats, 50))
        wide_ms, alone_ms = reads["wide"], reads["alone"]
        results["cold_read"] = {"metric": metric, "wide_ms_p50": statistics.median(wide_ms),
                                "wide_ms_p95": pct(wide_ms, 95), "alone_ms_p50": statistics.median(alone_ms),
                                "alone_ms_p95": pct(alone_ms, 95),
                                "ratio_p50": statistics.median(wide_ms) / statistics.median(alone_ms)}
        c = results["cold_read"]
        print(f"cold read of {metric!r}: wide run p50 {c['wide_ms_p50']:.2f} ms p95 {c['wide_ms_p95']:.2f} ms; "
              f"alone p50 {c['alone_ms_p50']:.2f} ms p95 {c['alone_ms_p95']:.2f} ms; ratio {c['ratio_p50']:.2f}x "
              f"(load {load_average()})")
        import httpx

        proc, api = start_portal(store)
        try:
            with httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120) as client:
                for run_id in ("wide", "wide10k"):
                    times = []
                    count = 0
                    for _ in range(args.repeats + 1):
                        started = time.perf_counter()
                        r = client.get(f"{api}/runs/{run_id}/metrics")
                        r.raise_for_status()
                        times.append((time.perf_counter() - started) * 1000)  # the whole body received
                    count = len(r.json()["metrics"])  # parsing a 600 KB answer is the client's cost: not timed
                    first, times = times[0], times[1:]
                    results[f"metrics_{run_id}"] = {"metrics": count, "first_ms": first,
                                                    "p50_ms": statistics.median(times), "p95_ms": pct(times, 95)}
                    print(f"GET /runs/{run_id}/metrics ({count:,} metrics): first {first:.1f} ms, "
                          f"p50 {statistics.median(times):.1f} ms p95 {pct(times, 95):.1f} ms "
                          f"(load {load_average()})")
        finally:
            proc.terminate()
            proc.wait(10)
        results["load_after"] = load_average()
        out = HERE / "out"
        out.mkdir(exist_ok=True)
        (out / "wide_run.json").write_text(json.dumps(results, indent=2))
        if args.reuse:
            return
        wide, narrow = results["import_wide"], results["import_narrow"]
        print(f"\nwide-row import {wide['points_per_s']:,.0f} points/s = "
              f"{wide['points_per_s'] / narrow['points_per_s']:.2f}x the narrow rows' "
              f"{narrow['points_per_s']:,.0f} in the same run (with the clustering child's time: "
              f"{wide['with_clustering_points_per_s']:,.0f} against "
              f"{narrow['with_clustering_points_per_s']:,.0f}); load {results['load_before']} -> "
              f"{results['load_after']} (a shared 2-core machine)")
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
