"""metric_summaries follow TauGrid's rules: per file, then merged across files (TAUGRID-REFERENCE §4)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tau_collector.expstore import StoreReader
from tau_collector.expstore.write.summaries import (
    SUMMARY_COLUMNS,
    merge_summaries,
    summarize_metric,
    summarize_sorted,
    upsert_summaries,
)
from tau_collector.reads import MetricSummaryRow

from .events import BASE_NS, event, new_store, non_finite

NAN, INF = math.nan, math.inf


def _summary(rows, *, file_id="f1", updated_at="2026-01-01T00:00:00Z"):
    steps = np.array([r[0] for r in rows], dtype=np.int64)
    walls = np.array([r[1] for r in rows], dtype=np.int64)
    values = np.array([r[2] for r in rows], dtype=np.float64)
    return summarize_metric(run_id="r", metric_name="m", project="p", run_group_id="g", steps=steps,
                            wall_times=walls, values=values, file_id=file_id, updated_at=updated_at)


# (case, rows (step, wall_us, value), expected fields)
CASES = [
    ("finite rows", [(1, 10, 3.0), (2, 20, 1.0), (3, 30, 2.0)],
     dict(count=3, finite_count=3, non_finite_count=0, min_step=1, max_step=3, latest_step=3,
          latest_wall_time=30, latest_value=2.0, min_value=1.0, max_value=3.0)),
    ("non-finite rows widen only counts and the step range", [(1, 10, 3.0), (9, 90, NAN), (0, 5, -INF)],
     dict(count=3, finite_count=1, non_finite_count=2, min_step=0, max_step=9, latest_step=1,
          latest_wall_time=10, latest_value=3.0, min_value=3.0, max_value=3.0)),
    ("only non-finite rows keep values NULL", [(4, 10, INF), (5, 20, NAN)],
     dict(count=2, finite_count=0, non_finite_count=2, min_step=4, max_step=5, latest_step=None,
          latest_wall_time=None, latest_value=None, min_value=None, max_value=None, latest_file_id=None)),
    ("latest by step before wall_time", [(5, 10, 1.0), (4, 99, 2.0)],
     dict(latest_step=5, latest_value=1.0)),
    ("latest by wall_time on equal steps", [(5, 20, 1.0), (5, 10, 2.0)],
     dict(latest_step=5, latest_wall_time=20, latest_value=1.0)),
    ("latest by row order on equal step and wall_time", [(5, 10, 1.0), (5, 10, 2.0)],
     dict(latest_value=2.0)),
]


@pytest.mark.parametrize(("rows", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_file_summary(rows, expected):
    s = _summary(rows)
    for key, value in expected.items():
        assert getattr(s, key) == value, key


MERGES = [
    ("counts add and ranges widen", [(1, 10, 5.0), (2, 20, NAN)], [(7, 70, -1.0), (0, 1, INF)],
     dict(count=4, finite_count=2, non_finite_count=2, min_step=0, max_step=7, min_value=-1.0, max_value=5.0,
          latest_step=7, latest_value=-1.0, latest_file_id="f2")),
    ("an older second file keeps the first latest", [(9, 90, 1.0)], [(3, 30, 2.0)],
     dict(latest_step=9, latest_value=1.0, latest_file_id="f1")),
    ("equal step and wall_time: the later file wins", [(9, 90, 1.0)], [(9, 90, 2.0)],
     dict(latest_value=2.0, latest_file_id="f2")),
    ("a non-finite second file keeps the latest", [(1, 10, 1.0)], [(50, 500, NAN)],
     dict(latest_step=1, latest_value=1.0, max_step=50, finite_count=1, non_finite_count=1)),
    ("a finite file after only non-finite fills the values", [(1, 10, NAN)], [(0, 5, 4.0)],
     dict(latest_step=0, latest_value=4.0, min_value=4.0, max_value=4.0, finite_count=1, count=2)),
]


@pytest.mark.parametrize(("first", "second", "expected"), [c[1:] for c in MERGES], ids=[c[0] for c in MERGES])
def test_merge(first, second, expected):
    merged = merge_summaries(
        _summary(first, file_id="f1", updated_at="2026-01-01T00:00:00Z"),
        _summary(second, file_id="f2", updated_at="2026-01-01T00:00:01Z"),
    )
    for key, value in expected.items():
        assert getattr(merged, key) == value, key


def test_store_summary_merges_across_files_and_counts_each_file_once(tmp_path):
    store, writer = new_store(tmp_path)
    writer.write_chunk("a", [event(0, 3.0), event(1, 2.0)], [non_finite(2, NAN)], request_hash="h")
    writer.write_chunk("b", [event(3, 5.0), event(4, 1.5)], [], request_hash="h")
    writer.write_chunk("b", [event(3, 5.0), event(4, 1.5)], [], request_hash="h")  # redelivery
    (s,) = StoreReader(store).metric_summaries("seed-1")
    assert (s.count, s.finite_count, s.non_finite_count) == (5, 4, 1)
    assert (s.min_step, s.max_step, s.min_value, s.max_value) == (0, 4, 1.5, 5.0)
    assert (s.latest_step, s.latest_value, s.latest_wall_time) == (4, 1.5, (BASE_NS + 4_000_000) // 1000)
    assert store.connection().execute("SELECT COUNT(*) FROM metric_summary_files").fetchone()[0] == 2


def test_summaries_are_per_metric_and_name_sorted(tmp_path):
    store, writer = new_store(tmp_path)
    writer.write_chunk("a", [event(0, 1.0, metric="z"), event(0, 2.0, metric="a")], [], request_hash="h")
    assert [s.metric_name for s in StoreReader(store).metric_summaries("seed-1")] == ["a", "z"]
    assert StoreReader(store).metric_names("seed-1") == ["a", "z"]


_ROWS = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 6), st.integers(0, 3),
                           st.sampled_from([0.0, -1.5, 2.0, 7.25, NAN, INF, -INF])), max_size=25)


def _columnar(store, files):
    """Each file's rows summarized in columns and upserted, as the writer does."""
    with store.write_transaction() as tx:
        for file_id, updated_at, rows in files:
            rows = sorted(rows, key=lambda r: (r[0], r[1], r[2]))  # file order: metric, step, wall, arrival
            upsert_summaries(tx, summarize_sorted(
                run_id="r", names=["a", "b", "c", "d"], metric=np.array([r[0] for r in rows], dtype=np.int64),
                project="p", run_group_id="g", steps=np.array([r[1] for r in rows], dtype=np.int64),
                wall_times=np.array([r[2] for r in rows], dtype=np.int64),
                values=np.array([r[3] for r in rows], dtype=np.float64), file_id=file_id, updated_at=updated_at))
    return {row[1]: row for row in store.connection().execute(
        f"SELECT {SUMMARY_COLUMNS} FROM metric_summaries WHERE run_id = 'r'")}


