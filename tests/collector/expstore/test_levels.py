"""Series levels: a long range reduced from level records equals M4 of the raw rows (with snapped edges)."""

from __future__ import annotations

import tempfile
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tau_collector.expstore import StoreReader, open_store
from tau_collector.expstore.format import levels as lv
from tau_collector.expstore.maintain.compaction import CompactionPolicy, compact_run, delete_retired
from tau_collector.expstore.read.level_series import choose_base, snapped_edges
from tau_collector.expstore.read.m4 import m4_indices
from tau_collector.expstore.write.writer import MetricWriter, RunColumns
from tau_collector.reads import WouldBlock, no_blocking

RUN, METRIC = "r", "m"
SMALL_BASES = (2, 4, 8, 16, 32)  # levels a few dozen points can exercise


def columns(step, value, wall=None, wall_valid=None, *, names=(METRIC,), metric=None) -> RunColumns:
    step = np.asarray(step, dtype=np.int64)
    n = step.size
    return RunColumns(
        project="p", experiment_id="e", run_group_id="g", run_id=RUN, names=list(names),
        metric=np.zeros(n, np.int64) if metric is None else np.asarray(metric, np.int64), step=step,
        wall_time=step * 1000 if wall is None else np.asarray(wall, np.int64),
        value=np.asarray(value, dtype=np.float64), tags=["{}"] * n, tag_sets=[{}], source="history",
        wall_valid=None if wall_valid is None else np.asarray(wall_valid, bool), first_wall_ns=0,
    )


@contextmanager
def small_levels():
    # Files store levels from the second base on (as from 1,024 steps by default): a read at the finest base
    # summarizes the file's points; and every file, however small, gets its levels file.
    with mock.patch.object(lv, "BASES", SMALL_BASES), mock.patch.object(lv, "WRITTEN_FROM", SMALL_BASES[1]), \
            mock.patch.object(lv, "MIN_POINTS_PER_METRIC", 1):
        yield


def readers(store, min_points=0):
    """(a reader that uses levels from ``min_points`` points on, a reader that always merges the rows)."""
    fast, plain = StoreReader(store), StoreReader(store)
    fast.levels.min_points = min_points
    plain.levels.min_points = 2**62
    return fast, plain


def expected(plain: StoreReader, start, end, max_points, finite_only, snapped: bool):
    """M4 of the merged raw rows, with the inner edges snapped to the chosen level when ``snapped``."""
    rows = plain.rows(RUN, METRIC, start, end)
    step, wall, value = rows.step, rows.wall_time, rows.value
    if finite_only:
        keep = np.isfinite(value)
        step, wall, value = step[keep], wall[keep], value[keep]
    if step.size == 0:
        return step, wall, value, 0
    edges = None
    if snapped and max_points > 1:
        base = choose_base(lv.BASES, int(step[0]), int(step[-1]), max_points)
        assert base is not None
        edges = snapped_edges(int(step[0]), int(step[-1]), max_points, base)
    idx = m4_indices(step, value, max_points, edges=edges)
    return step[idx], wall[idx], value[idx], int(step.size)


def assert_same(got, want):
    step, wall, value, n = want
    assert got.step.tolist() == step.tolist()
    assert got.wall_time.tolist() == wall.tolist()
    assert np.array_equal(got.value, value, equal_nan=True)
    assert got.source_points == n
    assert got.partial == (step.size < n)
    assert got.non_finite.tolist() == (~np.isfinite(value)).tolist()


values = st.one_of(st.sampled_from([0.0, 1.0, -1.0, 2.5, float("nan"), float("inf"), float("-inf")]),
                   st.floats(-5, 5, allow_nan=False, width=16))


@st.composite
def chunk(draw, first_step: int):
    span = draw(st.integers(1, 120))
    n = draw(st.integers(1, 160))
    steps = draw(st.lists(st.integers(first_step, first_step + span - 1), min_size=n, max_size=n))
    walls = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))  # ties: the later row wins
    valid = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    vals = draw(st.lists(values, min_size=n, max_size=n))
    return steps, walls, valid, vals, first_step + span + draw(st.integers(0, 40))  # a gap before the next


