"""``taunotebook import`` of a media-heavy event file vs TensorBoard's ``EventAccumulator``, same run (not a test).

Issue 29 §8: one run whose tensorboardX event file holds ``--hist-tags`` histogram tags × ``--steps`` steps
(64 buckets each, ``add_histogram_raw``) and ``--image-tags`` image tags × ``--steps`` steps (a 64×64 PNG,
distinct per tag and step so content addressing cannot fold them), plus one scalar per step. Then times:

1. ``taunotebook import`` through :func:`taunotebook.importer.import_paths` (the in-process API the CLI calls,
   ``clustering="wait"`` so nothing the import starts outlives the timing) into a fresh store;
2. TensorBoard's ``EventAccumulator`` with ``size_guidance`` 0 for every kind (``--samples_per_plugin`` all:
   nothing sampled away) loading the same file with ``Reload()``.

    .venv/bin/python bench/media_import.py [--scale 1.0] [--hist-tags 200] [--image-tags 10] [--steps 10000]
        [--keep DIR]

``--scale`` multiplies the step count (``--scale 0.01``: 100 steps). ``--keep DIR`` leaves the logdir and the
store in DIR (``DIR/logdir``, ``DIR/store``) for ``bench/media_reads.py``. Prints a table and one JSON line,
and writes ``bench/out/media_import.json``. Wall and CPU seconds (user + system, every thread's) of each: on a
shared machine the wall ratio follows the load, the CPU ratio much less.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RUN_DIR = "media_bench"
BUCKETS = 64
SIDE = 64
BASE_WALL = 1_790_000_000.0


def png(tag_index: int, step: int) -> bytes:
    """A 64×64 RGB PNG distinct for (tag, step): a gradient shifted by both (compresses like a real image)."""
    import numpy as np
    from PIL import Image

    y, x = np.mgrid[0:SIDE, 0:SIDE]
    pixels = np.stack([(x * 4 + step) % 256, (y * 4 + tag_index * 25) % 256, ((x + y) * 2 + step // 256) % 256],
                      axis=-1).astype(np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG")
    return out.getvalue()


def write_event_file(logdir: Path, hist_tags: int, image_tags: int, steps: int) -> Path:
    """The run directory ``logdir/media_bench`` written with tensorboardX; returns its event file."""
    import numpy as np
    from tensorboardX import SummaryWriter
    from tensorboardX.proto.summary_pb2 import Summary

    directory = logdir / RUN_DIR
    writer = SummaryWriter(str(directory), max_queue=10_000, flush_secs=3600)
    limits = np.linspace(-3.0, 3.0, BUCKETS).tolist()
    shape = np.exp(-np.linspace(-3.0, 3.0, BUCKETS) ** 2)
    for step in range(steps):
        wall = BASE_WALL + step
        writer.add_scalar("train/loss", 1.0 / (step + 1), step, walltime=wall)
        for t in range(hist_tags):
            counts = np.floor(shape * (100 + (step + t) % 50)).tolist()
            num = float(sum(counts))
            writer.add_histogram_raw(f"weights/layer_{t:03d}", min=-3.0, max=3.0, num=num, sum=0.0,
                                     sum_squares=num, bucket_limits=limits, bucket_counts=counts,
                                     global_step=step, walltime=wall)
        for t in range(image_tags):
            image = Summary.Image(height=SIDE, width=SIDE, colorspace=3, encoded_image_string=png(t, step))
            writer.file_writer.add_summary(Summary(value=[Summary.Value(tag=f"samples/image_{t:02d}",
                                                                        image=image)]), step, wall)
    writer.close()
    return next(p for p in directory.iterdir() if "tfevents" in p.name)


def cpu_seconds() -> float:
    """This process's CPU time so far, user + system, every thread's."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def time_module_imports() -> dict[str, tuple[float, float]]:
    """Wall and CPU seconds to import each side's entry module, before either is timed (as before: neither side's
    figure counts it; what ``import_paths`` loads lazily is in its figure), printed apart for the record."""
    out = {}
    for name, load in (("import", lambda: __import__("taunotebook.importer")),
                       ("event_accumulator",
                        lambda: __import__("tensorboard.backend.event_processing.event_accumulator"))):
        start, cpu = time.perf_counter(), cpu_seconds()
        load()
        out[name] = (time.perf_counter() - start, cpu_seconds() - cpu)
    return out