def _reference(files):
    """The same files summarized one metric at a time and merged in Python."""
    out: dict[str, MetricSummaryRow] = {}
    for file_id, updated_at, rows in files:
        rows = sorted(rows, key=lambda r: (r[0], r[1], r[2]))
        for code in sorted({r[0] for r in rows}):
            mine = [r for r in rows if r[0] == code]
            name = "abcd"[code]
            s = summarize_metric(run_id="r", metric_name=name, project="p", run_group_id="g",
                                 steps=np.array([r[1] for r in mine]), wall_times=np.array([r[2] for r in mine]),
                                 values=np.array([r[3] for r in mine]), file_id=file_id, updated_at=updated_at)
            out[name] = merge_summaries(out.get(name), s)
    return {name: dataclasses.astuple(s) for name, s in out.items()}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=_ROWS, second=_ROWS, third=_ROWS, same_time=st.booleans())
def test_columnar_summaries_equal_the_per_metric_rules(tmp_path_factory, first, second, third, same_time):
    """summarize_sorted + the SQL upsert give, for any files, what summarize_metric + merge_summaries give."""
    store, _ = new_store(tmp_path_factory.mktemp("s"))
    times = ["2026-01-01T00:00:00Z"] * 3 if same_time else [f"2026-01-01T00:00:0{i}Z" for i in range(3)]
    files = [("f1", times[0], first), ("f2", times[1], second), ("f0", times[2], third)]
    assert _columnar(store, files) == _reference(files)


def test_a_tie_on_step_and_wall_time_goes_to_the_file_written_later():
    """Within one second the updated_at are equal: the later file's latest wins whatever its (random) id."""
    first = _summary([(9, 90, 1.0)], file_id="metrics-ff", updated_at="2026-01-01T00:00:00Z")
    second = _summary([(9, 90, 2.0)], file_id="metrics-00", updated_at="2026-01-01T00:00:00Z")
    merged = merge_summaries(first, second)
    assert (merged.latest_value, merged.latest_file_id) == (2.0, "metrics-00")


def test_a_latest_point_without_a_wall_time_has_no_latest_wall_time(tmp_path):
    store, writer = new_store(tmp_path)
    writer.write_chunk("a", [event(1, 1.0)], [], request_hash="h")
    writer.write_chunk("b", [event(2, 2.0)], [], request_hash="h")
    e = event(3, 3.0)
    e.wall_time = None
    writer.write_chunk("c", [e], [], request_hash="h")
    (s,) = StoreReader(store).metric_summaries("seed-1")
    assert (s.latest_step, s.latest_value, s.latest_wall_time) == (3, 3.0, None)
