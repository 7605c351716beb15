"""LevelDB log framing: the complete, checksum-verified records in the bytes of an append-only file.

The file is 32 KiB blocks, aligned to file offsets (a file header, if the format has one, takes the
first bytes of the first block). A block holds physical records ``u32 checksum | u16 length LE |
u8 type | payload``, never crossing the block's end; fewer than 7 bytes left in a block are zero
padding. A logical record is one ``FULL`` physical record or ``FIRST``, ``MIDDLE``..., ``LAST``
(LevelDB ``db/log_format.h``). W&B's ``.wandb`` transaction log is this framing behind a 7-byte
header, with an unmasked IEEE CRC-32 of the type byte and payload (:func:`wandb_checksum`);
LevelDB's own logs mask a CRC32C of the same bytes (:func:`leveldb_checksum`).

:func:`read_log` reads from a checkpoint (the start of a logical record) and stops in one of four ways:

- ``END``: the bytes end at a record boundary (or in a block's padding).
- ``TRUNCATED``: the bytes end inside a logical record (its header, its payload, or between its
  fragments): a writer is probably mid-write. The checkpoint stays where that record starts;
  read again from there later.
- ``CRC_MISMATCH``: a complete physical record whose checksum is wrong; nothing after it can be
  trusted, so the checkpoint never passes it.
- ``CORRUPT``: a complete header that cannot be one (a length its block cannot hold, an unknown
  type, fragments out of order, a file header that is not the format's).

Every length in the file is a u16 bounded by its block; a logical record is assembled only up to
``max_record_bytes`` (a longer one is verified, counted in :attr:`LogRead.skipped` and never held),
so memory never follows what the file claims.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from tau_collector.sources.masked_crc import crc32c, mask

__all__ = [
    "BLOCK_SIZE",
    "HEADER_SIZE",
    "LogRead",
    "LogStop",
    "encode_log",
    "leveldb_checksum",
    "read_log",
    "wandb_checksum",
]

BLOCK_SIZE = 32 * 1024
HEADER_SIZE = 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
_HEADER = struct.Struct("<IHB")
_TYPE_BYTES = [bytes([t]) for t in range(256)]
_WANDB_SEEDS = [zlib.crc32(b) for b in _TYPE_BYTES]

Checksum = Callable[[int, bytes | memoryview], int]


def wandb_checksum(record_type: int, payload: bytes | memoryview) -> int:
    """W&B's record checksum: IEEE CRC-32 of the type byte then the payload, unmasked."""
    return zlib.crc32(payload, _WANDB_SEEDS[record_type])


def leveldb_checksum(record_type: int, payload: bytes | memoryview) -> int:
    """LevelDB's record checksum: the masked CRC32C of the type byte then the payload."""
    return mask(crc32c(payload, crc32c(_TYPE_BYTES[record_type])))


class LogStop(StrEnum):
    END = "end"
    TRUNCATED = "truncated"
    CRC_MISMATCH = "crc_mismatch"
    CORRUPT = "corrupt"


@dataclass(slots=True)
class LogRead:
    """What one :func:`read_log` call found.

    ``records`` are ``(number, offset, payload)`` of complete logical records (numbered from 1 in the
    file; the offset of the first fragment's header); ``skipped`` are ``(number, offset, size)`` of
    verified records longer than the limit, whose payloads were not kept. ``checkpoint`` is where the
    next read starts and ``count`` the logical records before it. For a stop other than ``END``, ``error_offset`` is
    the byte where the problem is and ``message`` says what it is. ``more``: a bound, not the end of
    the readable bytes, ended the read.
    """

    checkpoint: int
    count: int
    records: list[tuple[int, int, bytes]] = field(default_factory=list)
    skipped: list[tuple[int, int, int]] = field(default_factory=list)
    stop: LogStop = LogStop.END
    error_offset: int | None = None
    message: str = ""
    more: bool = False


def encode_log(payloads: list[bytes], *, file_header: bytes = b"", checksum: Checksum = wandb_checksum) -> bytes:
    """A log holding ``payloads`` as logical records (for tools and tests; real files come from real writers)."""
    out = bytearray(file_header)
    for payload in payloads:
        pos, first = 0, True
        while True:
            left = BLOCK_SIZE - len(out) % BLOCK_SIZE
            if left < HEADER_SIZE:
                out += bytes(left)
                continue
            piece = payload[pos:pos + left - HEADER_SIZE]
            pos += len(piece)
            last = pos >= len(payload)
            kind = FULL if first and last else FIRST if first else LAST if last else MIDDLE
            out += _HEADER.pack(checksum(kind, piece), len(piece), kind) + piece
            first = False
            if last:
                break
    return bytes(out)


