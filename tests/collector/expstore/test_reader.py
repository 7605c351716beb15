"""Read-path details: file skipping by step range, bounded caches, consistent snapshots."""

from __future__ import annotations

import numpy as np

from tau_collector.expstore import StoreReader

from .events import event, new_store


def test_a_tail_request_never_opens_older_files(tmp_path):
    store, writer = new_store(tmp_path)
    for c in range(5):
        writer.write_chunk(f"c{c}", [event(c * 100 + i, float(i)) for i in range(100)], [], request_hash="h")
    # Remove the oldest files from disk: a reader that opened them would fail.
    older = store.connection().execute("SELECT path FROM metric_files WHERE max_step < 400").fetchall()
    for (path,) in older:
        (store.root / path).unlink()
    series = StoreReader(store).series("seed-1", "train/loss", start_step=450, max_points=8000)
    assert series.step.tolist() == list(range(450, 500))
    assert series.source_points == 50 and not series.partial


def test_a_tiny_cache_still_reads_correctly(tmp_path):
    store, writer = new_store(tmp_path)
    for c in range(4):
        writer.write_chunk(f"c{c}", [event(c * 10 + i, float(c * 10 + i)) for i in range(10)], [],
                           request_hash="h")
    reader = StoreReader(store, cache_bytes=64)
    for _ in range(2):
        rows = reader.rows("seed-1", "train/loss")
        assert np.array_equal(rows.step, np.arange(40))
        assert np.array_equal(rows.value, np.arange(40, dtype=np.float64))


def test_overlapping_files_merge_in_step_order(tmp_path):
    store, writer = new_store(tmp_path)
    writer.write_chunk("even", [event(s, 0.0) for s in range(0, 20, 2)], [], request_hash="h")
    writer.write_chunk("odd", [event(s, 1.0) for s in range(1, 20, 2)], [], request_hash="h")
    rows = StoreReader(store).rows("seed-1", "train/loss")
    assert rows.step.tolist() == list(range(20))
    assert rows.value.tolist() == [float(s % 2) for s in range(20)]


def test_rows_are_copies_the_caller_may_modify(tmp_path):
    store, writer = new_store(tmp_path)
    writer.write_chunk("k", [event(s, 1.0) for s in range(5)], [], request_hash="h")
    reader = StoreReader(store)
    rows = reader.rows("seed-1", "train/loss")
    rows.value[:] = 99.0
    assert reader.rows("seed-1", "train/loss").value.tolist() == [1.0] * 5


def test_series_of_a_sub_range_reduces_only_that_range(tmp_path):
    store, writer = new_store(tmp_path)
    writer.write_chunk("k", [event(s, float(s % 7)) for s in range(1000)], [], request_hash="h")
    series = StoreReader(store).series("seed-1", "train/loss", 100, 299, max_points=20)
    assert series.step[0] == 100 and series.step[-1] == 299
    assert series.source_points == 200 and series.returned_points <= 20


def _same(a, b) -> None:
    assert np.array_equal(a.step, b.step)
    assert np.array_equal(a.value, b.value, equal_nan=True)
    assert np.array_equal(a.wall_time, b.wall_time)


def test_a_reader_following_a_live_run_answers_like_a_fresh_reader(tmp_path):
    from tau_collector.expstore.compaction import compact_run

    from .events import non_finite

    store, writer = new_store(tmp_path)
    live = StoreReader(store)
    rng = np.random.default_rng(5)
    step = 0
    for c in range(12):
        n = int(rng.integers(50, 400))
        events = [event(step + i, float(rng.normal())) for i in range(n)]
        nf = [non_finite(step + n, float("nan"))] if c % 3 == 0 else []
        if c == 7:  # an overlapping redelivery-like chunk: forces the rebuild path
            events.append(event(5, 123.0, wall_ns=events[-1].wall_time + 1))
        writer.write_chunk(f"c{c}", events, nf, request_hash="h")
        step += n + 1
        if c == 9:
            compact_run(store, "seed-1", force=True)
        for max_points in (40, 100_000):
            _same(live.series("seed-1", "train/loss", max_points=max_points),
                  StoreReader(store).series("seed-1", "train/loss", max_points=max_points))
        _same(live.rows("seed-1", "train/loss"), StoreReader(store).rows("seed-1", "train/loss"))
