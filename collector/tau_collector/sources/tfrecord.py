"""TFRecord framing: find the complete, CRC32C-verified frames in the bytes of an append-only file.

A frame is ``u64 length LE | u32 masked_crc32c(length bytes) | payload | u32 masked_crc32c(payload)``
with ``masked(c) = ((c >> 15 | c << 17) + 0xa282ead8) mod 2**32``. A scan stops in one of three ways:

- ``END``: the bytes end exactly after a frame.
- ``TRUNCATED``: the bytes end inside a frame. A writer is probably mid-write; this is not an
  error. The caller keeps :attr:`FrameScan.checkpoint` and scans again from there later.
- ``CRC_MISMATCH``: a complete header or frame whose checksum is wrong. The bytes after it
  cannot be trusted (a wrong length would misplace every later frame), so the scan stops at
  the bad frame's offset and never advances past it.
"""

from __future__ import annotations

import os
import struct
from enum import StrEnum

from crc32c import crc32c

__all__ = [
    "FOOTER_SIZE",
    "HEADER_SIZE",
    "FrameScan",
    "StopReason",
    "encode_frame",
    "masked_crc32c",
    "read_new_bytes",
    "scan_file",
    "scan_frames",
]

HEADER_SIZE = 12  # u64 length + u32 masked crc of the length
FOOTER_SIZE = 4  # u32 masked crc of the payload

_MASK_DELTA = 0xA282EAD8
_U32 = 0xFFFFFFFF
_HEADER = struct.Struct("<QI")
_FOOTER = struct.Struct("<I")
_MAX_CACHED_HEADERS = 4096
_COPY_LIMIT = 64 * 1024


def masked_crc32c(data: bytes | bytearray | memoryview) -> int:
    """The masked CRC32C TFRecord stores; masking keeps a CRC of CRC-bearing data from being trivial."""
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + _MASK_DELTA) & _U32


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
    delta, u32, copy_limit, header_size = _MASK_DELTA, _U32, _COPY_LIMIT, HEADER_SIZE
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
                                 "frame header (length) CRC32C mismatch: the file is corrupt from here; "
                                 "frames before this offset were read, nothing after it can be trusted")
            if len(verified_headers) < _MAX_CACHED_HEADERS:
                verified_headers[header] = length
        end = pos + header_size + length
        if end > last_footer_start:
            return FrameScan(frames, StopReason.TRUNCATED, base_offset + pos,
                             HEADER_SIZE + length + FOOTER_SIZE,
                             f"file ends inside a {length}-byte record; the writer is probably "
                             "mid-write: read again from here later")
        payload = raw[pos + header_size:end] if length <= copy_limit else view[pos + header_size:end]
        c = crc(payload)
        if (((c >> 15) | (c << 17)) + delta) & u32 != unpack_footer(raw, end)[0]:
            return FrameScan(frames, StopReason.CRC_MISMATCH, base_offset + pos,
                             HEADER_SIZE + length + FOOTER_SIZE,
                             f"record payload CRC32C mismatch ({length}-byte record): the file is "
                             "corrupt from here; frames before this offset were read, nothing after "
                             "it can be trusted")
        append((base_offset + pos, payload))
        pos = end + 4
    if pos < size:
        return FrameScan(frames, StopReason.TRUNCATED, base_offset + pos, HEADER_SIZE,
                         f"file ends {size - pos} bytes into a 12-byte frame header; the writer is "
                         "probably mid-write: read again from here later")
    return FrameScan(frames, StopReason.END, base_offset + pos)


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
    checkpoint with a bound of at least ``needed``.
    """
    return scan_frames(read_new_bytes(path, offset, max_bytes), offset)
