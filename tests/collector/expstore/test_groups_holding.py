"""The row groups a cold read of one metric decodes (:func:`series_merge.groups_holding`): found by a binary search
over the sorted statistics of the store's own files, and by looking at every group of any other file -- the same
groups either way, and every group that holds a row of the metric."""

from __future__ import annotations

import bisect

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from tau_collector.expstore.format.metric_files import metric_row_groups
from tau_collector.expstore.format.parquet_encoder import CREATED_BY, Coded, Column, encode_parquet
from tau_collector.expstore.read.series_merge import _sorted_groups_holding, groups_holding, read_slice


def _every_group(meta, metric: str) -> list[int]:
    column = meta.schema.names.index("metric_name")
    out = []
    for g in range(meta.num_row_groups):
        stats = meta.row_group(g).column(column).statistics
        if stats is None or not stats.has_min_max or stats.min <= metric <= stats.max:
            out.append(g)
    return out


def _encoded(path, names: list[str], lengths: list[int], least: int, most: int) -> list[int]:
    """A metric file as the store writes it: rows sorted by metric, groups cut by ``metric_row_groups``; the
    first row of each group."""
    metric = np.repeat(np.arange(len(names), dtype=np.int64), lengths)
    step = np.concatenate([np.arange(n, dtype=np.int64) for n in lengths])
    n = metric.size
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).tolist()
    data = encode_parquet([
        Column("project", "string", True, "p"),
        Column("run_group_id", "string", True, "g"),
        Column("run_id", "string", True, "r"),
        Column("metric_name", "string", True, Coded(names, metric), statistics=True),
        Column("step", "int64", False, step, statistics=True),
        Column("wall_time", "timestamp_us", False, step * 1000, statistics=True),
        Column("value", "double", True, metric * 1000.0 + step, statistics=True),
        Column("unit", "string", False, None),
        Column("source", "string", True, "history"),
        Column("split", "string", False, None),
        Column("tags", "json", True, "{}"),
    ], n, groups := metric_row_groups(starts, n, least=least, most=most))
    path.write_bytes(data)
    return groups


@settings(max_examples=60, deadline=None)
@given(lengths=st.lists(st.integers(1, 30), min_size=1, max_size=60), least=st.integers(1, 12),
       most=st.integers(1, 50), probe=st.integers(0, 200))
def test_the_binary_search_finds_the_groups_every_group_scan_finds(tmp_path_factory, lengths, least, most, probe):
    path = tmp_path_factory.mktemp("g") / "f.parquet"
    names = [f"m{2 * i:04d}" for i in range(len(lengths))]  # odd numbers fall between two metrics
    group_starts = _encoded(path, names, lengths, least, most)
    meta = pq.ParquetFile(path).metadata
    assert meta.created_by == CREATED_BY and meta.num_row_groups == len(group_starts)
    first_rows = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    for metric in {f"m{probe:04d}", f"m{2 * (probe % len(names)):04d}", "a", "z", names[0], names[-1]}:
        found = groups_holding(meta, metric)
        assert found == _every_group(meta, metric)
        if meta.num_row_groups > 8:  # searched, not scanned: the search did not give up on our file
            column = meta.schema.names.index("metric_name")
            assert _sorted_groups_holding(meta, column, meta.num_row_groups, metric) == found
        if metric in names:
            i = names.index(metric)
            first, last = int(first_rows[i]), int(first_rows[i]) + lengths[i] - 1
            holding = set(range(bisect.bisect_right(group_starts, first) - 1, bisect.bisect_right(group_starts, last)))
            assert holding <= set(found)  # every group with a row of it
            read = read_slice(path, metric)
            assert read.step.tolist() == list(range(lengths[i]))
            assert read.value.tolist() == [i * 1000.0 + s for s in range(lengths[i])]
        else:
            assert len(found) <= 1  # a name between two metrics falls in one group at most


def test_a_file_of_another_writer_has_every_group_looked_at(tmp_path):
    # pyarrow's groups here are not sorted by metric: a binary search would miss the metric's second group
    path = tmp_path / "f.parquet"
    order = ["m03", "m01", "m02", "m00", "m04", "m01", "m05", "m06", "m07", "m08", "m09", "m10"]
    table = pa.table({"metric_name": order, "step": list(range(len(order))), "wall_time": list(range(len(order))),
                      "value": [float(i) for i in range(len(order))]})
    pq.write_table(table, path, row_group_size=1)
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups == len(order) and meta.created_by != CREATED_BY
    assert groups_holding(meta, "m01") == [1, 5]
    assert read_slice(path, "m01").step.tolist() == [1, 5]
