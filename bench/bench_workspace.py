"""Workspaces of many runs through the real Portal: experiment search and runs-table windows, with run listings
(``expstore/write/listing.py``) against the same store read the old way (no listings: every run classified in Python).

For each size (default 2,000 / 20,000 / 100,000 runs, 100 runs per experiment) a store is generated
directly in SQLite (runs, tags, experiments, two metric summaries per run; no metric files, which these
reads never open) and its listings built as a writer's migration builds them; a copy without the
listings is the baseline. Both are served by ``taunotebook portal`` subprocesses and read over HTTP
one request at a time:

- ``/api/v2/stellar/experiments/search?limit=50`` (the first call reported apart: the old path reads
  every run's summaries then);
- ``/stellar/data/runs?offset=K&limit=200&metric=loss`` at random offsets (a scrolled table), and the
  same sorted by the loss's latest value.

Also the JSON encoding of a 5,000-row runs-table answer: the pure-Python Go encoder against orjson
(``gojson.dumps_fast``), same bytes. Prints a table with the load average and writes JSON to
``bench/out/workspace.json``. Usage::

    python bench/bench_workspace.py [--sizes 2000,20000,100000] [--requests 40] [--baseline-requests 10]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from tau_collector.expstore import open_store
from tau_collector.expstore.write.listing import rebuild_all
from tau_collector.taugrid.gojson import dumps_fast, marshal

TOKEN = "bench-token"
OUT = Path(__file__).resolve().parent / "out"
STATES = ["succeeded", "running", "failed", "completed", "succeeded"]


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _time(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1_760_000_000 + seconds))


def generate(root: Path, runs: int, per_experiment: int) -> float:
    """A store of ``runs`` runs written straight into its index; returns the seconds it took."""
    started = time.perf_counter()
    store = open_store(root, create=True)
    experiments = (runs + per_experiment - 1) // per_experiment
    with store.write_transaction() as tx:
        tx.executemany("INSERT INTO experiments(experiment_id, project, name, description, source, created_at, "
                       "updated_at) VALUES (?, ?, ?, NULL, 'bench', ?, ?)",
                       [(f"exp-{e:05d}", f"proj-{e % 4}", f"exp-{e:05d}", _time(e * per_experiment),
                         _time(e * per_experiment + per_experiment)) for e in range(experiments)])
        run_rows, tag_rows, summary_rows = [], [], []
        for i in range(runs):
            e = i // per_experiment
            state = STATES[i % len(STATES)]
            run_id = f"run-{i:06d}"
            terminal = state != "running"
            run_rows.append((run_id, f"proj-{e % 4}", f"exp-{e:05d}", f"grp-{i // 10:05d}", state, _time(i),
                             _time(i + 1), _time(i + 600) if terminal else None, "expstore.v5"))
            if i % 6 != 5:  # a sixth untagged: they belong to every workspace
                tag_rows.append((run_id, "tau_workspace", "other" if i % 6 == 4 else "default"))
            tag_rows.append((run_id, "team", "ab"[i % 2]))
            loss = 2.0 / (1 + (i % 97)) + 0.01 * (i % 13)
            for name, value, bad in (("train/loss", loss, int(i % 50 == 0)), ("eval/acc", 1 - loss / 3, 0)):
                summary_rows.append((run_id, name, f"proj-{e % 4}", f"grp-{i // 10:05d}", 1000 + bad, 1000, bad, 0,
                                     999, 999, 1_760_000_000_000_000 + i, value, value * 0.9, value * 3 + 1,
                                     _time(i + 600)))
        tx.executemany("INSERT INTO runs(run_id, project, experiment_id, run_group_id, state, created_at, "
                       "started_at, completed_at, index_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", run_rows)
        tx.executemany("INSERT INTO tags(scope_type, scope_id, key, value) VALUES ('run', ?, ?, ?)", tag_rows)
        tx.executemany("INSERT INTO metric_summaries(run_id, metric_name, project, run_group_id, count, "
                       "finite_count, non_finite_count, min_step, max_step, latest_step, latest_wall_time, "
                       "latest_value, min_value, max_value, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                       summary_rows)
        rebuild_all(tx)
    store.close()
    return time.perf_counter() - started


def without_listings(source: Path, target: Path) -> None:
    """The same store as one without run listings (a store written before them): the old code path."""
    shutil.copytree(source, target)
    with sqlite3.connect(target / "index.sqlite") as db:
        for table in ("run_listing", "experiment_listing", "experiment_metrics"):
            db.execute(f"DROP TABLE {table}")
        db.execute("DELETE FROM schema_meta WHERE key = 'listing_version'")


def start_portal(store: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "taunotebook", "portal", "--store", str(store), "--token", TOKEN],
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    text = "".join(proc.stdout.readline() for _ in range(3))
    match = re.search(r"API base: (\S+)", text)
    if match is None:
        proc.kill()
        raise SystemExit(f"the Portal did not start: {text!r}")
    return proc, match.group(1).split("/api/v2/stellar")[0].rstrip("/")


def _ms(client: httpx.Client, path: str, params: dict) -> tuple[float, dict]:
    started = time.perf_counter()
    r = client.get(path, params=params)
    elapsed = (time.perf_counter() - started) * 1000
    r.raise_for_status()
    return elapsed, r.json()


def _summary(values: list[float]) -> dict:
    ordered = sorted(values)
    return {"p50": round(statistics.median(ordered), 1),
            "p95": round(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))], 1), "n": len(ordered)}


def cpu_ms(pid: int) -> float:
    """The process's user + system CPU time so far, in ms (a figure a shared machine's load disturbs less)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def measure(base: str, pid: int, runs: int, requests: int, seed: int) -> dict:
    rng = random.Random(seed)
    out: dict = {}
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=600) as client:
        first, body = _ms(client, "/api/v2/stellar/experiments/search", {"limit": 50})
        out["search_first_ms"] = round(first, 1)
        out["experiments_listed"] = len(body["experiments"])
        cpu = cpu_ms(pid)
        out["search"] = _summary([_ms(client, "/api/v2/stellar/experiments/search", {"limit": 50})[0]
                                  for _ in range(requests)])
        out["search"]["server_cpu_ms_per_request"] = round((cpu_ms(pid) - cpu) / requests, 1)
        windows, sorted_windows, counts = [], [], set()
        offsets = [rng.randrange(0, max(1, runs - 200)) for _ in range(requests)]
        cpu = cpu_ms(pid)
        for offset in offsets:
            ms, body = _ms(client, "/stellar/data/runs", {"offset": offset, "limit": 200, "metric": "train/loss"})
            windows.append(ms)
            counts.add(body["run_count"])
        window_cpu = (cpu_ms(pid) - cpu) / requests
        cpu = cpu_ms(pid)
        for offset in offsets:
            by_loss = {"offset": offset, "limit": 200, "metric": "train/loss", "sort": "metric:latest"}
            sorted_windows.append(_ms(client, "/stellar/data/runs", by_loss)[0])
        out["table_window"] = {**_summary(windows), "server_cpu_ms_per_request": round(window_cpu, 1)}
        out["table_window_sorted"] = {**_summary(sorted_windows),
                                      "server_cpu_ms_per_request": round((cpu_ms(pid) - cpu) / requests, 1)}
        out["run_count"] = sorted(counts)
    return out


