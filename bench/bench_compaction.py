"""A long job's backlog of small delivery files through the compaction child's ``compact_all`` (not a test).

A store is filled with ``--files`` delivery files of ``--rows`` rows (4 metrics), compaction held off while
filling, then copied once per code under test; each copy is compacted by ``compact_all`` (what
``python -m tau_collector.expstore.maintain.compaction_process`` runs) in a process of its own. ``--before DIR``
also runs another checkout's code (``DIR/collector`` on ``PYTHONPATH``) on an identical copy, in the same
run, so the two are compared on the same machine state.

    .venv/bin/python bench/bench_compaction.py [--files 3000] [--rows 100] [--before DIR]

Writes ``bench/out/compaction.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RUN = "bench"
METRICS = ("loss", "acc", "lr", "grad_norm")

_COMPACT = """
import json, sys, time
from tau_collector.expstore.maintain.compaction import compact_all
from tau_collector.expstore.store import ExpStore
store = ExpStore(sys.argv[1], writable=True)
wall, cpu = time.perf_counter(), time.process_time()
merges = compact_all(store, sys.argv[2])
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
files, rows = store.connection().execute(
    "SELECT COUNT(*), SUM(row_count) FROM metric_files WHERE run_id = ?", (sys.argv[2],)).fetchone()
print(json.dumps({"merges": merges, "seconds": wall, "cpu_s": cpu, "files_after": files, "rows": rows}))
"""


def fill(store_dir: Path, files: int, rows: int) -> None:
    sys.path[:0] = [str(ROOT / "collector")]
    from tau_collector.expstore import open_store
    from tau_collector.expstore.maintain.compaction import CompactionPolicy
    from tau_collector.expstore.write.writer import MetricWriter
    from tau_collector.projection.metric_event import new_metric_event

    store = open_store(store_dir, create=True)
    writer = MetricWriter(store, compaction=CompactionPolicy(min_files=10**9))  # held off while filling
    base = 1_790_000_000_000_000_000
    for f in range(files):
        events = [new_metric_event(project="p", experiment_id="e", run_group_id="g", run_id=RUN, metric_name=name,
                                   step=f * rows + r, wall_time=base + (f * rows + r) * 10**8,
                                   value=1.0 / (f * rows + r + 1), exported_at=base, source="history",
                                   tags={"jsonl.history_line": str(f * rows + r + 1)})
                  for r in range(rows) for name in METRICS]
        writer.write_chunk(f"fill-{f}", events, [], request_hash="h")
    writer.close()
    store.close()


def compact(copy: Path, code: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(code / "collector"), str(code)]))
    out = subprocess.run([sys.executable, "-c", _COMPACT, str(copy), RUN], env=env, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"compact_all from {code} failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--rows", type=int, default=100, help="rows (steps) per file; 4 metrics each")
    parser.add_argument("--before", type=Path, help="another checkout, compacted on an identical copy")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()}", flush=True)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        fill(base, args.files, args.rows)
        codes = {"now": ROOT, **({"before": args.before.resolve()} if args.before else {})}
        for label, code in codes.items():
            copy = Path(tmp) / label
            shutil.copytree(base, copy)
            result = results[label] = compact(copy, code)
            points = result["rows"] or 1
            print(f"{label:6s} {args.files:,} files of {args.rows * len(METRICS)} points: {result['merges']} merges, "
                  f"{result['seconds']:.1f} s ({result['cpu_s']:.1f} s CPU), "
                  f"{1e6 * result['cpu_s'] / points:.1f} µs CPU a point, {result['files_after']} files after",
                  flush=True)
    if "before" in results:
        print(f"before / now (CPU): {results['before']['cpu_s'] / results['now']['cpu_s']:.2f}x")
    print(f"load average {os.getloadavg()}")
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    (out / "compaction.json").write_text(json.dumps({"files": args.files, "rows": args.rows, **results}, indent=2)
                                         + "\n")


if __name__ == "__main__":
    main()
