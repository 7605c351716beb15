"""Bulk reading of a TensorBoard event file into scalar columns: the sources' batch form for event files.

It reads exactly what :func:`.run.read_segment` reads -- the same verified frames, scalars,
restarts, dropped counts, problems and run memory -- but returns the scalars as arrays instead of
one :class:`~.run.ScalarObservation` per point. Canonical one-``simple_value`` frames
(:func:`.event_file.canonical_scalar_key`) are recognised and decoded with numpy, a column at a
time over the frames of one payload length (:class:`~.tf_record.FrameGroup`): the step varints,
the wall times and the values as arrays, and the tag-dependent ``KEY`` bytes grouped so that each
distinct key is looked up once. Every other frame -- and the first frame of a tag the run has not
shown yet, which registers its key exactly as the per-frame reader does -- goes through the same
protobuf decoder as :func:`.run.read_segment`, in file order, so the run memory evolves identically --
but histogram frames of tags the run has shown before, many of one payload length, which are read as columns
(:func:`.histogram_events.histogram_rows`) into the same records the per-frame reader gives.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

import numpy as np

from tau_collector.sources.data_compat import HISTOGRAMS, dropped_bucket
from tau_collector.sources.event_file import CANONICAL_MAX
from tau_collector.sources.histogram_events import COLUMNS_MIN, PendingHistograms, histogram_rows
from tau_collector.sources.media import HistogramRecord, MediaRequest
from tau_collector.sources.read_limits import DEFAULT_LIMITS
from tau_collector.sources.tensorboard_run import (
    RunMemory,
    SegmentBatch,
    TensorBoardRun,
    block_problems,
    cyclic_gc_paused,
    decode_event_into,
    skipped_record,
    unreadable_problem,
)
from tau_collector.sources.tf_record import (
    DEFAULT_MAX_RECORD_BYTES,
    HEADER_SIZE,
    FrameGroup,
    FrameIndex,
    StopReason,
    read_block,
)

__all__ = ["DEFAULT_BLOCK_BYTES", "ScalarColumns", "empty_columns", "read_block_columns"]

# Bytes of an event file decoded at once: ~20k scalar events, ~40 MB in flight.
DEFAULT_BLOCK_BYTES = 1024 * 1024
_HISTO_DROPPED = dropped_bucket("histo", HISTOGRAMS)  # the count an old ``histo`` value adds to
_OFFSET = attrgetter("offset")
_MAX_VARINT = 9  # a ten-byte step varint is a negative int64: left to protobuf, as in run
# Odd 64-bit multipliers for hashing key bytes (a hash only groups rows; equality is checked byte for byte).
_KEY_MULTIPLIERS = np.random.default_rng(0x7A0).integers(1, 2**63, size=CANONICAL_MAX, dtype=np.uint64) | np.uint64(1)


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


def _varints(columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(value, byte length) of the varint starting each row of ``columns``; length 0: no end within the row."""
    raw = columns.astype(np.int64)
    width = raw.shape[1]
    last = raw < 0x80
    length = np.where(last.any(axis=1), last.argmax(axis=1) + 1, 0)
    used = np.arange(width) < length[:, None]
    value = (((raw & 0x7F) << (7 * np.arange(width, dtype=np.int64))) * used).sum(axis=1)
    return value, length


