"""The main job on the embedded default: a local training job, its collector, a local store, a live view.

``python -m taunotebook.quickstart`` opens JupyterLab (127.0.0.1) on the quickstart notebook, whose
``%%tau_submit`` cell runs as a local job with its loss pane; the local Portal starts on demand.
``--headless`` runs the same trainer under ``tau-collector wrap`` with the local expstore as sink
and prints each metric's series in the terminal as points arrive, until the run completes.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tau_collector.cli.durations import duration_type
from tau_collector.expstore.read.reader import StoreReader
from tau_collector.expstore.store import ExpStore

from .home import tau_home

TRAINER = """\
import json, math, time
for step in range(STEPS):
    loss = 2.0 * math.exp(-step / 400) + 0.05 * math.sin(step / 7)
    print(json.dumps({"step": step, "loss": loss, "accuracy": 1 - loss / 2.2}))
    time.sleep(DELAY)
"""
_SPARK = " ▁▂▃▄▅▆▇█"


def sparkline(values: list[float], width: int = 40) -> str:
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return ""
    step = max(1, len(values) // width)
    sampled = values[::step][-width:]
    low, high = min(finite), max(finite)
    span = (high - low) or 1.0
    return "".join("!" if not math.isfinite(v) else _SPARK[1 + int((v - low) / span * (len(_SPARK) - 2))]
                   for v in sampled)


def render(reader: StoreReader, run_id: str) -> list[str]:
    if reader.run(run_id) is None:
        return ["waiting for the first points ..."]
    lines = []
    for summary in reader.metric_summaries(run_id):
        if summary.metric_name.startswith("tau/"):
            continue
        rows = reader.rows(run_id, summary.metric_name)
        values = [float(v) for v in rows.value]
        latest = f"{summary.latest_value:.5g}" if summary.latest_value is not None else "-"
        lines.append(f"{summary.metric_name:>12}  {summary.count:6d} pts  step {summary.max_step!s:>6}  "
                     f"latest {latest:>10}  {sparkline(values)}")
    return lines


NOTEBOOK = Path(__file__).resolve().parents[1] / "examples" / "quickstart.ipynb"


def open_jupyterlab(port: int) -> int:
    """JupyterLab on a copy of the quickstart notebook (autosave must not rewrite the repository's file)."""
    workdir = tau_home() / "notebooks"
    workdir.mkdir(parents=True, exist_ok=True)
    target = workdir / "quickstart.ipynb"
    if not target.exists():
        target.write_bytes(NOTEBOOK.read_bytes())
    command = [sys.executable, "-m", "jupyter", "lab", str(target), f"--ServerApp.root_dir={workdir}",
               "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}"]
    if os.geteuid() == 0:
        command.append("--allow-root")
    print(f"JupyterLab on {target}; run its cells (Ctrl+C here stops JupyterLab, not your runs)", flush=True)
    return subprocess.call(command)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="taunotebook-quickstart", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--headless", action="store_true", help="print the live series in the terminal")
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--delay", type=duration_type(zero=True), default=0.01, metavar="DURATION",
                        help="time between training steps (default 10ms; 0: none)")
    parser.add_argument("--port", type=int, default=8888, help="JupyterLab's port (default 8888)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not args.headless:
        return open_jupyterlab(args.port)
    home = tau_home()
    run_id = time.strftime("quickstart-%Y%m%d-%H%M%S")
    run_dir = home / "projects" / "default" / "runs" / run_id
    store = home / "store"
    run_dir.mkdir(parents=True, exist_ok=True)
    script = run_dir / "train.py"
    script.write_text(TRAINER.replace("STEPS", str(args.steps)).replace("DELAY", repr(args.delay)))
    print(f"run {run_id}\n  run dir {run_dir}\n  store   {store}\n", flush=True)
    with tempfile.TemporaryFile() as job_log:
        job = subprocess.Popen(
            [sys.executable, "-m", "tau_collector", "wrap", "--run-dir", str(run_dir), "--interval", "2s",
             "--run", run_id, "--project", "quickstart", "--experiment", "quickstart", "--group", "default",
             "--sink", "expstore", "--store", str(store), "--", sys.executable, str(script)],
            stdout=job_log, stderr=subprocess.STDOUT,
        )
        shown = 0
        while True:
            finished = job.poll() is not None
            lines = render(StoreReader(ExpStore(store)), run_id) if (store / "manifest.json").exists() \
                else ["waiting for the collector ..."]
            if shown:
                sys.stdout.write(f"\x1b[{shown}F\x1b[J")
            sys.stdout.write("\n".join(lines) + "\n")
            sys.stdout.flush()
            shown = len(lines)
            if finished:
                break
            time.sleep(0.5)
        run = StoreReader(ExpStore(store)).run(run_id)
        state = run.state if run else "unknown"
        print(f"\nrun {run_id} {state} (exit code {job.returncode})")
        if job.returncode:
            job_log.seek(0)
            sys.stdout.write(job_log.read().decode(errors="replace")[-4000:])
    return job.returncode


if __name__ == "__main__":
    sys.exit(main())
