"""KQL semantics of the reader's queries, executed by duckdb-kql behind the stand-in cluster, through the real client.

The stand-in is DuckDB, not ADX (``services/kusto_cluster.py`` lists what it does not model).
"""

from __future__ import annotations

import numpy as np
import pytest

from fixtures.kusto import reader_for
from fixtures.kusto_events import DIP_STEP, SPIKE_STEP, WALL_NS, event, fixture_events, loss
from tau_collector.expstore.read.m4 import m4_indices
from tau_collector.projection.metric_event import encode_ndjson_many
from tau_collector.reads import WouldBlock, no_blocking
from taunotebook.portal.kusto import AmbiguousRunError


def test_a_redelivered_event_is_counted_once(reader):
    (loss_summary,) = [s for s in reader.metric_summaries("seed-1") if s.metric_name == "train/loss"]
    assert loss_summary.count == loss_summary.finite_count == 5000
    assert reader.series("seed-1", "train/loss", max_points=12000).source_points == 5000


def test_run_state_comes_from_the_latest_terminal_marker(reader):
    finished, running = reader.run("seed-1"), reader.run("seed-2")
    assert (finished.state, finished.completed_at) == ("succeeded", "2026-09-24T18:31:07.25Z")
    assert (running.state, running.completed_at) == ("running", None)
    assert finished.created_at == finished.started_at == "2026-09-24T18:30:12.25Z"
    assert finished.metric_names == ("eval/loss", "tau/run_status", "train/loss")
    assert finished.tags == {"tau.status.state": "succeeded", "tau_workspace": "ws-a"}  # the per-point line is not


def test_a_later_cancelled_marker_wins(kusto_cluster):
    from fixtures.kusto_events import marker

    kusto_cluster.ingest_ndjson(encode_ndjson_many([
        event("r", "train/loss", 0, 1.0), marker("r", "failed", -1.0, at_step=1), marker("r", "cancelled", -2.0, at_step=2),
    ]))
    assert reader_for(kusto_cluster).run("r").state == "cancelled"


def test_workspaces_never_see_each_others_runs(loaded_cluster):
    a, b = reader_for(loaded_cluster, "ws-a"), reader_for(loaded_cluster, "ws-b")
    assert [r.run_id for r in a.runs()] == ["seed-2", "seed-1"]
    assert [r.run_id for r in b.runs()] == ["other"]
    assert a.run("other") is None and b.run("seed-1") is None
    assert b.series("seed-1", "train/loss").source_points == 0
    assert b.metric_summaries("seed-1") == []


def test_hostile_workspace_and_metric_values_are_data_not_query(kusto_cluster):
    metric = "train/it's \\'odd' | take 1 //"
    kusto_cluster.ingest_ndjson(encode_ndjson_many(
        [event("r", metric, s, float(s), workspace="ws'x") for s in range(3)]
        + [event("r", "train/loss", 0, 9.0, workspace="ws")]
    ))
    hostile = reader_for(kusto_cluster, "ws'x")
    assert hostile.series("r", metric).step.tolist() == [0, 1, 2]
    assert [s.metric_name for s in hostile.metric_summaries("r")] == [metric]
    injected = reader_for(kusto_cluster, "nobody' or workspace_id != '")
    assert injected.runs() == [] and injected.series("r", "train/loss").source_points == 0
    assert reader_for(kusto_cluster, "ws'").runs() == []  # no prefix or pattern matching either


def test_the_look_back_window_uses_the_query_clock(loaded_cluster):
    assert [r.run_id for r in reader_for(loaded_cluster, query_now="2027-09-25T00:00:00Z").runs()] == []
    assert reader_for(loaded_cluster, query_now="2027-09-23T00:00:00Z").run("seed-1") is not None


def test_the_step_window_is_applied_in_the_query(reader):
    series = reader.series("seed-1", "train/loss", start_step=100, end_step=199)
    assert series.step.tolist() == list(range(100, 200)) and series.source_points == 100 and not series.partial


def test_5000_points_at_400_keep_the_extremes_endpoints_and_milestones(reader):
    series = reader.series("seed-1", "train/loss", max_points=400)
    steps = set(series.step.tolist())
    assert {0, 4999, SPIKE_STEP, DIP_STEP} <= steps
    assert {1000, 2000, 3000, 4000} <= steps  # eval/loss milestones
    assert series.source_points == 5000 and series.partial and series.returned_points < 5000
    assert np.array_equal(series.value, [loss(s) for s in series.step])


def test_the_reduction_is_the_local_stores_m4_plus_milestones(reader):
    steps = np.arange(5000, dtype=np.int64)
    values = np.array([loss(s) for s in range(5000)])
    for max_points in (4, 100, 400, 2000):
        local = set(steps[m4_indices(steps, values, max_points)].tolist())
        kusto = set(reader.series("seed-1", "train/loss", max_points=max_points).step.tolist())
        assert kusto - local <= {0, 1000, 2000, 3000, 4000}, max_points
        assert local <= kusto, max_points


def test_fewer_than_four_points_follow_m4s_rule(reader):
    assert reader.series("seed-1", "train/loss", max_points=1).step.tolist() == [4999]
    assert reader.series("seed-1", "train/loss", max_points=2).step.tolist() == [0, 4999]
    assert reader.series("seed-1", "train/loss", max_points=3).step.tolist() == [0, SPIKE_STEP, 4999]


