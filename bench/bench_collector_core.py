"""Collector-core throughput, measured against baselines in the same run (not a test).

1. Reading one generated 1M-scalar event file: ``tau-collector dump`` (as a subprocess, JSON
   lines to a file) vs TensorBoard's ``EventFileLoader`` (iterating events and their scalar
   values) vs ``tbparse.SummaryReader`` (a DataFrame of scalars).
2. JSONL history rows → canonical MetricEvent NDJSON: our projection vs a stdlib-``json``
   baseline that does the least a Python projector must do per event (a dict per event,
   ``json.dumps`` with sorted tags, one sha256) without Go's encoding rules.

    .venv/bin/python bench/bench_collector_core.py [--scalars 1000000] [--rows 200000]

Prints a table and writes ``bench/out/collector_core.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def make_event_file(directory: Path, scalars: int) -> Path:
    from tensorboardX import SummaryWriter

    writer = SummaryWriter(str(directory), max_queue=100_000, flush_secs=3600)
    tags = ("train/loss", "train/acc", "train/lr", "eval/loss")
    for i in range(scalars):
        writer.add_scalar(tags[i % 4], 1.0 / (i + 1), i // 4, walltime=1_790_000_000 + i * 0.001)
    writer.close()
    (path,) = [p for p in directory.iterdir() if "tfevents" in p.name]
    return path


def time_dump(path: Path, out: Path) -> tuple[float, int]:
    start = time.perf_counter()
    with out.open("wb") as handle:
        subprocess.run([sys.executable, "-m", "tau_collector", "dump", str(path)], stdout=handle, check=True)
    elapsed = time.perf_counter() - start
    with out.open("rb") as handle:
        lines = sum(1 for _ in handle)
    return elapsed, lines


def time_event_file_loader(path: Path) -> tuple[float, int]:
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    start = time.perf_counter()
    count = 0
    for event in EventFileLoader(str(path)).Load():
        for value in event.summary.value:
            count += 1
            _ = (value.tag, event.step, event.wall_time, value.simple_value)
    return time.perf_counter() - start, count


def time_tbparse(path: Path) -> tuple[float, int]:
    from tbparse import SummaryReader

    start = time.perf_counter()
    frame = SummaryReader(str(path), pivot=False).scalars
    return time.perf_counter() - start, len(frame)


def make_rows(count: int) -> list[dict]:
    return [
        {"_step": i, "_timestamp": 1_790_000_000 + i * 0.01, "train/loss": 1.0 / (i + 1), "train/acc": i / count,
         "train/lr": 0.001, "gpu/memory_allocated_gb": 12.5, "tokens": i * 1000}
        for i in range(count)
    ]


def time_projection(rows: list[dict]) -> tuple[float, int]:
    from tau_collector.projection.projector import ProjectionConfig, Projector
    from tau_collector.sources.records import HistoryRow

    config = ProjectionConfig(project="demo", experiment_id="sweep", run_group_id="lr", run_id="seed-1",
                              exported_at=time.time_ns(), source="stellar-online", tags={"team": "vision"})
    projector = Projector(config, history_path="/data/run/history.jsonl", metric_file_id="history-0123456789abcdef",
                          metric_file_path="/data/run/history.jsonl", with_events=False)
    history = [HistoryRow(fields, i + 1, 0) for i, fields in enumerate(rows)]
    start = time.perf_counter()
    projected, errors = projector.project_rows(history)
    ndjson = b"".join(projected.lines)
    elapsed = time.perf_counter() - start
    assert not errors and ndjson
    return elapsed, len(projected.lines)


def time_stdlib_baseline(rows: list[dict]) -> tuple[float, int]:
    """A naive stdlib projector: per event a dict, json.dumps(sort_keys) and one sha256."""
    start = time.perf_counter()
    out = []
    for line, fields in enumerate(rows, 1):
        for key in sorted(k for k in fields if not k.startswith("_")):
            event = {"project": "demo", "experiment_id": "sweep", "run_group_id": "lr", "run_id": "seed-1",
                     "metric_name": key, "step": fields["_step"], "wall_time": fields["_timestamp"],
                     "value": fields[key], "tags": {"team": "vision", "jsonl.history_line": str(line)}}
            identity = json.dumps([event["metric_name"], event["step"], event["wall_time"]])
            event["event_id"] = "metric-" + hashlib.sha256(identity.encode()).hexdigest()
            out.append(json.dumps(event, sort_keys=True, separators=(",", ":")).encode() + b"\n")
    b"".join(out)
    return time.perf_counter() - start, len(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scalars", type=int, default=1_000_000)
    parser.add_argument("--rows", type=int, default=200_000)
    args = parser.parse_args()
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        print(f"writing a {args.scalars:,}-scalar event file with tensorboardX ...", flush=True)
        path = make_event_file(tmpdir / "tb", args.scalars)
        size = path.stat().st_size
        dump_s, dump_n = time_dump(path, tmpdir / "dump.jsonl")
        efl_s, efl_n = time_event_file_loader(path)
        tbp_s, tbp_n = time_tbparse(path)
        assert dump_n == efl_n == tbp_n == args.scalars, (dump_n, efl_n, tbp_n)
        results["event_file"] = {
            "scalars": args.scalars, "bytes": size,
            "dump_s": dump_s, "event_file_loader_s": efl_s, "tbparse_s": tbp_s,
            "dump_scalars_per_s": dump_n / dump_s, "event_file_loader_scalars_per_s": efl_n / efl_s,
            "tbparse_scalars_per_s": tbp_n / tbp_s,
            "dump_vs_event_file_loader": efl_s / dump_s, "dump_vs_tbparse": tbp_s / dump_s,
        }
    rows = make_rows(args.rows)
    proj_s, proj_n = time_projection(rows)
    base_s, base_n = time_stdlib_baseline(rows)
    results["projection"] = {
        "rows": args.rows, "events": proj_n, "projection_s": proj_s, "stdlib_baseline_s": base_s,
        "projection_events_per_s": proj_n / proj_s, "stdlib_baseline_events_per_s": base_n / base_s,
        "projection_vs_baseline": (proj_n / proj_s) / (base_n / base_s),
    }
    ev, pr = results["event_file"], results["projection"]
    print(f"\nevent file: {ev['scalars']:,} scalars, {ev['bytes'] / 1e6:.1f} MB")
    print(f"  tau-collector dump     {ev['dump_s']:8.2f} s  {ev['dump_scalars_per_s']:12,.0f} scalars/s")
    print(f"  EventFileLoader        {ev['event_file_loader_s']:8.2f} s  "
          f"{ev['event_file_loader_scalars_per_s']:12,.0f} scalars/s   dump is {ev['dump_vs_event_file_loader']:.1f}x")
    print(f"  tbparse                {ev['tbparse_s']:8.2f} s  {ev['tbparse_scalars_per_s']:12,.0f} scalars/s"
          f"   dump is {ev['dump_vs_tbparse']:.1f}x")
    print(f"\nJSONL projection: {pr['rows']:,} rows -> {pr['events']:,} canonical events")
    print(f"  tau projection         {pr['projection_s']:8.2f} s  {pr['projection_events_per_s']:12,.0f} events/s")
    print(f"  stdlib json baseline   {pr['stdlib_baseline_s']:8.2f} s  {pr['stdlib_baseline_events_per_s']:12,.0f}"
          f" events/s   ours is {pr['projection_vs_baseline']:.2f}x")
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    (out / "collector_core.json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nwrote {os.path.relpath(out / 'collector_core.json')}")


if __name__ == "__main__":
    main()
