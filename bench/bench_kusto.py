"""Benchmark: ``source=kusto`` reads of a 10M-point run from the stand-in cluster vs the local store.

The stand-in is DuckDB behind duckdb-kql's REST server (``tests/services/kusto_cluster.py``), not ADX:
its times say what the reader's queries cost on an engine of that kind and what crosses the wire,
not what a real cluster would answer in. The dedup view is materialized into a table after loading
(ADX answers a materialized view from its materialized part; a DuckDB view would dedup 10M rows per
query). Rows go into the stand-in's table directly as Arrow columns
(the NDJSON mapping path is the tests' business; encoding 10M events would dominate the run); the
local store is built by the real writer (``bench_expstore_read.build``) with the same steps, times and
values. Figures, each printed with the load average it was measured under:

* full-range series at ``--max-points``: rows returned, response bytes, p50 time, and the ratio to
  ``StoreReader.series`` on the same data in the same run;
* a live pane's poll: ``--append`` new points land, the pane asks for the steps after its last one;
  queries and rows per poll.

Usage::

    .venv/bin/python bench/bench_kusto.py [--points 10000000] [--files 100] [--repeats 5] [--store DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_expstore_read import BASE_NS, METRIC, RUN, prepare_store, timed  # noqa: E402

from services.kusto_cluster import KustoCluster  # noqa: E402
from tau_collector.expstore import StoreReader  # noqa: E402
from taunotebook.portal.kusto import KustoConnection, KustoReader, KustoSettings  # noqa: E402
from taunotebook.portal.kusto.queries import series_query  # noqa: E402

WORKSPACE = ""  # bench_expstore_read's events carry no workspace


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def values_like_the_store(points: int, files: int) -> np.ndarray:
    """The values ``bench_expstore_read.build`` writes, generated the same way (same seed, same order)."""
    per_file = points // files
    rng = np.random.default_rng(0)
    parts = [2.0 * np.exp(-np.arange(f * per_file, (f + 1) * per_file) / (points / 4)) + rng.normal(0, 0.01, per_file)
             for f in range(files)]
    return np.concatenate(parts)


def fill_cluster(cluster: KustoCluster, steps: np.ndarray, values: np.ndarray) -> None:
    n = steps.size
    wall = pa.array(BASE_NS // 1000 + steps * 1000, type=pa.timestamp("us"))
    const = {"schema_version": "tau.experiment.metric.v1", "workspace_id": WORKSPACE, "cluster": "", "namespace": "",
             "source_store_id": "", "project": "bench", "experiment_id": "bench", "run_group_id": "g", "run_id": RUN,
             "metric_name": METRIC, "unit": "", "source": "history", "split": "", "metric_file_id": "",
             "metric_file_path": "", "tags": "{}"}
    columns = {name: pa.array([value] * n, type=pa.string()) for name, value in const.items()}
    columns.update(
        event_id=pa.array([f"metric-{s}" for s in steps.tolist()], type=pa.string()), step=pa.array(steps),
        wall_time=wall, value=pa.array(values),
        exported_at=pa.array(np.full(n, BASE_NS // 1000), type=pa.timestamp("us")),
    )  # fmt: skip
    batch = pa.table(columns)
    names = ", ".join(f'"{c}"' for c, _ in cluster.assets.columns)
    cursor = cluster.connection.cursor()
    cursor.register("bench_rows", batch)
    cursor.execute(f'INSERT INTO "{cluster.assets.table}" ({names}) SELECT {names} FROM bench_rows')
    cursor.close()


def response_bytes(cluster: KustoCluster, query) -> int:
    body = {"db": cluster.database, "csl": query.text,
            "properties": {"Options": {"query_now": datetime(2026, 1, 1, tzinfo=UTC).isoformat()},
                           "Parameters": query.parameters}}
    return len(httpx.post(cluster.uri + "/v2/rest/query", json=body, timeout=600).content)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--max-points", type=int, default=8000)
    parser.add_argument("--append", type=int, default=50, help="points a live run adds between two polls")
    parser.add_argument("--store", type=Path, help="reuse or create the local store here (default: a temp dir)")
    args = parser.parse_args()
    results: dict = {"points": args.points, "max_points": args.max_points}

    root, tmp = prepare_store(args.store, args.points, args.files, "bench-kusto-")
    steps = np.arange(args.points // args.files * args.files, dtype=np.int64)
    values = values_like_the_store(args.points, args.files)
    with KustoCluster() as cluster:
        t = time.perf_counter()
        fill_cluster(cluster, steps, values)
        cluster.materialize_views()  # what ADX's materialized view holds; its cost is ADX's background work
        print(f"stand-in filled with {steps.size:,} rows in {time.perf_counter() - t:.1f} s ({load()})")
        settings = KustoSettings(cluster.uri, cluster.database, auth="none", timeout_s=600,
                                 query_now=datetime(2026, 1, 1, tzinfo=UTC))
        kusto = KustoReader(KustoConnection(settings), workspace=WORKSPACE)
        local = StoreReader(root)

        k50, k95, k_res = timed(lambda: kusto.series(RUN, METRIC, max_points=args.max_points), args.repeats)
        l50, l95, l_res = timed(lambda: local.series(RUN, METRIC, max_points=args.max_points), args.repeats)
        wire = response_bytes(cluster, series_query(WORKSPACE, RUN, METRIC, max_points=args.max_points))
        results["full_range"] = {"kusto_p50_ms": k50, "kusto_p95_ms": k95, "local_p50_ms": l50, "local_p95_ms": l95,
                                 "ratio_p50": k50 / l50, "rows": k_res.returned_points, "bytes": wire,
                                 "local_rows": l_res.returned_points, "load": os.getloadavg()}
        print(f"full range, max_points={args.max_points}: kusto p50 {k50:.0f} ms p95 {k95:.0f} ms, "
              f"{k_res.returned_points} rows, {wire:,} response bytes; local p50 {l50:.1f} ms "
              f"({l_res.returned_points} points); kusto/local {k50 / l50:.0f}x ({load()})")

        # A live pane: the run grows by --append points, the pane asks for the steps after its last one.
        last = int(steps[-1])
        more = np.arange(last + 1, last + 1 + args.append, dtype=np.int64)
        fill_cluster(cluster, more, np.full(more.size, 0.5))
        cluster.materialize_views()
        before = len(cluster.requests)
        t = time.perf_counter()
        tail = kusto.series(RUN, METRIC, start_step=last + 1, max_points=args.max_points)
        poll_ms = (time.perf_counter() - t) * 1000
        queries = len(cluster.requests) - before
        results["poll"] = {"queries": queries, "rows": tail.returned_points, "ms": poll_ms, "load": os.getloadavg()}
        print(f"live poll after {args.append} new points: {queries} query, {tail.returned_points} rows, "
              f"{poll_ms:.0f} ms ({load()})")
        kusto.connection.close()
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "bench_kusto.json").write_text(json.dumps(results, indent=2) + "\n")
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
