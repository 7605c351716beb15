"""TFRecord framing: the complete, CRC32C-verified frames in the bytes of an append-only file.

A frame is ``u64 length LE | u32 masked_crc32c(length bytes) | payload | u32 masked_crc32c(payload)``
(:mod:`.masked_crc`). A scan of a buffer stops in one of three ways:

- ``END``: the bytes end exactly after a frame.
- ``TRUNCATED``: the bytes end inside a frame. A writer is probably mid-write; this is not an
  error. The caller keeps :attr:`FrameScan.checkpoint` and scans again from there later.
- ``CRC_MISMATCH``: a complete header or frame whose checksum is wrong. The bytes after it
  cannot be trusted (a wrong length would misplace every later frame), so the scan stops at
  the bad frame's offset and never advances past it.

:func:`read_block` reads a file in bounded blocks. A frame's length is never trusted beyond
what the file holds: a header that claims more bytes than follow it is a truncated tail (the
caller decides whether a live writer will still complete it), and a complete frame longer than
``max_record_bytes`` is checked in pieces and skipped, never read whole. rustboard ``tf_record.rs``.
"""

from __future__ import annotations

import functools
import os
import re
import struct
from dataclasses import dataclass
from enum import StrEnum
from operator import itemgetter
from typing import NamedTuple

import numpy as np

from tau_collector.sources.masked_crc import MASK_DELTA, crc32c, mask, masked_crc32c, unmask_array

__all__ = [
    "DEFAULT_MAX_RECORD_BYTES",
    "FOOTER_SIZE",
    "HEADER_SIZE",
    "Block",
    "FrameGroup",
    "FrameIndex",
    "FrameScan",
    "StopReason",
    "encode_frame",
    "index_frames",
    "masked_crc32c",
    "read_block",
    "read_new_bytes",
    "scan_file",
    "scan_frames",
]

HEADER_SIZE = 12  # u64 length + u32 masked crc of the length
FOOTER_SIZE = 4  # u32 masked crc of the payload
# A record longer than this is verified in pieces and skipped: no scalar event comes near it.
DEFAULT_MAX_RECORD_BYTES = 16 * 1024 * 1024

_U32 = 0xFFFFFFFF
_HEADER = struct.Struct("<QI")
_FOOTER = struct.Struct("<I")
_MAX_CACHED_HEADERS = 4096
_COPY_LIMIT = 64 * 1024
_PIECE = 1 << 20


def encode_frame(payload: bytes) -> bytes:
    """One TFRecord frame around ``payload`` (for tools and tests; real files come from real writers)."""
    length = struct.pack("<Q", len(payload))
    header = length + struct.pack("<I", masked_crc32c(length))
    return header + payload + struct.pack("<I", masked_crc32c(payload))


class StopReason(StrEnum):
    END = "end"
    TRUNCATED = "truncated"
    CRC_MISMATCH = "crc_mismatch"


class FrameScan:
    """The verified frames of a buffer and how the scan stopped (made by :func:`scan_frames`).

    ``frames`` are ``(frame_offset, payload)`` in file order. ``checkpoint`` is the file offset
    just past the last verified frame (where a later scan resumes); for ``TRUNCATED`` and
    ``CRC_MISMATCH`` it is also where the incomplete or bad frame starts, ``message`` explains
    it, and ``needed`` is how many bytes from ``checkpoint`` that frame spans, as far as known.
    """

    __slots__ = ("checkpoint", "frames", "message", "needed", "stop")

    def __init__(self, frames: list[tuple[int, bytes | memoryview]], stop: StopReason, checkpoint: int,
                 needed: int = 0, message: str = "") -> None:
        self.frames = frames
        self.stop = stop
        self.checkpoint = checkpoint
        self.needed = needed
        self.message = message

    def __repr__(self) -> str:
        return (f"FrameScan(frames={len(self.frames)}, stop={self.stop.value}, "
                f"checkpoint={self.checkpoint}, needed={self.needed})")


def _header_crc_message() -> str:
    return ("frame header (length) CRC32C mismatch: the file is corrupt from here; "
            "frames before this offset were read, nothing after it can be trusted")


def _payload_crc_message(length: int) -> str:
    return (f"record payload CRC32C mismatch ({length}-byte record): the file is corrupt from here; "
            "frames before this offset were read, nothing after it can be trusted")


def _truncated_frame_message(length: int) -> str:
    return f"file ends inside a {length}-byte record; the writer is probably mid-write: read again from here later"


