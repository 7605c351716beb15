"""Nothing left behind: a writer, compaction or clustering killed at any durability point leaves files that the
next writer or compaction removes (never a reader), and the store reads as before."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from tau_collector.expstore import StoreReader, open_store
from tau_collector.expstore.maintain.compaction import CompactionPolicy, compact_all
from tau_collector.expstore.maintain.leftovers import sweep_run
from tau_collector.expstore.maintain.live_clusters import LivePolicy, cluster_live
from tau_collector.expstore.maintain.metric_clusters import cluster_run
from tau_collector.expstore.write.writer import MetricWriter

from .. import crash_points
from .events import event, new_store

METRICS = ("m0", "m1", "m2", "m3")


def _chunk(c: int):
    return [event(c * 10 + s, float(c * 100 + s), metric=m) for m in METRICS for s in range(10)] + [
        event(3, float(c), metric="m0", wall_ns=1)]  # re-sent step 3, one wall time: the newest chunk's wins


def _base(tmp_path: Path) -> Path:
    store, writer = new_store(tmp_path / "base")
    for c in range(4):
        writer.write_chunk(f"c{c}", _chunk(c), [], request_hash="h")
    store.close()
    return tmp_path / "base" / "store"


def _forked(target, mode: str, n: int, log: Path) -> int:
    """``target(store_dir)`` in a forked process stopped at durability point ``n`` (crash_points' modes)."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            crash_points._install(mode, n, str(log))
            target()
            if mode == "count":
                log.write_text(str(crash_points._seen))
            code = 0
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def _reads(store_dir: Path) -> dict:
    reader = StoreReader(open_store(store_dir))
    out = {}
    for metric in METRICS:
        rows = reader.rows("seed-1", metric)
        out[metric] = (rows.step.tolist(), rows.value.tolist())
    return out


def _leftovers(store_dir: Path) -> list[str]:
    """Files under metrics/ and series_levels/ that no index row names (temporary files included)."""
    conn = open_store(store_dir).connection()
    known = {r[0] for r in conn.execute("SELECT file_id FROM metric_files UNION SELECT file_id FROM "
                                        "metric_file_retirements")}
    found = []
    for top in ("metrics", "series_levels"):
        for path in (store_dir / top).rglob("*"):
            if path.is_file() and (path.name.startswith(".") or path.name.rsplit(".", 1)[0] not in known):
                found.append(str(path.relative_to(store_dir)))
    return found


def _compact(store_dir: Path) -> None:
    compact_all(open_store(store_dir, writable=True), "seed-1",
                policy=CompactionPolicy(min_files=1, grace_seconds=0), pyarrow_fallback=False)


def _cluster(store_dir: Path) -> None:
    cluster_run(open_store(store_dir, writable=True), "seed-1", max_rows=90)


def _live_base(tmp_path: Path) -> Path:
    """Five chunks of steps apart, the last re-sending a step of the fourth (one wall time: the last wins)."""
    store, writer = new_store(tmp_path / "base")
    for c in range(5):
        resent = [event(35, -1.0, metric="m1", wall_ns=1)] if c == 4 else []
        writer.write_chunk(f"c{c}", [event(c * 10 + s, float(c * 100 + s), metric=m, wall_ns=1)
                                     for m in METRICS for s in range(10)] + resent, [], request_hash="h")
    store.close()
    return tmp_path / "base" / "store"


def _cluster_live(store_dir: Path) -> None:
    """Live clustering's four steps of a file each: the ranges' bases, two tiered deltas, then a step past the
    cap merging both deltas and the last two files (the re-sent step ties them) and folding ranges."""
    cluster_live(open_store(store_dir, writable=True), "seed-1", LivePolicy(
        wide_metrics=1, range_metrics=2, ingest_files=1, batch_files=1, delta_ratio=0.0, max_deltas=2,
        leftover_grace_seconds=3600))


def _next_compaction(store_dir: Path) -> None:
    compact_all(open_store(store_dir, writable=True), "seed-1",
                policy=CompactionPolicy(min_files=1, grace_seconds=3600, leftover_grace_seconds=0))


def _sweep_each_point(tmp_path: Path, child, after, expected_reads, make_base=_base) -> int:
    base = make_base(tmp_path)
    count_dir = tmp_path / "count"
    shutil.copytree(base, count_dir)
    assert _forked(lambda: child(count_dir), "count", 0, tmp_path / "count.log") == 0
    total = int((tmp_path / "count.log").read_text())
    # Each child passes several durability points (a file published, fsyncs, the index's commit); a writer of
    # a file too small for levels passes fewer than one that also publishes levels.
    assert total >= 5
    stopped_with_leftovers = 0
    for n in range(1, total + 1):
        work = tmp_path / f"stop-{n:03d}"
        shutil.copytree(base, work)
        assert _forked(lambda work=work: child(work), "exit", n, tmp_path / f"stop-{n:03d}.log") == 137, n
        stopped_with_leftovers += bool(_leftovers(work))
        after(work)
        assert _leftovers(work) == [], f"stopped at point {n}"
        assert _reads(work) == expected_reads, f"stopped at point {n}"
        shutil.rmtree(work)
    return stopped_with_leftovers


@pytest.mark.slow
@pytest.mark.parametrize("child", [_compact, _cluster], ids=["compaction", "clustering"])
def test_a_child_killed_at_any_point_leaves_nothing_after_the_next_compaction(tmp_path, child):
    expected = _reads(_base(tmp_path / "ref"))
    left = _sweep_each_point(tmp_path, child, _next_compaction, expected)
    assert left > 0  # some stops did leave files behind: the sweep had work to do


@pytest.mark.slow
def test_live_clustering_killed_at_any_point_leaves_nothing_after_the_next_compaction(tmp_path):
    """The sidecar's live clustering (bases, tiered deltas, a full step) killed at each durability point."""
    expected = _reads(_live_base(tmp_path / "ref"))
    assert expected["m1"][1][35] == -1.0
    left = _sweep_each_point(tmp_path, _cluster_live, _next_compaction, expected, make_base=_live_base)
    assert left > 0


@pytest.mark.slow
def test_a_writer_killed_at_any_point_leaves_nothing_after_the_next_writer(tmp_path):
    ref = _base(tmp_path / "ref")
    MetricWriter(open_store(ref, writable=True)).write_chunk("late", _chunk(4), [], request_hash="h")
    expected = _reads(ref)

    def write(store_dir: Path) -> None:
        MetricWriter(open_store(store_dir, writable=True)).write_chunk("late", _chunk(4), [], request_hash="h")

    def redeliver(store_dir: Path) -> None:  # the spool redelivers what was not acknowledged
        MetricWriter(open_store(store_dir, writable=True), leftover_grace_seconds=0).write_chunk(
            "late", _chunk(4), [], request_hash="h")

    assert _sweep_each_point(tmp_path, write, redeliver, expected) > 0


def test_a_reader_removes_nothing_and_the_grace_keeps_what_a_live_writer_may_register(tmp_path):
    store_dir = _base(tmp_path)
    run_dir = next((store_dir / "metrics").rglob("*.parquet")).parent
    orphan = run_dir / "metrics-0123456789abcdef.parquet"
    orphan.write_bytes(b"PAR1")
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)  # a pid that is no longer alive
    dead_tmp = run_dir / f".metrics-x.parquet.tmp-{pid}-0a1b2c3d"
    live_tmp = run_dir / f".metrics-y.parquet.tmp-{os.getppid()}-0a1b2c3d"
    for path in (dead_tmp, live_tmp):
        path.write_bytes(b"")
    StoreReader(open_store(store_dir)).rows("seed-1", "m0")
    assert orphan.exists() and dead_tmp.exists()
    store = open_store(store_dir, writable=True)
    assert sweep_run(store, "seed-1") == 0  # all younger than the grace (and the dead pid's temp than a minute)
    old = time.time() - 120
    os.utime(dead_tmp, (old, old))
    os.utime(live_tmp, (old, old))
    assert sweep_run(store, "seed-1") == 1  # a dead process's temporary file, past a minute
    assert not dead_tmp.exists() and live_tmp.exists() and orphan.exists()
    assert sweep_run(store, "seed-1", grace_seconds=0) == 2
    assert _leftovers(store_dir) == []
    assert np.array_equal(StoreReader(store).rows("seed-1", "m0").step, np.arange(40))
