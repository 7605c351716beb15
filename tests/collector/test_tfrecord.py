"""TFRecord framing: verified frames only, truncated tails wait, bad checksums stop at their offset."""

from __future__ import annotations

import io
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tensorboard.compat.tensorflow_stub import errors as tb_errors
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import PyRecordReader_New
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c as tb_masked_crc32c
from tensorboard.summary.writer.record_writer import RecordWriter

from tau_collector.sources.tf_record import (
    FOOTER_SIZE,
    HEADER_SIZE,
    StopReason,
    encode_frame,
    index_frames,
    masked_crc32c,
    read_block,
    read_new_bytes,
    scan_file,
    scan_frames,
)


def tensorboard_framed(payloads: list[bytes]) -> bytes:
    """The bytes TensorBoard's own RecordWriter writes for ``payloads``."""
    buf = io.BytesIO()
    writer = RecordWriter(buf)
    for payload in payloads:
        writer.write(payload)
    return buf.getvalue()


def frame_offsets(payloads: list[bytes]) -> list[int]:
    offsets, pos = [], 0
    for payload in payloads:
        offsets.append(pos)
        pos += HEADER_SIZE + len(payload) + FOOTER_SIZE
    return offsets


PAYLOADS = [b"", b"a", b"brain.Event:2", bytes(range(256)) * 3, b"\x00" * 40]


@pytest.mark.parametrize("data", [b"", b"a", b"123456789", bytes(range(256)) * 17])
def test_masked_crc32c_equals_tensorboards_reference(data):
    assert masked_crc32c(data) == tb_masked_crc32c(data)


