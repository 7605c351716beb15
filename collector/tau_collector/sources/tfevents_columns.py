"""Bulk reading of a TensorBoard event file into scalar columns: the reader behind ``taunotebook import``.

It reads exactly what :func:`tfevents.read_segment` reads -- the same verified frames, scalars,
restarts, dropped counts, problems and run memory -- but returns the scalars as arrays instead of
one :class:`~tfevents.ScalarObservation` per point. The frames tensorboardX and torch write for
``add_scalar`` are byte-for-byte the canonical encoding of a one-``simple_value`` event
(``09 <f64 wall_time> [10 <varint step>] KEY <f32 value>``, see ``_canonical_scalar_key``); those are
recognised and decoded for all frames at once with numpy: the step varints, the wall times and the
values are gathered as arrays and the tag-dependent ``KEY`` bytes are grouped so that each distinct
key is looked up once. Every other frame -- and the first frame of a tag the run has not shown yet,
which registers its key exactly as the per-frame reader does -- goes through the same protobuf
decoder as :func:`read_segment`, in file order, so the run memory evolves identically.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..records import ProblemKind, SourceProblem
from .tfevents import (
    DEFAULT_CHUNK_BYTES,
    RunMemory,
    SegmentBatch,
    TensorBoardRun,
    _cyclic_gc_paused,
    _decode_event,
)
from .tfrecord import FOOTER_SIZE, HEADER_SIZE, FrameIndex, StopReason, index_frames, read_new_bytes

__all__ = ["ScalarColumns", "read_block_columns"]

_FAST_MAX = 4096  # as in tfevents: longer payloads are not single scalars
_MAX_VARINT = 9  # a ten-byte step varint is a negative int64: left to protobuf, as in tfevents
# Odd 64-bit multipliers for hashing key bytes (a hash only groups rows; equality is checked byte for byte).
_KEY_MULTIPLIERS = np.random.default_rng(0x7A0).integers(1, 2**63, size=_FAST_MAX, dtype=np.uint64) | np.uint64(1)


@dataclass(slots=True)
class ScalarColumns:
    """The scalars of one block in file order (``record`` then value order within a record).

    ``metric`` indexes ``names`` (the run-prefixed metric names); ``record`` is the frame's
    1-based number in its file and ``offset`` its file offset, as in ``ScalarObservation``.
    """

    names: list[str]
    metric: np.ndarray  # int32
    step: np.ndarray  # int64
    wall_time: np.ndarray  # float64 seconds since the epoch
    value: np.ndarray  # float64
    record: np.ndarray  # int64
    offset: np.ndarray  # int64

    def __len__(self) -> int:
        return len(self.metric)


def _gather(u8: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    """Rows of ``width`` bytes starting at each of ``starts``: an ``(n, width)`` uint8 array."""
    return u8[starts[:, None] + np.arange(width, dtype=np.int64)]


def _varints(u8: np.ndarray, at: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(value, byte length) of the varint at each of ``at``, looking at ``width`` bytes; length 0: no end seen.

    Bytes past the buffer read as its last byte: the caller rejects a varint that does not end
    before its payload's key, so what they are does not matter.
    """
    raw = u8[np.minimum(at[:, None] + np.arange(width, dtype=np.int64), len(u8) - 1)].astype(np.int64)
    last = raw < 0x80
    length = np.where(last.any(axis=1), last.argmax(axis=1) + 1, 0)
    used = np.arange(width) < length[:, None]
    value = (((raw & 0x7F) << (7 * np.arange(width, dtype=np.int64))) * used).sum(axis=1)
    return value, length


