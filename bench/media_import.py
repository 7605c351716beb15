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


def write_event_file(logdir: Path, hist_tags: int, image_tags: int, steps: int, *, hist_from: int = 0,
                     image_from: int = 0, scalar: bool = True, suffix: str = "") -> Path:
    """The run directory ``logdir/media_bench`` written with tensorboardX; returns its event file.

    Histogram tags ``hist_from`` … ``hist_from + hist_tags - 1`` and image tags ``image_from`` … (their global
    numbers, so several files written by :func:`build_event_files` make up one run's tags), the scalar if ``scalar``.
    """
    import numpy as np
    from tensorboardX import SummaryWriter
    from tensorboardX.proto.summary_pb2 import Summary

    directory = logdir / RUN_DIR
    writer = SummaryWriter(str(directory), max_queue=10_000, flush_secs=3600, filename_suffix=suffix)
    limits = np.linspace(-3.0, 3.0, BUCKETS).tolist()
    shape = np.exp(-np.linspace(-3.0, 3.0, BUCKETS) ** 2)
    for step in range(steps):
        wall = BASE_WALL + step
        if scalar:
            writer.add_scalar("train/loss", 1.0 / (step + 1), step, walltime=wall)
        for t in range(hist_from, hist_from + hist_tags):
            counts = np.floor(shape * (100 + (step + t) % 50)).tolist()
            num = float(sum(counts))
            writer.add_histogram_raw(f"weights/layer_{t:03d}", min=-3.0, max=3.0, num=num, sum=0.0,
                                     sum_squares=num, bucket_limits=limits, bucket_counts=counts,
                                     global_step=step, walltime=wall)
        for t in range(image_from, image_from + image_tags):
            image = Summary.Image(height=SIDE, width=SIDE, colorspace=3, encoded_image_string=png(t, step))
            writer.file_writer.add_summary(Summary(value=[Summary.Value(tag=f"samples/image_{t:02d}",
                                                                        image=image)]), step, wall)
    writer.close()
    return next(p for p in directory.iterdir() if "tfevents" in p.name and p.name.endswith(suffix))


def _write_part(job: tuple[str, int, int, int, int, int, bool, str]) -> str:
    """One part of :func:`build_event_files`, in its own process: written aside, then renamed into the run."""
    final_dir, hist_from, hist_tags, image_from, image_tags, steps, scalar, suffix = job
    aside = Path(final_dir).parent.parent / "logdir-parts" / suffix.strip(".")  # outside the logdir an import reads
    shutil.rmtree(aside, ignore_errors=True)  # a part cut short by an earlier, interrupted build
    start = time.perf_counter()
    written = write_event_file(aside, hist_tags, image_tags, steps, hist_from=hist_from, image_from=image_from,
                               scalar=scalar, suffix=suffix)
    final = Path(final_dir) / written.name
    os.replace(written, final)
    shutil.rmtree(aside, ignore_errors=True)
    return f"{final.name}: {hist_tags} histogram + {image_tags} image tags in {time.perf_counter() - start:.0f} s"


def build_event_files(logdir: Path, hist_tags: int, image_tags: int, steps: int, *, jobs: int = 1,
                      tags_per_part: int = 20) -> list[Path]:
    """One run's event files in ``logdir/media_bench``, several at once in ``jobs`` processes; resumable.

    The run's histogram tags are cut into parts of ``tags_per_part`` tags and its image tags into parts of 5, each
    part one event file holding every step of its tags (the scalar in the first), as a job whose writers each log
    a few tags would. TensorBoard reads them as one run (one directory); so does ``taunotebook import``. Each part
    is written aside and renamed into the run when closed: a build stopped and started again writes only the
    parts not there yet. With ``jobs=1`` and everything in one part, one file, as before.
    """
    from concurrent.futures import ProcessPoolExecutor

    directory = logdir / RUN_DIR
    directory.mkdir(parents=True, exist_ok=True)
    parts = [(h, min(tags_per_part, hist_tags - h), 0, 0) for h in range(0, hist_tags, tags_per_part)]
    parts += [(0, 0, i, min(5, image_tags - i)) for i in range(0, image_tags, 5)]
    if len(parts) > 1 and (hist_tags + image_tags) <= tags_per_part:
        parts = [(0, hist_tags, 0, image_tags)]
    todo = []
    for n, (hist_from, hist_count, image_from, image_count) in enumerate(parts):
        suffix = f".part{n:03d}of{len(parts):03d}"
        if not any(directory.glob(f"*tfevents*{suffix}")):
            todo.append((str(directory), hist_from, hist_count, image_from, image_count, steps, n == 0, suffix))
    if todo:
        print(f"writing {len(todo)} of {len(parts)} event files ({hist_tags} histogram + {image_tags} image tags "
              f"× {steps:,} steps in all) with tensorboardX, {jobs} at a time ...", flush=True)
        if jobs <= 1:
            for job in todo:
                print("  " + _write_part(job), flush=True)
        else:
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                for line in pool.map(_write_part, todo):
                    print("  " + line, flush=True)
    return sorted(p for p in directory.glob("*tfevents*") if ".part" in p.name)


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