def test_step_interval_thins_from_the_first_step_and_keeps_the_last(reader):
    series = reader.series("seed-1", "train/loss", start_step=10, end_step=57, step_interval=10)
    assert series.step.tolist() == [10, 20, 30, 40, 50, 57]
    assert series.source_points == 48 and series.partial


def test_a_tail_poll_is_one_small_query(loaded_cluster):
    reader = reader_for(loaded_cluster)
    before = len(loaded_cluster.requests)
    series = reader.series("seed-1", "train/loss", start_step=4990)
    assert series.step.tolist() == list(range(4990, 5000))
    assert len(loaded_cluster.requests) - before == 1


def test_the_same_step_rewritten_keeps_the_latest_wall_time(kusto_cluster):
    kusto_cluster.ingest_ndjson(encode_ndjson_many([
        event("r", "m", 5, 1.0, wall_ns=WALL_NS), event("r", "m", 5, 2.0, wall_ns=WALL_NS + 1000_000),
        event("r", "m", 6, 3.0, wall_ns=WALL_NS - 1000_000),
    ]))
    series = reader_for(kusto_cluster).series("r", "m")
    assert (series.step.tolist(), series.value.tolist(), series.source_points) == ([5, 6], [2.0, 3.0], 2)


def test_one_run_id_in_two_projects_is_ambiguous_unless_the_project_is_named(kusto_cluster):
    kusto_cluster.ingest_ndjson(encode_ndjson_many([
        event("r", "m", 0, 1.0, project="p1"), event("r", "m", 0, 2.0, project="p2"),
    ]))
    reader = reader_for(kusto_cluster)
    with pytest.raises(AmbiguousRunError, match="p1, p2"):
        reader.run("r")
    assert reader.run("r", project="p2").project == "p2"
    assert reader.series("r", "m", project="p2").value.tolist() == [2.0]


def test_experiment_listing_filters_in_the_query(loaded_cluster):
    reader = reader_for(loaded_cluster)
    runs, truncated = reader.search_runs(experiment_id="sgd")
    assert [r.run_id for r in runs] == ["seed-2", "seed-1"] and not truncated
    assert reader.runs(experiment_id="nope") == []
    assert [r.run_id for r in reader.runs(experiment_id="sgd", state="succeeded")] == ["seed-1"]


def test_fixture_holds_what_its_docstring_says():
    events = fixture_events()
    assert len(events) == 5000 + 5 + 1 + 10 + 10 + 100


def test_one_query_answers_a_run_and_its_metric_summaries(loaded_cluster):
    reader = reader_for(loaded_cluster, max_age_s=0)
    before = len(loaded_cluster.requests)
    with reader.pinned():  # one Portal request
        run = reader.run("seed-1")
        summaries = reader.metric_summaries("seed-1")
        assert reader.metric_summary("seed-1", "eval/loss").count == 5
    assert len(loaded_cluster.requests) - before == 1
    assert [s.metric_name for s in summaries] == list(run.metric_names) == ["eval/loss", "tau/run_status",
                                                                            "train/loss"]


@pytest.mark.parametrize(("max_age_s", "queries"), [(60, 1), (0, 3)])
def test_a_run_answer_is_reused_by_later_requests_for_max_age(loaded_cluster, max_age_s, queries):
    reader = reader_for(loaded_cluster, max_age_s=max_age_s)
    before = len(loaded_cluster.requests)
    for _ in range(3):
        with reader.pinned():
            reader.run("seed-1")
            reader.metric_summaries("seed-1")
    assert len(loaded_cluster.requests) - before == queries
    with reader.pinned():
        reader.series("seed-1", "train/loss", start_step=4999)  # a series is always asked for
    assert len(loaded_cluster.requests) - before == queries + 1


def test_a_listings_runs_get_their_summaries_in_one_more_query(loaded_cluster):
    reader = reader_for(loaded_cluster, max_age_s=0)
    before = len(loaded_cluster.requests)
    with reader.pinned():
        runs = reader.runs()
        counts = {r.run_id: len(reader.metric_summaries(r.run_id)) for r in runs}
    assert counts == {"seed-2": 1, "seed-1": 3} and len(loaded_cluster.requests) - before == 2


def test_within_a_request_a_run_id_means_the_project_it_resolved_to(kusto_cluster):
    kusto_cluster.ingest_ndjson(encode_ndjson_many([
        event("r", "m", 0, 1.0, project="p1"), event("r", "n", 0, 2.0, project="p2"),
    ]))
    reader = reader_for(kusto_cluster)
    with reader.pinned():
        assert reader.run("r", project="p2").project == "p2"
        assert [s.metric_name for s in reader.metric_summaries("r")] == ["n"]
        assert reader.series("r", "n").value.tolist() == [2.0]


def test_inside_no_blocking_a_read_that_would_query_raises_would_block(loaded_cluster):
    reader = reader_for(loaded_cluster, max_age_s=60)
    with no_blocking(), pytest.raises(WouldBlock):
        reader.run("seed-1")
    reader.run("seed-1")
    with no_blocking():
        assert reader.run("seed-1").run_id == "seed-1"  # cached: answered on the event loop
        with pytest.raises(WouldBlock):
            reader.series("seed-1", "train/loss", start_step=4999)
    assert reader.non_finite("seed-1", "train/loss")[0] == 0
