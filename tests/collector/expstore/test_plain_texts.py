"""Text rows built in bulk (:class:`PlainTexts`): the same rows, and the same file bytes, as row by row."""

from __future__ import annotations

import io

import numpy as np
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from tau_collector.expstore.format import parquet_encoder
from tau_collector.expstore.format.parquet_encoder import Column, PlainTexts, encode_parquet

PARTS = [('{"a":"x","jsonl.history_line":"', '","z":"é€"}'), ("", ""), ('{"k":"', '"}')]


def _row_by_row(parts, key, numbers):
    return [f"{parts[k][0]}{n}{parts[k][1]}" for k, n in zip(key.tolist(), numbers.tolist(), strict=True)]


def _file(tags, n):
    return encode_parquet([Column("step", "int64", True, np.arange(n, dtype=np.int64)),
                           Column("tags", "json", True, tags)], n)


# segments (key, first number, rows): numbers ascend within a segment, across digit-count boundaries
segments = st.lists(st.tuples(st.integers(0, len(PARTS) - 1), st.integers(0, 10 ** 12), st.integers(1, 40)),
                    min_size=1, max_size=12)


@settings(max_examples=60, deadline=None)
@given(segments, st.integers(1, 25))
def test_bulk_rows_equal_row_by_row_rows_and_file_bytes(segs, page_rows):
    key = np.concatenate([np.full(m, k, dtype=np.int64) for k, _, m in segs])
    numbers = np.concatenate([np.arange(first, first + m, dtype=np.int64) for _, first, m in segs])
    expected = _row_by_row(PARTS, key, numbers)
    old_rows = parquet_encoder._SEGMENT_ROWS
    parquet_encoder._SEGMENT_ROWS = 1  # bulk whatever the segments' lengths
    old_page = parquet_encoder.PAGE_ROWS
    parquet_encoder.PAGE_ROWS = page_rows  # pages cut through the buffer anywhere
    try:
        plain = PlainTexts.around_numbers(PARTS, key, numbers)
        assert plain is not None and len(plain) == len(key)
        assert plain.rows() == expected
        n = len(key)
        data = _file(plain, n)
        assert data == _file(expected, n)  # byte for byte the file row-by-row text makes
        assert pq.read_table(io.BytesIO(data)).column("tags").to_pylist() == expected
        order = np.random.default_rng(n).permutation(n)
        assert plain.take(order).rows() == [expected[i] for i in order.tolist()]
    finally:
        parquet_encoder._SEGMENT_ROWS = old_rows
        parquet_encoder.PAGE_ROWS = old_page


def test_digit_count_boundaries():
    numbers = np.array([0, 9, 10, 99, 100, 999_999, 1_000_000, 10 ** 18 - 1, 10 ** 18], dtype=np.int64)
    key = np.zeros(len(numbers), dtype=np.int64)
    old = parquet_encoder._SEGMENT_ROWS
    parquet_encoder._SEGMENT_ROWS = 1
    try:
        assert PlainTexts.around_numbers(PARTS, key, numbers).rows() == _row_by_row(PARTS, key, numbers)
    finally:
        parquet_encoder._SEGMENT_ROWS = old


def test_short_segments_and_negative_numbers_are_left_to_the_row_by_row_way():
    key = np.array([0, 1] * 20, dtype=np.int64)  # a segment a row
    assert PlainTexts.around_numbers(PARTS, key, np.arange(40, dtype=np.int64)) is None
    key = np.zeros(40, dtype=np.int64)
    assert PlainTexts.around_numbers(PARTS, key, np.arange(-1, 39, dtype=np.int64)) is None
    assert PlainTexts.around_numbers(PARTS, key, np.arange(40, dtype=np.int64)) is not None
    assert PlainTexts.around_numbers(PARTS, key[:0], np.arange(0, dtype=np.int64)) is None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=12), min_size=0, max_size=60), st.integers(1, 40), st.randoms(use_true_random=False))
def test_take_gathers_block_by_block_the_same_rows(texts, block, rnd):
    """``take`` gathers a bounded block of bytes at a time (its byte indices are 8 bytes each); blocks smaller
    than a row, rows of one length and of many lengths give the rows a whole gather gives."""
    encoded = [t.encode() for t in texts]
    bounds = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum([4 + len(b) for b in encoded], out=bounds[1:])
    data = np.frombuffer(b"".join(len(b).to_bytes(4, "little") + b for b in encoded), dtype=np.uint8)
    plain = PlainTexts(data.copy(), bounds)
    order = list(range(len(texts))) * 2
    rnd.shuffle(order)
    old = parquet_encoder._TAKE_BLOCK_BYTES
    parquet_encoder._TAKE_BLOCK_BYTES = block
    try:
        taken = plain.take(np.array(order, dtype=np.int64))
        assert taken.rows() == [texts[i] for i in order]
        uniform = PlainTexts(np.zeros(8 * len(order), dtype=np.uint8) + 1, np.arange(0, 8 * len(order) + 1, 8))
        assert uniform.take(np.array(order[::-1], dtype=np.int64)).data.tolist() == [1] * 8 * len(order)
    finally:
        parquet_encoder._TAKE_BLOCK_BYTES = old
