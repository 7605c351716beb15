"""A merge joins the tags file by file (:mod:`.joined_texts`): the same merged file, byte for byte, as the merge that
concatenated every file's columns and took them in merged order -- and it holds the tags about twice, not three times.

The reference is ``merged_columns`` with the tags concatenated and taken, as before the join (commit 2207aed).
"""

from __future__ import annotations

import gc
import itertools
import tracemalloc
import weakref

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tau_collector.expstore.format.metric_files import metric_row_groups
from tau_collector.expstore.format.parquet_encoder import Column, PlainTexts, encode_parquet
from tau_collector.expstore.format.parquet_reader import read_metric_file
from tau_collector.expstore.maintain import compaction
from tau_collector.expstore.maintain import joined_texts as joined_module
from tau_collector.expstore.maintain.compaction import ForeignFileError, _metric_starts, keep_rows, merged_columns
from tau_collector.expstore.maintain.joined_texts import joined_texts


def _concatenated(parts: list[dict], name: str, order: np.ndarray) -> PlainTexts:
    """What the merge did before the join: every file's texts concatenated, then taken in merged order."""
    offsets = np.cumsum([0, *(len(p[name].data) for p in parts)]).tolist()
    bounds = np.concatenate([[0], *(p[name].bounds[1:] + offset for p, offset in zip(parts, offsets, strict=False))])
    return PlainTexts(np.concatenate([p[name].data for p in parts]), bounds.astype(np.int64)).take(order)


def _reference(parts: list[dict], files: list[tuple]):
    """``merged_columns`` with the tags concatenated and taken (:func:`_concatenated`) instead of joined."""
    joined = compaction.joined_texts
    compaction.joined_texts = _concatenated
    try:
        return merged_columns(parts, files)
    finally:
        compaction.joined_texts = joined


# -- random files ------------------------------------------------------------------------------------------

TAGS = st.one_of(
    st.text(max_size=40),
    st.sampled_from(['{}', '{"jsonl.history_line":"7"}', '{"k":"é€ 😀"}', ""]),
)


@st.composite
def file_rows(draw):
    """One metric file's rows: few metrics, re-sent and missing steps and times, nullable unit and split."""
    n = draw(st.integers(1, 30))  # the encoder writes no file of 0 rows
    metric = draw(st.lists(st.sampled_from(["a", "b", "c/d", "é"]), min_size=n, max_size=n))
    step = draw(st.lists(st.one_of(st.none(), st.integers(-3, 12)), min_size=n, max_size=n))
    wall = draw(st.lists(st.one_of(st.none(), st.integers(0, 4)), min_size=n, max_size=n))
    unit = draw(st.lists(st.sampled_from([None, "s", "ms"]), min_size=n, max_size=n))
    split = draw(st.sampled_from([None, "eval", "mixed"]))
    tags = draw(st.one_of(
        st.lists(TAGS, min_size=n, max_size=n),
        st.builds(lambda t: [t] * n, TAGS),  # one length for every row: the reader's 2-D path
    ))
    ordered = draw(st.booleans())  # written files are sorted by metric and step; others may come in any order
    rows = list(zip(metric, step, wall, unit, tags, strict=True))
    if ordered:
        rows.sort(key=lambda r: (r[0], r[1] is None, r[1] or 0))
    return rows, split


def _write(path, rows, split) -> None:
    n = len(rows)
    metric, step, wall, unit, tags = (list(c) for c in zip(*rows, strict=True)) if rows else ([], [], [], [], [])
    split_values = ([None if i % 2 else "eval" for i in range(n)] if split == "mixed"
                    else (split if split is not None else None))
    columns = [
        Column("project", "string", True, "p"),
        Column("run_group_id", "string", True, "g"),
        Column("run_id", "string", True, "r"),
        Column("metric_name", "string", True, metric, statistics=True),
        Column("step", "int64", False, np.array([s or 0 for s in step], dtype=np.int64),
               valid=np.array([s is not None for s in step], dtype=bool), statistics=True),
        Column("wall_time", "timestamp_us", False, np.array([w or 0 for w in wall], dtype=np.int64),
               valid=np.array([w is not None for w in wall], dtype=bool), statistics=True),
        Column("value", "double", True, np.arange(n, dtype=np.float64) / 7, statistics=True),
        Column("unit", "string", False, unit),
        Column("source", "string", True, "tensorboard" if n % 2 else "jsonl"),
        Column("split", "string", False, split_values),
        Column("tags", "json", True, tags),
    ]
    path.write_bytes(encode_parquet(columns, n))


