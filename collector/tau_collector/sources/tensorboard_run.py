"""A TensorBoard run: its event files read as one source, scalars and restarts, with the run's memory.

Runs and segments
    A run is a directory of event files (:func:`is_event_file`); its files are segments of one
    logical source, read in file-name order (writers name them ``events.out.tfevents.<unix
    seconds>.<host>...`` so name order is creation order). Metric names carry the run's relative
    directory as prefix (``trial_0001/train/loss``) and the run's ``metric_file_id`` hashes its
    absolute directory, so rotation keeps the id and distinct runs never merge.

Checkpoint and resume
    :func:`read_segment` reads one segment from a byte offset and returns a :class:`SegmentBatch`
    whose ``checkpoint`` lies just past the last CRC-verified frame. To resume, persist per run:
    the segment's file name, ``checkpoint`` and ``records`` (frames counted from the file start, so
    record numbers stay 1-based per file). A reader also needs the run's :class:`RunMemory` (which
    series each tag belongs to, because writers put a tag's metadata on its first event only
    (:mod:`.data_compat`), and whether the run already had a ``SessionLog.START``). That memory is
    *not* persisted: :func:`rebuild_run_memory` re-reads the run's earlier segments and the current
    one up to the checkpoint, so the checkpoint stays three plain values and can never disagree
    with the bytes.

Restarts (``SessionLog.START``)
    TensorBoard's ``EventAccumulator``, on a ``START`` event at step ``s``, purges the run's points
    already loaded with step >= ``s`` (torch's ``SummaryWriter(purge_step=s)`` writes exactly that
    event). Since TensorBoard 2.x its plugin accumulator ignores the *first* ``START`` of a run
    (it marks a session start, not a restart); the legacy ``event_accumulator`` purges on every one.
    Our pipeline is append-only and at-least-once, so points already delivered are never
    retracted. Instead every ``START`` is reported as a :class:`SessionRestart` (run, step,
    wall_time, record, offset, ``first_in_run``), and downstream honours it as a filter: readers
    of the store hide the run's points with ``step >= restart.step`` and ``wall_time <
    restart.wall_time`` for every restart with ``first_in_run`` false. A batch consumer that wants
    TensorBoard's exact view applies :func:`apply_tensorboard_purge` to the run's observations and
    restarts in read order (:func:`in_read_order`). TensorBoard applies a different rule
    (out-of-order steps purge per tag) to files without a ``brain.Event:2`` version record, written
    by TensorFlow before 2016; we do not reproduce that one.

rustboard ``run.rs``.
"""

from __future__ import annotations

import gc
import hashlib
import heapq
import os
import struct
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import NamedTuple

from tau_collector.sources.data_compat import HISTOGRAMS, SCALARS, dropped_bucket, series_kind, tensor_scalar
from tau_collector.sources.event_file import (
    CANONICAL_MAX,
    SESSION_START,
    EventDecodeError,
    canonical_scalar_key,
    decode_event,
    summary_value_count,
)
from tau_collector.sources.histogram_events import HistoValue, PendingHistograms, histo_event
from tau_collector.sources.media import MediaRecord, MediaRequest, media_record
from tau_collector.sources.read_limits import DEFAULT_LIMITS
from tau_collector.sources.records import HistoryRow, ProblemKind, SourceProblem
from tau_collector.sources.tf_record import DEFAULT_MAX_RECORD_BYTES, Block, FrameScan, StopReason, read_block

__all__ = [
    "DEFAULT_CHUNK_BYTES",
    "RunMemory",
    "ScalarObservation",
    "SegmentBatch",
    "SessionRestart",
    "TensorBoardRun",
    "apply_tensorboard_purge",
    "block_problems",
    "cyclic_gc_paused",
    "decode_event_into",
    "in_read_order",
    "is_event_file",
    "metric_file_id",
    "read_run",
    "read_segment",
    "rebuild_run_memory",
    "skipped_record",
    "to_history_row",
    "unreadable_problem",
]

