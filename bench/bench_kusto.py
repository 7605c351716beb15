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

``--pane``: print → drawn for a ``source=kusto`` pane in a real JupyterLab (headless Chromium), the
whole path: a trainer wrapped by ``tau-collector wrap --sink adx-streaming`` → the stand-in's
streaming-ingest endpoint → the Portal (``source=kusto``) → the kernel's poller → the browser
(``bench_pane.latency``, target p95 < 5 s), with the local-store pane measured in the same run as
the baseline; and what the live pane asks of the cluster: queries per poll, rows per tail read.

Usage::

    .venv/bin/python bench/bench_kusto.py [--points 10000000] [--files 100] [--repeats 5] [--store DIR]
    .venv/bin/python bench/bench_kusto.py --pane [--pane-points 200] [--rate 10]
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


def pane_latency(points: int, rate: float) -> dict:
    """Print → drawn p50/p95 for a local-store pane and a ``source=kusto`` pane, one after the other."""
    import shutil
    import tempfile

    from bench_pane import CHROMIUM_ARGS, Timed, latency
    from playwright.sync_api import sync_playwright

    from fixtures.jupyter import start_jupyter
    from fixtures.portal import TOKEN
    from fixtures.servers import ServerThread
    from tau_collector.expstore import open_store
    from taunotebook.portal.app import create_app

    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench-kusto-pane-") as tmp, KustoCluster() as cluster:
        work = Path(tmp)
        store = work / "store"
        open_store(store, create=True).close()
        kusto = KustoReader(KustoConnection(KustoSettings(cluster.uri, cluster.database, auth="none")),
                            workspace="default")
        requests: list[dict] = []
        with ServerThread(Timed(create_app(store, token=TOKEN, kusto=kusto), requests)) as server:
            portal = f"http://127.0.0.1:{server.port}"
            lab_gen = start_jupyter(work / "lab", {"TAU_PORTAL_TOKEN": TOKEN, "TAU_PORTAL_URL": portal})
            lab = next(lab_gen)
            try:
                with sync_playwright() as p:
                    chromium = os.environ.get("TAU_CHROMIUM") or shutil.which("chromium")
                    browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
                    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
                    out["local"] = {**latency(page, lab, store, portal, work / "local", points, rate,
                                              run="lat-local"), "load": os.getloadavg()}
                    print(f"local store pane: print → drawn p50 {out['local']['p50_ms']:.0f} ms, p95 "
                          f"{out['local']['p95_ms']:.0f} ms over {out['local']['measured']} rows ({load()})")
                    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
                    queries_before, requests_before = len(cluster.requests), len(requests)
                    env = {"TAU_METRICS_OFFLOAD_ADX_CLUSTER_URI": cluster.uri,
                           "TAU_METRICS_OFFLOAD_ADX_DATABASE": cluster.database,
                           "TAU_METRICS_OFFLOAD_ADX_CLIENT_ID": "unused-over-loopback-http"}
                    lat = latency(page, lab, store, portal, work / "kusto", points, rate, run="lat-kusto",
                                  source="kusto", env=env,
                                  sink=["--tag", "tau_workspace=default", "--sink", "adx-streaming"])
                    browser.close()
            finally:
                for _ in lab_gen:
                    pass
        queries = len(cluster.requests) - queries_before
        pane_requests = [r for r in requests[requests_before:] if "lat-kusto" in r["path"]]
        polls = sum(1 for r in pane_requests if r["path"].endswith("/runs/lat-kusto"))
        tails = sum(1 for r in pane_requests if r["path"].endswith("/series") and "start_step" in r["query"])
        out["kusto"] = {**lat, "load": os.getloadavg(), "polls": polls, "cluster_queries": queries,
                        "queries_per_poll": queries / max(polls, 1), "tail_reads": tails,
                        "rows_per_drawn_chunk": lat["rows"] / max(lat["chunks_drawn"], 1),
                        "ratio_p95": lat["p95_ms"] / out["local"]["p95_ms"]}
        kusto.connection.close()
    k = out["kusto"]
    print(f"source=kusto pane: print → drawn p50 {k['p50_ms']:.0f} ms, p95 {k['p95_ms']:.0f} ms, max "
          f"{k['max_ms']:.0f} ms over {k['measured']} rows at {rate:g}/s (p95 {k['ratio_p95']:.1f}x the local "
          f"pane's); {k['polls']} polls, {k['cluster_queries']} cluster queries ({k['queries_per_poll']:.2f} per "
          f"poll), {k['tail_reads']} tail reads, {k['rows_per_drawn_chunk']:.1f} rows per drawn chunk ({load()})")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--max-points", type=int, default=8000)
    parser.add_argument("--append", type=int, default=50, help="points a live run adds between two polls")
    parser.add_argument("--store", type=Path, help="reuse or create the local store here (default: a temp dir)")
    parser.add_argument("--pane", action="store_true", help="measure print → drawn for a source=kusto pane instead")
    parser.add_argument("--pane-points", type=int, default=200, help="--pane: rows the trainer prints")
    parser.add_argument("--rate", type=float, default=10.0, help="--pane: rows per second")
    args = parser.parse_args()
    if args.pane:
        result = pane_latency(args.pane_points, args.rate)
        out = ROOT / "bench" / "out"
        out.mkdir(exist_ok=True)
        (out / "bench_kusto_pane.json").write_text(json.dumps(result, indent=2) + "\n")
        return 0
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
