"""Wide runs: a metric file's row groups are cut at metric boundaries, so one metric is read without the
others -- as written by a delivery and after compaction -- and a wide chunk's summaries are right."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tau_collector.expstore import StoreReader
from tau_collector.expstore.format import schema
from tau_collector.expstore.format.metric_files import metric_row_groups
from tau_collector.expstore.format.parquet_reader import read_metric_file
from tau_collector.expstore.maintain.compaction import CompactionPolicy, compact_run
from tau_collector.expstore.maintain.metric_clusters import cluster_quietly, cluster_run, metric_ranges
from tau_collector.expstore.read.file_slices import FileSlices
from tau_collector.expstore.store import StoreError
from tau_collector.expstore.write.writer import RunColumns

from .events import new_store

WIDTH, STEPS = 300, 40


def _wide(run_id: str, first_step: int, steps: int, width: int = WIDTH) -> RunColumns:
    names = [f"layer{i:04d}/grad_norm" for i in range(width)]
    metric = np.repeat(np.arange(width, dtype=np.int32), steps)
    step = np.tile(np.arange(first_step, first_step + steps, dtype=np.int64), width)
    value = metric * 1000.0 + step
    return RunColumns(project="proj", experiment_id="exp", run_group_id="g", run_id=run_id, names=names,
                      metric=metric, step=step, wall_time=step * 1_000_000, value=value, tags=["{}"] * metric.size,
                      tag_sets=[{}], source="history")


def _groups_holding(path, metric: str) -> list[int]:
    """The row groups whose metric_name statistics do not rule ``metric`` out (what a reader must decode)."""
    meta = pq.ParquetFile(path).metadata
    column = meta.schema.names.index("metric_name")
    holding = []
    for g in range(meta.num_row_groups):
        stats = meta.row_group(g).column(column).statistics
        assert stats is not None and stats.has_min_max
        if stats.min <= metric <= stats.max:
            holding.append(g)
    return holding


def _paths(store, run_id: str):
    return [store.absolute(p) for (p,) in store.connection().execute(
        "SELECT path FROM metric_files WHERE run_id = ? ORDER BY rowid", (run_id,))]


@given(lengths=st.lists(st.integers(1, 50), min_size=1, max_size=40), least=st.integers(1, 60),
       most=st.integers(1, 80))
def test_row_groups_end_at_metric_boundaries(lengths, least, most):
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).tolist()
    rows = sum(lengths)
    groups = metric_row_groups(starts, rows, least=least, most=most)
    assert groups[0] == 0 and all(b > a for a, b in itertools.pairwise(groups)) and groups[-1] < rows
    ends = [*groups[1:], rows]
    for start, end in zip(groups, ends, strict=True):
        assert end - start <= most
        if end - start < most and end < rows:
            assert end in starts  # cut at a metric boundary unless the group is full
    # whole metrics are joined until a group holds `least` rows (or a cut for `most` ended it)
    for start, end in zip(groups[:-1], ends[:-1], strict=True):
        assert end - start >= least or end - start == most


def test_a_wide_file_prunes_to_the_metrics_group_and_reads_right(tmp_path):
    store, writer = new_store(tmp_path)
    writer.write_columns("k1", [_wide("r", 0, STEPS)], request_hash="h")
    (path,) = _paths(store, "r")
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups == 3  # 12,000 rows: 103 whole metrics (4,120 rows) fill a group of 4,096
    for metric in ("layer0000/grad_norm", "layer0150/grad_norm", "layer0299/grad_norm"):
        assert len(_groups_holding(path, metric)) == 1
    rows = StoreReader(store).rows("r", "layer0150/grad_norm")
    assert rows.step.tolist() == list(range(STEPS))
    assert rows.value.tolist() == [150_000.0 + s for s in range(STEPS)]


def test_compaction_keeps_the_metric_layout(tmp_path):
    store, writer = new_store(tmp_path)
    for c in range(3):
        writer.write_columns(f"k{c}", [_wide("r", c * STEPS, STEPS)], request_hash="h")
    before = StoreReader(store).rows("r", "layer0007/grad_norm")
    assert compact_run(store, "r", force=True, policy=CompactionPolicy(max_merge_rows=100_000)) is not None
    (path,) = _paths(store, "r")
    assert pq.ParquetFile(path).metadata.num_row_groups == 9  # 36,000 rows, 35 metrics (4,200 rows) a group
    assert len(_groups_holding(path, "layer0007/grad_norm")) == 1
    after = StoreReader(store).rows("r", "layer0007/grad_norm")
    assert after.step.tolist() == before.step.tolist() == list(range(3 * STEPS))
    assert np.array_equal(after.value, before.value)


def test_wide_chunks_summarize_every_metric(tmp_path):
    store, writer = new_store(tmp_path)
    writer.write_columns("k1", [_wide("r", 0, STEPS)], request_hash="h")
    writer.write_columns("k2", [_wide("r", STEPS, STEPS)], request_hash="h")
    summaries = StoreReader(store).metric_summaries("r")
    assert len(summaries) == WIDTH
    s = summaries[42]
    assert s.metric_name == "layer0042/grad_norm"
    assert (s.count, s.finite_count, s.min_step, s.max_step, s.latest_step) == (2 * STEPS, 2 * STEPS, 0,
                                                                              2 * STEPS - 1, 2 * STEPS - 1)
    assert (s.min_value, s.max_value, s.latest_value) == (42_000.0, 42_000.0 + 2 * STEPS - 1,
                                                          42_000.0 + 2 * STEPS - 1)


def test_metric_ranges_cut_whole_metrics_by_rows():
    counts = [("a", 3), ("b", 3), ("c", 5), ("d", 1)]
    assert metric_ranges(counts, 6) == [("a", "b", 6), ("c", "d", 6)]
    assert metric_ranges(counts, 100) == [("a", "d", 12)]
    assert metric_ranges(counts, 4) is None  # "c" alone is longer: a long metric is not clustered


def test_clustering_puts_each_metric_in_one_file_and_keeps_every_row(tmp_path):
    store, writer = new_store(tmp_path)
    for c in range(4):
        writer.write_columns(f"k{c}", [_wide("r", c * STEPS, STEPS)], request_hash="h")
    # a redelivered step with a later wall time: last wins, before and after
    again = _wide("r", STEPS, 1)
    again.value = again.value + 0.5
    again.wall_time = again.wall_time + 1
    writer.write_columns("k-again", [again], request_hash="h")
    names = ("layer0000/grad_norm", "layer0123/grad_norm", "layer0299/grad_norm")
    before = {m: StoreReader(store).rows("r", m) for m in names}
    summaries = StoreReader(store).metric_summaries("r")
    new_ids = cluster_run(store, "r", max_rows=4 * STEPS * 100 + 100)
    assert new_ids is not None and len(new_ids) == 3  # 300 metrics of 161 rows, 16,100 rows a file
    files = store.connection().execute(
        "SELECT f.file_id, m.first_metric, m.last_metric FROM metric_files f "
        "JOIN metric_file_metrics m USING (file_id) WHERE f.run_id = 'r' ORDER BY f.rowid").fetchall()
    assert [f[0] for f in files] == new_ids
    assert [(f[1], f[2]) for f in files] == [("layer0000/grad_norm", "layer0099/grad_norm"),
                                             ("layer0100/grad_norm", "layer0199/grad_norm"),
                                             ("layer0200/grad_norm", "layer0299/grad_norm")]
    reader = StoreReader(store)
    for m in names:
        after = reader.rows("r", m)
        assert after.step.tolist() == before[m].step.tolist()
        assert np.array_equal(after.value, before[m].value) and np.array_equal(after.wall_time, before[m].wall_time)
    assert after.value[STEPS] == 299_000.0 + STEPS + 0.5  # the redelivered row won
    assert [(s.metric_name, s.count, s.latest_value) for s in reader.metric_summaries("r")] == \
        [(s.metric_name, s.count, s.latest_value) for s in summaries]
    assert {s.latest_file_id for s in reader.metric_summaries("r")} == set(new_ids)
    # the reader opens only the file that holds the metric
    opened = []
    original = FileSlices.read

    def spy(self, path, metric):
        opened.append(path)
        return original(self, path, metric)

    FileSlices.read = spy
    try:
        StoreReader(store).rows("r", "layer0150/grad_norm")
    finally:
        FileSlices.read = original
    assert len(opened) == 1 and new_ids[1] in opened[0]


def test_a_cold_read_asks_the_index_for_the_files_metric_ranges_once(tmp_path):
    # a wide run's cold read of one metric skips most files by their metric ranges: one query for them all
    store, writer = new_store(tmp_path)
    for c in range(4):
        writer.write_columns(f"k{c}", [_wide("r", c * STEPS, STEPS)], request_hash="h")
    assert len(cluster_run(store, "r", max_rows=4 * STEPS * 100 + 100)) == 3  # 100 metrics a file
    for c in range(4, 7):  # delivered after: each holds every metric
        writer.write_columns(f"k{c}", [_wide("r", c * STEPS, STEPS)], request_hash="h")
    assert len(_paths(store, "r")) == 6
    asked = []
    store.connection().set_trace_callback(lambda sql: asked.append(sql) if "metric_file_metrics" in sql else None)
    opened = []
    original = FileSlices.read

    def spy(self, path, metric):
        opened.append(path)
        return original(self, path, metric)

    FileSlices.read = spy
    try:
        rows = StoreReader(store).rows("r", "layer0150/grad_norm")
    finally:
        FileSlices.read = original
        store.connection().set_trace_callback(None)
    assert rows.step.tolist() == list(range(7 * STEPS))
    assert rows.value.tolist() == [150_000.0 + s for s in range(7 * STEPS)]
    assert len(asked) == 1 and len(opened) == 4  # the clustered file holding it and the 3 delivered ones


def test_clustering_leaves_long_metrics_and_single_files_alone(tmp_path):
    store, writer = new_store(tmp_path)
    writer.write_columns("k0", [_wide("r", 0, STEPS)], request_hash="h")
    assert cluster_run(store, "r") is None  # one file
    writer.write_columns("k1", [_wide("r", STEPS, STEPS)], request_hash="h")
    assert cluster_run(store, "r", max_rows=STEPS) is None  # a metric of 80 rows is longer than 40
    assert len(_paths(store, "r")) == 2


def test_a_store_without_the_file_metrics_table_is_read(tmp_path):
    store, writer = new_store(tmp_path)
    writer.write_columns("k0", [_wide("r", 0, STEPS)], request_hash="h")
    with store.write_transaction() as tx:
        tx.execute("DROP TABLE metric_file_metrics")  # as a store written before it
    assert StoreReader(store).rows("r", "layer0042/grad_norm").step.tolist() == list(range(STEPS))


def test_clustering_files_in_step_order_gives_the_same_rows_as_a_full_sort(tmp_path):
    """Clustered files are our encoder's: pyarrow reads them equal to the sorted rows, and so does the
    pyarrow-free reader the sidecar's compaction uses (no file of them is foreign to it)."""
    import pyarrow as pa

    store, writer = new_store(tmp_path)
    for c in range(4):  # ascending, disjoint step ranges: the stable sort by metric alone
        chunk = _wide("r", c * STEPS, STEPS)
        chunk.tags = [f'{{"line":"{i}"}}' for i in range(len(chunk))]  # rows told apart beyond their values
        writer.write_columns(f"k{c}", [chunk], request_hash="h")
    before = pa.concat_tables(pq.read_table(p) for p in _paths(store, "r"))
    expected = before.sort_by([("metric_name", "ascending"), ("step", "ascending")])
    assert len(cluster_run(store, "r", max_rows=20_000)) == 3
    after = pa.concat_tables(pq.read_table(p) for p in _paths(store, "r"))
    assert after.num_rows == expected.num_rows == 4 * WIDTH * STEPS
    for column in ("metric_name", "step", "value", "tags"):
        assert after.column(column).to_pylist() == expected.column(column).to_pylist(), column
    assert after.schema.equals(schema.metric_arrow_schema()), after.schema
    ours = [read_metric_file(p) for p in _paths(store, "r")]
    assert sum(rows for rows, _ in ours) == after.num_rows
    steps = np.concatenate([columns["step"].values for _, columns in ours])
    assert steps.tolist() == after.column("step").to_pylist()
    assert all(b"tau-collector parquet_encoder" in p.read_bytes() for p in _paths(store, "r"))  # no pyarrow writer