# Bytes per read(): one read covers an ordinary event file; the bound keeps a multi-gigabyte file
# (and the list of its frames, ~3x the bytes for small scalar frames) from being held at once.
# The reader continues from the last verified frame of each chunk.
DEFAULT_CHUNK_BYTES = 16 * 1024 * 1024

_FLOAT32 = struct.Struct("<f")
_F64 = struct.Struct("<d")


def is_event_file(name: str) -> bool:
    """TensorBoard's rule for an event file: its basename contains ``tfevents``."""
    return "tfevents" in os.path.basename(name)


def metric_file_id(run_directory: str) -> str:
    """``tfevents-`` + 16 hex of SHA-256 of the absolute run directory: stable across file rotation."""
    digest = hashlib.sha256(os.path.abspath(run_directory).encode("utf-8")).hexdigest()
    return "tfevents-" + digest[:16]


@dataclass(frozen=True, slots=True)
class TensorBoardRun:
    """A directory of event files: one logical source whose files are segments read in name order.

    ``directory`` is absolute; ``relative`` is its path below the logdir with ``/`` separators
    (``""`` for the logdir itself) and is also the ``prefix`` of its metric names -- unless the run
    is ``attached``: an ``add_hparams`` sub-run (:mod:`.hparams`), whose metrics keep their tags.
    ``only_file`` is set when the run was discovered from a single event file path: that file is
    its only segment.
    """

    directory: str
    relative: str
    metric_file_id: str
    only_file: str | None = None
    attached: bool = False

    @property
    def prefix(self) -> str:
        return "" if self.attached else self.relative

    def metric_name(self, tag: str) -> str:
        prefix = self.prefix
        return f"{prefix}/{tag}" if prefix else tag

    def segments(self) -> list[str]:
        """The run's event files (absolute paths), sorted by file name."""
        if self.only_file is not None:
            return [self.only_file]
        try:
            names = [
                entry.name
                for entry in os.scandir(self.directory)
                if is_event_file(entry.name) and entry.is_file()
            ]
        except OSError:
            return []
        return [os.path.join(self.directory, name) for name in sorted(names)]


class ScalarObservation(NamedTuple):
    """One scalar read from an event file. ``record`` is the frame's 1-based number in its file."""

    metric: str
    step: int
    wall_time: float
    value: float
    record: int
    offset: int


class SessionRestart(NamedTuple):
    """A ``SessionLog.START`` event: TensorBoard purges the run's earlier points with step >= ``step``.

    ``first_in_run`` is true for the run's first ``START``, which current TensorBoard does not
    treat as a restart (see the module docstring).
    """

    run: str
    step: int
    wall_time: float
    record: int
    offset: int
    first_in_run: bool


@dataclass(slots=True)
class RunMemory:
    """What reading a run must remember across frames and segments; rebuilt, never persisted."""

    tag_plugins: dict[str, str] = field(default_factory=dict)  # tag -> its series (data_compat.series_kind)
    seen_session_start: bool = False
    metric_names: dict[str, str] = field(default_factory=dict)  # cache: tag -> prefixed name
    # cache: the bytes a tensorboardX/torch scalar event has between its step and its float, which
    # depend only on the tag -> prefixed name (see event_file.canonical_scalar_key).
    scalar_layouts: dict[bytes, str] = field(default_factory=dict)