def _step_varints(u8: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The step varints at ``at``: (value, byte length), length 0 where the fast path does not take it.

    Steps below 2**21 (three bytes) are read first; only the rest look at up to ten bytes, and a
    ten-byte varint (a negative int64) is left to protobuf, as in ``tfevents``.
    """
    value, length = _varints(u8, at, 3)
    longer = np.flatnonzero(length == 0)
    if longer.size:
        value[longer], length[longer] = _varints(u8, at[longer], _MAX_VARINT + 1)
        length[length > _MAX_VARINT] = 0
    return value, length


def _key_groups(u8: np.ndarray, starts: np.ndarray, widths: np.ndarray) -> tuple[np.ndarray, list[bytes]]:
    """Group equal byte strings ``u8[starts[i] : starts[i] + widths[i]]``: (group per row, bytes per group).

    A row whose bytes differ from its hash group's first row (a hash collision) gets group -1.
    """
    group = np.full(len(starts), -1, dtype=np.int64)
    keys: list[bytes] = []
    for width in np.unique(widths).tolist():
        rows = np.flatnonzero(widths == width)
        matrix = _gather(u8, starts[rows], width)
        hashes = (matrix.astype(np.uint64) * _KEY_MULTIPLIERS[:width]).sum(axis=1, dtype=np.uint64)
        _, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
        same = (matrix == matrix[first[inverse]]).all(axis=1)
        group[rows[same]] = inverse[same] + len(keys)
        keys.extend(matrix[i].tobytes() for i in first.tolist())
    return group, keys


def _decode_block(run: TensorBoardRun, path: str, data: bytes, frames: FrameIndex, first_record: int,
                  base_offset: int, batch: SegmentBatch, memory: RunMemory) -> ScalarColumns:
    u8 = np.frombuffer(data, dtype=np.uint8)
    payloads = frames.starts + HEADER_SIZE
    sizes = frames.lengths
    count = len(payloads)
    key_of = np.full(count, -1, dtype=np.int64)
    step = np.zeros(count, dtype=np.int64)
    keys: list[bytes] = []
    candidates = np.flatnonzero((sizes > 14) & (sizes <= _FAST_MAX))
    if candidates.size:
        candidates = candidates[u8[payloads[candidates]] == 0x09]
    if candidates.size:
        p = payloads[candidates]
        with_step = u8[p + 9] == 0x10
        varint, varint_len = _step_varints(u8, p + 10)
        key_start = np.where(with_step, 10 + varint_len, 9)
        key_width = sizes[candidates] - FOOTER_SIZE - key_start
        ok = (~with_step | (varint_len > 0)) & (key_width >= 1)
        candidates, p, key_start, key_width = candidates[ok], p[ok], key_start[ok], key_width[ok]
        step[candidates] = np.where(with_step[ok], varint[ok], 0)
        groups, keys = _key_groups(u8, p + key_start, key_width)
        key_of[candidates] = groups
    key_names = [memory.scalar_layouts.get(key) for key in keys]
    # A frame whose key is known now is decoded from the arrays. A key not yet known is known after
    # protobuf decodes its first frame (which registers it), so only that first frame waits for it.
    # (The extra False at the end is what key -1, "no key", indexes.)
    known = np.array([name is not None for name in key_names] + [False], dtype=bool)
    fast = known[key_of]
    has_key = np.flatnonzero(key_of >= 0)
    present, first_index = np.unique(key_of[has_key], return_index=True)
    first_seen = np.zeros(len(keys), dtype=np.int64)
    first_seen[present] = has_key[first_index]
    unknown_keys = np.flatnonzero(~known[:-1])
    waiting = (key_of >= 0) & ~fast
    waiting[first_seen[unknown_keys]] = False
    slow = ~fast & ~waiting

    def decode(indices: np.ndarray) -> None:
        for i in indices.tolist():
            start = int(payloads[i])
            _decode_event(run, path, data[start:start + int(sizes[i])], first_record + i,
                          base_offset + int(frames.starts[i]), batch, memory)

    decode(np.flatnonzero(slow))
    if waiting.any():
        for key in unknown_keys.tolist():
            key_names[key] = memory.scalar_layouts.get(keys[key])
        now_known = np.array([name is not None for name in key_names] + [False], dtype=bool)
        fast |= waiting & now_known[key_of]
        decode(np.flatnonzero(waiting & ~now_known[key_of]))

    # Fast frames: one scalar each, read from the arrays.
    rows = np.flatnonzero(fast)
    code_of: dict[str, int] = {}
    key_code = np.full(len(keys) + 1, -1, dtype=np.int32)
    for key in np.unique(key_of[rows]).tolist():
        name = key_names[key]
        key_code[key] = code_of.setdefault(name, len(code_of))
    p = payloads[rows]
    fast_cols = (
        key_code[key_of[rows]],
        step[rows],
        _gather(u8, p + 1, 8).view("<f8").reshape(-1),
        _gather(u8, p + sizes[rows] - 4, 4).view("<f4").reshape(-1).astype(np.float64),
        rows + first_record,
        frames.starts[rows] + base_offset,
    )
    # Slow frames: whatever protobuf found (several values per event are possible).
    slow_obs = batch.observations
    batch.observations = []
    slow_codes = np.array([code_of.setdefault(o.metric, len(code_of)) for o in slow_obs], dtype=np.int32)
    slow_cols = (
        slow_codes,
        np.array([o.step for o in slow_obs], dtype=np.int64),
        np.array([o.wall_time for o in slow_obs], dtype=np.float64),
        np.array([o.value for o in slow_obs], dtype=np.float64),
        np.array([o.record for o in slow_obs], dtype=np.int64),
        np.array([o.offset for o in slow_obs], dtype=np.int64),
    )
    columns = [np.concatenate(pair) for pair in zip(fast_cols, slow_cols, strict=True)]
    if slow_obs:
        order = np.argsort(columns[4], kind="stable")
        columns = [c[order] for c in columns]
    return ScalarColumns(list(code_of), *columns)


def read_block_columns(
    run: TensorBoardRun,
    path: str,
    *,
    memory: RunMemory,
    offset: int = 0,
    records_before: int = 0,
    max_bytes: int = DEFAULT_CHUNK_BYTES,
) -> tuple[SegmentBatch, ScalarColumns]:
    """Read the frames of ``path`` that lie within ``max_bytes`` from ``offset`` (a frame boundary).

    Like ``read_segment(..., max_bytes=...)``: the batch's ``more`` says the bound, not the file,
    ended the block (continue from ``checkpoint`` with ``records_before=batch.records``); a frame
    larger than the bound is read whole. The scalars are in the returned columns, not in
    ``batch.observations``. Blocks are cut deterministically by the file's bytes.
    """
    batch = SegmentBatch(path, offset, offset, records_before, StopReason.END.value)
    want = max(max_bytes, HEADER_SIZE)
    while True:
        try:
            data = read_new_bytes(path, offset, want)
        except OSError as exc:
            batch.stop = "unreadable"
            batch.problems.append(SourceProblem(
                path, ProblemKind.UNREADABLE,
                f"cannot read event file ({exc.strerror or exc}); reading resumes from byte {offset} "
                "once the file is readable again",
                offset=offset,
            ))
            return batch, ScalarColumns([], *(np.zeros(0, dtype=t) for t in ("i4", "i8", "f8", "f8", "i8", "i8")))
        frames = index_frames(data, offset)
        if len(frames) == 0 and frames.stop is StopReason.TRUNCATED and len(data) == want:
            want = max(want * 2, frames.needed)  # one frame larger than the block: read it whole
            continue
        break
    with _cyclic_gc_paused():
        columns = _decode_block(run, path, data, frames, records_before + 1, offset, batch, memory)
    batch.checkpoint = frames.checkpoint
    batch.records = records_before + len(frames)
    if frames.stop is StopReason.TRUNCATED and len(data) == want:
        batch.more = True
    elif frames.stop is StopReason.TRUNCATED:
        batch.stop = StopReason.TRUNCATED.value
        batch.problems.append(SourceProblem(path, ProblemKind.TRUNCATED, frames.message,
                                            line=batch.records + 1, offset=frames.checkpoint))
    elif frames.stop is StopReason.CRC_MISMATCH:
        batch.stop = StopReason.CRC_MISMATCH.value
        batch.problems.append(SourceProblem(
            path, ProblemKind.CRC_MISMATCH,
            f"{frames.message}. This file stays stopped at byte {frames.checkpoint}; other files keep "
            "flowing. Restore or remove the file to go on",
            line=batch.records + 1, offset=frames.checkpoint,
        ))
    elif len(data) == want:
        batch.more = True  # the block ended exactly on a frame boundary; the file may go on
    return batch, columns
