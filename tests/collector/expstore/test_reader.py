"""Read-path details: file skipping by step range, bounded caches, consistent snapshots."""

from __future__ import annotations

import numpy as np
import pytest

from tau_collector.expstore import StoreReader

from .events import BASE_NS, event, new_store


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
    from tau_collector.expstore.maintain.compaction import compact_run

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


# -- what a Portal under many live panes relies on ------------------------------------------------

def test_index_reads_follow_another_connections_commits(tmp_path):
    store, writer = new_store(tmp_path)
    writer.write_chunk("a", [event(0, 1.0, run="run-a")], [], request_hash="h")
    reader = StoreReader(store.root)  # its own connections, as a Portal process has
    assert reader.run("run-b") is None and [r.run_id for r in reader.runs()] == ["run-a"]
    writer.write_chunk("b", [event(0, 2.0, run="run-b")], [], request_hash="h")
    assert reader.run("run-b").run_id == "run-b"
    assert sorted(r.run_id for r in reader.runs()) == ["run-a", "run-b"]
    assert reader.metric_summary("run-b", "train/loss").count == 1


def test_a_pinned_request_checks_for_changes_once_on_entry(tmp_path):
    store, writer = new_store(tmp_path)
    writer.write_chunk("a", [event(0, 1.0, run="run-a")], [], request_hash="h")
    reader = StoreReader(store.root)
    with reader.pinned():
        assert reader.run("run-b") is None
        writer.write_chunk("b", [event(0, 2.0, run="run-b")], [], request_hash="h")
        assert reader.run("run-b") is None  # one view for the whole request
    with reader.pinned():
        assert reader.run("run-b") is not None


def test_finite_only_series_leave_non_finite_points_out_before_counting_thinning_and_reduction(tmp_path):
    from .events import non_finite

    store, writer = new_store(tmp_path)
    bad = {3: float("nan"), 4: float("inf"), 10: float("-inf")}
    writer.write_chunk("k", [event(s, float(s)) for s in range(20) if s not in bad],
                       [non_finite(s, v) for s, v in bad.items()], request_hash="h")
    reader = StoreReader(store)
    everything = reader.series("seed-1", "train/loss")
    assert everything.source_points == 20 and int(everything.non_finite.sum()) == 3
    finite = reader.series("seed-1", "train/loss", finite_only=True)
    assert finite.step.tolist() == [s for s in range(20) if s not in bad] and finite.source_points == 17
    thinned = reader.series("seed-1", "train/loss", 2, None, step_interval=3, finite_only=True)
    assert thinned.step.tolist() == [2, 5, 8, 11, 14, 17, 19] and thinned.source_points == 15 and thinned.partial
    reduced = reader.series("seed-1", "train/loss", max_points=4, finite_only=True)
    assert np.isfinite(reduced.value).all() and reduced.source_points == 17 and reduced.partial


def test_non_finite_observations_are_counted_in_range_and_listed_up_to_a_limit(tmp_path):
    from .events import non_finite

    store, writer = new_store(tmp_path)
    writer.write_chunk("k", [event(s, 1.0) for s in range(0, 100, 2)],
                       [non_finite(s, float("nan") if s % 4 == 1 else float("-inf")) for s in range(1, 100, 2)],
                       request_hash="h")
    count, rows = StoreReader(store).non_finite("seed-1", "train/loss", 10, 30, limit=3)
    assert count == 10
    assert rows.step.tolist() == [11, 13, 15] and rows.value[0] == -np.inf and np.isnan(rows.value[1])


@pytest.mark.parametrize(("start", "end", "expected"), [
    (2**63, None, []), (2**70, 2**71, []), (None, -(2**63) - 1, []), (-(2**80), None, list(range(5))),
    (-(2**63), 2**63 - 1, list(range(5))),
])
def test_step_bounds_beyond_int64_select_as_the_range_end_would(tmp_path, start, end, expected):
    store, writer = new_store(tmp_path)
    writer.write_chunk("k", [event(s, 1.0) for s in range(5)], [], request_hash="h")
    reader = StoreReader(store)
    assert reader.series("seed-1", "train/loss", start, end).step.tolist() == expected
    assert reader.non_finite("seed-1", "train/loss", start, end)[0] == 0


def test_inside_no_blocking_a_cold_read_would_block_and_a_cached_tail_does_not(tmp_path):
    from tau_collector.reads import QUICK_POINTS, WouldBlock, no_blocking

    store, writer = new_store(tmp_path)
    n = QUICK_POINTS + 10_000
    for c in range(3):
        writer.write_chunk(f"c{c}", [event(s, float(s % 13)) for s in range(c * n, (c + 1) * n)], [],
                           request_hash="h")
    reader = StoreReader(store)
    with no_blocking(), pytest.raises(WouldBlock):
        reader.series("seed-1", "train/loss", 3 * n - 500, None)  # the last file is not read yet
    tail = reader.series("seed-1", "train/loss", 3 * n - 500, None)
    with no_blocking():
        again = reader.series("seed-1", "train/loss", 3 * n - 500, None)
    assert np.array_equal(tail.step, again.step) and again.source_points == 500
    reader.series("seed-1", "train/loss", max_points=8000)  # merged and indexed outside
    with no_blocking(), pytest.raises(WouldBlock):
        reader.series("seed-1", "train/loss", max_points=8000)  # reducing 180k points is not quick


def test_a_file_wanted_by_many_threads_at_once_is_read_once(tmp_path, monkeypatch):
    import threading
    import time

    import tau_collector.expstore.read.series_merge as series_merge

    store, writer = new_store(tmp_path)
    writer.write_chunk("k", [event(s, 1.0) for s in range(100)], [], request_hash="h")
    reads = []
    real = series_merge.pq.ParquetFile

    def slow_read(*args, **kw):
        reads.append(args[0])
        time.sleep(0.2)
        return real(*args, **kw)

    monkeypatch.setattr(series_merge.pq, "ParquetFile", slow_read)
    reader = StoreReader(store)
    threads = [threading.Thread(target=reader.series, args=("seed-1", "train/loss", 50, None)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(reads) == 1


def test_export_series_hands_out_every_stored_point_in_bounded_batches(tmp_path):
    store, writer = new_store(tmp_path)
    writer.write_chunk("even", [event(s, float(s)) for s in range(0, 40, 2)], [], request_hash="h")
    writer.write_chunk("odd", [event(s, float(s)) for s in range(1, 40, 2)], [], request_hash="h")  # overlaps
    writer.write_chunk("again", [event(10, -1.0, wall_ns=BASE_NS + 10**15)], [], request_hash="h")  # later wins
    writer.write_chunk("tail", [event(s, float(s)) for s in range(40, 50)], [], request_hash="h")
    reader = StoreReader(store)
    batches = list(reader.export_series("seed-1", "train/loss", 5, 44, batch_rows=7))
    assert all(0 < len(b) <= 7 for b in batches)
    step = np.concatenate([b.step for b in batches])
    value = np.concatenate([b.value for b in batches])
    assert step.tolist() == list(range(5, 45))
    assert value.tolist() == reader.rows("seed-1", "train/loss", 5, 44).value.tolist()
    assert value[step == 10].tolist() == [-1.0]
    with pytest.raises(ValueError, match="batch_rows"):
        reader.export_series("seed-1", "train/loss", batch_rows=0)