@dataclass(slots=True)
class SegmentBatch:
    """What one :func:`read_segment` call read from one event file.

    ``checkpoint`` is the file offset just past the last verified frame (resume there);
    ``records`` is the number of frames from the start of the file up to ``checkpoint``.
    ``stop`` is ``end``, ``truncated`` (tail not yet complete: retry later), ``corrupt`` (the
    run is complete and the file ends inside a frame), ``crc_mismatch`` (hard stop: this file
    does not advance) or ``unreadable``. ``more`` says a ``max_bytes``
    bound ended the read before the end of the file. ``media`` holds the histograms, images and text a
    :class:`~.media.MediaRequest` asked for, in file order.
    """

    path: str
    start_offset: int
    checkpoint: int
    records: int
    stop: str
    observations: list[ScalarObservation] = field(default_factory=list)
    restarts: list[SessionRestart] = field(default_factory=list)
    media: list[MediaRecord] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)
    problems: list[SourceProblem] = field(default_factory=list)
    more: bool = False


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a buffer is decoded.

    Decoding allocates a few small acyclic objects per frame; each allocation burst would set
    off collections that traverse every live object for nothing (measured: ~20% of read time).
    Reference counting still frees everything; the pause ends with the call.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def read_segment(
    run: TensorBoardRun,
    path: str,
    *,
    offset: int = 0,
    records_before: int = 0,
    memory: RunMemory | None = None,
    end_offset: int | None = None,
    max_bytes: int | None = None,
    read_size: int = DEFAULT_CHUNK_BYTES,
    final: bool = False,
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
    max_values: int = DEFAULT_LIMITS.max_row_fields,
    media: MediaRequest | None = None,
) -> SegmentBatch:
    """Read the verified frames of one event file of ``run`` from ``offset`` (a frame boundary).

    ``records_before`` is the number of frames before ``offset`` (the ``records`` of the batch
    that produced the checkpoint). ``memory`` is the run's :class:`RunMemory`, updated in place;
    pass the same object for all segments of a run, in order. ``end_offset`` stops reading there
    (used to rebuild memory up to a checkpoint). ``max_bytes`` bounds one call (at least one
    frame is read): the batch then has ``more`` set and the caller continues from its
    checkpoint; without it the call reads to the end of the file, ``read_size`` bytes per read.
    ``final`` says the run is complete: a file ending inside a frame is then corrupt, not a
    writer still at work. An event with more than ``max_values`` summary values is a bad event,
    skipped without being decoded (see :func:`decode_event_into`). ``media`` asks for histograms, images
    or text as records (``batch.media``); a record over ``max_record_bytes`` is then also a bad event
    (it may have held them), not only a ``dropped`` count.
    """
    if memory is None:
        memory = RunMemory()
    batch = SegmentBatch(path, offset, offset, records_before, StopReason.END.value)
    bound = read_size if max_bytes is None else min(max_bytes, read_size)
    while True:
        try:
            block = read_block(path, batch.checkpoint, max_bytes=bound, end_offset=end_offset,
                               max_record_bytes=max_record_bytes)
        except OSError as exc:
            batch.stop = "unreadable"
            batch.problems.append(unreadable_problem(path, exc, batch.checkpoint))
            return batch
        with cyclic_gc_paused():
            _decode_frames(run, path, block.scan, batch, memory, max_values, media)
        if block.skipped:
            batch.records += 1
            skipped_record(batch, block.offset, block.skipped, max_record_bytes, media)
        batch.checkpoint = block.checkpoint
        if block.more:
            if max_bytes is not None:
                batch.more = True
                return batch
            continue
        batch.stop, problems = block_problems(path, block, batch.records, final=final,
                                              bounded=end_offset is not None)
        batch.problems += problems
        return batch


def block_problems(path: str, block: Block, records: int, *, final: bool,
                   bounded: bool = False) -> tuple[str, list[SourceProblem]]:
    """How a block that ended its file stopped (``SegmentBatch.stop``) and the problems to report.

    ``records`` counts the frames up to the block's checkpoint; ``bounded`` reads stop at an
    earlier checkpoint, where a frame cut by the bound is no problem.
    """
    stop = block.stop
    if stop is StopReason.TRUNCATED:
        if bounded:
            return StopReason.END.value, []
        if final:
            return ProblemKind.CORRUPT, [SourceProblem(
                path, ProblemKind.CORRUPT,
                f"the run is complete but its event file ends inside a record: the frame at byte "
                f"{block.checkpoint} needs {block.claimed} bytes and the file holds {block.available} from there, "
                f"so the file was cut or its header is damaged. Records before byte {block.checkpoint} were read",
                line=records + 1, offset=block.checkpoint)]
        return stop.value, [SourceProblem(path, ProblemKind.TRUNCATED, block.message, line=records + 1,
                                          offset=block.checkpoint)]
    if stop is StopReason.CRC_MISMATCH:
        return stop.value, [_crc_problem(path, block.message, block.checkpoint, records + 1)]
    return stop.value, []