class _Blocks:
    """The file's blocks, read one at a time (the current one cached)."""

    __slots__ = ("data", "fd", "size", "start")

    def __init__(self, fd: int, size: int) -> None:
        self.fd, self.size, self.start, self.data = fd, size, -1, b""

    def block(self, offset: int) -> tuple[bytes, int]:
        start = offset - offset % BLOCK_SIZE
        if start != self.start:
            self.data = os.pread(self.fd, min(BLOCK_SIZE, self.size - start), start)
            self.start = start
        return self.data, offset - start


def read_log(path: str | os.PathLike[str], offset: int, count: int = 0, *, max_bytes: int, max_records: int,
             max_record_bytes: int, file_header: bytes = b"", checksum: Checksum = wandb_checksum) -> LogRead:
    """The verified logical records of ``path`` from ``offset`` (0, or an earlier checkpoint).

    Reading stops at the first record boundary at or past ``max_bytes`` from ``offset`` or after
    ``max_records`` records. At offset 0 the file must start with ``file_header``. Raises ``OSError``.
    """
    path = os.fspath(path)
    with open(path, "rb", buffering=0) as handle:
        size = os.fstat(handle.fileno()).st_size
        if offset < len(file_header):
            head = os.pread(handle.fileno(), len(file_header), 0)
            if head != file_header[:len(head)]:
                return LogRead(0, count, stop=LogStop.CORRUPT, error_offset=0,
                               message=f"{path} does not start with this log's file header {file_header!r}")
            if len(head) < len(file_header):
                return LogRead(0, count, stop=LogStop.TRUNCATED, error_offset=0,
                               message="the file header is not all written yet: read again later")
            offset = len(file_header)
        return _scan(path, _Blocks(handle.fileno(), size), offset, count, max_bytes=max_bytes,
                     max_records=max_records, max_record_bytes=max_record_bytes, checksum=checksum)


def _scan(path: str, blocks: _Blocks, offset: int, count: int, *, max_bytes: int, max_records: int,
          max_record_bytes: int, checksum: Checksum) -> LogRead:
    out = LogRead(offset, count)
    size = blocks.size
    pos = offset
    start: int | None = None  # where the logical record being assembled starts
    pieces: list[bytes] = []
    held = total = 0
    torn = False

    def stop(kind: LogStop, at: int, message: str) -> LogRead:
        out.stop, out.error_offset, out.message = kind, at, f"{path} at byte {at}: {message}"
        return out

    while True:
        left = BLOCK_SIZE - pos % BLOCK_SIZE
        if left < HEADER_SIZE:  # the block's zero padding
            if pos + left > size:
                torn = start is not None
                break
            pos += left
            continue
        data, at = blocks.block(pos)
        if pos + HEADER_SIZE > size or len(data) < at + HEADER_SIZE:
            torn = start is not None or pos < size
            break
        stored, length, kind = _HEADER.unpack_from(data, at)
        if length > left - HEADER_SIZE:
            return stop(LogStop.CORRUPT, pos, f"a record header claims {length} bytes and its block holds "
                        f"{left - HEADER_SIZE} after it; the file is corrupt from here")
        if pos + HEADER_SIZE + length > size or len(data) < at + HEADER_SIZE + length:
            torn = True
            break
        payload = data[at + HEADER_SIZE:at + HEADER_SIZE + length]
        if kind not in (FULL, FIRST, MIDDLE, LAST):
            return stop(LogStop.CORRUPT, pos, f"record type {kind} is none of FULL, FIRST, MIDDLE, LAST; "
                        "the file is corrupt from here")
        if checksum(kind, payload) != stored:
            return stop(LogStop.CRC_MISMATCH, pos, f"record checksum mismatch ({length}-byte fragment): the file "
                        "is corrupt from here; records before this offset were read, nothing after it can be trusted")
        if (kind in (FULL, FIRST)) != (start is None):
            return stop(LogStop.CORRUPT, pos, f"a {'FULL' if kind == FULL else 'FIRST' if kind == FIRST else 'later'} "
                        "record fragment out of order; the file is corrupt from here")
        if start is None:
            start, pieces, held, total = pos, [], 0, 0
        total += length
        if held + length <= max_record_bytes:
            pieces.append(payload)
            held += length
        else:
            pieces, held = [], max_record_bytes + 1  # too long: verified, not kept
        pos += HEADER_SIZE + length
        if kind in (FULL, LAST):
            out.count += 1
            if held <= max_record_bytes:
                out.records.append((out.count, start, pieces[0] if len(pieces) == 1 else b"".join(pieces)))
            else:
                out.skipped.append((out.count, start, total))
            start, pieces = None, []
            out.checkpoint = pos
            if out.count - count >= max_records or pos - offset >= max_bytes:
                out.more = pos < size
                return out
    if torn:
        at = start if start is not None else pos
        return stop(LogStop.TRUNCATED, at, "the file ends inside a record; the writer is probably mid-write: "
                    "read again from here later")
    return out