def _truncated_header_message(left: int) -> str:
    return (f"file ends {left} bytes into a 12-byte frame header; the writer is probably mid-write: "
            "read again from here later")


def scan_frames(data: bytes | bytearray | memoryview, base_offset: int = 0) -> FrameScan:
    """Find the verified frames of ``data``, which holds a file's bytes from ``base_offset`` on.

    ``base_offset`` must be a frame boundary (0 or an earlier checkpoint); all offsets in the
    result are file offsets. Payloads up to 64 KiB are ``bytes`` (a copy cheaper than the CRC
    over it, hashable and faster to parse); larger ones are zero-copy ``memoryview`` slices of
    ``data`` when it is ``bytes`` (of a one-time copy otherwise).
    The whole buffer is scanned in one call: a per-frame generator would cost more than the
    CRC itself on small scalar events.
    """
    # One loop over bytes: a bytearray or memoryview is copied once (memcpy is far cheaper than
    # the CRC pass), which keeps the per-frame path free of type checks.
    raw = data if isinstance(data, bytes) else bytes(data)
    view = memoryview(raw)
    size = len(raw)
    unpack_header = _HEADER.unpack_from
    unpack_footer = _FOOTER.unpack_from
    crc = crc32c
    delta, u32, copy_limit, header_size = MASK_DELTA, _U32, _COPY_LIMIT, HEADER_SIZE
    # Writers repeat the same few record lengths; a header already verified needs no CRC.
    verified_headers: dict[bytes, int] = {}
    frames: list[tuple[int, bytes | memoryview]] = []
    append = frames.append
    pos = 0
    last_header_start = size - header_size
    last_footer_start = size - FOOTER_SIZE
    while pos <= last_header_start:
        header = raw[pos:pos + header_size]
        length = verified_headers.get(header)
        if length is None:
            length, stored = unpack_header(raw, pos)
            c = crc(view[pos:pos + 8])
            if (((c >> 15) | (c << 17)) + delta) & u32 != stored:
                return FrameScan(frames, StopReason.CRC_MISMATCH, base_offset + pos, HEADER_SIZE,
                                 _header_crc_message())
            if len(verified_headers) < _MAX_CACHED_HEADERS:
                verified_headers[header] = length
        end = pos + header_size + length
        if end > last_footer_start:
            return FrameScan(frames, StopReason.TRUNCATED, base_offset + pos,
                             HEADER_SIZE + length + FOOTER_SIZE, _truncated_frame_message(length))
        payload = raw[pos + header_size:end] if length <= copy_limit else view[pos + header_size:end]
        c = crc(payload)
        if (((c >> 15) | (c << 17)) + delta) & u32 != unpack_footer(raw, end)[0]:
            return FrameScan(frames, StopReason.CRC_MISMATCH, base_offset + pos,
                             HEADER_SIZE + length + FOOTER_SIZE, _payload_crc_message(length))
        append((base_offset + pos, payload))
        pos = end + 4
    if pos < size:
        return FrameScan(frames, StopReason.TRUNCATED, base_offset + pos, HEADER_SIZE,
                         _truncated_header_message(size - pos))
    return FrameScan(frames, StopReason.END, base_offset + pos)


class FrameGroup(NamedTuple):
    """The verified frames of one payload length: ``frames[k]`` is frame ``rows[k]`` of the index, whole
    (header, payload, footer) as a row of an ``(n, length + 16)`` uint8 array."""

    length: int
    rows: np.ndarray
    frames: np.ndarray

    @property
    def payloads(self) -> np.ndarray:
        return self.frames[:, HEADER_SIZE:HEADER_SIZE + self.length]