def skipped_record(batch: SegmentBatch, offset: int, size: int, max_record_bytes: int,
                   media: MediaRequest | None) -> None:
    """Count a record over the record limit (``batch.records`` already counts it); a reader asked for media
    also reports it, since it may have held the images asked for."""
    batch.dropped["oversized_record"] = batch.dropped.get("oversized_record", 0) + 1
    if media is not None:
        batch.problems.append(_bad_event(
            batch.path, batch.records, offset,
            f"is {size} bytes, over the limit of {max_record_bytes} a record may have (--max-line-bytes), so it "
            "was checked but not read"))


def unreadable_problem(path: str, exc: OSError, offset: int) -> SourceProblem:
    return SourceProblem(
        path, ProblemKind.UNREADABLE,
        f"cannot read event file ({exc.strerror or exc}); reading resumes from byte {offset} "
        "once the file is readable again",
        offset=offset,
    )


def _crc_problem(path: str, message: str, checkpoint: int, record: int) -> SourceProblem:
    return SourceProblem(
        path, ProblemKind.CRC_MISMATCH,
        f"{message}. This file stays stopped at byte {checkpoint}; other files keep "
        "flowing. Restore or remove the file to go on",
        line=record, offset=checkpoint,
    )


def _decode_frames(
    run: TensorBoardRun, path: str, scan: FrameScan, batch: SegmentBatch, memory: RunMemory, max_values: int,
    media: MediaRequest | None,
) -> None:
    append = batch.observations.append
    layouts = memory.scalar_layouts
    unpack_f64 = _F64.unpack_from
    unpack_f32 = _FLOAT32.unpack_from
    # NamedTuple's generated __new__ is a Python call; tuple.__new__ builds the same object ~5x faster.
    new_obs = tuple.__new__
    fast_max = CANONICAL_MAX
    record = batch.records
    for frame_offset, payload in scan.frames:
        record += 1
        size = len(payload)
        if 14 < size <= fast_max and payload[0] == 0x09:
            # Fast path: a payload byte-identical to a known tag's canonical scalar event.
            if payload[9] == 0x10:
                # The step varint, unrolled for the one to three bytes of steps below 2**21.
                b = payload[10]
                if b < 0x80:
                    step = b
                    j = 11
                else:
                    b1 = payload[11]
                    if b1 < 0x80:
                        step = (b & 0x7F) | (b1 << 7)
                        j = 12
                    else:
                        b2 = payload[12]
                        if b2 < 0x80:
                            step = (b & 0x7F) | ((b1 & 0x7F) << 7) | (b2 << 14)
                            j = 13
                        else:
                            step = 0
                            shift = 0
                            j = 10
                            while j < size:
                                b = payload[j]
                                j += 1
                                step |= (b & 0x7F) << shift
                                if b < 0x80:
                                    break
                                shift += 7
                            if shift >= 63:
                                # Ten-byte varints are negative steps: leave their wrap-around to protobuf.
                                j = 0
                if j:
                    name = layouts.get(payload[j:size - 4])
                    if name is not None:
                        append(new_obs(ScalarObservation, (
                            name, step, unpack_f64(payload, 1)[0], unpack_f32(payload, size - 4)[0],
                            record, frame_offset,
                        )))
                        continue
            else:
                name = layouts.get(payload[9:size - 4])
                if name is not None:
                    append(new_obs(ScalarObservation, (
                        name, 0, unpack_f64(payload, 1)[0], unpack_f32(payload, size - 4)[0],
                        record, frame_offset,
                    )))
                    continue
        decode_event_into(run, path, payload, record, frame_offset, batch, memory, max_values, media)
    batch.records = record


_HISTO_DROPPED = dropped_bucket("histo", HISTOGRAMS)  # the count an old ``histo`` value adds to