@st.composite
def series_store(draw):
    chunks, at = [], draw(st.integers(-200, 200))
    for _ in range(draw(st.integers(1, 4))):
        c = draw(chunk(at))
        chunks.append(c[:4])
        at = c[4]
    overlap = draw(st.booleans()) and len(chunks) > 1 and draw(st.integers(0, 3)) == 0
    if overlap:  # a re-sent step in a later file: merged with the file it overlaps, last wins between them
        chunks.append(([chunks[0][0][0]], [draw(st.sampled_from([0, 9]))], [True], [7.0]))
    return chunks, overlap


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=series_store(), query=st.data())
def test_levels_answer_equals_m4_of_the_raw_rows(data, query):
    chunks, _ = data
    with small_levels(), tempfile.TemporaryDirectory() as tmp:
        store = open_store(Path(tmp) / "s", create=True)
        writer = MetricWriter(store)
        for i, (steps, walls, valid, vals) in enumerate(chunks):
            writer.write_columns(f"k{i}", [columns(steps, vals, walls, valid)], request_hash="h")
        fast, plain = readers(store)
        lo = min(min(c[0]) for c in chunks)
        hi = max(max(c[0]) for c in chunks)
        for _ in range(6):
            start = query.draw(st.one_of(st.none(), st.integers(lo - 5, hi + 5)))
            end = query.draw(st.one_of(st.none(), st.integers(lo - 5, hi + 5)))
            max_points = query.draw(st.integers(1, 48))
            finite_only = query.draw(st.booleans())
            used = fast.levels.series(RUN, METRIC, start, end, max_points, finite_only=finite_only) is not None
            want_plain = expected(plain, start, end, max_points, finite_only, snapped=False)
            if want_plain[3] > max_points and max_points > 1:
                rows = want_plain[3]
                # Levels apply whenever a level fits a column (and so the test exercises them).
                step = plain.rows(RUN, METRIC, start, end).step
                if finite_only:
                    fin = np.isfinite(plain.rows(RUN, METRIC, start, end).value)
                    step = step[fin]
                assert used == (choose_base(lv.BASES, int(step[0]), int(step[-1]), max_points) is not None), rows
            got = fast.series(RUN, METRIC, start, end, max_points, finite_only=finite_only)
            assert_same(got, expected(plain, start, end, max_points, finite_only, snapped=used))
            assert_same(plain.series(RUN, METRIC, start, end, max_points, finite_only=finite_only), want_plain)
            limit = query.draw(st.integers(0, 5))
            count, rows = fast.non_finite(RUN, METRIC, start, end, limit=limit)
            want_count, want_rows = plain.non_finite(RUN, METRIC, start, end, limit=limit)
            assert count == want_count
            assert rows.step.tolist() == want_rows.step.tolist()
            assert rows.wall_time.tolist() == want_rows.wall_time.tolist()
            assert np.array_equal(rows.value, want_rows.value, equal_nan=True)


def _write_long(store, n: int, files: int, rng) -> tuple[np.ndarray, np.ndarray]:
    writer = MetricWriter(store)
    steps = np.arange(n, dtype=np.int64) * 3  # every third step: a gap between any two points
    value = rng.normal(size=n)
    value[rng.integers(0, n, 20)] = np.nan
    value[rng.integers(0, n, 5)] = np.inf
    for i, part in enumerate(np.array_split(np.arange(n), files)):
        writer.write_columns(f"k{i}", [columns(steps[part], value[part])], request_hash="h")
    return steps, value


def test_a_full_range_read_from_default_levels_equals_m4_of_the_rows(tmp_path):
    store = open_store(tmp_path / "s", create=True)
    steps, _ = _write_long(store, 400_000, 4, np.random.default_rng(3))
    fast, plain = readers(store, min_points=100_000)
    for finite_only in (True, False):
        assert fast.levels.series(RUN, METRIC, None, None, 2000, finite_only=finite_only) is not None
        got = fast.series(RUN, METRIC, max_points=2000, finite_only=finite_only)
        assert_same(got, expected(plain, None, None, 2000, finite_only, snapped=True))
    assert got.source_points == steps.size and got.non_finite.any()


def test_non_finite_observations_of_a_long_range_are_counted_from_levels(tmp_path):
    store = open_store(tmp_path / "s", create=True)
    _write_long(store, 90_000, 3, np.random.default_rng(9))
    fast, plain = readers(store, min_points=1000)
    for start, end, limit in ((None, None, 1000), (None, None, 3), (40_000, 200_000, 7), (1, 2, 5)):
        assert (fast.levels.non_finite(RUN, METRIC, start, end, limit) is not None) == (end != 2)  # short: merged
        count, rows = fast.non_finite(RUN, METRIC, start, end, limit=limit)
        want_count, want_rows = plain.non_finite(RUN, METRIC, start, end, limit=limit)
        assert count == want_count and (count > 0 or end == 2)
        assert rows.step.tolist() == want_rows.step.tolist()
        assert rows.wall_time.tolist() == want_rows.wall_time.tolist()
        assert np.array_equal(rows.value, want_rows.value, equal_nan=True)


