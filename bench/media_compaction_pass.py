"""One media compaction pass: each file's footer read and each shared row group decoded once, against once per tag
entry (not a test).

A store of ``--tags`` histogram tags (64 buckets) delivered ``--deliveries`` times, ``--steps`` steps a tag and
delivery (one delivery's file holds every tag, its row groups shared by up to 256 rows of several tags), compacted
by :func:`compact_media` with the sidecar's policy (2,048 rows a merge). The baseline, in the same run on a copy of
the same store: the pass as it was before, reading the footer and decoding the row groups again for every tag
entry (:class:`_PerEntry`). Prints CPU seconds (median of ``--repeat``), footers read, row group ranges decoded,
the ratio and the machine's load, and one JSON line.

    .venv/bin/python bench/media_compaction_pass.py [--tags 200] [--deliveries 16] [--steps 4] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from tau_collector.expstore.maintain import media_compaction
from tau_collector.expstore.maintain.media_compaction import compact_media, media_policy
from tau_collector.expstore.store import ExpStore
from tau_collector.expstore.write.media import write_media
from tau_collector.sources.media import HistogramRecord


class _PerEntry(media_compaction._Footers):
    """The pass before: nothing kept between entries (the footer read and the groups decoded for each)."""

    def read(self, entry):
        self.held.clear()
        self.decoded.clear()
        self.decoded_rows = 0
        self.budget_rows = 0
        return super().read(entry)


def build(root: Path, tags: int, deliveries: int, steps: int) -> None:
    store = ExpStore(root, create=True)
    rng = np.random.default_rng(0)
    edges = np.linspace(-1.0, 1.0, 65)
    names = [f"layer_{i:03d}/weights" for i in range(tags)]
    for k in range(deliveries):
        records = []
        for s in range(k * steps, (k + 1) * steps):
            for i, name in enumerate(names):
                buckets = np.column_stack([edges[:-1], edges[1:], rng.integers(0, 100, 64).astype(np.float64)])
                records.append(HistogramRecord("", name, s, 1000.0 + s, buckets, i, s * tags + i))
        write_media(store, f"k{k}", "run", "/logs/events", records)
    store.close()


def one_pass(root: Path, footers) -> tuple[float, int, int, int]:
    made = []

    class Counted(footers):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    media_compaction._Footers = Counted
    try:
        store = ExpStore(root, writable=True)
        start = time.process_time()
        files = compact_media(store, "run", policy=media_policy(2048))
        cpu = time.process_time() - start
        store.close()
    finally:
        media_compaction._Footers = _SHARED
    return cpu, files, sum(f.reads for f in made), sum(f.decodes for f in made)


_SHARED = media_compaction._Footers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tags", type=int, default=200)
    parser.add_argument("--deliveries", type=int, default=16)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "source"
        build(source, args.tags, args.deliveries, args.steps)
        load_before = open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else []
        results: dict[str, list] = {"per entry (before)": [], "once a pass": []}
        for _ in range(args.repeat):
            for label, footers in (("per entry (before)", _PerEntry), ("once a pass", _SHARED)):
                copy = Path(tmp) / "copy"
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(source, copy)
                results[label].append(one_pass(copy, footers))
        load_after = open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else []
    out = {}
    for label, runs in results.items():
        cpu = statistics.median(r[0] for r in runs)
        out[label] = {"cpu_s": round(cpu, 3), "files": runs[0][1], "footers_read": runs[0][2],
                      "groups_decoded": runs[0][3]}
        print(f"{label:20} CPU {cpu:6.3f} s (median of {len(runs)})  files written {runs[0][1]}  "
              f"footers read {runs[0][2]}  row group ranges decoded {runs[0][3]}")
    ratio = out["per entry (before)"]["cpu_s"] / max(out["once a pass"]["cpu_s"], 1e-9)
    print(f"before / now: {ratio:.2f}x   load {' '.join(load_before)} -> {' '.join(load_after)}")
    print(json.dumps({"tags": args.tags, "deliveries": args.deliveries, "steps": args.steps, **out,
                      "ratio": round(ratio, 2), "load": [load_before, load_after]}))


if __name__ == "__main__":
    main()