def _step_varints(columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The step varints at the start of each row: (value, byte length), length 0 where the fast path
    does not take it. Steps below 2**21 (three bytes) are read first; only the rest look at up to ten
    bytes, and a ten-byte varint (a negative int64) is left to protobuf, as in ``tfevents``."""
    value, length = _varints(columns[:, :3])
    longer = np.flatnonzero(length == 0)
    if longer.size:
        value[longer], length[longer] = _varints(columns[longer, :_MAX_VARINT + 1])
        length[length > _MAX_VARINT] = 0
    return value, length


def _equal_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Group the equal rows of a uint8 matrix: (group per row, index of each group's first row).

    Rows are grouped by a hash and checked byte for byte against their group's first row; a row
    that differs (a hash collision) gets group -1.
    """
    hashes = (matrix.astype(np.uint64) * _KEY_MULTIPLIERS[:matrix.shape[1]]).sum(axis=1, dtype=np.uint64)
    _, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
    same = (matrix == matrix[first[inverse]]).all(axis=1)
    return np.where(same, inverse, -1), first


def _decode_block(run: TensorBoardRun, path: str, data: bytes, frames: FrameIndex, first_record: int,
                  base_offset: int, batch: SegmentBatch, memory: RunMemory, max_values: int,
                  media: MediaRequest | None) -> ScalarColumns:
    count = len(frames)
    key_of = np.full(count, -1, dtype=np.int64)
    step = np.zeros(count, dtype=np.int64)
    wall = np.zeros(count, dtype=np.float64)
    value = np.zeros(count, dtype=np.float64)
    keys: list[bytes] = []
    key_ids: dict[bytes, int] = {}
    for group in frames.groups:
        size = group.length
        if size <= 14 or size > CANONICAL_MAX:
            continue
        # A canonical scalar starts with its wall time (field 1, 0x09) and ends with its simple_value (field 2 of
        # the value, 0x15, then four bytes): a histogram, image or text event of the same size is not one.
        local = np.flatnonzero((group.payloads[:, 0] == 0x09) & (group.payloads[:, size - 5] == 0x15))
        if not local.size:
            continue
        payloads = group.payloads[local]  # one canonical-scalar candidate per row, contiguous
        rows = group.rows[local]
        wall[rows] = payloads[:, 1:9].copy().view("<f8")[:, 0]
        value[rows] = payloads[:, size - 4:].copy().view("<f4")[:, 0]
        with_step = payloads[:, 9] == 0x10
        varint, varint_len = _step_varints(payloads[:, 10:])
        key_start = np.where(with_step, 10 + varint_len, 9)
        ok = (~with_step | (varint_len > 0)) & (key_start < size - 4)
        step[rows] = np.where(with_step, varint, 0)
        for start in np.unique(key_start[ok]).tolist():
            picked = np.flatnonzero(ok & (key_start == start))
            matrix = np.ascontiguousarray(payloads[picked, start:size - 4])
            equal, firsts = _equal_rows(matrix)
            ids = np.array([key_ids.setdefault(matrix[i].tobytes(), len(key_ids)) for i in firsts.tolist()]
                           + [-1], dtype=np.int64)
            key_of[rows[picked]] = ids[equal]
    keys = list(key_ids)
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

    pending = PendingHistograms()  # the block's histograms in the writers' layout: buckets a layout at a time
    # Histogram frames of a tag seen before, many of one payload length: read as columns, not one at a time.
    columnar, later = _histogram_columns(run, frames, slow, first_record, base_offset, memory, max_values, media,
                                         pending)

    def decode(indices: np.ndarray) -> None:
        starts, lengths = frames.starts[indices].tolist(), frames.lengths[indices].tolist()
        for i, start, length in zip(indices.tolist(), starts, lengths, strict=True):
            decode_event_into(run, path, data[start + HEADER_SIZE:start + HEADER_SIZE + length], first_record + i,
                              base_offset + start, batch, memory, max_values, media, pending)

    decode(np.flatnonzero(slow))
    if waiting.any():
        for key in unknown_keys.tolist():
            key_names[key] = memory.scalar_layouts.get(keys[key])
        now_known = np.array([name is not None for name in key_names] + [False], dtype=bool)
        fast |= waiting & now_known[key_of]
        decode(np.flatnonzero(waiting & ~now_known[key_of]))
        # A histogram or text event repeats its bytes but for the step and time, like a scalar's: such frames
        # wait for their first one too, so the media they hold come after the others' and go back in file order.
        batch.media.sort(key=lambda record: record.offset)
    if later:
        # Histogram frames of tags first seen in this block: their first frames are read (above), so asked again.
        problems = len(batch.problems)
        for group, local in later:
            rows = group.rows[local]
            again, records, _ = histogram_rows(group.payloads[local], rows + first_record,
                                               frames.starts[rows] + base_offset, run.prefix, memory.tag_plugins,
                                               media.max_values, pending)  # type: ignore[union-attr]
            columnar += records
            decode(rows[~again])
        # Read after the others: back in file order (the records below, with the columns' records).
        batch.media.sort(key=_OFFSET)
        if len(batch.problems) > problems:
            batch.problems.sort(key=lambda p: -1 if p.offset is None else p.offset)
    pending.resolve()
    if columnar:
        batch.dropped[_HISTO_DROPPED] = batch.dropped.get(_HISTO_DROPPED, 0) + len(columnar)
        batch.media += columnar
        batch.media.sort(key=_OFFSET)  # back in file order (a frame's several records keep theirs)

    # Fast frames: one scalar each, read from the arrays.
    rows = np.flatnonzero(fast)
    code_of: dict[str, int] = {}
    key_code = np.full(len(keys) + 1, -1, dtype=np.int32)
    for key in np.unique(key_of[rows]).tolist():
        name = key_names[key]
        key_code[key] = code_of.setdefault(name, len(code_of))
    fast_cols = (
        key_code[key_of[rows]],
        step[rows],
        wall[rows],
        value[rows],
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


def _histogram_columns(run: TensorBoardRun, frames: FrameIndex, slow: np.ndarray, first_record: int,
                       base_offset: int, memory: RunMemory, max_values: int, media: MediaRequest | None,
                       pending: PendingHistograms) -> tuple[list[HistogramRecord], list[tuple[FrameGroup, np.ndarray]]]:
    """The records of the ``slow`` frames that :func:`.histogram_events.histogram_rows` reads a payload length at
    a time (those frames then no longer ``slow``); what :func:`decode_event_into` would give ``pending`` for
    each. Their tags are known before the block, so reading them first changes nothing the others see. And the
    frames of that layout whose tag this block shows first, but its first frame (no longer ``slow`` either): a
    group and its rows, to ask again once the others are read. Such a frame never changes the run's memory
    (``histo_event`` reads it, its tag known by then), so reading it after the others changes nothing either."""
    if media is None or HISTOGRAMS not in media.kinds:
        return [], []
    out: list[HistogramRecord] = []
    later = []
    for group in frames.groups:
        if len(group.rows) < COLUMNS_MIN or (max_values and group.length > 2 * max_values):
            continue  # (a frame over twice max_values bytes has its values counted first: one at a time)
        local = np.flatnonzero(slow[group.rows])
        if len(local) < COLUMNS_MIN:
            continue
        rows = group.rows[local]
        taken, records, waiting = histogram_rows(group.payloads[local], rows + first_record,
                                                 frames.starts[rows] + base_offset, run.prefix, memory.tag_plugins,
                                                 media.max_values, pending)
        slow[rows[taken | waiting]] = False
        out += records
        if waiting.any():
            later.append((group, local[waiting]))
    return out, later


def empty_columns() -> ScalarColumns:
    return ScalarColumns([], *(np.zeros(0, dtype=t) for t in ("i4", "i8", "f8", "f8", "i8", "i8")))


def read_block_columns(
    run: TensorBoardRun,
    path: str,
    *,
    memory: RunMemory,
    offset: int = 0,
    records_before: int = 0,
    max_bytes: int = DEFAULT_BLOCK_BYTES,
    max_records: int | None = None,
    final: bool = False,
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
    max_values: int = DEFAULT_LIMITS.max_row_fields,
    media: MediaRequest | None = None,
) -> tuple[SegmentBatch, ScalarColumns]:
    """Read the frames of ``path`` that lie within ``max_bytes`` (and ``max_records``) from ``offset``.

    Like ``read_segment(..., max_bytes=...)``: the batch's ``more`` says the bound, not the file,
    ended the block (continue from ``checkpoint`` with ``records_before=batch.records``); a frame
    larger than the bound is read whole, as far as the file holds it. The scalars are in the
    returned columns, not in ``batch.observations``. Blocks are cut deterministically by the
    file's bytes and the bounds. ``final``: the run is complete (see ``read_segment``). ``media``: the
    histograms, images and text to read as records (``batch.media``, in file order; see ``read_segment``).
    """
    batch = SegmentBatch(path, offset, offset, records_before, StopReason.END.value)
    try:
        block = read_block(path, offset, max_bytes=max_bytes, index=True, max_record_bytes=max_record_bytes)
    except OSError as exc:
        batch.stop = "unreadable"
        batch.problems.append(unreadable_problem(path, exc, offset))
        return batch, empty_columns()
    frames = block.scan
    assert isinstance(frames, FrameIndex)
    more = block.more
    if max_records is not None and len(frames) > max_records:
        frames, more = frames.first(max(max_records, 1), offset), True
    with cyclic_gc_paused():
        columns = _decode_block(run, path, block.data, frames, records_before + 1, offset, batch, memory, max_values,
                                media)
    batch.checkpoint = block.checkpoint if frames is block.scan else frames.checkpoint
    batch.records = records_before + len(frames)
    if block.skipped:
        batch.records += 1
        skipped_record(batch, block.offset, block.skipped, max_record_bytes, media)
    if more:
        batch.more = True
    else:
        batch.stop, problems = block_problems(path, block, batch.records, final=final)
        batch.problems += problems
    return batch, columns