class FrameIndex:
    """Where the verified frames of a buffer are, as arrays (made by :func:`index_frames`).

    ``starts`` are the frames' offsets in the buffer and ``lengths`` their payload lengths (the
    payload of frame ``i`` is ``data[starts[i] + 12 : starts[i] + 12 + lengths[i]]``); ``groups``
    hold the same frames grouped by payload length, as 2-D arrays a bulk decoder reads column by
    column. ``stop``, ``checkpoint`` (a file offset), ``needed`` and ``message`` mean what they
    mean in :class:`FrameScan`.
    """

    __slots__ = ("checkpoint", "groups", "lengths", "message", "needed", "starts", "stop")

    def __init__(self, starts: np.ndarray, lengths: np.ndarray, groups: list[FrameGroup], stop: StopReason,
                 checkpoint: int, needed: int = 0, message: str = "") -> None:
        self.starts = starts
        self.lengths = lengths
        self.groups = groups
        self.stop = stop
        self.checkpoint = checkpoint
        self.needed = needed
        self.message = message

    def __len__(self) -> int:
        return len(self.starts)

    def first(self, count: int, base_offset: int) -> FrameIndex:
        """The index of the first ``count`` frames only (``base_offset``: the buffer's file offset)."""
        if count >= len(self):
            return self
        groups = [FrameGroup(g.length, g.rows[keep], g.frames[keep]) for g in self.groups
                  if (keep := g.rows < count).any()]
        checkpoint = base_offset + int(self.starts[count])
        return FrameIndex(self.starts[:count], self.lengths[:count], groups, StopReason.END, checkpoint)


_XOR_BATCH_MIN = 8  # fewer frames of one length are checked one by one
_XOR_BATCH_MAX_LENGTH = 4096  # longer payloads (images, histograms) are checked one by one


def _group_frames(frames: list[bytes], lengths: np.ndarray) -> list[FrameGroup]:
    order = np.argsort(lengths, kind="stable")
    sorted_lengths = lengths[order]
    bounds = np.flatnonzero(np.diff(sorted_lengths)) + 1
    groups = []
    for rows in np.split(order, bounds) if len(order) else []:
        length = int(lengths[rows[0]])
        joined = b"".join(itemgetter(*rows.tolist())(frames)) if len(rows) > 1 else frames[int(rows[0])]
        matrix = np.frombuffer(joined, dtype=np.uint8).reshape(len(rows), length + HEADER_SIZE + FOOTER_SIZE)
        groups.append(FrameGroup(length, rows, matrix))
    return groups


def _first_bad_payload(groups: list[FrameGroup]) -> int:
    """Index of the first frame whose payload CRC32C differs from its stored one, or -1.

    CRC32C is affine over GF(2): for ``n`` payloads of one length ``L``, the XOR of their CRCs
    is the CRC of the XOR of the payloads, plus ``crc32c(L zero bytes)`` when ``n`` is even.
    So one library call per payload length checks all of them at once (an XOR reduction over
    the group's rows does the byte work); only a length whose check fails is checked frame by
    frame to find the first bad one. The batch check catches every corruption the per-frame
    check catches, except corruptions of several frames whose CRC differences cancel out
    exactly -- the same 2**-32 chance with which a random multi-byte corruption of one frame
    keeps its CRC.
    """
    first_bad = -1
    for group in groups:
        length = group.length
        stored = np.ascontiguousarray(group.frames[:, HEADER_SIZE + length:]).view("<u4")[:, 0].astype(np.uint64)
        crcs = unmask_array(stored)
        payloads = group.payloads
        if len(group.rows) >= _XOR_BATCH_MIN and length <= _XOR_BATCH_MAX_LENGTH:
            expected = crc32c(np.bitwise_xor.reduce(payloads, axis=0).tobytes())
            if len(group.rows) % 2 == 0:
                expected ^= crc32c(bytes(length))
            if int(np.bitwise_xor.reduce(crcs)) == expected:
                continue
        computed = np.fromiter((crc32c(row) for row in payloads), dtype=np.uint64, count=len(group.rows))
        bad = np.flatnonzero(computed != crcs)
        if bad.size and (first_bad < 0 or group.rows[bad[0]] < first_bad):
            first_bad = int(group.rows[bad[0]])
    return first_bad


_MAX_PATTERN_HEADERS = 64


@functools.lru_cache(maxsize=256)
def _frame_patterns(headers: tuple[tuple[bytes, int], ...]) -> tuple[re.Pattern[bytes], re.Pattern[bytes]]:
    """Regexes over frames whose headers are ``headers`` (verified header, payload length).

    The first matches the longest run of such frames from a position (possessive: no
    backtracking state); the second matches one such frame, so ``findall`` over a run gives
    its frames in order. Cached: every block of a file learns the same headers in the same order.
    """
    one = b"|".join(re.escape(header) + b".{%d}" % (length + FOOTER_SIZE) for header, length in headers)
    return re.compile(b"(?:" + one + b")*+", re.DOTALL), re.compile(one, re.DOTALL)


