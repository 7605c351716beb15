"""Run-config reads over a sweep of N runs (default 1000), each with a config: how long the v2 handlers take.

    .venv/bin/python bench/bench_configs_api.py --runs 1000

Times (median of --repeat, ms) the handlers directly (no HTTP): the run listing with ``include=config``
(limit 200), with a ``config.<key>`` filter, ``/experiments/search`` with ``include=config``, one
``/runs/{id}/config``, and, as the baseline in the same run, the plain listing (limit 200).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from tau_collector.expstore import StoreReader, open_store
from tau_collector.expstore.write.writer import MetricWriter
from tau_collector.projection.metric_event import new_metric_event
from tau_collector.taugrid.run_config import run_config
from taunotebook.portal.context import Portal
from taunotebook.portal.dispatch import respond
from taunotebook.portal.params import Query
from taunotebook.portal.routes import data_routes
from taunotebook.portal.sources import Sources

BASE_NS = 1_760_000_000_000_000_000
LRS = [0.1, 0.03, 0.01, 0.001]


def build(root: Path, runs: int) -> None:
    store = open_store(root, create=True)
    writer = MetricWriter(store)
    for i in range(runs):
        run = f"trial-{i:04d}"
        writer.put_run_config(run, run_config(
            {"lr": LRS[i % 4], "batch": 32, "optimizer": {"name": "adam" if i % 2 else "sgd"}, "seed": i % 7},
            format="json", uri=f"/sweep/{run}/params.json"))
        events = [new_metric_event(project="sweeps", experiment_id="sweep", run_group_id="lr", run_id=run,
                                   metric_name="loss", step=s, wall_time=BASE_NS + s * 10**6, value=1.0 / (s + 1),
                                   exported_at=BASE_NS, source="history", tags={}) for s in range(10)]
        writer.write_chunk(f"c-{i}", events, [], request_hash="h")
    store.close()


def timed(api: Portal, path: str, pairs: list[tuple[str, str]], repeat: int) -> float:
    routes = data_routes(api)
    times = []
    for _ in range(repeat):
        api.sources.local = StoreReader(api.sources.local.store)  # a cold reader each time: no cached answers
        start = time.perf_counter()
        response = respond(routes, "/api/v2/stellar/" + path, "GET", Query(pairs))
        times.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, response.body[:200]
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "store"
        start = time.perf_counter()
        build(root, args.runs)
        print(f"wrote {args.runs} runs with configs in {time.perf_counter() - start:.1f} s")
        api = Portal(Sources(StoreReader(root)))
        cases = [
            ("listing, limit 200 (baseline)", "experiments/sweep/runs", [("limit", "200")]),
            ("listing, limit 200, include=config", "experiments/sweep/runs", [("limit", "200"), ("include", "config")]),
            ("listing, config.lr=0.01 filter", "experiments/sweep/runs", [("limit", "200"), ("config.lr", "0.01")]),
            ("search, include=config", "experiments/search", [("include", "config")]),
            ("one run's config", "runs/trial-0001/config", []),
        ]
        for name, path, pairs in cases:
            print(f"{name}: {timed(api, path, pairs, args.repeat):.1f} ms")
        print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
