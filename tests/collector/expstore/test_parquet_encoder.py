"""The sidecar's Parquet encoder, read back by pyarrow: the store's schema, every value, statistics, pages."""

from __future__ import annotations

import io
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tau_collector.expstore.format import parquet_encoder, schema
from tau_collector.expstore.format.parquet_encoder import Coded, Column, encode_parquet


def _columns(names, steps, walls, wall_valid, values, units, tags, *, split=None):
    return [
        Column("project", "string", True, "proj"),
        Column("run_group_id", "string", True, "g"),
        Column("run_id", "string", True, "r-1"),
        Column("metric_name", "string", True, names, statistics=True),
        Column("step", "int64", False, np.asarray(steps, dtype=np.int64), statistics=True),
        Column("wall_time", "timestamp_us", False, np.asarray(walls, dtype=np.int64), valid=wall_valid,
               statistics=True),
        Column("value", "double", True, np.asarray(values, dtype=np.float64), statistics=True),
        Column("unit", "string", False, units),
        Column("source", "string", True, "jsonl"),
        Column("split", "string", False, split),
        Column("tags", "json", True, tags),
    ]


def _expected(n, names, steps, walls, wall_valid, values, units, tags, split=None):
    def text(v):
        if isinstance(v, Coded):
            return pa.array([v.values[c] for c in v.codes.tolist()], pa.string())
        if isinstance(v, str) or v is None:
            return pa.array([v] * n, pa.string())
        return pa.array(v, pa.string())

    return pa.Table.from_arrays([
        text("proj"), text("g"), text("r-1"), text(names), pa.array(steps, pa.int64()),
        pa.array(walls, pa.int64(), mask=None if wall_valid is None else ~np.asarray(wall_valid)).cast(
            pa.timestamp("us", tz="UTC")),
        pa.array(values, pa.float64()), text(units), text("jsonl"), text(split),
        pa.array(tags, pa.json_(pa.string())),
    ], schema=schema.metric_arrow_schema())


def _assert_same(data: bytes, expected: pa.Table) -> None:
    table = pq.read_table(io.BytesIO(data))
    assert table.schema == schema.metric_arrow_schema()
    for name in table.column_names:
        got, want = table.column(name), expected.column(name)
        if name == "value":
            assert np.array_equal(got.to_numpy(), want.to_numpy(), equal_nan=True)
            assert np.array_equal(np.signbit(got.to_numpy()), np.signbit(want.to_numpy()))
        else:
            assert got.equals(want), name


def test_a_file_reads_back_with_the_stores_schema_and_every_value_across_pages_and_row_groups(monkeypatch):
    monkeypatch.setattr(parquet_encoder, "ROW_GROUP_ROWS", 2 * parquet_encoder.PAGE_ROWS + 10)
    n = 3 * parquet_encoder.PAGE_ROWS + 7  # two row groups, the first of three pages
    rng = np.random.default_rng(7)
    names = Coded(["a/loss", "b/ü", "z"], np.repeat(np.arange(3), [n // 3, n // 3, n - 2 * (n // 3)]))
    steps = np.arange(n) - 5
    walls = 1_790_000_000_000_000 + np.arange(n) * 1000
    wall_valid = rng.random(n) > 0.2
    values = rng.normal(size=n)
    values[[3, 4, 5]] = [math.nan, -0.0, math.inf]
    units = [None if i % 5 else "ratio" for i in range(n)]
    tags = [f'{{"jsonl.history_line":"{i}","k":"\\u00e9 \\"q\\""}}' for i in range(n)]
    data = encode_parquet(_columns(names, steps, walls, wall_valid, values, units, tags), n)
    assert pq.ParquetFile(io.BytesIO(data)).metadata.num_row_groups == 2
    _assert_same(data, _expected(n, names, steps, walls, wall_valid, values, units, tags))


def test_statistics_let_pyarrow_prune_by_metric_name_and_step():
    n = 1000
    names = Coded(["eval/loss", "train/loss"], np.repeat([0, 1], 500))
    values = np.linspace(-1, 1, n)
    values[10] = math.nan
    data = encode_parquet(_columns(names, np.arange(n), np.arange(n), None, values, None,
                                   ["{}"] * n), n)
    chunk = pq.ParquetFile(io.BytesIO(data)).metadata.row_group(0)
    stats = {chunk.column(i).path_in_schema: chunk.column(i).statistics for i in range(chunk.num_columns)}
    assert (stats["metric_name"].min, stats["metric_name"].max) == ("eval/loss", "train/loss")
    assert (stats["step"].min, stats["step"].max, stats["step"].null_count) == (0, 999, 0)
    assert (stats["value"].min, stats["value"].max) == (-1.0, 1.0)  # NaN is never a bound
    assert pq.read_table(io.BytesIO(data), filters=[("metric_name", "=", "train/loss")]).num_rows == 500
    assert pq.read_table(io.BytesIO(data), filters=[("step", ">", 5000)]).num_rows == 0


def test_zero_bounds_follow_the_formats_sign_rule_and_all_nan_has_no_bounds():
    zeros = encode_parquet(_columns("m", [1, 2], [1, 2], None, [0.0, 0.0], None, ["{}", "{}"]), 2)
    stats = pq.ParquetFile(io.BytesIO(zeros)).metadata.row_group(0).column(6).statistics
    assert math.copysign(1, stats.min) == -1 and math.copysign(1, stats.max) == 1
    nans = encode_parquet(_columns("m", [1], [1], None, [math.nan], None, ["{}"]), 1)
    assert not pq.ParquetFile(io.BytesIO(nans)).metadata.row_group(0).column(6).statistics.has_min_max


def test_optional_columns_may_be_all_null_and_rows_may_lack_a_wall_time():
    n = 20
    valid = np.zeros(n, dtype=bool)
    data = encode_parquet(_columns("m", np.arange(n), np.zeros(n), valid, np.ones(n), None, ["{}"] * n), n)
    table = pq.read_table(io.BytesIO(data))
    assert table.column("wall_time").null_count == n and table.column("unit").null_count == n


def test_a_null_in_a_required_column_is_refused_with_its_name():
    with pytest.raises(ValueError, match="column tags is required"):
        encode_parquet(_columns("m", [1, 2], [1, 2], None, [1.0, 2.0], None, ["{}", None]), 2)


def _TEXT(max_size: int) -> st.SearchStrategy[str]:
    # Lone surrogates cannot be UTF-8; the projection never makes them (its strings are JSON-decoded text).
    return st.text(st.characters(blacklist_categories=("Cs",)), max_size=max_size)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_TEXT(max_size=12), st.integers(-2**63, 2**63 - 1), st.booleans(),
                          st.floats(allow_nan=True), st.one_of(st.none(), _TEXT(max_size=5)),
                          _TEXT(max_size=30)), min_size=1, max_size=60))
def test_any_rows_read_back_exactly(rows):
    n = len(rows)
    names = [r[0] for r in rows]
    steps = [r[1] for r in rows]
    walls = [abs(r[1]) // 1000 for r in rows]
    wall_valid = np.array([r[2] for r in rows])
    values = [r[3] for r in rows]
    units = [r[4] for r in rows]
    tags = [r[5] for r in rows]
    split = [r[4] for r in reversed(rows)]
    data = encode_parquet(_columns(names, steps, walls, wall_valid, values, units, tags, split=split), n)
    _assert_same(data, _expected(n, names, steps, walls, wall_valid, values, units, tags, split))