def test_a_damaged_file_leaves_the_run_as_it_was(tmp_path):
    store, writer = new_store(tmp_path)
    for c in range(3):
        writer.write_columns(f"k{c}", [_wide("r", c * STEPS, STEPS)], request_hash="h")
    paths = _paths(store, "r")
    paths[-1].write_bytes(paths[-1].read_bytes()[:100])  # cut: not a Parquet file any more
    files_before = sorted(p.name for p in (store.root / "metrics").rglob("*.parquet"))
    assert cluster_quietly(store, "r", max_rows=100_000) is None
    assert _paths(store, "r") == paths  # the index still names the written files
    assert sorted(p.name for p in (store.root / "metrics").rglob("*.parquet")) == files_before  # nothing left
    with pytest.raises(StoreError, match=rf"{paths[-1].name}: cannot be read for clustering by metric: .*[Pp]arquet"):
        cluster_run(store, "r", max_rows=100_000)  # the error names the file and says what is wrong


def test_clustered_files_pyarrow_wrote_are_clustered_again(tmp_path):
    """A store clustered before the encoder did it holds clustered files pyarrow wrote (Snappy: foreign to the
    pyarrow-free reader). The import's clustering reads those with pyarrow, so the run is clustered again once
    more files arrive; every row reads as before, and the new files are the encoder's."""
    from tau_collector.expstore.format.parquet_reader import ForeignParquetError
    from tau_collector.expstore.maintain.compaction import parquet_bytes

    store, writer = new_store(tmp_path)
    for c in range(4):
        writer.write_columns(f"k{c}", [_wide("r", c * STEPS, STEPS)], request_hash="h")
    assert len(cluster_run(store, "r", max_rows=16_100)) == 3
    for path in _paths(store, "r"):  # as the clustering of an older version left them
        path.write_bytes(parquet_bytes(pq.read_table(path)))
        with pytest.raises(ForeignParquetError):
            read_metric_file(path)
    for c in range(4, 6):
        writer.write_columns(f"k{c}", [_wide("r", c * STEPS, STEPS)], request_hash="h")
    names = ("layer0000/grad_norm", "layer0150/grad_norm", "layer0299/grad_norm")
    before = {m: StoreReader(store).rows("r", m) for m in names}
    new_ids = cluster_run(store, "r", max_rows=24_100)
    assert new_ids is not None and len(new_ids) == 3 and len(_paths(store, "r")) == 3
    reader = StoreReader(store)
    for m in names:
        after = reader.rows("r", m)
        assert after.step.tolist() == before[m].step.tolist() == list(range(6 * STEPS))
        assert np.array_equal(after.value, before[m].value) and np.array_equal(after.wall_time, before[m].wall_time)
    assert all(b"tau-collector parquet_encoder" in p.read_bytes() for p in _paths(store, "r"))


