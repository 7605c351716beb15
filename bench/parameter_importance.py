"""Parameter importance over a sweep of N runs (default 10,000) with ~20 hyperparameters each: the route's latency.

    .venv/bin/python bench/parameter_importance.py --runs 10000 --repeat 20 [--store DIR]

Writes the sweep with the real writer (``loss`` and ``accuracy``, a few points per run, every run ended; into
``--store`` when given and reused from there when it already holds one), then calls
``GET /api/v2/stellar/parameter-importance`` through the Portal's handlers (no HTTP), each time on a cold reader (no
cached reads or answers: what follows any new point or run), and prints p50/p95 in ms for ``final``, ``best`` and
``latest``; then the same request again on a warm reader (the Portal's answer cache), what the scoring alone costs
(the forest and the correlations on the same rows), and each p95 as a ratio of the plain run-table read of the same
runs (the baseline, measured in the same run: the ratio is what survives a busy machine). scikit-learn is loaded
before timing, as a Portal's start loads it in the background. JSON goes to ``bench/out/parameter_importance.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
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
from taunotebook.portal.importance import score_parameters, warm_up
from taunotebook.portal.params import Query
from taunotebook.portal.routes import data_routes
from taunotebook.portal.sources import Sources

BASE_NS = 1_760_000_000_000_000_000
OPTIMIZERS = ["adam", "sgd", "adamw", "lion"]


def config_of(i: int) -> dict:
    rng = random.Random(i)
    config = {"lr": 10 ** rng.uniform(-5, -1), "batch": rng.choice([16, 32, 64, 128]), "warmup": rng.randint(0, 2000),
              "optimizer": {"name": rng.choice(OPTIMIZERS), "beta1": rng.uniform(0.8, 0.99),
                            "beta2": rng.uniform(0.9, 0.9999), "eps": 1e-8},
              "model": {"layers": rng.choice([2, 4, 8, 12]), "width": rng.choice([256, 512, 1024]),
                        "dropout": rng.uniform(0, 0.3), "activation": rng.choice(["gelu", "relu", "silu"])},
              "seed": i % 5, "weight_decay": rng.uniform(0, 0.1), "clip": rng.choice([0.5, 1.0, None]),
              "schedule": rng.choice(["cosine", "linear", "constant"]), "epochs": rng.choice([1, 2, 3]),
              "label_smoothing": rng.uniform(0, 0.2), "ema": rng.random() < 0.5, "accum": rng.choice([1, 2, 4])}
    if i % 10 == 0:
        del config["warmup"]  # missing in a tenth of the runs
    return config


def final_loss(config: dict) -> float:
    return 0.2 * (math.log10(config["lr"]) + 3) ** 2 + 0.1 * config["optimizer"]["beta1"] + 0.5


def build(root: Path, runs: int, batch: int = 500) -> None:
    store = open_store(root, create=True)
    writer = MetricWriter(store)
    configs = [config_of(i) for i in range(runs)]
    for i, config in enumerate(configs):
        writer.put_run_config(f"trial-{i:05d}", run_config(config, format="json", uri=f"/sweep/{i}/params.json"))
    for start in range(0, runs, batch):
        events = []
        for i in range(start, min(runs, start + batch)):
            run, loss = f"trial-{i:05d}", final_loss(configs[i])
            for step, value, metric in [(0, 3.0, "loss"), (1, loss, "loss"), (1, 1 - loss / 4, "accuracy"),
                                        (2, 1.0, "tau/run_status")]:
                events.append(new_metric_event(project="sweeps", experiment_id="sweep", run_group_id="g", run_id=run,
                                               metric_name=metric, step=step, wall_time=BASE_NS + step * 10**6,
                                               value=value, exported_at=BASE_NS, source="history", tags={}))
        writer.write_chunk(f"c-{start}", events, [], request_hash="h")
    store.close()


def _percentiles(times: list[float]) -> dict:
    times = sorted(times)
    return {"p50": round(statistics.median(times), 1),
            "p95": round(times[min(len(times) - 1, math.ceil(0.95 * len(times)) - 1)], 1), "n": len(times)}


def timed(api: Portal, path: str, pairs: list[tuple[str, str]], repeat: int, cold: bool = True) -> dict:
    routes = data_routes(api)
    times = []
    if not cold:
        respond(routes, path, "GET", Query(pairs))  # the answer the later calls find cached
    for _ in range(repeat):
        if cold:  # a cold reader each time: a new generation, so no cached reads or answers
            api.sources.local = StoreReader(api.sources.local.store)
        start = time.perf_counter()
        response = respond(routes, path, "GET", Query(pairs))
        times.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, response.body[:300]
    return _percentiles(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--store", type=Path, help="build the sweep here, or reuse the one already there")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.store or Path(tmp) / "store"
        start = time.perf_counter()
        if not (root / "index.sqlite").exists():
            build(root, args.runs)
        built = time.perf_counter() - start
        warm_up().join()
        api = Portal(Sources(StoreReader(open_store(root))))
        base = [("metric", "loss"), ("experiment_id", "sweep")]
        route = "/api/v2/stellar/parameter-importance"
        rows = {
            "run table (baseline: the same runs' summaries and configs, 5,000 rows)": timed(
                api, "/stellar/data/runs", [("experiment", "sweep"), ("metric", "loss"), ("limit", "5000")],
                args.repeat),
            "importance, final": timed(api, route, base, args.repeat),
            "importance, best": timed(api, route, [*base, ("reduction", "best")], args.repeat),
            "importance, latest": timed(api, route, [*base, ("reduction", "latest")], args.repeat),
            "importance, final, cached (unchanged store)": timed(api, route, base, args.repeat, cold=False),
        }
        configs = [config_of(i) for i in range(args.runs)]
        flat = [dict(run_config(c, format="json", uri="-").fields) for c in configs]
        values = [final_loss(c) for c in configs]
        ids = [f"trial-{i:05d}" for i in range(args.runs)]
        score_times = []
        for _ in range(max(3, args.repeat // 4)):
            start = time.perf_counter()
            scores = score_parameters(flat, values, ids)
            score_times.append((time.perf_counter() - start) * 1000)
        rows["scoring alone (forest and correlations)"] = _percentiles(score_times)
    baseline = next(iter(rows.values()))["p95"]
    for row in rows.values():
        row["p95_over_baseline"] = round(row["p95"] / baseline, 2)
    load = os.getloadavg()
    print(f"{args.runs} runs × {len(flat[0])} parameters (store built in {built:.0f} s); load average "
          f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} cores")
    print("| read | p50 ms | p95 ms | p95 / baseline p95 | n |\n|---|---|---|---|---|")
    for name, row in rows.items():
        print(f"| {name} | {row['p50']} | {row['p95']} | {row['p95_over_baseline']} | {row['n']} |")
    print("top parameters:", [(s.name, s.importance) for s in scores[:3]])
    out = Path(__file__).parent / "out"
    out.mkdir(exist_ok=True)
    (out / "parameter_importance.json").write_text(json.dumps(
        {"runs": args.runs, "parameters": len(flat[0]), "load": load, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
