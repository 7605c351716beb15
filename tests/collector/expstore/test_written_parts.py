"""The columns a writer keeps of the files it wrote (``format/written_parts.py``) are what reading the file gives,
and a compaction merging them instead of reading the files back writes the same rows."""

from __future__ import annotations

import numpy as np
import pytest

from tau_collector.expstore import StoreReader, open_store
from tau_collector.expstore.format.parquet_encoder import Coded, Column, PlainTexts, encode_parquet
from tau_collector.expstore.format.parquet_reader import CodedTexts, NumberColumn, read_metric_file
from tau_collector.expstore.format.written_parts import RecentParts, part_of_columns
from tau_collector.expstore.maintain.compaction import CompactionPolicy
from tau_collector.expstore.write.writer import MetricWriter, RunColumns


def _rows(column) -> list:
    if isinstance(column, NumberColumn):
        valid = np.ones(len(column.values), bool) if column.valid is None else column.valid
        return [v if ok else None for v, ok in zip(column.values.tolist(), valid.tolist(), strict=True)]
    if isinstance(column, CodedTexts):
        return [None if c < 0 else column.values[c] for c in column.codes.tolist()]
    return column.rows()


def _columns(n: int) -> list[Column]:
    rng = np.random.default_rng(7)
    wall_valid = rng.random(n) > 0.3
    walls = np.where(wall_valid, 1_700_000_000_000_000 + np.arange(n), 99)  # a null row's value is not read
    tags = PlainTexts(np.frombuffer(b"".join(len(t).to_bytes(4, "little") + t.encode()
                                             for t in (f'{{"k":"{i % 3}"}}' for i in range(n))), np.uint8).copy(),
                      np.arange(0, n + 1, dtype=np.int64) * 13)
    return [
        Column("project", "string", True, "p"),
        Column("run_group_id", "string", True, Coded(["g1", "g0"], np.zeros(n, np.int64))),
        Column("run_id", "string", True, ["r"] * n),
        Column("metric_name", "string", True, Coded(["a", "b"], np.repeat([0, 1], [n // 2, n - n // 2])),
               statistics=True),
        Column("step", "int64", False, np.arange(n, dtype=np.int64) * 3, statistics=True),
        Column("wall_time", "timestamp_us", False, walls, valid=wall_valid, statistics=True),
        Column("value", "double", True, np.where(np.arange(n) % 5 == 0, np.nan, rng.random(n)), statistics=True),
        Column("unit", "string", False, None),
        Column("source", "string", True, ["history", "summary"] * (n // 2) + ["history"] * (n % 2)),
        Column("split", "string", False, [None if i % 4 else "train" for i in range(n)]),
        Column("tags", "json", True, tags),
    ]


@pytest.mark.parametrize("n", [1, 8, 301])
def test_a_kept_part_is_what_reading_the_file_gives(tmp_path, n):
    columns = _columns(n)
    path = tmp_path / "f.parquet"
    path.write_bytes(encode_parquet(columns, n))
    rows, read = read_metric_file(path)
    kept = part_of_columns(columns, n)
    assert rows == n and set(kept) == set(read)
    for name in read:
        assert type(kept[name]) is type(read[name]), name
        expected, got = _rows(read[name]), _rows(kept[name])
        if name == "value":
            np.testing.assert_array_equal(np.array(got, float), np.array(expected, float))  # NaN == NaN here
        else:
            assert got == expected, name
    assert (kept["wall_time"].valid is None) == (read["wall_time"].valid is None)  # None: every row has one


def test_recent_parts_are_bounded_by_rows_and_taken_once():
    parts = RecentParts(10)
    parts.put("a", 4, {"x": 1})
    parts.put("b", 4, {"x": 2})
    parts.put("c", 4, {"x": 3})  # 12 rows: the oldest goes
    parts.put("huge", 11, {"x": 4})  # more than the bound: never kept
    assert parts.take("a") is None and parts.take("huge") is None
    assert parts.take("b") == {"x": 2}
    assert parts.take("b") is None
    assert len(parts) == 1
    with pytest.raises(ValueError, match="max_rows"):
        RecentParts(-1)


def _chunk(run: str, first: int, value_offset: float) -> RunColumns:
    step = np.repeat(np.arange(first, first + 3, dtype=np.int64), 2)
    return RunColumns(project="p", experiment_id="e", run_group_id="g", run_id=run, names=["loss", "acc"],
                      metric=np.tile(np.array([0, 1], np.int32), 3), step=step, wall_time=1_000_000 + step,
                      value=step * 1.0 + value_offset, tags=['{"a":"1"}'] * 6, tag_sets=[{"a": "1"}],
                      source="history", unit=["u", None] * 3)


def test_an_in_process_compaction_of_kept_parts_writes_the_rows_a_read_back_merge_does(tmp_path):
    policy = CompactionPolicy(min_files=4, grace_seconds=0.0)
    series = {}
    for name, keep in (("kept", True), ("read", False)):
        store = open_store(tmp_path / name, create=True)
        writer = MetricWriter(store, compaction=policy)
        if not keep:
            writer._written = None  # the same writer reading every file back, as before the parts were kept
        for i in range(40):  # overlapping steps re-sent with other values: the last written wins
            writer.write_columns(f"k{i}", [_chunk("r", (i * 2) % 50, i / 100)], request_hash="h")
        files = store.connection().execute("SELECT count(*) FROM metric_files WHERE run_id = 'r'").fetchone()[0]
        assert files < 40  # compaction ran
        reader = StoreReader(store)
        series[name] = {m: (list(reader.rows("r", m).step), list(reader.rows("r", m).value)) for m in ("loss", "acc")}
        if keep:
            assert len(writer._written) <= policy.max_merge_rows
        store.close()
    assert series["kept"] == series["read"]
    assert series["kept"]["loss"][0] == list(range(0, 51))