def test_live_clustering_leaves_a_file_of_another_writer_and_clusters_the_rest(tmp_path):
    """The sidecar reads no file pyarrow wrote: live clustering leaves it where it is (as compaction does) and
    clusters the other files into ranges' bases and a delta; every row reads as written."""
    from tau_collector.expstore.maintain.compaction import parquet_bytes
    from tau_collector.expstore.maintain.live_clusters import LivePolicy, cluster_live

    store, writer = new_store(tmp_path)
    for c in range(3):
        writer.write_columns(f"k{c}", [_wide("r", c * STEPS, STEPS)], request_hash="h")
    foreign = _paths(store, "r")[1]
    foreign.write_bytes(parquet_bytes(pq.read_table(foreign)))
    policy = LivePolicy(wide_metrics=1, range_metrics=100, ingest_files=2)
    assert cluster_live(store, "r", policy) == 1
    for c in range(3, 5):
        writer.write_columns(f"k{c}", [_wide("r", c * STEPS, STEPS)], request_hash="h")
    assert cluster_live(store, "r", policy) == 1
    ids = [i for (i,) in store.connection().execute("SELECT file_id FROM metric_files WHERE run_id = 'r'")]
    assert foreign.stem in ids and sum(i.startswith("clustered-delta-") for i in ids) <= 1
    assert sum(i.startswith("clustered-") and not i.startswith("clustered-delta-") for i in ids) == 3  # ranges
    reader = StoreReader(store)
    for m in ("layer0000/grad_norm", "layer0150/grad_norm", "layer0299/grad_norm"):
        rows = reader.rows("r", m)
        assert rows.step.tolist() == list(range(5 * STEPS))
        assert np.array_equal(rows.value, int(m[5:9]) * 1000.0 + rows.step)