def index_frames(data: bytes, base_offset: int = 0) -> FrameIndex:
    """:func:`scan_frames` for bulk readers: the same frames and stop, as arrays grouped by length.

    Writers repeat a few frame lengths, so after a few frames are walked by hand (verifying each
    new header's CRC), runs of frames with already verified headers are matched by a regex in C,
    and the payload CRCs are checked in batches, one per payload length (:func:`_first_bad_payload`).
    A frame whose payload CRC fails ends the index there, exactly as in ``scan_frames``.
    """
    raw = data
    size = len(raw)
    unpack_header = _HEADER.unpack_from
    header_size = HEADER_SIZE
    headers: dict[bytes, int] = {}
    run_pattern = frame_pattern = None
    frames: list[bytes] = []  # every verified-header frame, whole, in file order
    pos = 0
    last_header_start = size - header_size
    last_footer_start = size - FOOTER_SIZE
    stop, needed, message = StopReason.END, 0, ""
    while pos <= last_header_start:
        if run_pattern is not None:
            end = run_pattern.match(raw, pos).end()
            if end > pos:
                frames += frame_pattern.findall(raw, pos, end)
                pos = end
                continue
        # One frame by hand: a header not seen yet, a frame cut by the end, or a bad header.
        header = raw[pos:pos + header_size]
        length = headers.get(header)
        if length is None:
            length, stored = unpack_header(raw, pos)
            if masked_crc32c(raw[pos:pos + 8]) != stored:
                stop, needed, message = StopReason.CRC_MISMATCH, HEADER_SIZE, _header_crc_message()
                break
        end = pos + header_size + length
        if end > last_footer_start:
            stop, needed = StopReason.TRUNCATED, HEADER_SIZE + length + FOOTER_SIZE
            message = _truncated_frame_message(length)
            break
        frames.append(raw[pos:end + FOOTER_SIZE])
        pos = end + FOOTER_SIZE
        if header not in headers and len(headers) < _MAX_PATTERN_HEADERS:
            headers[header] = length
            run_pattern, frame_pattern = _frame_patterns(tuple(headers.items()))
    else:
        if pos < size:
            stop, needed, message = StopReason.TRUNCATED, HEADER_SIZE, _truncated_header_message(size - pos)
    frame_sizes = np.fromiter(map(len, frames), dtype=np.int64, count=len(frames))
    start_a = np.cumsum(frame_sizes) - frame_sizes
    length_a = frame_sizes - (header_size + FOOTER_SIZE)
    groups = _group_frames(frames, length_a)
    del frames
    first = _first_bad_payload(groups)
    if first >= 0:
        pos = int(start_a[first])
        stop, needed = StopReason.CRC_MISMATCH, HEADER_SIZE + int(length_a[first]) + FOOTER_SIZE
        message = _payload_crc_message(int(length_a[first]))
        start_a, length_a = start_a[:first], length_a[:first]
        groups = [FrameGroup(g.length, g.rows[keep], g.frames[keep]) for g in groups
                  if (keep := g.rows < first).any()]
    return FrameIndex(start_a, length_a, groups, stop, base_offset + pos, needed, message)




def read_new_bytes(path: str | os.PathLike[str], offset: int, max_bytes: int | None = None) -> bytes:
    """The bytes of ``path`` from ``offset`` on (at most ``max_bytes``), in one ``read()``."""
    with open(path, "rb", buffering=0) as f:
        f.seek(offset)
        if max_bytes is None:
            return f.read()
        return f.read(max_bytes)


def scan_file(path: str | os.PathLike[str], offset: int = 0, max_bytes: int | None = None) -> FrameScan:
    """:func:`scan_frames` over the bytes of ``path`` from ``offset`` (a frame boundary), read at once.

    With ``max_bytes``, a frame cut by the bound reads as ``TRUNCATED``: scan again from the
    checkpoint with a bound of at least ``needed`` (tools and tests; readers use :func:`read_block`).
    """
    return scan_frames(read_new_bytes(path, offset, max_bytes), offset)