def time_import(logdir: Path, store: Path) -> tuple[float, float, object]:
    """(wall seconds, CPU seconds, the import's summary); its modules already loaded (:func:`time_module_imports`)."""
    from taunotebook.importer import import_paths

    start, cpu = time.perf_counter(), cpu_seconds()
    summary = import_paths([str(logdir)], store, clustering="wait")
    return time.perf_counter() - start, cpu_seconds() - cpu, summary


def time_event_accumulator(run_dir: Path) -> tuple[float, float, int, int]:
    """Wall and CPU seconds to ``Reload()`` keeping everything, histogram events and images it then holds."""
    from tensorboard.backend.event_processing import event_accumulator as ea

    keep_all = {ea.COMPRESSED_HISTOGRAMS: 0, ea.IMAGES: 0, ea.AUDIO: 0, ea.SCALARS: 0, ea.HISTOGRAMS: 0,
                ea.TENSORS: 0}
    start, cpu = time.perf_counter(), cpu_seconds()
    acc = ea.EventAccumulator(str(run_dir), size_guidance=keep_all)
    acc.Reload()
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    tags = acc.Tags()
    histograms = sum(len(acc.Histograms(t)) for t in tags["histograms"])
    images = sum(len(acc.Images(t)) for t in tags["images"])
    return seconds, cpu, histograms, images


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def prepare(keep: Path | None, tmpdir: Path, hist_tags: int, image_tags: int, steps: int) -> tuple[Path, Path]:
    """(logdir, event file), reusing ``keep/logdir`` when it already holds a file."""
    logdir = (keep or tmpdir) / "logdir"
    existing = sorted(p for p in (logdir / RUN_DIR).glob("*tfevents*")) if logdir.is_dir() else []
    if existing:
        return logdir, existing[0]
    print(f"writing {hist_tags} histogram tags + {image_tags} image tags × {steps:,} steps with tensorboardX ...",
          flush=True)
    return logdir, write_event_file(logdir, hist_tags, image_tags, steps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hist-tags", type=int, default=200)
    parser.add_argument("--image-tags", type=int, default=10)
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies --steps (e.g. 0.01 on a busy machine)")
    parser.add_argument("--keep", type=Path, help="leave DIR/logdir and DIR/store here (for media_reads.py)")
    args = parser.parse_args()
    if args.scale <= 0:
        parser.error(f"--scale must be > 0, got {args.scale}")
    steps = max(1, round(args.steps * args.scale))
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
        logdir, event_file = prepare(args.keep, tmpdir, args.hist_tags, args.image_tags, steps)
        store = (args.keep or tmpdir) / "store"
        if store.exists():
            shutil.rmtree(store)
        modules = time_module_imports()
        load_before = load_average()
        import_s, import_cpu, summary = time_import(logdir, store)
        acc_s, acc_cpu, acc_hist, acc_images = time_event_accumulator(event_file.parent)
        file_bytes = os.path.getsize(event_file)  # before the temporary directory goes
    expected_hist, expected_images = args.hist_tags * steps, args.image_tags * steps
    assert (acc_hist, acc_images) == (expected_hist, expected_images), (acc_hist, acc_images)
    assert summary.media >= expected_hist + expected_images, (summary.media, expected_hist + expected_images)
    results = {
        "bench": "media_import", "hist_tags": args.hist_tags, "image_tags": args.image_tags, "steps": steps,
        "file_bytes": file_bytes, "media": summary.media, "run_ids": summary.run_ids,
        "import_s": import_s, "event_accumulator_s": acc_s, "import_vs_event_accumulator": acc_s / import_s,
        "import_cpu_s": import_cpu, "event_accumulator_cpu_s": acc_cpu, "cpu_ratio": acc_cpu / import_cpu,
        "module_import_s": {side: list(figures) for side, figures in modules.items()},
        "load_average_before": load_before, "load_average": load_average(),
    }
    print(f"\nevent file: {expected_hist:,} histograms + {expected_images:,} images, "
          f"{results['file_bytes'] / 1e6:.1f} MB")
    print(f"  taunotebook import            {import_s:8.2f} s {import_cpu:7.2f} CPU s ({summary.media:,} media stored)")
    print(f"  EventAccumulator (keep all)   {acc_s:8.2f} s {acc_cpu:7.2f} CPU s")
    print("  modules loaded before timing  " + ", ".join(f"{side} {w:.2f} s {c:.2f} CPU s"
                                                         for side, (w, c) in modules.items()))
    print(f"  import is {acc_s / import_s:.1f}x EventAccumulator (target >= 10x), {acc_cpu / import_cpu:.1f}x in CPU "
          f"seconds; load {load_before} before, {results['load_average']} after")
    print(json.dumps(results))
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    (out / "media_import.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