def test_a_spike_is_kept_at_every_zoom(tmp_path):
    store = open_store(tmp_path / "s", create=True)
    n = 300_000
    value = np.zeros(n)
    spikes = [17, 123_457, 299_998]
    value[spikes] = [9.0, -9.0, 9.0]
    writer = MetricWriter(store)
    for i, part in enumerate(np.array_split(np.arange(n), 3)):
        writer.write_columns(f"k{i}", [columns(part, value[part])], request_hash="h")
    fast, plain = readers(store, min_points=1000)
    for start, end, max_points in ((None, None, 8), (None, None, 2000), (0, 200_000, 400), (100_000, None, 1000)):
        assert fast.levels.series(RUN, METRIC, start, end, max_points, finite_only=False) is not None
        got = fast.series(RUN, METRIC, start, end, max_points)
        assert_same(got, expected(plain, start, end, max_points, False, snapped=True))
        inside = [s for s in spikes if (start or 0) <= s <= (n if end is None else end)]
        assert set(inside) <= set(got.step.tolist())


def test_where_the_edges_are_multiples_of_the_level_the_answer_is_the_plain_reduction(tmp_path):
    store = open_store(tmp_path / "s", create=True)
    rng = np.random.default_rng(5)
    n, max_points = 64 * 1024, 64  # 16 columns of 4096 steps: every edge a multiple of the chosen level
    value = rng.normal(size=n)
    writer = MetricWriter(store)
    for i, part in enumerate(np.array_split(np.arange(n), 2)):
        writer.write_columns(f"k{i}", [columns(part, value[part])], request_hash="h")
    fast, plain = readers(store, min_points=1000)
    assert fast.levels.series(RUN, METRIC, None, None, max_points, finite_only=False) is not None
    assert_same(fast.series(RUN, METRIC, max_points=max_points),
                 expected(plain, None, None, max_points, False, snapped=False))


def test_files_without_levels_are_summarized_from_their_rows(tmp_path):
    """A store written before levels (or a levels file lost, or not the file's own) answers the same."""
    store = open_store(tmp_path / "s", create=True)
    _write_long(store, 60_000, 3, np.random.default_rng(7))
    paths = sorted((tmp_path / "s" / lv.LEVELS_DIR).rglob("*.npz"))
    assert len(paths) == 3
    fast, plain = readers(store, min_points=1000)
    want = expected(plain, 100, None, 400, False, snapped=True)
    assert_same(fast.series(RUN, METRIC, 100, None, 400), want)
    paths[0].unlink()  # lost
    paths[1].write_bytes(b"not a levels file")  # damaged
    paths[2].write_bytes(paths[2].read_bytes().replace(b"metrics-", b"metrics+"))  # another file's
    fresh, _ = readers(store, min_points=1000)
    assert fresh.levels.series(RUN, METRIC, 100, None, 400, finite_only=False) is not None
    assert_same(fresh.series(RUN, METRIC, 100, None, 400), want)


def test_compaction_writes_the_merged_files_levels_and_retires_the_old_ones(tmp_path):
    store = open_store(tmp_path / "s", create=True)
    writer = MetricWriter(store)
    rng = np.random.default_rng(11)
    for i in range(5):
        part = np.arange(i * 2000, (i + 1) * 2000)
        value = rng.normal(size=part.size)
        value[::97] = np.nan
        wall = part * 1000
        writer.write_columns(f"k{i}", [columns(part, value, wall, wall_valid=part % 5 != 0)], request_hash="h")
    writer.write_columns("dup", [columns([4000, 4001], [5.0, -5.0])], request_hash="h")  # re-sent steps, later file
    _, plain = readers(store, min_points=1000)
    want = {fo: expected(plain, None, None, 40, fo, snapped=True) for fo in (False, True)}
    result = compact_run(store, RUN, force=True, policy=CompactionPolicy(grace_seconds=0))
    assert result is not None
    (new_path,) = store.connection().execute("SELECT path FROM metric_files").fetchone()
    made = tmp_path / "s" / lv.levels_path(new_path)
    assert made.exists()
    for _ in range(2):  # from the compacted file's levels, then from its rows
        fresh, _ = readers(store, min_points=1000)
        for fo in (False, True):
            assert fresh.levels.series(RUN, METRIC, None, None, 40, finite_only=fo) is not None
            assert_same(fresh.series(RUN, METRIC, max_points=40, finite_only=fo), want[fo])
        made.unlink(missing_ok=True)
    delete_retired(store, grace_seconds=0)
    assert [p.name for p in (tmp_path / "s" / lv.LEVELS_DIR).rglob("*.npz")] == []


