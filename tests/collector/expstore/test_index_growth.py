"""The index does not grow with the store's age: a simulated year of small chunks leaves about the rows a fresh
store of the same data has (chunk keys pruned past the spool's replay horizon, retired files' rows gone)."""

from __future__ import annotations

import os
import sqlite3

import numpy as np
import pytest

from tau_collector.expstore import StoreReader, open_store
from tau_collector.expstore.maintain.compaction import CompactionPolicy
from tau_collector.expstore.write.idempotency import STREAM_WINDOW
from tau_collector.expstore.write.writer import MetricWriter, RunColumns

TABLES = ("idempotency_keys", "idempotency_stream_keys", "idempotency_streams", "metric_files",
          "metric_file_metrics", "metric_summary_files", "metric_file_retirements", "metric_summaries")
METRICS = ["loss", "lr", "grad_norm"]


@pytest.fixture(autouse=True)
def _no_sync(monkeypatch):
    """Compressed time: thousands of chunks without waiting for the disk (durability is not what is tested)."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)


def _open(path):
    store = open_store(path, create=True)
    store.connection().execute("PRAGMA synchronous = OFF")
    return store


def _columns(run: str, first_step: int, steps: int) -> RunColumns:
    n = steps * len(METRICS)
    step = np.repeat(np.arange(first_step, first_step + steps, dtype=np.int64), len(METRICS))
    return RunColumns(
        project="proj", experiment_id="year", run_group_id="g", run_id=run, names=list(METRICS),
        metric=np.tile(np.arange(len(METRICS), dtype=np.int32), steps), step=step,
        wall_time=1_760_000_000_000_000 + step * 1_000_000, value=step.astype(np.float64) * 0.5,
        tags=["{}"] * n, tag_sets=[{}], source="history")


def _counts(store) -> dict[str, int]:
    conn = store.connection()
    return {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in TABLES}


def _pages_used(store) -> int:
    conn = sqlite3.connect(store.index_path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return conn.execute("PRAGMA page_count").fetchone()[0] - conn.execute("PRAGMA freelist_count").fetchone()[0]
    finally:
        conn.close()


def _simulate(tmp_path, name: str, *, runs: int, chunks: int, steps: int) -> tuple:
    """``runs`` jobs one after another, each a spool stream delivering ``chunks`` chunks of ``steps`` steps,
    compacted as the collector does (grace 0: compressed time)."""
    store = _open(tmp_path / name)
    writer = MetricWriter(store, compaction=CompactionPolicy(min_files=8, grace_seconds=0.0))
    for r in range(runs):
        for c in range(chunks):
            writer.write_columns(f"chunk-{r}-{c}", [_columns(f"run-{r}", c * steps, steps)],
                                 request_hash=f"h-{r}-{c}", stream=(f"spool-{r}", c + 1))
    return store, writer


def _fresh(tmp_path, *, runs: int, chunks: int, steps: int):
    """The same points, one chunk per job."""
    store = _open(tmp_path / "fresh")
    writer = MetricWriter(store)
    for r in range(runs):
        writer.write_columns(f"all-{r}", [_columns(f"run-{r}", 0, chunks * steps)], request_hash=f"h-{r}",
                             stream=(f"spool-{r}", 1))
    return store


def test_a_simulated_year_leaves_the_index_of_a_fresh_store(tmp_path):
    runs, chunks, steps = 3, 250, 2
    aged, _ = _simulate(tmp_path, "aged", runs=runs, chunks=chunks, steps=steps)
    fresh = _fresh(tmp_path, runs=runs, chunks=chunks, steps=steps)
    got, want = _counts(aged), _counts(fresh)
    # Per stream: the keys within the replay window of its newest sequence (the spool replays only that one).
    assert got["idempotency_keys"] <= want["idempotency_keys"] + runs * STREAM_WINDOW
    assert got["idempotency_stream_keys"] == got["idempotency_keys"]
    assert got["idempotency_streams"] == want["idempotency_streams"] == runs
    # Per run: the merged file and at most the policy's few small files not yet merged, and nothing of the
    # retired files once their grace has passed.
    for table in ("metric_files", "metric_file_metrics", "metric_summary_files"):
        assert got[table] <= want[table] + runs * 9, table
    assert got["metric_file_retirements"] <= runs * 9
    assert got["metric_summaries"] == want["metric_summaries"]
    # Bytes: within a small constant of the fresh index (pages in use; the aged file's free pages are reused).
    assert _pages_used(aged) <= _pages_used(fresh) + 40
    reader = StoreReader(aged)
    assert reader.rows("run-2", "loss").step.tolist() == list(range(chunks * steps))


def test_index_rows_stop_growing_as_chunks_go_on(tmp_path):
    """Twice the chunks, the same index: what it holds is bounded by the streams and runs, not by the age."""
    short, _ = _simulate(tmp_path, "short", runs=1, chunks=150, steps=1)
    long, _ = _simulate(tmp_path, "long", runs=1, chunks=300, steps=1)
    a, b = _counts(short), _counts(long)
    assert b["idempotency_keys"] == a["idempotency_keys"] == STREAM_WINDOW + 1
    for table in ("metric_files", "metric_summary_files", "metric_file_metrics", "metric_file_retirements"):
        assert b[table] <= a[table] + 8, table


def test_the_newest_chunk_of_a_stream_is_still_a_no_op_when_replayed(tmp_path):
    _, writer = _simulate(tmp_path, "s", runs=1, chunks=STREAM_WINDOW + 20, steps=1)
    newest = STREAM_WINDOW + 19
    again = writer.write_columns(f"chunk-0-{newest}", [_columns("run-0", newest, 1)], request_hash=f"h-0-{newest}",
                                 stream=("spool-0", newest + 1))
    assert again.reused
    assert not writer.recorded("chunk-0-0")  # past the horizon: pruned
    assert writer.recorded(f"chunk-0-{newest - STREAM_WINDOW}")


def test_a_spool_started_again_in_the_same_directory_is_written_not_dropped(tmp_path):
    """Below the horizon and unknown: a new spool (the old one only ever replayed its newest chunk); its
    points are new data, and its own newest chunk is then the one kept for replay."""
    store, writer = _simulate(tmp_path, "s", runs=1, chunks=STREAM_WINDOW + 20, steps=1)
    result = writer.write_columns("restarted-1", [_columns("run-0", 10_000, 1)], request_hash="r1",
                                  stream=("spool-0", 1))
    assert not result.reused
    assert StoreReader(store).rows("run-0", "loss", 10_000).step.tolist() == [10_000]
    assert writer.write_columns("restarted-1", [_columns("run-0", 10_000, 1)], request_hash="r1",
                                stream=("spool-0", 1)).reused
    # The old spool's keys far above the new newest sequence are gone with the old spool.
    assert writer.recorded("restarted-1")
    assert not writer.recorded(f"chunk-0-{STREAM_WINDOW + 19}")


def test_keys_without_a_stream_are_kept(tmp_path):
    store = _open(tmp_path / "s")
    writer = MetricWriter(store)
    for c in range(STREAM_WINDOW + 5):
        writer.write_columns(f"import-{c}", [_columns("run-0", c, 1)], request_hash="h")
    assert writer.recorded("import-0")


def _file_rows(store) -> dict[str, set[str]]:
    conn = store.connection()
    return {t: {f for (f,) in conn.execute(f"SELECT file_id FROM {t}")}
            for t in ("metric_files", "metric_file_retirements", "metric_summary_files", "metric_file_metrics")}


def test_an_old_stores_orphaned_file_rows_are_swept_by_the_next_writer_not_by_a_reader(tmp_path):
    """A store an older compaction ran on: its retired files deleted with their retirement rows but not their
    ``metric_summary_files`` (nor, older still, ``metric_file_metrics``) rows -- one per file ever compacted away."""
    root = tmp_path / "old"
    store, writer = _simulate(tmp_path, "old", runs=2, chunks=40, steps=1)
    writer.close()
    with store.write_transaction() as tx:  # what the older code left: rows for files neither registered nor retired
        tx.executemany("INSERT INTO metric_summary_files(file_id, run_id, summarized_at) VALUES (?, 'run-0', 'x')",
                       [(f"gone-{i}",) for i in range(500)])
        tx.executemany("INSERT INTO metric_file_metrics(file_id, run_id, first_metric, last_metric) "
                       "VALUES (?, 'run-1', 'grad_norm', 'lr')", [(f"gone-{i}",) for i in range(300)])
        tx.execute("DELETE FROM schema_meta WHERE key = 'orphaned_file_rows_swept'")  # an older store has no mark
    before = _file_rows(store)
    live = before["metric_files"] | before["metric_file_retirements"]
    assert len(before["metric_summary_files"] - live) == 500
    assert len(before["metric_file_metrics"] - live) == 300
    store.close()

    reader_store = open_store(root)  # a reader reads past them and changes nothing
    assert StoreReader(reader_store).rows("run-0", "loss").step.tolist() == list(range(40))
    reader_store.close()
    raw = sqlite3.connect(root / "index.sqlite")
    try:
        assert raw.execute("SELECT COUNT(*) FROM metric_summary_files").fetchone()[0] == \
            len(before["metric_summary_files"])
    finally:
        raw.close()

    writer_store = open_store(root, create=True)
    after = _file_rows(writer_store)
    assert after["metric_summary_files"] == before["metric_summary_files"] & live
    assert after["metric_file_metrics"] == before["metric_file_metrics"] & live
    assert after["metric_files"] == before["metric_files"]
    assert StoreReader(writer_store).rows("run-0", "loss").step.tolist() == list(range(40))
    # ... and stays bounded as the store goes on: every per-file row names a file the store has.
    more = MetricWriter(writer_store, compaction=CompactionPolicy(min_files=8, grace_seconds=0.0))
    for c in range(40, 120):
        more.write_columns(f"chunk-0-{c}", [_columns("run-0", c, 1)], request_hash=f"h-0-{c}", stream=("spool-0", c + 1))
    rows = _file_rows(writer_store)
    live = rows["metric_files"] | rows["metric_file_retirements"]
    assert rows["metric_summary_files"] <= live and rows["metric_file_metrics"] <= live
    assert len(rows["metric_summary_files"]) <= len(after["metric_summary_files"]) + 9


def test_a_finished_jobs_stream_keeps_only_its_newest_key_once_idle(tmp_path):
    """A finished job's spool is gone; its stream's window of keys would stay for good, a few KB a job. Idle past
    the horizon, only the newest sequence's key stays: still a no-op when replayed, the stream still known."""
    store, _ = _simulate(tmp_path, "s", runs=3, chunks=STREAM_WINDOW + 10, steps=1)
    newest = STREAM_WINDOW + 9
    with store.write_transaction() as tx:  # runs 0 and 1 ended two days ago; run 2's spool is still delivering
        tx.execute("UPDATE idempotency_streams SET updated_at = '2000-01-01T00:00:00Z' "
                   "WHERE stream IN ('spool-0', 'spool-1')")
    later = MetricWriter(store)  # a writer's first delivery with a stream sweeps the idle streams
    later.write_columns("chunk-2-x", [_columns("run-2", 10_000, 1)], request_hash="x", stream=("spool-2", newest + 2))
    conn = store.connection()
    kept = dict(conn.execute("SELECT stream, COUNT(*) FROM idempotency_stream_keys GROUP BY stream"))
    assert kept["spool-0"] == kept["spool-1"] == 1
    assert kept["spool-2"] == STREAM_WINDOW + 1  # not idle: its window stays
    assert _counts(store)["idempotency_keys"] == 2 + STREAM_WINDOW + 1
    assert _counts(store)["idempotency_streams"] == 3
    assert not later.recorded(f"chunk-0-{newest - 1}")
    again = later.write_columns(f"chunk-0-{newest}", [_columns("run-0", newest, 1)], request_hash=f"h-0-{newest}",
                                stream=("spool-0", newest + 1))
    assert again.reused
    assert StoreReader(store).rows("run-0", "loss").step.tolist() == list(range(newest + 1))


def test_the_idle_horizon_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match="idle_stream_seconds"):
        MetricWriter(_open(tmp_path / "s"), idle_stream_seconds=0)
