"""``taunotebook import`` throughput vs TensorBoard's ``EventFileLoader``, in the same run (not a test).

Generates a TensorBoard logdir of ``--runs`` run directories holding ``--events`` scalar events in all
(tensorboardX writer, 4 tags), then times:

1. ``taunotebook import LOGDIR --store STORE -q`` as a subprocess (interpreter start included): read,
   project and write every point into a fresh expstore -- ``--repeat`` times, the median is reported
   (these machines are noisy), with the peak RSS of the import process;
2. the same import again (the files are unchanged: the idempotent no-op path);
3. TensorBoard's ``EventFileLoader`` iterating every event of every file and touching each scalar value
   (reading only: no store, no projection).

    .venv/bin/python bench/bench_import.py [--events 1000000] [--runs 4] [--repeat 3] [--logdir DIR]

``--logdir DIR`` keeps the generated logdir in DIR and reuses it when it is already there.

Prints a table and writes ``bench/out/import.json``.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def make_logdir(logdir: Path, events: int, runs: int) -> list[Path]:
    from tensorboardX import SummaryWriter

    tags = ("train/loss", "train/acc", "train/lr", "eval/loss")
    files = []
    per_run = events // runs
    for r in range(runs):
        directory = logdir / f"trial_{r:04d}"
        writer = SummaryWriter(str(directory), max_queue=100_000, flush_secs=3600)
        for i in range(per_run):
            writer.add_scalar(tags[i % 4], 1.0 / (i + 1), i // 4, walltime=1_790_000_000 + i * 0.001)
        writer.close()
        files.extend(p for p in directory.iterdir() if "tfevents" in p.name)
    return files


def time_import(logdir: Path, store: Path) -> tuple[float, str]:
    """Seconds and the summary line of one import subprocess."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "taunotebook.cli", "import", str(logdir), "--store", str(store),
                           "-q"], check=True, capture_output=True, text=True)
    return time.perf_counter() - start, done.stdout.splitlines()[0]


def peak_child_rss_mb() -> float:
    """The largest resident set of any child so far: the imports are this script's only children."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def time_event_file_loader(files: list[Path]) -> tuple[float, int]:
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    start = time.perf_counter()
    count = 0
    for path in files:
        for event in EventFileLoader(str(path)).Load():
            for value in event.summary.value:
                count += 1
                _ = (value.tag, event.step, event.wall_time, value.simple_value)
    return time.perf_counter() - start, count


def stored_points(store: Path) -> int:
    with sqlite3.connect(store / "index.sqlite") as conn:
        return conn.execute("SELECT sum(count) FROM metric_summaries").fetchone()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3, help="imports into fresh stores; the median is reported")
    parser.add_argument("--logdir", type=Path, help="keep (and reuse) the generated logdir here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        logdir = args.logdir or tmpdir / "logdir"
        files = sorted(p for p in logdir.rglob("*") if "tfevents" in p.name) if logdir.is_dir() else []
        if not files:
            print(f"writing a {args.events:,}-event logdir ({args.runs} runs) with tensorboardX ...", flush=True)
            files = make_logdir(logdir, args.events, args.runs)
        size = sum(p.stat().st_size for p in files)
        times = []
        for i in range(args.repeat):
            store = tmpdir / f"store{i}"
            seconds, summary = time_import(logdir, store)
            times.append(seconds)
            points = stored_points(store)
            if i < args.repeat - 1:
                shutil.rmtree(store)
        import_s = statistics.median(times)
        rss_mb = peak_child_rss_mb()
        reimport_s, _ = time_import(logdir, store)
        assert stored_points(store) == points
        efl_s, efl_n = time_event_file_loader(files)
    events = (args.events // args.runs) * args.runs
    assert points == efl_n == events, (points, efl_n, events)
    results = {
        "events": events, "runs": args.runs, "bytes": size,
        "import_s": import_s, "import_s_all": times, "import_peak_rss_mb": rss_mb, "reimport_s": reimport_s,
        "event_file_loader_s": efl_s,
        "import_events_per_s": events / import_s, "event_file_loader_events_per_s": efl_n / efl_s,
        "import_vs_event_file_loader": efl_s / import_s, "summary": summary,
    }
    print(f"\nlogdir: {events:,} scalar events in {args.runs} runs, {size / 1e6:.1f} MB")
    print(f"  taunotebook import       {import_s:8.2f} s  {events / import_s:12,.0f} events/s   "
          f"(median of {', '.join(f'{t:.2f}' for t in times)}; peak RSS {rss_mb:.0f} MB)")
    print(f"    {summary}")
    print(f"  re-import (unchanged)    {reimport_s:8.2f} s")
    print(f"  EventFileLoader (read)   {efl_s:8.2f} s  {efl_n / efl_s:12,.0f} events/s")
    print(f"  import is {efl_s / import_s:.1f}x EventFileLoader (target >= 20x)")
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    (out / "import.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
