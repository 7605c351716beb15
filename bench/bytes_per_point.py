"""Bytes on disk per stored point: our store (data, levels, index), TensorBoard's event file, TauGrid's Parquet.

Not a test, and deterministic (bytes, not time). The same points -- steps 0..n-1, a wall time a second apart, a
noisy decaying curve of float64 values (a function of metric and step), tags ``{}`` -- are stored three ways for
each shape:

* **ours**: delivered to a store as the sidecar delivers them (chunks through :class:`MetricWriter`: 12,000 rows,
  or one step of a wide run) and left as the sidecar's maintenance leaves them (``compact_all``, and for the wide
  run ``cluster_live`` passes until none has work). Data: the Parquet files; levels: the series-levels files;
  index: ``index.sqlite`` after a WAL checkpoint, less an empty store's (its schema, printed apart).
* **TensorBoard**: one event file written with tensorboardX (``Event`` protos through its ``EventFileWriter``),
  a scalar ``simple_value`` (float32) per point. tensorboardX writes ~4,000 events/s here, so at most
  ``--tb-points`` points are written and the per-point figure is that file's (a step of 2^21 or more takes one
  more varint byte than the steps written: the long run's full file is up to ~1 byte/point larger).
* **TauGrid Parquet**: the ``tau.metrics.scalar.v2`` rows (:func:`schema.metric_arrow_schema`) of the run in
  one file written by pyarrow (Snappy, dictionaries), as a JSONL import lays a run out.

    .venv/bin/python bench/bytes_per_point.py [--long 10000000] [--narrow-steps 100000] [--wide-steps 100]
                                              [--tb-points 1000000]

Writes ``bench/out/bytes_per_point.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT / "collector")]

from tau_collector.expstore import MetricWriter, RunColumns, open_store  # noqa: E402
from tau_collector.expstore.format import schema  # noqa: E402
from tau_collector.expstore.maintain.compaction import CompactionPolicy, compact_all  # noqa: E402
from tau_collector.expstore.maintain.live_clusters import LivePolicy, cluster_live  # noqa: E402

RUN = "run"
BASE_US = 1_790_000_000_000_000
CHUNK_ROWS = 12_000  # compaction's "as good as large" (max_merge_rows / 2): what the sidecar ends with


def names_for(metrics: int) -> list[str]:
    if metrics == 1:
        return ["train/loss"]
    return [f"blocks.{i // 8:04d}/param{i % 8}" for i in range(metrics)]


def values(metric: np.ndarray, step: np.ndarray, steps: int) -> np.ndarray:
    """A noisy decaying curve, a function of (metric, step) alone: every writer below computes the same values."""
    noise = np.modf(np.sin(step * 12.9898 + metric * 78.233) * 43758.5453)[0]
    return np.exp(-step / max(steps, 1) * 3.0) * (1.0 + metric * 0.01) + 0.01 * noise


def points(metrics: int, steps: int, first: int, count: int):
    """Rows ``first .. first+count`` of the run in step-major order: (metric code, step, wall µs, value)."""
    rows = np.arange(first, first + count, dtype=np.int64)
    metric, step = rows % metrics, rows // metrics
    return metric, step, BASE_US + step * 1_000_000, values(metric, step, steps)


def ours(root: Path, metrics: int, steps: int) -> dict:
    store = open_store(root, create=True)
    writer = MetricWriter(store, compaction=CompactionPolicy(min_files=10**9))
    all_names = names_for(metrics)
    total = metrics * steps
    chunk = metrics if metrics >= 1000 else CHUNK_ROWS  # a wide run delivers a step at a time
    for k, first in enumerate(range(0, total, chunk)):
        m, s, w, v = points(metrics, steps, first, min(chunk, total - first))
        writer.write_columns(f"d{k}", [RunColumns(
            project="p", experiment_id="e", run_group_id="g", run_id=RUN, names=all_names, metric=m.astype(np.int32),
            step=s, wall_time=w, value=v, tags=["{}"] * len(m), tag_sets=[{}], source="history")], request_hash="h")
    compact_all(store, RUN, policy=CompactionPolicy(grace_seconds=0), pyarrow_fallback=False)
    if metrics >= 1000:
        while cluster_live(store, RUN, LivePolicy(max_steps=64, leftover_grace_seconds=0)):
            pass
        compact_all(store, RUN, policy=CompactionPolicy(grace_seconds=0), pyarrow_fallback=False)  # retired files
    files = store.connection().execute("SELECT COUNT(*) FROM metric_files").fetchone()[0]
    store.close()
    data = sum(p.stat().st_size for p in (root / "metrics").rglob("*.parquet"))
    levels_dir = root / "series_levels"
    levels = sum(p.stat().st_size for p in levels_dir.rglob("*.npz")) if levels_dir.exists() else 0
    return {"data": data, "levels": levels, "index": index_bytes(root), "files": files}


def index_bytes(root: Path) -> int:
    conn = sqlite3.connect(root / "index.sqlite")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return sum(p.stat().st_size for p in root.glob("index.sqlite*"))


def tensorboard(directory: Path, metrics: int, steps: int, cap: int) -> dict:
    from tensorboardX.event_file_writer import EventFileWriter
    from tensorboardX.proto.event_pb2 import Event
    from tensorboardX.proto.summary_pb2 import Summary

    all_names = names_for(metrics)
    total = min(metrics * steps, cap)
    writer = EventFileWriter(str(directory))
    for first in range(0, total, 100_000):
        m, s, w, v = points(metrics, steps, first, min(100_000, total - first))
        for code, step, wall, value in zip(m.tolist(), s.tolist(), w.tolist(), v.tolist(), strict=True):
            writer.add_event(Event(wall_time=wall / 1e6, step=step, summary=Summary(
                value=[Summary.Value(tag=all_names[code], simple_value=value)])))
    writer.close()
    size = sum(p.stat().st_size for p in directory.iterdir())
    return {"bytes": size, "points": total}


def taugrid(path: Path, metrics: int, steps: int) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    all_names = np.array(names_for(metrics), dtype=object)
    arrow_schema = schema.metric_arrow_schema()
    with pq.ParquetWriter(path, arrow_schema, compression="snappy") as writer:
        # the file sorted by metric then step, in row groups of a million rows
        for code_first in range(0, metrics, max(1, 1_000_000 // steps)):
            codes = np.arange(code_first, min(metrics, code_first + max(1, 1_000_000 // steps)))
            for s_first in range(0, steps, 1_000_000):
                s_count = min(1_000_000, steps - s_first)
                step = np.tile(np.arange(s_first, s_first + s_count, dtype=np.int64), codes.size)
                metric = np.repeat(codes, s_count)
                n = step.size
                table = pa.table({
                    "project": pa.array(["p"] * n, pa.string()), "run_group_id": pa.array(["g"] * n, pa.string()),
                    "run_id": pa.array([RUN] * n, pa.string()),
                    "metric_name": pa.array(all_names[metric], pa.string()),
                    "step": pa.array(step, pa.int64()),
                    "wall_time": pa.array(BASE_US + step * 1_000_000, pa.timestamp("us", tz="UTC")),
                    "value": pa.array(values(metric, step, steps), pa.float64()), "unit": pa.nulls(n, pa.string()),
                    "source": pa.array(["history"] * n, pa.string()), "split": pa.nulls(n, pa.string()),
                    "tags": pa.array(["{}"] * n, pa.string())}).cast(arrow_schema)
                writer.write_table(table)
    return path.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--long", type=int, default=10_000_000, help="points of the long run (1 metric)")
    parser.add_argument("--narrow-steps", type=int, default=100_000, help="steps of the narrow run (10 metrics)")
    parser.add_argument("--wide-steps", type=int, default=100, help="steps of the wide run (10,000 metrics)")
    parser.add_argument("--tb-points", type=int, default=1_000_000, help="most points written to an event file")
    args = parser.parse_args()
    shapes = {"narrow": (10, args.narrow_steps), "wide": (10_000, args.wide_steps), "long": (1, args.long)}
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        empty = base / "empty"
        open_store(empty, create=True).close()
        out["empty_index"] = index_bytes(empty)
        for shape, (metrics, steps) in shapes.items():
            n = metrics * steps
            store = ours(base / shape, metrics, steps)
            store["index"] -= out["empty_index"]
            (base / f"tb-{shape}").mkdir()
            tb = tensorboard(base / f"tb-{shape}", metrics, steps, args.tb_points)
            tg = taugrid(base / f"{shape}.parquet", metrics, steps)
            row = {"metrics": metrics, "steps": steps, "points": n, "store_files": store["files"],
                   "data": store["data"] / n, "levels": store["levels"] / n, "index": store["index"] / n,
                   "ours": (store["data"] + store["levels"] + store["index"]) / n,
                   "tensorboard": tb["bytes"] / tb["points"], "tensorboard_points": tb["points"],
                   "taugrid_parquet": tg / n}
            out[shape] = row
            print(json.dumps({shape: row}), flush=True)
            for p in (base / shape, base / f"tb-{shape}"):
                shutil.rmtree(p)
            (base / f"{shape}.parquet").unlink()
    print(f"empty store's index: {out['empty_index']} bytes")
    print("| run | points | data | levels | index | ours (sum) | TensorBoard event file | TauGrid Parquet |")
    print("|---|---|---|---|---|---|---|---|")
    for shape in shapes:
        r = out[shape]
        print(f"| {shape} ({r['metrics']:,} × {r['steps']:,}) | {r['points']:,} | {r['data']:.2f} | "
              f"{r['levels']:.2f} | {r['index']:.2f} | {r['ours']:.2f} | {r['tensorboard']:.2f} | "
              f"{r['taugrid_parquet']:.2f} |")
    (HERE / "out").mkdir(exist_ok=True)
    (HERE / "out" / "bytes_per_point.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
