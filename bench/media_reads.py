"""Media reads through the real Portal over HTTP: a full-range distribution view, images at random steps (not a test).

Issue 29 §8. Over a store ``taunotebook import`` made of a tensorboardX event file (``--store DIR/store``, or built
here: ``--hist-tags`` × ``--steps`` histograms of 64 buckets and ``--image-tags`` × ``--steps`` distinct 64×64 PNGs,
written by ``media_import.py``'s writer and imported through :func:`taunotebook.importer.import_paths`), a Portal
subprocess (``python -m taunotebook portal``, as ``bench_portal.py`` starts it) answers:

1. a full-range distribution view of one histogram tag, ``GET …/histograms?tag=T`` at the default ``max_steps``,
   with ``buckets=false`` (the bands) and with the buckets (the heat map and overlay), ``--repeats`` times each:
   first / p50 / p95 (target p95 < 100 ms); the baseline in the same run is the run's scalar over the same steps,
   ``GET …/series?metric=train/loss`` at its default ``max_points``;
2. the step cursor moved to random steps: ``GET …/images?tag=T&step=S`` then the first image's thumbnail
   (``thumbnail_url``), ``--repeats`` times: p50 / p95 of the pair (the browser's part is
   ``media_cursor_chromium.py``'s business).

The Portal's RSS is sampled every 20 ms throughout (target < 500 MB): its peak, and its level after each part.

    .venv/bin/python bench/media_reads.py --keep bench/out/media-full [--hist-tags 4] [--image-tags 10]
        [--steps 10000] [--repeats 50] [--jobs 2]
    .venv/bin/python bench/media_reads.py --keep bench/out/media-200 --hist-tags 200 --jobs 2   # the issue's size
    .venv/bin/python bench/media_reads.py --smoke

``--keep DIR`` builds the store in ``DIR`` (``DIR/logdir``, ``DIR/store``) once and reuses it after (for
``media_cursor_chromium.py`` too); the event files are written by ``media_import.build_event_files`` (``--jobs``
processes, resumable). The run's tag listing (``…/media``, what the pages read first) is timed too.

Prints a table and one JSON line, and writes ``bench/out/media_reads.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_portal import TOKEN, load_average, start_portal  # sibling scripts, not a package
from media_import import RUN_DIR, build_event_files

HERE = Path(__file__).resolve().parent
RUN = RUN_DIR  # the run id import derives from the run's directory
SCALAR = "train/loss"  # the one scalar media_import.py's writer logs per step


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class RssSampler:
    """The peak RSS of process ``pid``, sampled every ``every`` seconds on a thread until :meth:`stop`."""

    def __init__(self, pid: int, every: float = 0.02) -> None:
        self.pid, self.every, self.peak = pid, every, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.peak = max(self.peak, rss_mb(self.pid))
            except OSError:
                return
            self._stop.wait(self.every)

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak


def timed_ms(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def ensure_store(where: Path, hist_tags: int, image_tags: int, steps: int, jobs: int = 1) -> Path:
    """``where/store`` made by ``taunotebook import`` of ``where/logdir`` (both written here unless already there)."""
    from taunotebook.importer import import_paths

    store, logdir = where / "store", where / "logdir"
    if (store / "index.sqlite").is_file():
        print(f"reusing {store}", flush=True)
        return store
    existing = list((logdir / RUN_DIR).glob("*tfevents*"))
    if not existing or any(".part" in f.name for f in existing):  # none yet, or a build of parts to finish
        start = time.perf_counter()
        build_event_files(logdir, hist_tags, image_tags, steps, jobs=jobs)
        print(f"  written in {time.perf_counter() - start:.0f} s", flush=True)
    start = time.perf_counter()
    summary = import_paths([str(logdir)], store, clustering="wait")
    print(f"  imported in {time.perf_counter() - start:.0f} s ({summary.media:,} media)", flush=True)
    return store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, help="an existing store (DIR/store of an earlier --keep DIR)")
    parser.add_argument("--keep", type=Path, help="build the store in DIR (or reuse DIR/store)")
    parser.add_argument("--hist-tags", type=int, default=4, help="when building the store (default 4)")
    parser.add_argument("--image-tags", type=int, default=10, help="when building the store (default 10)")
    parser.add_argument("--steps", type=int, default=10_000, help="when building the store (default 10,000)")
    parser.add_argument("--jobs", type=int, default=1, help="processes writing the event files when building")
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--smoke", action="store_true", help="a quick run: 1 + 2 tags × 50 steps, 5 repeats")
    args = parser.parse_args()
    if args.smoke:
        args.hist_tags, args.image_tags, args.steps, args.repeats = 1, 2, 50, 5
    if args.repeats < 2:
        parser.error(f"--repeats must be >= 2, got {args.repeats}")
    for name in ("hist_tags", "image_tags", "steps"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    with tempfile.TemporaryDirectory() as tmp:
        store = args.store or ensure_store(args.keep or Path(tmp), args.hist_tags, args.image_tags, args.steps,
                                            args.jobs)
        if not (store / "index.sqlite").is_file():
            raise SystemExit(f"--store {store}: no expstore there (build one with --keep DIR first)")
        proc, api = start_portal(store)
        try:
            results = measure(proc.pid, api, args)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    results["load_average"] = load_average()
    print(f"  load average {results['load_average']}")
    print(json.dumps(results))
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    (out / ("media_reads-smoke.json" if args.smoke else "media_reads.json")).write_text(
        json.dumps(results, indent=2) + "\n")


def measure(pid: int, api: str, args) -> dict:
    rng = random.Random(args.seed)
    sampler = RssSampler(pid)
    rss_idle = rss_mb(pid)
    with httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120) as client:
        base = f"{api}/runs/{RUN}"

        def get(url: str, **params) -> httpx.Response:
            r = client.get(url, params=params)
            r.raise_for_status()
            return r

        tags_first = timed_ms(lambda: get(f"{base}/media"))
        tags = get(f"{base}/media").json()["tags"]
        tags_ms = [timed_ms(lambda: get(f"{base}/media")) for _ in range(max(2, args.repeats // 5))]
        hist = next(t for t in tags if t["kind"] == "histograms")
        image = next(t for t in tags if t["kind"] == "images")

        def view(label: str, url: str, **params) -> dict:
            first = timed_ms(lambda: get(url, **params))
            body = get(url, **params).json()
            ms = [timed_ms(lambda: get(url, **params)) for _ in range(args.repeats)]
            return {"label": label, "first_ms": first, "p50_ms": statistics.median(ms), "p95_ms": p(ms, 0.95),
                    "body": body}

        series = view("scalar series (baseline)", f"{base}/series", target=RUN, metric=SCALAR)
        bands = view("distribution, buckets=false", f"{base}/histograms", tag=hist["tag"], buckets="false")
        with_buckets = view("distribution with buckets", f"{base}/histograms", tag=hist["tag"])
        rss_after_hist = rss_mb(pid)

        def cursor() -> None:
            step = rng.randint(image["step_min"], image["step_max"])
            found = get(f"{base}/images", tag=image["tag"], step=step).json()
            thumb = found["images"][0]["thumbnail_url"]
            get(str(httpx.URL(api).join(thumb)))

        image_ms = [timed_ms(cursor) for _ in range(args.repeats)]
        rss_after = rss_mb(pid)
    peak = sampler.stop()
    returned = len(bands["body"]["steps"])
    results = {
        "bench": "media_reads", "histogram_tags": sum(t["kind"] == "histograms" for t in tags),
        "image_tags": sum(t["kind"] == "images" for t in tags), "histogram_tag": hist["tag"],
        "histogram_steps": hist["count"], "returned_steps": returned, "repeats": args.repeats,
        "image_tag": image["tag"], "image_steps": image["count"], "tags_first_ms": tags_first,
        "tags_p50_ms": statistics.median(tags_ms), "tags_p95_ms": p(tags_ms, 0.95),
        "image_cursor_p50_ms": statistics.median(image_ms), "image_cursor_p95_ms": p(image_ms, 0.95),
        "portal_rss_mb_idle": rss_idle, "portal_rss_mb_after_histograms": rss_after_hist,
        "portal_rss_mb_after": rss_after, "portal_rss_mb_peak": peak,
    }
    for key, part in (("series", series), ("bands", bands), ("buckets", with_buckets)):
        for field in ("first_ms", "p50_ms", "p95_ms"):
            results[f"{key}_{field}"] = part[field]
    results["bands_vs_series_p95"] = bands["p95_ms"] / series["p95_ms"]
    results["buckets_vs_series_p95"] = with_buckets["p95_ms"] / series["p95_ms"]
    print(f"the run's tags (…/media, {len(tags)} tags): first {tags_first:.1f} ms, "
          f"p50 {results['tags_p50_ms']:.1f} ms, p95 {results['tags_p95_ms']:.1f} ms")
    print(f"full range of {hist['tag']} ({hist['count']:,} steps -> {returned}) and of {SCALAR}, "
          f"{args.repeats} requests each:")
    for part in (series, bands, with_buckets):
        print(f"  {part['label']:<30} first {part['first_ms']:7.1f} ms  p50 {part['p50_ms']:7.1f} ms  "
              f"p95 {part['p95_ms']:7.1f} ms")
    print(f"  p95 / the scalar's: bands {results['bands_vs_series_p95']:.1f}x, buckets "
          f"{results['buckets_vs_series_p95']:.1f}x (target p95 < 100 ms)")
    print(f"step cursor on {image['tag']} ({image['count']:,} steps): images + thumbnail p50 "
          f"{results['image_cursor_p50_ms']:.1f} ms, p95 {results['image_cursor_p95_ms']:.1f} ms")
    print(f"Portal RSS: idle {rss_idle:.0f} MB, after the views {rss_after_hist:.0f} MB, peak {peak:.0f} MB "
          "(target < 500 MB)")
    return results


if __name__ == "__main__":
    main()