def _parts(paths, keep):
    """Each file read back as a merge reads it; ``keep``: some files cut to a subset of rows, as a metric range
    read cuts them (their tags then a taken copy)."""
    parts = []
    for path, subset in zip(paths, keep, strict=True):
        part = read_metric_file(path)[1]
        if subset is not None:
            rows = len(part["value"].values)
            part = keep_rows(part, np.array(sorted({i % rows for i in subset}) if rows else [], dtype=np.int64))
        parts.append(part)
    return parts


_NAMES = itertools.count()


def _file_bytes(merged) -> bytes:
    rows, columns, _names, metric = merged[:4]
    return encode_parquet(columns, rows, metric_row_groups(_metric_starts(metric), rows) if rows else None)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(file_rows(), st.one_of(st.none(), st.lists(st.integers(0, 60), max_size=20))),
                min_size=1, max_size=6),
       st.sampled_from([1, 8, 1 << 20]), st.sampled_from([1, 64, 1 << 17]))
def test_a_merge_writes_the_bytes_the_concatenating_merge_wrote(tmp_path, drawn, run_rows, block_bytes):
    paths = []
    for (rows, split), _ in drawn:
        path = tmp_path / f"f{next(_NAMES)}.parquet"  # tmp_path is the same for every example
        _write(path, rows, split)
        paths.append(path)
    keep = [subset for _, subset in drawn]
    files = [(i, f"file-{i}") for i in range(len(paths))]
    # both ways of copying a file's rows (stretch by stretch, byte index by block), blocks cut anywhere
    old = joined_module._RUN_ROWS, joined_module._BLOCK_BYTES
    joined_module._RUN_ROWS, joined_module._BLOCK_BYTES = run_rows, block_bytes
    try:
        try:
            want = _reference(_parts(paths, keep), files)
        except (ForeignFileError, ValueError) as exc:
            expected_error = type(exc)
        else:
            expected_error = None
        parts = _parts(paths, keep)
        if expected_error is not None:
            try:
                merged_columns(parts, files)
            except expected_error:
                return
            raise AssertionError(f"the reference raised {expected_error.__name__}, the merge did not")
        got = merged_columns(parts, files)
    finally:
        joined_module._RUN_ROWS, joined_module._BLOCK_BYTES = old
    assert parts == [None] * len(parts)  # consumed: each file's part released once joined
    assert got[0] == want[0]
    assert got[1][-1].values.rows() == want[1][-1].values.rows()
    assert np.array_equal(got[1][-1].values.bounds, want[1][-1].values.bounds)
    assert got[2] == want[2]
    for a, b in zip(got[3:], want[3:], strict=True):
        assert (a is None and b is None) or np.array_equal(a, b, equal_nan=True)
    if got[0]:
        assert _file_bytes(got) == _file_bytes(want)


def _tags_part(rows: int, first: int) -> dict:
    texts = [f'{{"jsonl.history_file":"chunk-{first:08d}.jsonl","jsonl.history_line":"{i}","x":"{"y" * 200}"}}'
             for i in range(rows)]
    data = b"".join(len(t).to_bytes(4, "little") + t.encode() for t in texts)
    bounds = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum([4 + len(t) for t in texts], out=bounds[1:])
    return {"tags": PlainTexts(np.frombuffer(data, dtype=np.uint8).copy(), bounds)}


def test_the_join_releases_each_part_and_holds_the_tags_about_twice_not_three_times():
    files, rows_each = 40, 300  # 12,000 rows of ~260-byte tags, four metrics interleaved as a merge sorts them
    parts = [_tags_part(rows_each, f) for f in range(files)]
    total = sum(len(p["tags"].data) for p in parts)
    data_refs = [weakref.ref(p["tags"].data) for p in parts]
    metric = np.tile(np.repeat(np.arange(4), rows_each // 4), files)
    order = np.lexsort((np.arange(len(metric)), metric))
    expected = _concatenated(parts, "tags", order).rows()
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        joined = joined_texts(parts, "tags", order)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert joined.rows() == expected
    assert parts == [None] * files and all(ref() is None for ref in data_refs)
    # the parts (held before) and the result; the concatenating merge held a third copy beside them
    assert peak - before <= 1.15 * total, (peak - before, total)