def encoding(rows: int = 5000, repeat: int = 5) -> dict:
    """The runs table's answer of ``rows`` rows encoded by the pure-Python Go encoder and by orjson."""
    body = {"metric_names": ["train/loss", "eval/acc"], "metrics": ["train/loss"], "run_count": rows, "offset": 0,
            "runs": [{"run_id": f"run-{i:06d}", "project": "proj-0", "experiment_id": f"exp-{i // 100:05d}",
                      "run_group_id": f"grp-{i // 10:05d}", "state": "succeeded", "created_at": _time(i),
                      "tags": {"tau_workspace": "default", "team": "a"},
                      "config": {"lr": 0.001 * (1 + i % 7), "batch": 32, "optimizer.name": "adam", "seed": i % 3},
                      "metrics": {"train/loss": {"count": 1000, "non_finite_count": 0, "latest_step": 999,
                                                 "latest_value": 0.5 + i / 1e5, "min_value": 0.25, "max_value": 2.5}}}
                     for i in range(rows)]}
    from tau_collector.taugrid.gojson import go_number

    def normalized(value):
        if isinstance(value, float):
            return go_number(value)
        if isinstance(value, dict):
            return {k: normalized(v) for k, v in value.items()}
        if isinstance(value, list):
            return [normalized(v) for v in value]
        return value

    fast_body = normalized(body)
    assert dumps_fast(fast_body) == marshal(body, escape_html=False) + b"\n"
    timings = {}
    for label, fn in (("python_go_encoder", lambda: marshal(body, escape_html=False)),
                      ("orjson_dumps_fast", lambda: dumps_fast(fast_body))):
        best = []
        for _ in range(repeat):
            started = time.perf_counter()
            fn()
            best.append((time.perf_counter() - started) * 1000)
        timings[label] = round(min(best), 2)
    timings["ratio"] = round(timings["python_go_encoder"] / timings["orjson_dumps_fast"], 1)
    return timings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="2000,20000,100000")
    parser.add_argument("--per-experiment", type=int, default=100)
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--baseline-requests", type=int, default=10)
    parser.add_argument("--no-baseline-above", type=int, default=10**9,
                        help="skip the old path for stores larger than this (it reads every run)")
    args = parser.parse_args()
    results: dict = {"load_average_start": load_average(), "sizes": {}}
    results["encoding_5000_rows_ms"] = encoding()
    with tempfile.TemporaryDirectory(prefix="bench-workspace-") as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            listed, old = Path(tmp) / f"listed-{size}", Path(tmp) / f"old-{size}"
            generated = generate(listed, size, args.per_experiment)
            entry: dict = {"generate_s": round(generated, 1)}
            cases = [("listings", listed, args.requests)]
            if size <= args.no_baseline_above:
                without_listings(listed, old)
                cases.append(("old_path", old, args.baseline_requests))
            for label, store, requests in cases:
                proc, base = start_portal(store)
                try:
                    entry[label] = measure(base, proc.pid, size, requests, seed=size)
                    entry[label]["load_average"] = load_average()
                finally:
                    proc.terminate()
                    proc.wait(timeout=30)
                e = entry[label]
                print(f"{size:>7} runs  {label:<9} search p50/p95 {e['search']['p50']}/{e['search']['p95']} ms "
                      f"(cpu {e['search']['server_cpu_ms_per_request']}, first {e['search_first_ms']} ms)  "
                      f"window {e['table_window']['p50']}/{e['table_window']['p95']} ms "
                      f"(cpu {e['table_window']['server_cpu_ms_per_request']})  sorted "
                      f"{e['table_window_sorted']['p50']}/{e['table_window_sorted']['p95']} ms "
                      f"(cpu {e['table_window_sorted']['server_cpu_ms_per_request']})  load {e['load_average']}",
                      flush=True)
            if "old_path" in entry:
                old_p95, new_p95 = entry["old_path"]["search"]["p95"], entry["listings"]["search"]["p95"]
                entry["search_p95_ratio"] = round(old_p95 / new_p95, 1)
            results["sizes"][size] = entry
    results["load_average_end"] = load_average()
    OUT.mkdir(exist_ok=True)
    (OUT / "workspace.json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"JSON encoding of 5,000 rows: {results['encoding_5000_rows_ms']}")
    print(f"written to {OUT / 'workspace.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
