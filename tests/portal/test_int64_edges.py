"""Steps to 2^63-1 and wall times to the end of int64 microseconds: written through the store, read through the Portal."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fixtures.portal import TOKEN, serve
from tau_collector.expstore import MetricWriter, RunColumns, StoreReader, open_store
from taunotebook.client import PortalClient

INT64_MAX = 2**63 - 1
# Wall times (µs): the epoch's far past and future, the first µs past 2262 (where nanoseconds leave int64),
# the last µs of year 9999, and the end of int64 microseconds.
WALLS = [-(2**62), 1, 9_223_372_036_854_776, 253_402_300_799_999_999, INT64_MAX]
STEPS = [0, 1, 2**53 + 1, INT64_MAX - 1, INT64_MAX]


def _columns(run: str, metric: str, steps, walls, values) -> RunColumns:
    n = len(steps)
    return RunColumns(project="proj", experiment_id="exp", run_group_id="g", run_id=run, names=[metric],
                      metric=np.zeros(n, np.int32), step=np.array(steps, np.int64), wall_time=np.array(walls, np.int64),
                      value=np.array(values, np.float64), tags=["{}"] * n, tag_sets=[{}], source="history",
                      first_wall_ns=0)


@pytest.fixture(scope="module")
def edge_store(tmp_path_factory):
    store = open_store(tmp_path_factory.mktemp("edges") / "store", create=True)
    writer = MetricWriter(store)
    writer.write_columns("k0", [_columns("edge", "m", STEPS, WALLS, [0.5, 1.5, 2.5, 3.5, 4.5])], request_hash="h")
    writer.write_columns("k1", [_columns("edge", "m", [INT64_MAX], [INT64_MAX], [9.5])], request_hash="h")  # re-sent
    writer.mark_completed("edge")
    return store


def test_the_store_reads_int64_edges_back(edge_store):
    reader = StoreReader(edge_store.root)
    rows = reader.rows("edge", "m")
    assert rows.step.tolist() == STEPS and rows.wall_time.tolist() == WALLS
    assert rows.value.tolist() == [0.5, 1.5, 2.5, 3.5, 9.5]
    assert reader.rows("edge", "m", INT64_MAX, None).value.tolist() == [9.5]
    s = reader.metric_summary("edge", "m")
    assert (s.min_step, s.max_step, s.latest_step, s.latest_wall_time, s.latest_value) == (
        0, INT64_MAX, INT64_MAX, INT64_MAX, 9.5)
    reduced = reader.series("edge", "m", max_points=4)
    assert reduced.step.tolist()[-1] == INT64_MAX and reduced.source_points == 5
    reader.levels.min_points = 0  # the long-range path: reduced from the files' series levels
    assert reader.series("edge", "m", max_points=4).step.tolist()[-1] == INT64_MAX


def test_the_portal_answers_int64_edges(edge_store):
    with serve(edge_store.root, workspace=None) as server, PortalClient(
            f"http://127.0.0.1:{server.port}", TOKEN, retries=0) as client:
        series = client.series("edge", "m", max_points=100)
        assert list(series.steps) == STEPS and list(series.values) == [0.5, 1.5, 2.5, 3.5, 9.5]
        tail = client.series("edge", "m", start_step=INT64_MAX - 1, end_step=INT64_MAX)
        assert list(tail.steps) == [INT64_MAX - 1, INT64_MAX]
        metrics = client.metrics("edge")
        (m,) = metrics.metrics
        assert (m.max_step, m.latest_step, m.latest_wall_time) == (INT64_MAX, INT64_MAX, INT64_MAX)
        details = client.point_details("edge", "m")
        assert list(details.wall_times) == WALLS
        columns = client.series_columns("edge", "m")
        assert columns.step.tolist() == STEPS
        frame = columns.to_pandas()  # wall times as datetimes past 2262, where nanoseconds end
        assert frame["wall_time"].notna().all()
        assert [t.year for t in frame["wall_time"][1:3]] == [1970, 2262]
        # Float seconds keep ~16 digits: year 9999's last microsecond comes back within a millisecond.
        assert abs(frame["wall_time"][3] - pd.Timestamp("9999-12-31T23:59:59.999999Z")) <= pd.Timedelta("1ms")
        (tail,) = client.tails("edge", {"m": (INT64_MAX - 1, None)}).metrics  # the pane's poll of its tail
        assert (list(tail.steps), list(tail.values)) == ([INT64_MAX - 1, INT64_MAX], [3.5, 9.5])
        run = client.run("edge")
        assert run.completed_at


@pytest.mark.parametrize("rewrite", ["compact", "cluster", "cluster_live"])
def test_int64_edges_survive_compaction_and_clustering(tmp_path, rewrite):
    """The pyarrow-free merge (parquet_reader, parquet_encoder: statistics, sort, levels) keeps the edges."""
    from tau_collector.expstore import CompactionPolicy, cluster_live, cluster_run, compact_all
    from tau_collector.expstore.format.parquet_reader import read_metric_file
    from tau_collector.expstore.maintain.live_clusters import LivePolicy

    store = open_store(tmp_path / "store", create=True)
    writer = MetricWriter(store)
    for i, (step, wall) in enumerate(zip(STEPS, WALLS, strict=True)):
        writer.write_columns(f"k{i}", [_columns("edge", "m", [step], [wall], [i + 0.5])], request_hash="h")
        writer.write_columns(f"o{i}", [_columns("edge", "other", [step], [wall], [-1.0])], request_hash="h")
    writer.write_columns("again", [_columns("edge", "m", [INT64_MAX], [INT64_MAX], [9.5])], request_hash="h")
    if rewrite == "compact":
        assert compact_all(store, "edge", policy=CompactionPolicy(min_files=1, grace_seconds=0))
    elif rewrite == "cluster":
        assert cluster_run(store, "edge", max_rows=6)
    else:
        assert cluster_live(store, "edge", LivePolicy(wide_metrics=1, file_rows=100, ingest_files=2))
    paths = [store.absolute(p) for (p,) in store.connection().execute("SELECT path FROM metric_files").fetchall()]
    assert len(paths) < 2 * len(STEPS) + 1  # rewritten
    steps = sorted(s for p in paths for s in read_metric_file(p)[1]["step"].values.tolist())
    assert steps[-3:] == [INT64_MAX] * 3  # the three rows at the last step, kept as written
    reader = StoreReader(store.root)
    reader.levels.min_points = 0
    rows = reader.rows("edge", "m")
    assert rows.step.tolist() == STEPS and rows.wall_time.tolist() == WALLS
    assert rows.value.tolist() == [0.5, 1.5, 2.5, 3.5, 9.5]
    assert reader.rows("edge", "m", INT64_MAX, None).value.tolist() == [9.5]
    assert reader.series("edge", "m", max_points=4).step.tolist()[-1] == INT64_MAX
    s = reader.metric_summary("edge", "m")
    assert (s.max_step, s.latest_step, s.latest_wall_time, s.latest_value) == (INT64_MAX, INT64_MAX, INT64_MAX, 9.5)
