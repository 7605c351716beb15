"""The writer's CPU per chunk on the simulated year's path (2 steps x 4 metrics a chunk, a spool stream,
in-process compaction with a grace of 0), in a store whose experiment already holds ``--runs`` other runs.

CPU is the process's own (``time.process_time``: user + system), so the figure moves far less with the
machine's load than wall time does; ``--profile`` prints the top of a cProfile of the same chunks.

    .venv/bin/python bench/store_writer_cpu.py [--chunks 2000] [--runs 40] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import store_simulated_year as year

from tau_collector.expstore.write.writer import MetricWriter


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=40, help="other runs already in the experiment")
    ap.add_argument("--rounds", type=int, default=3, help="the chunks are written this many times (fresh runs)")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    if args.chunks < 1 or args.runs < 0 or args.rounds < 1:
        raise SystemExit("--chunks and --rounds must be at least 1, --runs at least 0")
    os.fsync = lambda fd: None  # type: ignore[assignment]  # as the year's --no-sync
    tmp = Path(tempfile.mkdtemp(prefix="writercpu-"))
    try:
        store = year.open_writable(tmp / "s", True)
        seed = MetricWriter(store)
        for r in range(args.runs):
            seed.write_columns(f"seed-{r}", [year.columns(f"old-{r}", 0, 20)], request_hash="h")
            seed.mark_completed(f"old-{r}")
        writer = year.writer_of(store)
        per_round = []
        profile = cProfile.Profile(time.process_time) if args.profile else None  # CPU, not wall
        for rnd in range(args.rounds):
            run = f"job-{rnd}"
            cpu0, wall0 = time.process_time(), time.perf_counter()
            if profile is not None:
                profile.enable()
            for at in range(args.chunks):
                key, request_hash = year.keys(run, at)
                writer.write_columns(key, [year.columns(run, at * 2, 2)], request_hash=request_hash,
                                     stream=(f"spool-{run}", at + 1))
            if profile is not None:
                profile.disable()
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
            per_round.append(cpu / args.chunks * 1000)
            print(f"round {rnd}: {cpu / args.chunks * 1000:.3f} ms CPU a chunk, "
                  f"{wall / args.chunks * 1000:.3f} ms wall")
        writer.close()
        print(f"median {statistics.median(per_round):.3f} ms CPU a chunk ({args.chunks} chunks x {args.rounds}, "
              f"{args.runs} other runs), load {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
        if profile is not None:
            # SORT=tottime TOP=60 in the environment: another order, more lines
            stats = pstats.Stats(profile).sort_stats(os.environ.get("SORT", "cumulative"))
            stats.print_stats(int(os.environ.get("TOP", "45")))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
