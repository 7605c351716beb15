"""Parity: the same MetricEvents through the local store and through ADX read back the same, but for documented differences.

Local: the collector's ``expstore`` sink and ``StoreReader``. Kusto: the same NDJSON ingested into the
stand-in cluster and ``KustoReader`` over the real client. Each chunk is delivered twice (a redelivery):
the store skips it by idempotency key, ADX holds two copies that the dedup view folds. The documented
differences (``taunotebook/portal/kusto/reader.py``): ``created_at`` (first point vs first stored),
run tags (the latest event's vs the common ones), kusto's milestone steps, and tie-breaking among equal
values inside an M4 bucket.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from fixtures.kusto import reader_for
from fixtures.kusto_events import chunk, event, fixture_events, loss, marker
from services.kusto_cluster import KustoCluster
from tau_collector.expstore import StoreReader
from tau_collector.sinks.expstore import ExpstoreSink

MILESTONES = {0, 1000, 2000, 3000, 4000}


def parity_chunks() -> list:
    events = [e for e in fixture_events() if e.workspace_id == "ws-a"][: 5000 + 5 + 1 + 10]
    history = [e for e in events if e.metric_name != "tau/run_status"]
    terminal = [e for e in events if e.metric_name == "tau/run_status"]
    # A third run whose values tie inside buckets (a flat line), and one still running with no marker.
    flat = [event("flat", "train/loss", s, 1.0) for s in range(3000)]
    return [chunk(history[:2500], 1), chunk(history[2500:], 2), chunk(flat, 3), chunk(terminal, 4)]


@pytest.fixture(scope="module")
def both(tmp_path_factory) -> Iterator[tuple[StoreReader, object]]:
    sink = ExpstoreSink(tmp_path_factory.mktemp("store"), source_id="parity")
    with KustoCluster() as cluster:
        for c in parity_chunks():
            for _ in range(2):  # redelivered
                sink.deliver(c)
                cluster.ingest_ndjson(c.ndjson)
        yield StoreReader(sink.store), reader_for(cluster)
        assert cluster.errors == []
    sink.close()


def test_runs_read_the_same(both):
    local, kusto = both
    for run_id in ("seed-1", "seed-2", "flat"):
        a, b = local.run(run_id), kusto.run(run_id)
        for field in ("run_id", "project", "experiment_id", "run_group_id", "state", "completed_at", "started_at",
                      "metric_names"):
            assert getattr(a, field) == getattr(b, field), (run_id, field)
    assert kusto.run("seed-1").state == "succeeded" and kusto.run("seed-2").state == "running"
    # Order differs by design: the store lists by when it stored a run, ADX by a run's first point.
    assert sorted(r.run_id for r in local.runs("ws-a")) == sorted(r.run_id for r in kusto.runs())


def test_metric_summaries_read_the_same(both):
    local, kusto = both
    fields = ("metric_name", "project", "run_group_id", "count", "finite_count", "non_finite_count", "min_step",
              "max_step", "latest_step", "latest_wall_time", "latest_value", "min_value", "max_value")
    for run_id in ("seed-1", "seed-2", "flat"):
        a = [tuple(getattr(s, f) for f in fields) for s in local.metric_summaries(run_id)]
        b = [tuple(getattr(s, f) for f in fields) for s in kusto.metric_summaries(run_id)]
        assert a == b, run_id


@pytest.mark.parametrize("max_points", [1, 2, 3, 4, 100, 400, 8000, 12000])
def test_series_read_the_same_apart_from_milestones(both, max_points):
    local, kusto = both
    a = local.series("seed-1", "train/loss", max_points=max_points)
    b = kusto.series("seed-1", "train/loss", max_points=max_points)
    assert a.source_points == b.source_points == 5000
    extra = set(b.step.tolist()) - set(a.step.tolist())
    assert set(a.step.tolist()) <= set(b.step.tolist()) and extra <= MILESTONES
    if max_points < 4:
        assert extra == set()
    assert np.array_equal(b.value, [loss(s) for s in b.step])
    assert a.partial == b.partial


@pytest.mark.parametrize(("start", "end", "interval"), [(4990, None, None), (100, 199, None), (10, 57, 10),
                                                         (None, None, 7)])
def test_windows_tails_and_intervals_read_the_same(both, start, end, interval):
    local, kusto = both
    a = local.series("seed-1", "train/loss", start, end, 400, step_interval=interval)
    b = kusto.series("seed-1", "train/loss", start, end, 400, step_interval=interval)
    assert (a.source_points, a.partial) == (b.source_points, b.partial)
    assert set(a.step.tolist()) <= set(b.step.tolist()) <= set(a.step.tolist()) | MILESTONES


def test_ties_inside_a_bucket_keep_the_same_number_of_points(both):
    local, kusto = both
    a, b = local.series("flat", "train/loss", max_points=400), kusto.series("flat", "train/loss", max_points=400)
    assert np.array_equal(a.step, b.step)  # both keep the earliest step of an equal min/max
    assert a.source_points == b.source_points == 3000


def test_a_marker_arriving_later_changes_the_state_in_both(tmp_path):
    sink = ExpstoreSink(tmp_path / "store")
    with KustoCluster() as cluster:
        for c in (chunk([event("late", "m", 0, 1.0)], 1), chunk([marker("late", "failed", -1.0, at_step=1)], 2)):
            sink.deliver(c)
            cluster.ingest_ndjson(c.ndjson)
        local, kusto = StoreReader(sink.store), reader_for(cluster)
        assert local.run("late").state == kusto.run("late").state == "failed"
        assert local.run("late").completed_at == kusto.run("late").completed_at
    sink.close()
