"""The sidecar beside a job logging a histogram and scalars with tensorboardX: its CPU and RSS over time (not a test).

Issue 29 §8 ("the sidecar beside a job logging one 64-bucket histogram and 4 scalars per step at 100 steps/s stays
≤ 5 % of a core and flat over time"). A job process writes through a real tensorboardX ``SummaryWriter`` (its
defaults: the writer's own queue and flushing) one ``add_histogram(..., bins=64)`` of 1,000 fresh values and four
``add_scalar`` per step at ``--rate`` steps a second for ``--seconds``; beside it ``tau-collector collect --watch
--tfevents LOGDIR --sink expstore`` (the sidecar as ``sidecar_tree_memory.py`` runs it) collects the logdir into a
local store. Every 0.5 s the script sums VmRSS over the collector's process tree and reads the tree's CPU
(``sidecar_tree_memory.sample``). It prints the CPU share of one core over each minute (target ≤ 5 %) and each
20 s, the tree's RSS per minute (median), whether the last minute's CPU and RSS are within 10 % of the first's
("flat"), the CPU seconds per 1,000 steps, and what the store holds at the end (every step written, once).

    .venv/bin/python bench/sidecar_media.py --seconds 240 [--rate 100] [--batch-wait 5s]
    .venv/bin/python bench/sidecar_media.py --smoke

Writes ``bench/out/sidecar_media.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_collector_pipeline import collect_command, wait_ready  # noqa: E402
from sidecar_tree_memory import sample  # noqa: E402

SCALARS = ("train/loss", "train/accuracy", "train/lr", "train/grad_norm")
HISTOGRAM = "weights/layer_0"


def job(logdir: Path, rate: float, seconds: float) -> None:
    """The job: ``rate`` steps a second for ``seconds``, one 64-bucket histogram and 4 scalars each; prints steps."""
    import numpy as np
    from tensorboardX import SummaryWriter

    rng = np.random.default_rng(29)
    writer = SummaryWriter(str(logdir))
    start = time.perf_counter()
    step = 0
    while time.perf_counter() - start < seconds:
        values = rng.normal(0.0, 1.0 + step / 10_000, 1_000)
        writer.add_histogram(HISTOGRAM, values, step, bins=64)
        for i, name in enumerate(SCALARS):
            writer.add_scalar(name, 1.0 / (step + 1) + i, step)
        step += 1
        delay = step / rate - (time.perf_counter() - start)
        if delay > 0:
            time.sleep(delay)
    writer.close()
    print(step, flush=True)


def per_window(samples: list[tuple[float, int, float, int]], window: float) -> list[tuple[float, float]]:
    """(CPU % of a core, median RSS MB) over each whole ``window`` seconds of ``samples`` (t, rss, cpu, n)."""
    out, at = [], 0.0
    while at + window <= samples[-1][0] + 1.0:  # the last window may end within a sample of the run's end
        inside = [s for s in samples if at <= s[0] <= at + window]
        if len(inside) >= 2:
            cpu = 100 * (inside[-1][2] - inside[0][2]) / (inside[-1][0] - inside[0][0])
            out.append((round(cpu, 2), round(statistics.median(s[1] for s in inside) / 1e6, 1)))
        at += window
    return out


def stored_steps(store: Path) -> tuple[int, int]:
    """(steps of the histogram tag the store holds, points of the first scalar)."""
    from tau_collector.expstore.read.reader import StoreReader

    reader = StoreReader(store)
    run_id = "bench"  # collect_command's --run
    hist = next((t.count for t in reader.media_tags(run_id) if t.tag == HISTOGRAM), 0)
    points = len(reader.series(run_id, SCALARS[0], max_points=10**9).step)
    return hist, points


def run(seconds: float, rate: float, batch_wait: str | None = None) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "hist").mkdir()
        (root / "tb").mkdir()
        extra = ["--batch-wait", batch_wait] if batch_wait else []
        proc = subprocess.Popen(collect_command(root, "--watch", "--interval", "30s", "--tfevents", str(root / "tb"),
                                                "--ready-file", str(root / "ready"), *extra),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_ready(root)
        writer = subprocess.Popen([sys.executable, __file__, "--job", str(root / "tb"), "--rate", str(rate),
                                   "--seconds", str(seconds)], stdout=subprocess.PIPE, text=True)
        samples = []  # (t, rss bytes, cpu s, processes)
        t0 = time.perf_counter()
        load0 = os.getloadavg()[0]
        while time.perf_counter() - t0 < seconds:
            rss, cpu, n = sample(proc.pid)
            samples.append((time.perf_counter() - t0, rss, cpu, n))
            time.sleep(0.5)
        load1 = os.getloadavg()[0]
        steps = int(writer.communicate(timeout=120)[0].split()[-1])
        (root / "completion.json").write_text("")
        try:
            proc.wait(timeout=300)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise SystemExit("the collector did not finish within 300 s of the completion file") from None
        if proc.returncode:
            raise SystemExit(f"the collector failed ({proc.returncode}): {proc.stderr.read()[-2000:]}")
        hist, points = stored_steps(root / "store")
    minutes, twenties = per_window(samples, 60.0), per_window(samples, 20.0)
    first, last = minutes[0] if minutes else twenties[0], minutes[-1] if minutes else twenties[-1]
    return {
        "bench": "sidecar_media", "seconds": seconds, "rate": rate, "batch_wait": batch_wait, "steps_written": steps,
        "achieved_steps_per_s": round(steps / seconds, 1), "stored_histogram_steps": hist,
        "stored_scalar_points": points,
        "load": [round(load0, 2), round(load1, 2)],
        "cpu_percent_per_minute": [m[0] for m in minutes], "rss_mb_per_minute": [m[1] for m in minutes],
        "cpu_percent_per_20s": [m[0] for m in twenties],
        "cpu_percent_overall": round(100 * (samples[-1][2] - samples[0][2]) / (samples[-1][0] - samples[0][0]), 2),
        "peak_tree_rss_mb": round(max(s[1] for s in samples) / 1e6, 1),
        "most_processes": max(s[3] for s in samples),
        "cpu_last_vs_first": round(last[0] / first[0], 2) if first[0] else None,
        "rss_last_vs_first": round(last[1] / first[1], 2) if first[1] else None,
        "cpu_s_per_1000_steps": round(1000 * (samples[-1][2] - samples[0][2]) / max(1, steps), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=240.0, help="how long the job logs (default 240)")
    parser.add_argument("--rate", type=float, default=100.0, help="the job's steps a second (default 100)")
    parser.add_argument("--batch-wait", help="the collector's --batch-wait (default: its own, drain at every change)")
    parser.add_argument("--smoke", action="store_true", help="a quick run: 25 s")
    parser.add_argument("--job", type=Path, help=argparse.SUPPRESS)  # internal: be the job, logging into this logdir
    args = parser.parse_args()
    if args.rate <= 0 or args.seconds <= 0:
        parser.error(f"--rate and --seconds must be > 0, got {args.rate} and {args.seconds}")
    if args.job:
        job(args.job, args.rate, args.seconds)
        return
    if args.smoke:
        args.seconds = 25.0
    result = run(args.seconds, args.rate, args.batch_wait)
    print(json.dumps(result, indent=2))
    per, unit = result["cpu_percent_per_minute"], "minute"
    if not per:  # shorter than a minute (--smoke): per 20 s
        per, unit = result["cpu_percent_per_20s"], "20 s"
    ok = all(c <= 5.0 for c in per)
    print(f"CPU % of a core per {unit} {per} (target <= 5: {'met' if ok else 'missed'}); "
          f"last / first {unit}: CPU {result['cpu_last_vs_first']}, RSS {result['rss_last_vs_first']}")
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    name = "sidecar_media" + ("-smoke" if args.smoke else "") + (f"-batch-{args.batch_wait}" if args.batch_wait else "")
    (out / f"{name}.json").write_text(
        json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