def test_a_resumed_run_merges_only_the_files_that_overlap(tmp_path):
    """A run resumed from a checkpoint writes its steps again: last wins, the other files stay levels."""
    store = open_store(tmp_path / "s", create=True)
    writer = MetricWriter(store)
    for i in range(3):
        part = np.arange(i * 30_000, (i + 1) * 30_000)
        writer.write_columns(f"k{i}", [columns(part, np.sin(part / 100.0))], request_hash="h")
    resumed = np.arange(50_000, 120_000)
    writer.write_columns("resumed", [columns(resumed, np.cos(resumed / 50.0), resumed * 1000 + 5)],
                         request_hash="h")
    fast, plain = readers(store, min_points=1000)
    for finite_only in (False, True):
        assert fast.levels.series(RUN, METRIC, None, None, 400, finite_only=finite_only) is not None
        assert_same(fast.series(RUN, METRIC, max_points=400, finite_only=finite_only),
                    expected(plain, None, None, 400, finite_only, snapped=True))
    cluster = [k for k in fast.file_slices.cache._items if k[0] == "level-cluster"]
    assert [len(k[2]) for k in cluster] == [3]  # the resumed file and the two it overlaps; not the first


def test_a_wide_file_keeps_each_metrics_levels_apart(tmp_path):
    store = open_store(tmp_path / "s", create=True)
    n = 20_000
    step = np.tile(np.arange(n), 3)
    metric = np.repeat([0, 1, 2], n)
    value = np.concatenate([np.sin(np.arange(n)), np.cos(np.arange(n)), np.arange(n, dtype=float)])
    MetricWriter(store).write_columns("k", [columns(step, value, names=("c", METRIC, "a"), metric=metric)],
                                      request_hash="h")
    fast, plain = readers(store, min_points=1000)
    assert fast.levels.series(RUN, METRIC, None, None, 100, finite_only=False) is not None
    assert_same(fast.series(RUN, METRIC, max_points=100), expected(plain, None, None, 100, False, snapped=True))


def test_a_failing_levels_build_never_fails_the_write(tmp_path):
    store = open_store(tmp_path / "s", create=True)
    with mock.patch.object(lv, "file_levels", side_effect=MemoryError("boom")):
        MetricWriter(store).write_columns("k", [columns(np.arange(5000), np.arange(5000.0))], request_hash="h")
    assert not list((tmp_path / "s").rglob("*.npz"))
    fast, plain = readers(store, min_points=1000)
    assert_same(fast.series(RUN, METRIC, max_points=40), expected(plain, None, None, 40, False, snapped=True))


def test_inside_no_blocking_a_levels_read_blocks_until_its_levels_are_cached(tmp_path):
    store = open_store(tmp_path / "s", create=True)
    _write_long(store, 30_000, 3, np.random.default_rng(2))
    fast, _ = readers(store, min_points=1000)
    with no_blocking(), pytest.raises(WouldBlock):
        fast.series(RUN, METRIC, max_points=400)
    first = fast.series(RUN, METRIC, max_points=400)
    with no_blocking():
        again = fast.series(RUN, METRIC, max_points=400)
    assert again.step.tolist() == first.step.tolist()


def test_a_series_no_longer_than_the_threshold_opens_no_levels_file(tmp_path):
    """Its summary already says it is short: a wide run's files each list every metric's levels, and opening
    them all to learn that cost a cold read most of its time and memory. A longer one still uses them."""
    store = open_store(tmp_path / "s", create=True)
    writer = MetricWriter(store)
    for chunk in range(3):  # three files, each holding a short metric and a long one
        step = np.concatenate([chunk * 20_000 + np.arange(10) * 100, np.arange(chunk * 20_000, chunk * 20_000 + 20_000)])
        metric = np.repeat([0, 1], [10, 20_000])
        writer.write_columns(f"k{chunk}", [columns(step, step * 0.5, names=("short", METRIC), metric=metric)],
                             request_hash="h")
    fast, plain = readers(store, min_points=1000)
    with mock.patch.object(lv, "read_levels", wraps=lv.read_levels) as opened:
        answer = fast.series(RUN, "short", max_points=5)
        assert opened.call_count == 0
        assert fast.non_finite(RUN, "short", limit=3)[0] == 0 and opened.call_count == 0
        want = plain.series(RUN, "short", max_points=5)
        assert (answer.step.tolist(), answer.value.tolist(), answer.source_points) == (
            want.step.tolist(), want.value.tolist(), 30)
        assert fast.levels.series(RUN, METRIC, None, None, 100, finite_only=False) is not None
        assert opened.call_count == 3