def decode_event_into(
    run: TensorBoardRun, path: str, payload: bytes | memoryview, record: int, frame_offset: int,
    batch: SegmentBatch, memory: RunMemory, max_values: int = DEFAULT_LIMITS.max_row_fields,
    media: MediaRequest | None = None, pending: PendingHistograms | None = None,
) -> None:
    """Decode one frame with protobuf (any event the canonical-scalar fast path did not take) into ``batch``.

    An event with more than ``max_values`` summary values (``--max-row-fields``, as a history line's keys)
    is a bad event, counted from the wire format and never decoded: a record within the size limit can
    hold a million values, a gigabyte or more of objects. The histograms, images and text ``media`` asks
    for become records in ``batch.media`` (a value that cannot be read is a ``bad_value`` problem); they
    are counted as ``dropped`` all the same, as the scalar path does not take them. With ``pending``, a histogram
    in the writers' layout may wait there for its buckets (the caller then calls its ``resolve``)."""
    if max_values and len(payload) > 2 * max_values:  # a value takes two bytes at least
        values = summary_value_count(payload, max_values)
        if values > max_values:
            batch.problems.append(_bad_event(
                path, record, frame_offset, f"holds more than {max_values} summary values, over the limit an "
                "event may have (--max-row-fields), so it was not decoded"))
            return
    plugins = memory.tag_plugins
    dropped = batch.dropped
    histo = histo_event(payload)
    if histo is not None and histo[2] in plugins:  # a histogram of a tag seen before: no protobuf objects
        wall_time, step, tag, data = histo
        if pending is not None and media is not None and plugins[tag] == HISTOGRAMS and HISTOGRAMS in media.kinds:
            item = pending.add(run.prefix, tag, step, wall_time, data, record, frame_offset, media.max_values)
            if item is not None:
                dropped[_HISTO_DROPPED] = dropped.get(_HISTO_DROPPED, 0) + 1
                batch.media.append(item)
                return
        _take_media(run, path, HistoValue(tag, data), "histo", plugins[tag], tag, step, wall_time, record,
                    frame_offset, batch, media)
        return
    names = memory.metric_names
    layouts = memory.scalar_layouts
    append = batch.observations.append
    try:
        event = decode_event(payload)
    except EventDecodeError as exc:
        batch.problems.append(_bad_event(path, record, frame_offset,
                                         f"has a valid checksum but is not a tensorflow.Event ({exc})"))
        return
    what = event.WhichOneof("what")
    if what == "summary":
        step = event.step
        wall_time = event.wall_time
        for value in event.summary.value:
            kind = value.WhichOneof("value")
            tag = value.tag or value.node_name
            plugin = plugins.get(tag)
            if plugin is None:
                # TensorBoard keeps a tag's first metadata only; writers send it once per tag.
                plugin = plugins[tag] = series_kind(value, kind)
            if kind == "simple_value" or (kind == "tensor" and plugin == SCALARS):
                if kind == "simple_value":
                    number = value.simple_value
                else:
                    tensor = value.tensor
                    if tensor.tensor_shape.dim:
                        dropped["non_scalar_tensor"] = dropped.get("non_scalar_tensor", 0) + 1
                        continue
                    try:
                        number = tensor_scalar(tensor)
                    except ValueError as exc:
                        batch.problems.append(SourceProblem(
                            path, ProblemKind.BAD_VALUE,
                            f"scalar {tag!r} at step {step} cannot be read as a number: {exc}; "
                            "skipped this value",
                            line=record, offset=frame_offset,
                        ))
                        continue
                name = names.get(tag)
                if name is None:
                    name = names[tag] = run.metric_name(tag)
                    if kind == "simple_value" and value.tag:
                        layouts[canonical_scalar_key(tag)] = name
                append(ScalarObservation(name, step, wall_time, number, record, frame_offset))
            elif kind is not None:
                _take_media(run, path, value, kind, plugin, tag, step, wall_time, record, frame_offset, batch,
                            media)
    elif what == "session_log" and event.session_log.status == SESSION_START:
        batch.restarts.append(SessionRestart(
            run.relative, event.step, event.wall_time, record, frame_offset,
            not memory.seen_session_start,
        ))
        memory.seen_session_start = True


