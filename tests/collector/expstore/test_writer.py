"""Writing chunks: round trip, idempotency, run rows, tags, non-finite rows and the last-wins read rule."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tau_collector.expstore import IdempotencyConflictError, StoreError, StoreReader

from .events import BASE_NS, event, new_store, non_finite


def _files(store) -> list[str]:
    return sorted(p.name for p in (store.root / "metrics").rglob("*") if p.is_file())


def test_round_trip_returns_every_point_sorted_by_step(tmp_path):
    store, writer = new_store(tmp_path)
    events = [event(s, s * 0.5) for s in (5, 1, 3, 2, 4)]
    writer.write_chunk("k1", events, [], request_hash="h1")
    rows = StoreReader(store).rows("seed-1", "train/loss")
    assert rows.step.tolist() == [1, 2, 3, 4, 5]
    assert rows.value.tolist() == [0.5, 1.0, 1.5, 2.0, 2.5]
    assert rows.wall_time.tolist() == [(BASE_NS + s * 1_000_000) // 1000 for s in [1, 2, 3, 4, 5]]


def test_rows_honour_the_step_range(tmp_path):
    store, writer = new_store(tmp_path)
    writer.write_chunk("a", [event(s, float(s)) for s in range(10)], [], request_hash="h")
    writer.write_chunk("b", [event(s, float(s)) for s in range(10, 20)], [], request_hash="h")
    assert StoreReader(store).rows("seed-1", "train/loss", 8, 12).step.tolist() == [8, 9, 10, 11, 12]
    assert StoreReader(store).rows("seed-1", "train/loss", 15).step.tolist() == [15, 16, 17, 18, 19]
    assert StoreReader(store).rows("seed-1", "train/loss", None, 1).step.tolist() == [0, 1]


def test_redelivered_chunk_is_a_no_op(tmp_path):
    store, writer = new_store(tmp_path)
    events = [event(s, 1.0) for s in range(3)]
    first = writer.write_chunk("k1", events, [], request_hash="h1")
    again = writer.write_chunk("k1", events, [], request_hash="h1")
    assert not first.reused and again.reused
    assert len(_files(store)) == 1
    (count,) = StoreReader(store).metric_summaries("seed-1")
    assert count.count == 3


def test_same_key_with_a_different_hash_is_a_conflict(tmp_path):
    store, writer = new_store(tmp_path)
    writer.write_chunk("k1", [event(0, 1.0)], [], request_hash="h1")
    with pytest.raises(IdempotencyConflictError, match="k1"):
        writer.write_chunk("k1", [event(0, 2.0)], [], request_hash="h2")
    assert StoreReader(store).rows("seed-1", "train/loss").value.tolist() == [1.0]
    assert len(_files(store)) == 1


def test_idempotency_key_is_recorded_with_the_registration(tmp_path):
    store, writer = new_store(tmp_path)
    result = writer.write_chunk("k1", [event(0, 1.0)], [], request_hash="h1")
    row = store.connection().execute(
        "SELECT key, request_hash, target_id FROM idempotency_keys").fetchone()
    assert row == ("k1", "h1", result.file_ids[0])


def test_one_file_per_run_in_a_chunk(tmp_path):
    store, writer = new_store(tmp_path)
    result = writer.write_chunk("k", [event(0, 1.0, run="a"), event(0, 2.0, run="b"), event(1, 3.0, run="a")],
                                [], request_hash="h")
    assert len(result.file_ids) == 2
    reader = StoreReader(store)
    assert reader.rows("a", "train/loss").value.tolist() == [1.0, 3.0]
    assert reader.rows("b", "train/loss").value.tolist() == [2.0]
    assert sorted(r.run_id for r in reader.runs()) == ["a", "b"]


def test_run_group_experiment_and_run_rows_are_created(tmp_path):
    store, writer = new_store(tmp_path)
    writer.write_chunk("k", [event(3, 1.0), event(7, 1.0)], [], request_hash="h")
    run = StoreReader(store).run("seed-1")
    assert (run.project, run.experiment_id, run.run_group_id, run.state) == ("proj", "exp-a", "baseline", "running")
    assert run.started_at == "2025-10-09T08:53:20.003Z"
    assert run.completed_at is None
    assert run.metric_names == ("train/loss",)
    conn = store.connection()
    assert conn.execute("SELECT project, name FROM run_groups").fetchall() == [("proj", "baseline")]
    assert conn.execute("SELECT project, name FROM experiments").fetchall() == [("proj", "exp-a")]


def test_run_of_another_project_is_refused(tmp_path):
    store, writer = new_store(tmp_path)
    writer.write_chunk("k1", [event(0, 1.0)], [], request_hash="h")
    with pytest.raises(StoreError, match="already belongs"):
        writer.write_chunk("k2", [event(1, 1.0, project="other")], [], request_hash="h")
    assert len(_files(store)) == 1  # the refused chunk's file was removed again


@pytest.mark.parametrize(("value", "state"), [(1.0, "succeeded"), (-1.0, "failed"), (-2.0, "cancelled")])
def test_run_status_marker_sets_the_terminal_state(tmp_path, value, state):
    store, writer = new_store(tmp_path)
    writer.write_chunk("h", [event(s, 1.0) for s in range(3)], [], request_hash="h")
    marker = event(0, value, metric="tau/run_status", wall_ns=BASE_NS + 9_000_000_000,
                   tags={"tau.status.state": state})
    writer.write_chunk("t", [marker], [], request_hash="t")
    reader = StoreReader(store)
    run = reader.run("seed-1")
    assert run.state == state
    assert run.completed_at == "2025-10-09T08:53:29Z"
    # The marker is kept as a metric row, as TauGrid's Kusto path keeps it.
    assert reader.rows("seed-1", "tau/run_status").value.tolist() == [value]


def test_run_tags_are_the_tags_every_event_carries(tmp_path):
    store, writer = new_store(tmp_path)
    writer.write_chunk("k", [event(0, 1.0, tags={"tau_workspace": "ws-a", "phase": "x"}),
                             event(1, 1.0, tags={"tau_workspace": "ws-a", "phase": "y"})], [], request_hash="h")
    writer.write_chunk("k2", [event(0, 1.0, run="untagged")], [], request_hash="h")
    writer.write_chunk("k3", [event(0, 1.0, run="other", tags={"tau_workspace": "ws-b"})], [], request_hash="h")
    reader = StoreReader(store)
    assert reader.run("seed-1").tags == {"tau_workspace": "ws-a"}
    assert sorted(r.run_id for r in reader.runs("ws-a")) == ["seed-1", "untagged"]
    assert sorted(r.run_id for r in reader.runs()) == ["other", "seed-1", "untagged"]


def test_run_lookup_with_the_wrong_project_is_not_found(tmp_path):
    store, writer = new_store(tmp_path)
    writer.write_chunk("k", [event(0, 1.0)], [], request_hash="h")
    assert StoreReader(store).run("seed-1", project="proj") is not None
    assert StoreReader(store).run("seed-1", project="nope") is None
    assert StoreReader(store).run("nope") is None


def test_non_finite_observations_are_stored_as_rows(tmp_path):
    store, writer = new_store(tmp_path)
    writer.write_chunk("k", [event(0, 1.0), event(3, 0.5)],
                       [non_finite(1, math.nan), non_finite(2, math.inf), non_finite(4, -math.inf)],
                       request_hash="h")
    reader = StoreReader(store)
    rows = reader.rows("seed-1", "train/loss")
    assert rows.step.tolist() == [0, 1, 2, 3, 4]
    assert math.isnan(rows.value[1]) and rows.value[2] == math.inf and rows.value[4] == -math.inf
    (s,) = reader.metric_summaries("seed-1")
    assert (s.count, s.finite_count, s.non_finite_count, s.min_step, s.max_step) == (5, 2, 3, 0, 4)
    assert (s.latest_step, s.latest_value, s.min_value, s.max_value) == (3, 0.5, 0.5, 1.0)


def test_equal_steps_last_wins_by_wall_time(tmp_path):
    store, writer = new_store(tmp_path)
    writer.write_chunk("k", [event(5, 2.0, wall_ns=BASE_NS + 2000), event(5, 1.0, wall_ns=BASE_NS + 1000)],
                       [], request_hash="h")
    assert StoreReader(store).rows("seed-1", "train/loss").value.tolist() == [2.0]


def test_equal_steps_and_wall_times_last_registered_file_wins(tmp_path):
    store, writer = new_store(tmp_path)
    writer.write_chunk("k1", [event(5, 1.0), event(6, 1.0)], [], request_hash="h")
    writer.write_chunk("k2", [event(5, 2.0)], [], request_hash="h")
    rows = StoreReader(store).rows("seed-1", "train/loss")
    assert rows.step.tolist() == [5, 6] and rows.value.tolist() == [2.0, 1.0]


def test_equal_steps_in_one_chunk_later_row_wins(tmp_path):
    store, writer = new_store(tmp_path)
    e1 = event(5, 1.0)
    e2 = event(5, 3.0)  # same step and wall time: a re-logged point
    writer.write_chunk("k1", [e1, e2], [], request_hash="h")
    assert StoreReader(store).rows("seed-1", "train/loss").value.tolist() == [3.0]


def test_a_later_file_with_an_older_wall_time_loses(tmp_path):
    store, writer = new_store(tmp_path)
    writer.write_chunk("k1", [event(5, 1.0, wall_ns=BASE_NS + 10_000)], [], request_hash="h")
    writer.write_chunk("k2", [event(5, 2.0, wall_ns=BASE_NS)], [], request_hash="h")
    assert StoreReader(store).rows("seed-1", "train/loss").value.tolist() == [1.0]


def test_series_reduces_and_reports_source_points(tmp_path):
    store, writer = new_store(tmp_path)
    values = np.sin(np.arange(1000) / 30.0)
    values[400] = 50.0  # a one-point spike
    writer.write_chunk("k", [event(s, float(v)) for s, v in enumerate(values)], [], request_hash="h")
    series = StoreReader(store).series("seed-1", "train/loss", max_points=40)
    assert series.source_points == 1000 and series.partial
    assert series.returned_points <= 40
    assert 50.0 in series.value.tolist()
    assert series.step[0] == 0 and series.step[-1] == 999
    full = StoreReader(store).series("seed-1", "train/loss", max_points=2000)
    assert full.returned_points == 1000 and not full.partial
    last = StoreReader(store).series("seed-1", "train/loss", max_points=1)
    assert last.step.tolist() == [999]


def test_series_marks_non_finite_points(tmp_path):
    store, writer = new_store(tmp_path)
    writer.write_chunk("k", [event(s, 1.0) for s in range(100) if s != 50], [non_finite(50, math.nan)],
                       request_hash="h")
    series = StoreReader(store).series("seed-1", "train/loss", max_points=8)
    assert 50 in series.step.tolist()
    assert series.non_finite.tolist() == [bool(s == 50) for s in series.step.tolist()]


def test_series_step_interval_thins_from_the_first_step(tmp_path):
    store, writer = new_store(tmp_path)
    writer.write_chunk("k", [event(s, float(s)) for s in range(1, 12)], [], request_hash="h")
    series = StoreReader(store).series("seed-1", "train/loss", max_points=100, step_interval=5)
    assert series.step.tolist() == [1, 6, 11]
    assert series.source_points == 11 and series.partial


def test_unknown_run_or_metric_reads_empty(tmp_path):
    store, writer = new_store(tmp_path)
    writer.write_chunk("k", [event(0, 1.0)], [], request_hash="h")
    reader = StoreReader(store)
    assert len(reader.rows("nope", "train/loss")) == 0
    assert len(reader.rows("seed-1", "nope")) == 0
    assert reader.series("seed-1", "nope").source_points == 0
    assert reader.metric_names("nope") == []


def test_reader_sees_new_files_after_it_cached_a_series(tmp_path):
    store, writer = new_store(tmp_path)
    reader = StoreReader(store)
    writer.write_chunk("k1", [event(s, 1.0) for s in range(10)], [], request_hash="h")
    assert len(reader.rows("seed-1", "train/loss")) == 10
    writer.write_chunk("k2", [event(s, 1.0) for s in range(10, 15)], [], request_hash="h")
    assert len(reader.rows("seed-1", "train/loss")) == 15
