"""Peak memory and throughput of ``collect``, ``import`` and ``dump`` on backlogs and hostile files (not a test).

Inputs, generated in a temporary directory:

* ``backlog.jsonl`` -- ``--rows`` history rows x 4 metrics (200k rows: ~30 MB, issue 11's backlog);
* ``tb/`` -- one tensorboardX event file of ``--scalars`` scalars (4 tags);
* with ``--event-file-gb G``: ``tb-big/``, an event file of about G GB (~49 bytes a scalar) of TensorBoard's
  own Event protos in TFRecord frames (:func:`write_big_event_file`: a Python writer would take hours),
  for the peak memory of ``collect``, ``import`` and ``dump`` over it (its rate is reported, its baseline
  is the small file's: ``EventFileLoader`` over a gigabyte would take most of an hour);
* the spool alone (:func:`spool_floor`): TauGrid's pending manifests for as many canonical lines as the
  backlog projects to, and their event ids, with nothing read or projected -- the floor of one-pass ``collect``;
* with ``--hostile``: a 1 GiB history line without a newline after 3 rows (a sparse file), an event
  file whose fourth frame header claims 2**60 bytes, a W&B run whose rows nest 1000 levels deep.

Each command runs as a subprocess of this interpreter (interpreter start and imports included) under
a wrapper that reports its own peak RSS (``VmHWM``); TensorBoard's ``EventFileLoader`` reads the
same event file in this process, in the same run, as the throughput baseline. ``--code DIR`` runs the
commands from another checkout (``DIR/collector`` and ``DIR`` first on ``PYTHONPATH``), for a
before/after comparison on the same machine state.

    .venv/bin/python bench/bench_collector_memory.py [--rows 200000] [--scalars 400000] [--hostile] [--code DIR]
                                                     [--only collect] [--before DIR]

Prints a table and writes ``bench/out/collector_memory.json`` (``collector_memory_<label>.json`` with ``--label``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
T0 = 1_790_000_000.0
WRAPPER = """
import runpy, sys
sys.argv = sys.argv[1:]
code = 0
try:
    runpy.run_module(sys.argv[0], run_name="__main__")
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
except MemoryError:
    code = 99
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the forking parent.
peak = [line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:")][0]
sys.stderr.write("\\npeak-rss-kib %s\\n" % peak)
sys.exit(code)
"""


def run(args: list[str], cwd: Path, env: dict[str, str]) -> dict:
    start, children = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    dump = args[:2] == ["tau_collector", "dump"]  # its output is points: thrown away, not kept here
    proc = subprocess.run([sys.executable, "-c", WRAPPER, *args], cwd=cwd, text=True, env=env,
                          stdout=subprocess.DEVNULL if dump else subprocess.PIPE, stderr=subprocess.PIPE)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # CPU: a fairer before/after on a shared machine
    cpu = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
    err, _, peak = proc.stderr.rpartition("peak-rss-kib ")
    return {"exit": proc.returncode, "seconds": seconds, "cpu_s": cpu, "peak_rss_mb": int(peak or 0) / 1024,
            "stdout_tail": (proc.stdout or "")[-300:], "stderr_tail": err.strip()[-300:]}


def write_backlog(path: Path, rows: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        for s in range(rows):
            handle.write(json.dumps({"_step": s, "_timestamp": T0 + s * 0.25, "loss": 1.0 / (s + 1), "acc": s / rows,
                                     "lr": 0.001 * (1 - s / rows), "grad_norm": (s % 97) / 7.0}) + "\n")


def write_big_event_file(directory: Path, scalars: int) -> Path:
    """An event file as a TensorBoard writer makes it (TensorBoard's own Event protos, TFRecord frames with
    masked CRC32C), written without a writer's per-scalar Python overhead: a gigabyte in minutes."""
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary

    from tau_collector.sources.masked_crc import masked_crc32c

    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "events.out.tfevents.1790000000.bench.big"
    tags = ("train/loss", "train/acc", "train/lr", "eval/loss")

    def frame(data: bytes) -> bytes:
        header = struct.pack("<Q", len(data))
        return header + struct.pack("<I", masked_crc32c(header)) + data + struct.pack("<I", masked_crc32c(data))

    with open(path, "wb") as handle:
        handle.write(frame(Event(wall_time=T0, file_version="brain.Event:2").SerializeToString()))
        frames = []
        for i in range(scalars):
            event = Event(wall_time=T0 + i * 0.001, step=i // 4,
                          summary=Summary(value=[Summary.Value(tag=tags[i % 4], simple_value=1.0 / (i + 1))]))
            frames.append(frame(event.SerializeToString()))
            if len(frames) == 100_000:
                handle.writelines(frames)
                frames.clear()
                if not i % 2_000_000:
                    print(f"writing the event file: {i:,} of {scalars:,} scalars", flush=True)
        handle.writelines(frames)
    return path


def write_event_file(directory: Path, scalars: int) -> Path:
    from tensorboardX import SummaryWriter

    writer = SummaryWriter(str(directory), max_queue=100_000, flush_secs=3600)
    tags = ("train/loss", "train/acc", "train/lr", "eval/loss")
    for i in range(scalars):
        writer.add_scalar(tags[i % 4], 1.0 / (i + 1), i // 4, walltime=T0 + i * 0.001)
    writer.close()
    (path,) = [p for p in directory.iterdir() if "tfevents" in p.name]
    return path


def write_hostile(root: Path) -> dict[str, Path]:
    line = root / "endless" / "history.jsonl"
    line.parent.mkdir(parents=True)
    line.write_text("".join(json.dumps({"_step": s, "_timestamp": T0 + s, "loss": 1.0}) + "\n" for s in range(3))
                    + '{"_step": 3, "blob": "')
    with open(line, "r+b") as handle:
        handle.truncate(line.stat().st_size + (1 << 30))
    frames = write_event_file(root / "claim" / "run", 3)
    from tau_collector.sources.masked_crc import masked_crc32c

    length = struct.pack("<Q", 1 << 60)
    with open(frames, "ab") as handle:
        handle.write(length + struct.pack("<I", masked_crc32c(length)) + b"\0" * 100)
    wandb = root / "deep" / "run-1" / "files"
    wandb.mkdir(parents=True)
    deep = '{"d":' * 1000 + '{"x":1.5}' + "}" * 1000
    (wandb / "wandb-history.jsonl").write_text("".join(
        json.dumps({"_step": s, "_timestamp": T0 + s, "loss": 1.0 / (s + 1)})[:-1] + ', "deep": ' + deep + "}\n"
        for s in range(100)))
    return {"1 GiB line": line, "2^60 frame": frames.parent, "1000-deep W&B": root / "deep"}


def event_file_loader(path: Path) -> tuple[float, int]:
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    start, cpu = time.perf_counter(), time.process_time()
    count = 0
    for event in EventFileLoader(str(path)).Load():
        for value in event.summary.value:
            count += 1
            _ = (value.tag, event.step, event.wall_time, value.simple_value)
    return time.perf_counter() - start, count, time.process_time() - cpu


def spool_floor(work: Path, backlog: Path, events: int, env: dict[str, str]) -> dict[str, float]:
    """What TauGrid's byte-compatible spool alone costs for ``events`` canonical lines, no reading or projecting:
    per chunk of 20,000 (``--batch-records``) the NDJSON's SHA-256, its base64 in the manifest, the manifest's
    SHA-256, writing and fsyncing it and removing it; plus one SHA-256 event id per event. The part of any
    one-pass ``collect`` that no faster reader or projection can remove."""
    import hashlib

    from tau_collector.spool.durable import remove_durable
    from tau_collector.spool.manifest import Manifest, Spool

    with open(backlog, "rb") as handle:
        (work / "one-row.jsonl").write_bytes(handle.readline())
    line = subprocess.run([sys.executable, "-m", "tau_collector", "project", "--run", "r", "--project", "p",
                           "--experiment", "e", "--group", "g", str(work / "one-row.jsonl")],
                          capture_output=True, env=env, check=True).stdout.splitlines(keepends=True)[0]
    per_chunk = 20_000
    ndjson = line * per_chunk
    spool = Spool(str(work / "spool-floor"))
    os.makedirs(spool.pending_dir, exist_ok=True)
    start, cpu = time.perf_counter(), time.process_time()
    for sequence in range(1, events // per_chunk + 1):
        manifest = Manifest(config_identity="0" * 64, kind="history", sequence=sequence, source_path=str(backlog),
                            source_file_id="1:1", ndjson=ndjson, event_count=per_chunk, end_offset=len(ndjson),
                            end_lines=per_chunk).seal()
        remove_durable(spool.write_pending(manifest))
    spool_s, spool_cpu = time.perf_counter() - start, time.process_time() - cpu
    identity = line[:200]  # an event id hashes the event's identity fields, about this long
    start = time.perf_counter()
    for index in range(events):
        hashlib.sha256(identity + str(index).encode()).hexdigest()
    return {"events": events, "line_bytes": len(line), "spool_s": spool_s, "spool_cpu_s": spool_cpu,
            "event_ids_s": time.perf_counter() - start}


def collect(work: Path, name: str, *source: str) -> list[str]:
    return ["tau_collector", "collect", "--run", "r", "--project", "p", "--experiment", "e", "--group", "g",
            "--out", str(work / f"out-{name}"), "--sink", "expstore", "--store", str(work / f"store-{name}"),
            "--completion-file", str(work / "completion.json"), *source]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--scalars", type=int, default=400_000)
    parser.add_argument("--hostile", action="store_true", help="also the 1 GiB line, 2^60 frame and 1000-deep rows")
    parser.add_argument("--event-file-gb", type=float, default=0.0,
                        help="also an event file of about this many GB (collect, import, dump)")
    parser.add_argument("--code", type=Path, help="run the commands from this checkout (before/after)")
    parser.add_argument("--label", default="", help="suffix of the JSON file written")
    parser.add_argument("--before", type=Path,
                        help="also run the collect cases from this checkout, in the same run (before/after)")
    parser.add_argument("--only", default="", help="run only the cases whose name starts with this (e.g. collect)")
    args = parser.parse_args()
    env = dict(os.environ)
    if args.code:
        env["PYTHONPATH"] = os.pathsep.join([str(args.code / "collector"), str(args.code)])
    results: dict = {"rows": args.rows, "scalars": args.scalars, "code": str(args.code or "this checkout"),
                     "load_average": os.getloadavg()}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "completion.json").write_text("")
        backlog = work / "hist" / "backlog.jsonl"
        write_backlog(backlog, args.rows)
        event_file = write_event_file(work / "tb", args.scalars)
        results["backlog_bytes"], results["event_file_bytes"] = backlog.stat().st_size, event_file.stat().st_size
        efl_s, efl_n, efl_cpu = event_file_loader(event_file)
        results["event_file_loader"] = {"seconds": efl_s, "cpu_s": efl_cpu, "scalars_per_s": efl_n / efl_s}
        floor = results["spool_floor"] = spool_floor(work, backlog, args.rows * 4, env)
        budget = floor["events"] / (15 * efl_n / efl_s)  # seconds a 15x-EventFileLoader collect may take
        print(f"spool alone ({floor['events']:,} lines of {floor['line_bytes']} B): {floor['spool_s']:.1f} s "
              f"({floor['spool_cpu_s']:.1f} s CPU), event ids {floor['event_ids_s']:.1f} s: "
              f"{(floor['spool_s'] + floor['event_ids_s']) / budget:.0%} of the {budget:.1f} s a collect "
              f"at 15x EventFileLoader may take", flush=True)
        cases = {
            "collect jsonl": (collect(work, "jsonl", "--history", str(backlog)), args.rows * 4),
            "collect tfevents": (collect(work, "tb", "--tfevents", str(event_file.parent)), args.scalars),
            # The same with TauGrid's pending manifests (NDJSON, event ids) instead of our column records.
            "collect jsonl manifest": (collect(work, "jsonl-m", "--history", str(backlog),
                                               "--spool-format", "manifest"), args.rows * 4),
            "collect tfevents manifest": (collect(work, "tb-m", "--tfevents", str(event_file.parent),
                                                  "--spool-format", "manifest"), args.scalars),
            "import jsonl": (["taunotebook", "import", str(backlog), "--store", str(work / "i-jsonl"), "-q"],
                             args.rows * 4),
            "import tfevents": (["taunotebook", "import", str(event_file.parent), "--store", str(work / "i-tb"), "-q"],
                                args.scalars),
            "dump jsonl": (["tau_collector", "dump", str(backlog)], args.rows * 4),
            "dump tfevents": (["tau_collector", "dump", str(event_file)], args.scalars),
        }
        if args.event_file_gb:
            big_scalars = int(args.event_file_gb * 1e9 / 49)
            big = write_big_event_file(work / "tb-big", big_scalars)
            results["big_event_file_bytes"] = big.stat().st_size
            cases["collect big tfevents"] = (collect(work, "tb-big", "--tfevents", str(big.parent)), big_scalars)
            cases["import big tfevents"] = (["taunotebook", "import", str(big.parent), "--store",
                                             str(work / "i-tb-big"), "-q"], big_scalars)
            cases["dump big tfevents"] = (["tau_collector", "dump", str(big)], big_scalars)
        if args.hostile:
            for name, path in write_hostile(work).items():
                cases[f"collect {name}"] = (collect(work, name.replace(" ", "_"),
                                                    "--tfevents" if "frame" in name else "--history",
                                                    str(path / "*.jsonl" if "W&B" in name else path)), 0)
                cases[f"import {name}"] = (["taunotebook", "import", str(path), "--store",
                                            str(work / f"i-{name.replace(' ', '_')}"), "-q"], 0)
                if "W&B" not in name:
                    cases[f"dump {name}"] = (["tau_collector", "dump", str(path)], 0)
        if args.before:  # each collect case followed by the same from the other checkout
            cases = {key: case for name, (command, events) in cases.items() for key, case in (
                [(name, (command, events))] + ([(f"{name} (before)", (
                    [c.replace("out-", "before-out-").replace("store-", "before-store-") for c in command],
                    events))] if name.startswith("collect") else []))}
            env_before = dict(env, PYTHONPATH=os.pathsep.join([str(args.before / "collector"), str(args.before)]))
        for name, (command, events) in cases.items():
            if not name.startswith(args.only):
                continue
            result = run(command, work, env_before if name.endswith("(before)") else env)
            if events:
                result["events_per_s"] = events / result["seconds"]
                result["vs_event_file_loader"] = result["events_per_s"] / results["event_file_loader"]["scalars_per_s"]
            results[name] = result
            rate = f"{result.get('events_per_s', 0):10,.0f}/s {result.get('vs_event_file_loader', 0):5.1f}x EFL" \
                if events else " " * 26
            if events:  # the same ratio in CPU seconds, less sensitive to what else the machine runs
                result["vs_event_file_loader_cpu"] = events / result["cpu_s"] / (efl_n / efl_cpu)
                rate += f" ({result['vs_event_file_loader_cpu']:4.1f}x in CPU)"
            print(f"{name:26s} exit {result['exit']:3d} {result['seconds']:7.1f} s {rate}  "
                  f"peak RSS {result['peak_rss_mb']:7.0f} MB", flush=True)
    print(f"EventFileLoader ({args.scalars:,} scalars): {efl_s:.1f} s ({efl_cpu:.1f} s CPU), "
          f"{efl_n / efl_s:,.0f} scalars/s; "
          f"load average at start {results['load_average'][0]:.2f}, at end {os.getloadavg()[0]:.2f}")
    results["load_average_end"] = os.getloadavg()
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    (out / f"collector_memory{'_' + args.label if args.label else ''}.json").write_text(
        json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
