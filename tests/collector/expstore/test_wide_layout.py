"""Wide runs: a metric file's row groups are cut at metric boundaries, so one metric is read without the
others -- as written by a delivery and after compaction -- and a wide chunk's summaries are right."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow.parquet as pq
from hypothesis import given
from hypothesis import strategies as st

from tau_collector.expstore import StoreReader
from tau_collector.expstore.compaction import CompactionPolicy, compact_run
from tau_collector.expstore.metric_files import metric_row_groups
from tau_collector.expstore.writer import RunColumns

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