def prepare(keep: Path | None, tmpdir: Path, hist_tags: int, image_tags: int, steps: int,
            jobs: int = 1) -> tuple[Path, list[Path]]:
    """(logdir, its event files), reusing ``keep/logdir`` when it already holds the run (a one-file run of an earlier
    version of this script as it is; a build of several parts finished where it stopped)."""
    logdir = (keep or tmpdir) / "logdir"
    existing = sorted((logdir / RUN_DIR).glob("*tfevents*")) if logdir.is_dir() else []
    if existing and not any(".part" in p.name for p in existing):
        return logdir, existing
    return logdir, build_event_files(logdir, hist_tags, image_tags, steps, jobs=jobs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hist-tags", type=int, default=200)
    parser.add_argument("--image-tags", type=int, default=10)
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies --steps (e.g. 0.01 on a busy machine)")
    parser.add_argument("--keep", type=Path, help="leave DIR/logdir and DIR/store here (for media_reads.py)")
    parser.add_argument("--jobs", type=int, default=1, help="processes writing the run's event files (default 1)")
    parser.add_argument("--only-write", action="store_true", help="build (or finish) DIR/logdir, time nothing")
    args = parser.parse_args()
    if args.scale <= 0:
        parser.error(f"--scale must be > 0, got {args.scale}")
    steps = max(1, round(args.steps * args.scale))
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
        logdir, event_files = prepare(args.keep, tmpdir, args.hist_tags, args.image_tags, steps, args.jobs)
        if args.only_write:
            print(f"{len(event_files)} event files, {sum(map(os.path.getsize, event_files)) / 1e6:.1f} MB in "
                  f"{logdir / RUN_DIR}")
            return
        store = (args.keep or tmpdir) / "store"
        if store.exists():
            shutil.rmtree(store)
        modules = time_module_imports()
        load_before = load_average()
        import_s, import_cpu, summary = time_import(logdir, store)
        acc_s, acc_cpu, acc_hist, acc_images = time_event_accumulator(logdir / RUN_DIR)
        file_bytes = sum(map(os.path.getsize, event_files))  # before the temporary directory goes
    expected_hist, expected_images = args.hist_tags * steps, args.image_tags * steps
    assert (acc_hist, acc_images) == (expected_hist, expected_images), (acc_hist, acc_images)
    assert summary.media >= expected_hist + expected_images, (summary.media, expected_hist + expected_images)
    results = {
        "bench": "media_import", "hist_tags": args.hist_tags, "image_tags": args.image_tags, "steps": steps,
        "file_bytes": file_bytes, "event_files": len(event_files), "media": summary.media, "run_ids": summary.run_ids,
        "import_s": import_s, "event_accumulator_s": acc_s, "import_vs_event_accumulator": acc_s / import_s,
        "import_cpu_s": import_cpu, "event_accumulator_cpu_s": acc_cpu, "cpu_ratio": acc_cpu / import_cpu,
        "module_import_s": {side: list(figures) for side, figures in modules.items()},
        "load_average_before": load_before, "load_average": load_average(),
    }
    print(f"\nevent files ({len(event_files)}): {expected_hist:,} histograms + {expected_images:,} images, "
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
