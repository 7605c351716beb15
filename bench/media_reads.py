"""Media reads through the real Portal over HTTP: a full-range distribution view, images at random steps (not a test).

Issue 29 §8. Over the store ``bench/media_import.py`` builds (``--store``, or built here at ``--scale``), a Portal
subprocess (``python -m taunotebook portal``, as ``bench_portal.py`` starts it) answers:

1. a full-range distribution view of one histogram tag, ``GET …/histograms?tag=T&buckets=false&max_steps=500``,
   ``--repeats`` times: p50 / p95 (target p95 < 100 ms) and the Portal's RSS after (target < 500 MB);
2. the step cursor moved to random steps: ``GET …/images?tag=T&step=S`` then the first image's thumbnail
   (``thumbnail_url``), ``--repeats`` times: p50 / p95 of the pair (the browser's part is
   ``stellar_page_bench.py``'s business).

    .venv/bin/python bench/media_reads.py [--store DIR] [--scale 0.01] [--repeats 50]

Prints a table and one JSON line, and writes ``bench/out/media_reads.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_portal import TOKEN, load_average, start_portal  # sibling scripts, not a package
from media_import import RUN_DIR

HERE = Path(__file__).resolve().parent
RUN = RUN_DIR  # the run id import derives from the run's directory


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def timed_ms(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def build_store(where: Path, scale: float) -> Path:
    subprocess.run([sys.executable, str(HERE / "media_import.py"), "--scale", str(scale), "--keep", str(where)],
                   check=True)
    return where / "store"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, help="a store media_import.py --keep left (DIR/store)")
    parser.add_argument("--scale", type=float, default=1.0, help="when building the store here (see media_import.py)")
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--seed", type=int, default=29)
    args = parser.parse_args()
    if args.repeats < 2:
        parser.error(f"--repeats must be >= 2, got {args.repeats}")
    with tempfile.TemporaryDirectory() as tmp:
        store = args.store or build_store(Path(tmp), args.scale)
        if not (store / "index.sqlite").is_file():
            raise SystemExit(f"--store {store}: no expstore there (run bench/media_import.py --keep DIR first)")
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
    (out / "media_reads.json").write_text(json.dumps(results, indent=2) + "\n")


def measure(pid: int, api: str, args) -> dict:
    rng = random.Random(args.seed)
    with httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120) as client:
        base = f"{api}/runs/{RUN}"

        def get(url: str, **params) -> httpx.Response:
            r = client.get(url, params=params)
            r.raise_for_status()
            return r

        tags = get(f"{base}/media").json()["tags"]
        hist = next(t for t in tags if t["kind"] == "histograms")
        image = next(t for t in tags if t["kind"] == "images")
        view = {"tag": hist["tag"], "buckets": "false", "max_steps": 500}
        first_ms = timed_ms(lambda: get(f"{base}/histograms", **view))
        body = get(f"{base}/histograms", **view).json()
        hist_ms = [timed_ms(lambda: get(f"{base}/histograms", **view)) for _ in range(args.repeats)]
        rss_after_hist = rss_mb(pid)

        def cursor() -> None:
            step = rng.randint(image["step_min"], image["step_max"])
            found = get(f"{base}/images", tag=image["tag"], step=step).json()
            thumb = found["images"][0]["thumbnail_url"]
            get(str(httpx.URL(api).join(thumb)))

        image_ms = [timed_ms(cursor) for _ in range(args.repeats)]
        rss_after = rss_mb(pid)
    results = {
        "bench": "media_reads", "histogram_tag": hist["tag"], "histogram_steps": hist["count"],
        "returned_steps": len(body["steps"]), "repeats": args.repeats, "histogram_first_ms": first_ms,
        "histogram_p50_ms": statistics.median(hist_ms), "histogram_p95_ms": p(hist_ms, 0.95),
        "image_tag": image["tag"], "image_steps": image["count"],
        "image_cursor_p50_ms": statistics.median(image_ms), "image_cursor_p95_ms": p(image_ms, 0.95),
        "portal_rss_mb_after_histograms": rss_after_hist, "portal_rss_mb": rss_after,
    }
    print(f"distribution view of {hist['tag']} ({hist['count']:,} steps -> {len(body['steps'])}), "
          f"{args.repeats} requests: first {first_ms:.1f} ms, p50 {results['histogram_p50_ms']:.1f} ms, "
          f"p95 {results['histogram_p95_ms']:.1f} ms (target p95 < 100 ms)")
    print(f"step cursor on {image['tag']} ({image['count']:,} steps): images + thumbnail p50 "
          f"{results['image_cursor_p50_ms']:.1f} ms, p95 {results['image_cursor_p95_ms']:.1f} ms")
    print(f"Portal RSS after: {rss_after:.0f} MB (target < 500 MB)")
    return results


if __name__ == "__main__":
    main()