def _take_media(run: TensorBoardRun, path: str, value, kind: str, plugin: str, tag: str, step: int,
                wall_time: float, record: int, frame_offset: int, batch: SegmentBatch,
                media: MediaRequest | None) -> None:
    """A non-scalar ``value``: counted as dropped (the scalar path does not take it) and, when ``media`` asks
    for it, its record in ``batch.media`` (a value that cannot be read: a ``bad_value`` problem)."""
    bucket = dropped_bucket(kind, plugin)
    batch.dropped[bucket] = batch.dropped.get(bucket, 0) + 1
    if media is None:
        return
    try:
        item = media_record(media, plugin, value, kind, run.prefix, step, wall_time, record, frame_offset)
    except ValueError as exc:
        batch.problems.append(SourceProblem(
            path, ProblemKind.BAD_VALUE,
            f"{plugin} {tag!r} at step {step} cannot be read: {exc}; skipped this value",
            line=record, offset=frame_offset,
        ))
        return
    if item is not None:
        batch.media.append(item)


def _bad_event(path: str, record: int, frame_offset: int, why: str) -> SourceProblem:
    return SourceProblem(path, ProblemKind.BAD_EVENT,
                         f"record {record} {why}; skipped it and went on with the next record",
                         line=record, offset=frame_offset)


def rebuild_run_memory(run: TensorBoardRun, path: str, offset: int,
                       max_values: int = DEFAULT_LIMITS.max_row_fields) -> RunMemory:
    """The :class:`RunMemory` a reader had when it checkpointed ``path`` at ``offset``.

    Re-reads the run's segments whose names sort before ``path`` and ``path`` itself up to
    ``offset`` (bytes that were verified before, so this is deterministic).
    """
    memory = RunMemory()
    name = os.path.basename(path)
    for segment in run.segments():
        if os.path.basename(segment) >= name:
            break
        read_segment(run, segment, memory=memory, max_values=max_values)
    if offset > 0:
        read_segment(run, path, memory=memory, end_offset=offset, max_values=max_values)
    return memory


def read_run(run: TensorBoardRun, max_values: int = DEFAULT_LIMITS.max_row_fields, *,
             media: MediaRequest | None = None,
             max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES) -> list[SegmentBatch]:
    """Read every segment of ``run`` from the start, sharing one memory (batch consumers, ``dump``)."""
    memory = RunMemory()
    return [read_segment(run, segment, memory=memory, max_values=max_values, media=media,
                         max_record_bytes=max_record_bytes) for segment in run.segments()]


def in_read_order(batches: Iterable[SegmentBatch], *,
                  media: bool = False) -> Iterator[ScalarObservation | MediaRecord | SessionRestart]:
    """Observations (or, with ``media``, media records) and restarts of a run's batches interleaved as they
    appear in the files."""
    for batch in batches:
        yield from heapq.merge(batch.media if media else batch.observations, batch.restarts,
                               key=lambda item: item.offset)


def apply_tensorboard_purge(
    items: Iterable[ScalarObservation | MediaRecord | SessionRestart], *, first_start_purges: bool = False
) -> list[ScalarObservation | MediaRecord]:
    """TensorBoard's view of one run: each restart drops the points before it with step >= its step.

    ``items`` are one run's observations (or media records: TensorBoard purges every series alike) and
    restarts in read order (:func:`in_read_order`).
    By default the run's first ``START`` does not purge, as in TensorBoard's plugin
    ``EventAccumulator``; ``first_start_purges=True`` gives the legacy ``event_accumulator``.
    """
    kept: list[ScalarObservation | MediaRecord] = []
    for item in items:
        if isinstance(item, SessionRestart):
            if first_start_purges or not item.first_in_run:
                step = item.step
                kept = [obs for obs in kept if obs.step < step]
        else:
            kept.append(item)
    return kept


def to_history_row(obs: ScalarObservation) -> HistoryRow:
    """The projection's input for one observation: step, time with its fraction, and the value."""
    return HistoryRow(
        fields={"_step": obs.step, "_timestamp": obs.wall_time, obs.metric: obs.value},
        line=obs.record,
        offset=obs.offset,
    )