def test_live_clustering_keeps_tiered_deltas_and_merges_them_all_past_the_cap(tmp_path):
    """Each ingest adds a delta of its own files (``delta_ratio`` 0 joins none) until ``max_deltas``; the next
    merges every delta and the new files into one; every row reads as written throughout."""
    from tau_collector.expstore.maintain.live_clusters import DELTA_PREFIX, LivePolicy, cluster_live

    store, writer = new_store(tmp_path)
    policy = LivePolicy(wide_metrics=1, range_metrics=100, ingest_files=1, delta_ratio=0.0, max_deltas=3,
                        merge_fraction=100.0)
    seen = []
    for c in range(6):
        writer.write_columns(f"k{c}", [_wide("r", c * STEPS, STEPS)], request_hash="h")
        assert cluster_live(store, "r", policy) == 1
        ids = [i for (i,) in store.connection().execute("SELECT file_id FROM metric_files WHERE run_id = 'r'")]
        assert all(i.startswith("clustered-") for i in ids)
        seen.append(sum(i.startswith(DELTA_PREFIX) for i in ids))
        reader = StoreReader(store)
        for m in ("layer0000/grad_norm", "layer0150/grad_norm", "layer0299/grad_norm"):
            rows = reader.rows("r", m)
            assert rows.step.tolist() == list(range((c + 1) * STEPS))
            assert np.array_equal(rows.value, int(m[5:9]) * 1000.0 + rows.step)
    assert seen == [0, 1, 2, 3, 1, 2]


