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
from collections.abc import Iterator
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
]

HEADER_SIZE = 12  # u64 length + u32 masked crc of the length
FOOTER_SIZE = 4  # u32 masked crc of the payload

_MASK_DELTA = 0xA282EAD8
_U32 = 0xFFFFFFFF
_HEADER = struct.Struct("<QI")
_FOOTER = struct.Struct("<I")


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
    """Iterates ``(frame_offset, payload)`` over the verified frames of ``data``, then says why it stopped.

    ``data`` holds the file's bytes from file offset ``base_offset`` on, and ``base_offset`` must be a
    frame boundary (0 or an earlier checkpoint). Offsets yielded and reported are file offsets.
    Payloads are zero-copy ``memoryview`` slices of ``data``: use them before ``data`` goes away.

    After iteration: ``stop`` is the :class:`StopReason`; ``checkpoint`` is the file offset just past
    the last verified frame (where a later scan resumes); for ``TRUNCATED`` and ``CRC_MISMATCH``,
    ``checkpoint`` is also where the incomplete or bad frame starts, ``message`` explains it and
    ``needed`` is how many bytes from ``checkpoint`` the incomplete frame spans (as far as known).
    """

    __slots__ = ("_data", "base_offset", "checkpoint", "frames", "message", "needed", "stop")

    def __init__(self, data: bytes | bytearray | memoryview, base_offset: int = 0) -> None:
        self._data = data if isinstance(data, memoryview) else memoryview(data)
        self.base_offset = base_offset
        self.stop: StopReason | None = None
        self.checkpoint = base_offset
        self.frames = 0
        self.message = ""
        self.needed = 0

    def __iter__(self) -> Iterator[tuple[int, memoryview]]:
        data = self._data
        size = len(data)
        base = self.base_offset
        unpack_header = _HEADER.unpack_from
        unpack_footer = _FOOTER.unpack_from
        crc = crc32c
        pos = 0
        while True:
            if pos == size:
                self.stop = StopReason.END
                return
            if size - pos < HEADER_SIZE:
                self._stopped(pos, StopReason.TRUNCATED, HEADER_SIZE,
                              f"file ends {size - pos} bytes into a 12-byte frame header; "
                              "the writer is probably mid-write: read again from here later")
                return
            length, stored = unpack_header(data, pos)
            c = crc(data[pos:pos + 8])
            if (((c >> 15) | (c << 17)) + _MASK_DELTA) & _U32 != stored:
                self._stopped(pos, StopReason.CRC_MISMATCH, HEADER_SIZE,
                              "frame header (length) CRC32C mismatch: the file is corrupt from here; "
                              "frames before this offset were read, nothing after it can be trusted")
                return
            end = pos + HEADER_SIZE + length
            if end + FOOTER_SIZE > size:
                self._stopped(pos, StopReason.TRUNCATED, HEADER_SIZE + length + FOOTER_SIZE,
                              f"file ends inside a {length}-byte record; the writer is probably "
                              "mid-write: read again from here later")
                return
            payload = data[pos + HEADER_SIZE:end]
            c = crc(payload)
            if (((c >> 15) | (c << 17)) + _MASK_DELTA) & _U32 != unpack_footer(data, end)[0]:
                self._stopped(pos, StopReason.CRC_MISMATCH, HEADER_SIZE + length + FOOTER_SIZE,
                              f"record payload CRC32C mismatch ({length}-byte record): the file is "
                              "corrupt from here; frames before this offset were read, nothing after "
                              "it is trusted")
                return
            yield base + pos, payload
            pos = end + FOOTER_SIZE
            # Advance the checkpoint only after the consumer took the frame: a consumer that
            # stops iterating early must not checkpoint past a frame it never saw.
            self.checkpoint = base + pos
            self.frames += 1

    def _stopped(self, pos: int, stop: StopReason, needed: int, message: str) -> None:
        self.stop = stop
        self.checkpoint = self.base_offset + pos
        self.needed = needed
        self.message = message


def read_new_bytes(path: str | os.PathLike[str], offset: int, max_bytes: int | None = None) -> bytes:
    """The bytes of ``path`` from ``offset`` on (at most ``max_bytes``), in one ``read()``."""
    with open(path, "rb", buffering=0) as f:
        f.seek(offset)
        if max_bytes is None:
            return f.read()
        return f.read(max_bytes)