def test_masked_crc32c_of_a_known_vector():
    # CRC32C("123456789") is the standard check value 0xE3069283; masking rotates right 15 and adds.
    c = 0xE3069283
    assert masked_crc32c(b"123456789") == (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def test_frames_written_by_tensorboard_are_found_with_their_offsets_and_payloads():
    scan = scan_frames(tensorboard_framed(PAYLOADS))
    assert scan.stop is StopReason.END
    assert [bytes(p) for _, p in scan.frames] == PAYLOADS
    assert [o for o, _ in scan.frames] == frame_offsets(PAYLOADS)
    assert scan.checkpoint == len(tensorboard_framed(PAYLOADS))


def test_encode_frame_is_byte_identical_to_tensorboards_writer():
    assert b"".join(encode_frame(p) for p in PAYLOADS) == tensorboard_framed(PAYLOADS)


def test_tensorboards_reader_reads_encoded_frames(tmp_path):
    path = tmp_path / "records"
    path.write_bytes(b"".join(encode_frame(p) for p in PAYLOADS))
    reader = PyRecordReader_New(str(path))
    got = []
    while True:
        try:
            reader.GetNext()
        except tb_errors.OutOfRangeError:
            break
        got.append(reader.record())
    assert got == PAYLOADS


def test_empty_buffer_is_a_clean_end_at_the_base_offset():
    scan = scan_frames(b"", base_offset=1234)
    assert scan.stop is StopReason.END
    assert scan.frames == []
    assert scan.checkpoint == 1234


def test_offsets_are_file_offsets_when_scanning_from_a_checkpoint():
    data = tensorboard_framed(PAYLOADS)
    first = frame_offsets(PAYLOADS)[2]
    scan = scan_frames(data[first:], base_offset=first)
    assert [o for o, _ in scan.frames] == frame_offsets(PAYLOADS)[2:]
    assert scan.checkpoint == len(data)


def test_a_file_ending_inside_a_header_is_truncated_at_that_frame():
    data = tensorboard_framed(PAYLOADS)
    cut = frame_offsets(PAYLOADS)[3] + 5
    scan = scan_frames(data[:cut])
    assert scan.stop is StopReason.TRUNCATED
    assert len(scan.frames) == 3
    assert scan.checkpoint == frame_offsets(PAYLOADS)[3]
    assert scan.needed == HEADER_SIZE
    assert "mid-write" in scan.message


def test_a_file_ending_inside_a_payload_reports_the_whole_frame_size_needed():
    data = tensorboard_framed(PAYLOADS)
    start = frame_offsets(PAYLOADS)[3]
    scan = scan_frames(data[: start + HEADER_SIZE + 10])
    assert scan.stop is StopReason.TRUNCATED
    assert scan.checkpoint == start
    assert scan.needed == HEADER_SIZE + len(PAYLOADS[3]) + FOOTER_SIZE


def test_truncation_at_every_offset_yields_exactly_the_complete_frames_before_it():
    data = tensorboard_framed(PAYLOADS)
    ends = [o + HEADER_SIZE + len(p) + FOOTER_SIZE for o, p in zip(frame_offsets(PAYLOADS), PAYLOADS, strict=True)]
    for cut in range(len(data) + 1):
        scan = scan_frames(data[:cut])
        complete = sum(1 for end in ends if end <= cut)
        assert [bytes(p) for _, p in scan.frames] == PAYLOADS[:complete], cut
        assert scan.checkpoint == (ends[complete - 1] if complete else 0), cut
        assert scan.stop is (StopReason.END if cut in (0, *ends) else StopReason.TRUNCATED), cut


def test_header_crc_mismatch_stops_at_the_frame_offset_without_advancing():
    data = bytearray(tensorboard_framed(PAYLOADS))
    bad = frame_offsets(PAYLOADS)[2]
    data[bad + 9] ^= 0x01  # inside the stored CRC of the length
    scan = scan_frames(bytes(data))
    assert scan.stop is StopReason.CRC_MISMATCH
    assert scan.checkpoint == bad
    assert [bytes(p) for _, p in scan.frames] == PAYLOADS[:2]
    assert "header" in scan.message


def test_a_corrupt_length_is_caught_by_the_header_crc_not_read_as_a_huge_record():
    data = bytearray(tensorboard_framed(PAYLOADS))
    bad = frame_offsets(PAYLOADS)[1]
    data[bad + 7] = 0x7F  # the length's high byte: a record far beyond the end of the file
    scan = scan_frames(bytes(data))
    assert scan.stop is StopReason.CRC_MISMATCH
    assert scan.checkpoint == bad


def test_payload_crc_mismatch_stops_at_the_frame_offset():
    data = bytearray(tensorboard_framed(PAYLOADS))
    bad = frame_offsets(PAYLOADS)[3]
    data[bad + HEADER_SIZE + 100] ^= 0x80
    scan = scan_frames(bytes(data))
    assert scan.stop is StopReason.CRC_MISMATCH
    assert scan.checkpoint == bad
    assert len(scan.frames) == 3
    assert "payload" in scan.message


def test_a_same_length_frame_after_a_cached_header_is_still_payload_checked():
    payloads = [b"x" * 40] * 5
    data = bytearray(tensorboard_framed(payloads))
    bad = frame_offsets(payloads)[4]
    data[bad + HEADER_SIZE] ^= 0x01
    scan = scan_frames(bytes(data))
    assert scan.stop is StopReason.CRC_MISMATCH
    assert scan.checkpoint == bad
    assert len(scan.frames) == 4


def test_memoryview_and_bytearray_inputs_give_the_same_frames():
    data = tensorboard_framed(PAYLOADS)
    for variant in (memoryview(data), bytearray(data)):
        scan = scan_frames(variant)
        assert scan.stop is StopReason.END
        assert [bytes(p) for _, p in scan.frames] == PAYLOADS


def test_large_payloads_of_a_bytes_input_are_zero_copy_views_of_it():
    big = os.urandom(200_000)
    data = tensorboard_framed([b"small", big])
    scan = scan_frames(data)
    small_payload, big_payload = (p for _, p in scan.frames)
    assert isinstance(small_payload, bytes)
    assert isinstance(big_payload, memoryview)
    assert big_payload.obj is data
    assert big_payload == big


def test_read_new_bytes_reads_from_an_offset_and_respects_a_bound(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"0123456789")
    assert read_new_bytes(path, 3) == b"3456789"
    assert read_new_bytes(path, 3, max_bytes=4) == b"3456"
    assert read_new_bytes(path, 10) == b""


payload_lists = st.lists(st.binary(max_size=300), max_size=12)


@settings(max_examples=200, deadline=None)
@given(payloads=payload_lists, data=st.data())
def test_property_any_truncation_yields_the_verified_prefix(payloads, data):
    framed = tensorboard_framed(payloads)
    cut = data.draw(st.integers(0, len(framed)))
    scan = scan_frames(framed[:cut])
    ends = [o + HEADER_SIZE + len(p) + FOOTER_SIZE for o, p in zip(frame_offsets(payloads), payloads, strict=True)]
    complete = sum(1 for end in ends if end <= cut)
    assert [bytes(p) for _, p in scan.frames] == payloads[:complete]
    assert scan.stop is not StopReason.CRC_MISMATCH
    # Resuming from the checkpoint with the full file finds exactly the remaining frames.
    rest = scan_frames(framed[scan.checkpoint:], base_offset=scan.checkpoint)
    assert [bytes(p) for _, p in scan.frames + rest.frames] == payloads
    assert rest.stop is StopReason.END


@settings(max_examples=300, deadline=None)
@given(payloads=payload_lists.filter(bool), data=st.data())
def test_property_a_single_corrupt_byte_stops_exactly_at_its_frame(payloads, data):
    framed = bytearray(tensorboard_framed(payloads))
    where = data.draw(st.integers(0, len(framed) - 1))
    flip = data.draw(st.integers(1, 255))
    framed[where] ^= flip
    scan = scan_frames(bytes(framed))
    offsets = frame_offsets(payloads)
    hit = max(i for i, o in enumerate(offsets) if o <= where)
    # CRC32C catches every error burst of up to 32 bits, so the bad frame is always detected.
    assert scan.stop is StopReason.CRC_MISMATCH
    assert scan.checkpoint == offsets[hit]
    assert [bytes(p) for _, p in scan.frames] == payloads[:hit]


def test_scan_file_reads_from_a_checkpoint_offset(tmp_path):
    path = tmp_path / "records"
    data = tensorboard_framed(PAYLOADS)
    path.write_bytes(data[: frame_offsets(PAYLOADS)[4] + 3])
    first = scan_file(path)
    assert first.stop is StopReason.TRUNCATED and len(first.frames) == 4
    path.write_bytes(data)
    rest = scan_file(path, first.checkpoint)
    assert rest.stop is StopReason.END
    assert [(o, bytes(p)) for o, p in rest.frames] == [(frame_offsets(PAYLOADS)[4], PAYLOADS[4])]


# --- index_frames: the bulk readers' scan ------------------------------------------------------------------


def assert_index_equals_scan(data: bytes, base: int = 0) -> None:
    scan = scan_frames(data, base)
    index = index_frames(data, base)
    assert (index.starts + base).tolist() == [offset for offset, _ in scan.frames]
    assert index.lengths.tolist() == [len(payload) for _, payload in scan.frames]
    assert (index.stop, index.checkpoint, index.needed, index.message) == (
        scan.stop, scan.checkpoint, scan.needed, scan.message)


_payload_sets = st.lists(st.binary(min_size=0, max_size=40), min_size=0, max_size=30)


@settings(max_examples=300, deadline=None)  # a property, not a timing: shared machines stall for seconds
@given(payloads=_payload_sets, repeat=st.integers(1, 40), data=st.data())
def test_property_index_frames_finds_what_scan_frames_finds(payloads, repeat, data):
    # Repeated payload sets give the many equal-length frames the batched CRC check groups.
    raw = bytearray(tensorboard_framed(payloads * repeat))
    if raw and data.draw(st.booleans()):
        raw[data.draw(st.integers(0, len(raw) - 1))] ^= data.draw(st.integers(1, 255))
    if data.draw(st.booleans()):
        del raw[data.draw(st.integers(0, len(raw))):]
    assert_index_equals_scan(bytes(raw), data.draw(st.sampled_from([0, 4096])))


def test_index_frames_with_more_distinct_lengths_than_its_patterns_hold():
    payloads = [bytes(n) for n in range(200)] * 3
    raw = bytearray(tensorboard_framed(payloads))
    assert_index_equals_scan(bytes(raw))
    raw[len(raw) * 3 // 4] ^= 0x40
    assert_index_equals_scan(bytes(raw))


def test_index_frames_catches_a_corruption_in_a_batch_of_equal_length_frames():
    raw = bytearray(tensorboard_framed([b"x" * 30] * 1000))
    for where in (12 + 5, 46 * 500 + 20, len(raw) - 6):
        bad = bytearray(raw)
        bad[where] ^= 0x01
        assert_index_equals_scan(bytes(bad))
        assert index_frames(bytes(bad)).stop is StopReason.CRC_MISMATCH


@pytest.mark.parametrize("index", [False, True])
def test_a_block_ending_inside_the_last_partial_header_counts_the_files_bytes(tmp_path, index):
    """The truncated-tail message counts the header bytes the file holds, not those in the block read."""
    first, last = encode_frame(b"a" * 30), encode_frame(b"b" * 20)
    path = tmp_path / "events"
    path.write_bytes(first + last + last[:9])  # the file ends 9 bytes into a header
    start = len(first)
    # A block from the last whole frame that stops 4 bytes short of the file's end.
    block = read_block(path, start, max_bytes=len(last) + 5, index=index)
    assert block.scan.stop is StopReason.TRUNCATED and block.scan.checkpoint == start + len(last)
    assert not block.more
    assert "ends 9 bytes into a 12-byte frame header" in block.scan.message
    whole = read_block(path, start, max_bytes=1 << 20, index=index)
    assert whole.scan.message == block.scan.message