def test_an_ingest_joins_the_newest_deltas_no_larger_than_it_has_merged():
    from tau_collector.expstore.maintain.live_clusters import LivePolicy, _joining_deltas

    def deltas(*rows):
        return [(i, f"clustered-delta-{i}", "", "", "", n) for i, n in enumerate(rows)]

    policy = LivePolicy(delta_ratio=1.0, max_deltas=4)
    assert [f[5] for f in _joining_deltas(deltas(800, 400, 100, 50), 60, policy)] == [100, 50]  # 60+50+100 < 400
    assert [f[5] for f in _joining_deltas(deltas(800, 400, 100, 50), 300, policy)] == [800, 400, 100, 50]
    assert _joining_deltas(deltas(800, 400), 10, policy) == []
    # four left plus the new one would be five: all of them
    assert len(_joining_deltas(deltas(800, 400, 200, 100), 10, policy)) == 4
    assert _joining_deltas([], 10, policy) == []


def test_live_clustering_sizes_a_files_row_groups_to_its_rows(tmp_path):
    """A delta of 80,000 rows is written in about FILE_GROUPS row groups (a cold read parses each group's
    footer entry), each still whole metrics, and reads right."""
    from tau_collector.expstore.maintain.live_clusters import DELTA_PREFIX, FILE_GROUPS, LivePolicy, cluster_live

    store, writer = new_store(tmp_path)
    policy = LivePolicy(wide_metrics=1, range_metrics=500, ingest_files=1, merge_fraction=100.0)
    for c in range(2):
        writer.write_columns(f"k{c}", [_wide("r", c * STEPS, STEPS, width=2000)], request_hash="h")
        assert cluster_live(store, "r", policy) == 1
    (path,) = [store.absolute(p) for (p,) in store.connection().execute(
        "SELECT path FROM metric_files WHERE run_id = 'r' AND file_id LIKE ?", (DELTA_PREFIX + "%",))]
    meta = pq.ParquetFile(path).metadata
    assert meta.num_rows == 2000 * STEPS
    # ~FILE_GROUPS, plus one short group at the end of each merge window; 1,024-row groups would make 77
    assert meta.num_row_groups <= FILE_GROUPS + meta.num_rows // policy.window_rows + 1
    assert _groups_holding(path, "layer1234/grad_norm") and len(_groups_holding(path, "layer1234/grad_norm")) == 1
    rows = StoreReader(store).rows("r", "layer1234/grad_norm")
    assert rows.step.tolist() == list(range(2 * STEPS))
    assert np.array_equal(rows.value, 1234 * 1000.0 + rows.step)