@dataclass(slots=True)
class Block:
    """One bounded read of a file from a frame boundary: its verified frames and where to go on.

    ``scan`` holds the frames (a :class:`FrameScan`, or a :class:`FrameIndex` for bulk readers).
    ``skipped`` is the size of a record longer than the record limit that starts the block and
    was verified in pieces instead of read (0 otherwise; ``scan`` is then empty). ``more`` says
    the bound, not the file, ended the block: continue from ``checkpoint``. Otherwise ``stop``
    tells how the file ended: ``END``, ``TRUNCATED`` (inside a frame: ``claimed`` bytes from
    ``checkpoint`` on, of which only ``available`` exist) or ``CRC_MISMATCH``.
    """

    offset: int
    data: bytes
    scan: FrameScan | FrameIndex
    file_size: int
    more: bool = False
    skipped: int = 0

    @property
    def checkpoint(self) -> int:
        return self.offset + self.skipped if self.skipped else self.scan.checkpoint

    @property
    def stop(self) -> StopReason:
        return StopReason.END if self.more or self.skipped else self.scan.stop

    @property
    def claimed(self) -> int:
        return self.scan.needed

    @property
    def available(self) -> int:
        return self.file_size - self.scan.checkpoint

    @property
    def message(self) -> str:
        return self.scan.message


def _empty(index: bool, offset: int, stop: StopReason = StopReason.END, needed: int = 0,
           message: str = "") -> FrameScan | FrameIndex:
    if index:
        empty = np.zeros(0, dtype=np.int64)
        return FrameIndex(empty, empty, [], stop, offset, needed, message)
    return FrameScan([], stop, offset, needed, message)


def read_block(path: str | os.PathLike[str], offset: int, *, max_bytes: int, index: bool = False,
               end_offset: int | None = None, max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES) -> Block:
    """The verified frames of ``path`` within ``max_bytes`` from ``offset`` (a frame boundary).

    At least one frame is read when the file holds it whole, however long (up to
    ``max_record_bytes``; a longer one is checked in pieces and skipped). Nothing is read past
    ``end_offset`` or the end of the file, whatever a header claims. ``index`` gives a
    :class:`FrameIndex` (bulk readers) instead of a :class:`FrameScan`. Raises ``OSError``.
    """
    with open(path, "rb", buffering=0) as handle:
        size = os.fstat(handle.fileno()).st_size
        limit = size if end_offset is None else min(size, end_offset)
        available = limit - offset
        if available <= 0:
            return Block(offset, b"", _empty(index, offset), size)
        scan_of = index_frames if index else scan_frames
        data = os.pread(handle.fileno(), min(max(max_bytes, HEADER_SIZE), available), offset)
        scan = scan_of(data, offset)
        if not len(scan.frames if not index else scan) and scan.stop is StopReason.TRUNCATED \
                and len(data) < available and scan.needed > len(data):
            # The first frame does not fit in the block: read it whole if the file holds it.
            if scan.needed > available:
                return Block(offset, data, scan, limit)
            if scan.needed > max_record_bytes + HEADER_SIZE + FOOTER_SIZE:
                return _skip_record(handle, offset, scan.needed, index, limit)
            data = os.pread(handle.fileno(), scan.needed, offset)
            scan = scan_of(data, offset)
        end = offset + len(data)
        more = end < limit and scan.stop is not StopReason.CRC_MISMATCH and (
            scan.stop is StopReason.END or scan.checkpoint + scan.needed <= limit)
        if scan.stop is StopReason.TRUNCATED and scan.needed == HEADER_SIZE and not more and end < limit:
            # The block ended inside the last, partial header; the file holds a few more of its bytes.
            scan.message = _truncated_header_message(limit - scan.checkpoint)
        return Block(offset, data, scan, limit, more=more)


def _skip_record(handle, offset: int, size: int, index: bool, limit: int) -> Block:
    """Verify one record longer than the record limit piece by piece; a block that skips it."""
    length = size - HEADER_SIZE - FOOTER_SIZE
    crc = 0
    position = offset + HEADER_SIZE
    end = position + length
    while position < end:
        piece = os.pread(handle.fileno(), min(_PIECE, end - position), position)
        if not piece:  # the file shrank under us: a tail to read again later
            return Block(offset, b"", _empty(index, offset, StopReason.TRUNCATED, size,
                                             _truncated_frame_message(length)), limit)
        crc = crc32c(piece, crc)
        position += len(piece)
    footer = os.pread(handle.fileno(), FOOTER_SIZE, end)
    if len(footer) < FOOTER_SIZE or mask(crc) != _FOOTER.unpack(footer)[0]:
        return Block(offset, b"", _empty(index, offset, StopReason.CRC_MISMATCH, size, _payload_crc_message(length)),
                     limit)
    return Block(offset, b"", _empty(index, offset), limit, more=end + FOOTER_SIZE < limit, skipped=size)
