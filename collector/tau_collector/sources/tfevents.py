"""The TensorBoard source: find the runs of a logdir and read the scalars of their event files incrementally.

Runs and segments
    A run is a directory under the logdir (the logdir itself included) that holds event files
    (TensorBoard's rule: the file's basename contains ``tfevents``). Its files are segments of one
    logical source, read in file-name order (writers name them ``events.out.tfevents.<unix
    seconds>.<host>...`` so name order is creation order). Metric names carry the run's relative
    directory as prefix (``trial_0001/train/loss``) and the run's ``metric_file_id`` hashes its
    absolute directory, so rotation keeps the id and distinct runs never merge.

Checkpoint and resume
    :func:`read_segment` reads one segment from a byte offset and returns a :class:`SegmentBatch`
    whose ``checkpoint`` lies just past the last CRC-verified frame. To resume, persist per run:
    the segment's file name, ``checkpoint`` and ``records`` (frames counted from the file start, so
    record numbers stay 1-based per file). A reader also needs the run's :class:`RunMemory` (which
    plugin each tag belongs to, because writers put a tag's plugin metadata on its first event
    only, and whether the run already had a ``SessionLog.START``). That memory is *not* persisted:
    :func:`rebuild_run_memory` re-reads the run's earlier segments and the current one up to the
    checkpoint, so the checkpoint stays three plain values and can never disagree with the bytes.

Scalars
    ``Summary.Value.simple_value`` (tensorboardX, torch) is always a scalar. A ``tensor`` value is a
    scalar when its tag's first plugin metadata in the run says ``scalars`` (TF2
    ``tf.summary.scalar``, ``tensorboard.summary.Writer``) and the tensor has rank 0. Its number
    comes from ``tensor_content`` (little-endian, precedence as in TensorFlow's ``make_ndarray``)
    or else from the typed repeated field, which must hold exactly one value (TensorBoard cannot
    read an empty one either):

    ======  ==========  ==============  =================================================
    dtype   name        repeated field  note
    ======  ==========  ==============  =================================================
    1       float       float_val       ``<f``
    2       double      double_val      ``<d``
    3       int32       int_val         ``<i``
    4       uint8       int_val         ``<B``
    5       int16       int_val         ``<h``
    6       int8        int_val         ``<b``
    9       int64       int64_val       ``<q``
    10      bool        bool_val        ``<?``, 1.0 or 0.0
    14      bfloat16    half_val        uint16 bit pattern = high half of a float32
    17      uint16      int_val         ``<H``
    19      half        half_val        uint16 bit pattern of an IEEE binary16 (``<e``)
    22      uint32      uint32_val      ``<I``
    23      uint64      uint64_val      ``<Q``
    ======  ==========  ==============  =================================================

    Other dtypes (strings, complex, quantized, float8, int4) under the ``scalars`` plugin are
    reported as ``bad_value`` problems. NaN and ±Inf are kept as values. Images, histograms,
    audio, text, tensors of other plugins and non-rank-0 tensors are dropped and counted in
    ``SegmentBatch.dropped``.

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

from google.protobuf.message import DecodeError

from tau_collector.records import HistoryRow, ProblemKind, SourceProblem
from tau_collector.sources.tensorboard_proto.event_pb2 import Event, SessionLog
from tau_collector.sources.tfrecord import HEADER_SIZE, FrameScan, StopReason, read_new_bytes, scan_frames

__all__ = [
    "DEFAULT_CHUNK_BYTES",
    "RunMemory",
    "ScalarObservation",
    "SegmentBatch",
    "SessionRestart",
    "TensorBoardRun",
    "apply_tensorboard_purge",
    "discover_runs",
    "in_read_order",
    "is_event_file",
    "metric_file_id",
    "read_run",
    "read_segment",
    "rebuild_run_memory",
    "to_history_row",
]

# Bytes per read(): one read covers an ordinary event file; the bound keeps a multi-gigabyte file
# (and the list of its frames, ~3x the bytes for small scalar frames) from being held at once.
# The reader continues from the last verified frame of each chunk.
DEFAULT_CHUNK_BYTES = 16 * 1024 * 1024

_START = SessionLog.START


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
    (``""`` for the logdir itself) and is also the ``prefix`` of its metric names. ``only_file`` is
    set when the run was discovered from a single event file path: that file is its only segment.
    """

    directory: str
    relative: str
    metric_file_id: str
    only_file: str | None = None

    @property
    def prefix(self) -> str:
        return self.relative

    def metric_name(self, tag: str) -> str:
        return f"{self.relative}/{tag}" if self.relative else tag

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


def discover_runs(logdir: str | os.PathLike[str]) -> list[TensorBoardRun]:
    """Every directory under ``logdir`` (itself included) that holds event files, sorted by relative path.

    ``logdir`` may also be one event file: it is then a run of that one file, in its directory.
    Symbolic links to directories are not followed, so a link cycle cannot trap the walk.
    """
    root = os.path.abspath(os.fspath(logdir))
    if os.path.isfile(root):
        if not is_event_file(root):
            return []
        directory = os.path.dirname(root)
        return [TensorBoardRun(directory, "", metric_file_id(directory), only_file=root)]
    runs = []
    for directory, _dirs, files in os.walk(root):
        if any(is_event_file(name) for name in files):
            rel = os.path.relpath(directory, root)
            relative = "" if rel == os.curdir else rel.replace(os.sep, "/")
            runs.append(TensorBoardRun(directory, relative, metric_file_id(directory)))
    runs.sort(key=lambda run: run.relative)
    return runs


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

    tag_plugins: dict[str, str] = field(default_factory=dict)
    seen_session_start: bool = False
    metric_names: dict[str, str] = field(default_factory=dict)  # cache: tag -> prefixed name
    # cache: the bytes a tensorboardX/torch scalar event has between its step and its float, which
    # depend only on the tag -> prefixed name (see _canonical_scalar_key).
    scalar_layouts: dict[bytes, str] = field(default_factory=dict)


@dataclass(slots=True)
class SegmentBatch:
    """What one :func:`read_segment` call read from one event file.

    ``checkpoint`` is the file offset just past the last verified frame (resume there);
    ``records`` is the number of frames from the start of the file up to ``checkpoint``.
    ``stop`` is ``end``, ``truncated`` (tail not yet complete: retry later), ``crc_mismatch``
    (hard stop: this file does not advance) or ``unreadable``. ``more`` says a ``max_bytes``
    bound ended the read before the end of the file.
    """

    path: str
    start_offset: int
    checkpoint: int
    records: int
    stop: str
    observations: list[ScalarObservation] = field(default_factory=list)
    restarts: list[SessionRestart] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)
    problems: list[SourceProblem] = field(default_factory=list)
    more: bool = False


# A tensor value's plugin -> the ``dropped`` bucket it is counted in; any other plugin is "tensor".
_DROPPED_PLUGIN = {
    "images": "image",
    "histograms": "histogram",
    "audio": "audio",
    "text": "text",
}
# Old-style values TensorBoard migrates to tensors of a plugin; the plugin their tag gets in the run.
_MIGRATED_PLUGIN = {
    "simple_value": "scalars",
    "histo": "histograms",
    "image": "images",
    "audio": "audio",
}
_DROPPED_KIND = {
    "histo": "histogram",
    "obsolete_old_style_histogram": "histogram",
    "image": "image",
    "audio": "audio",
}

_DT_BFLOAT16 = 14
_DT_HALF = 19
# dtype -> (repeated field, little-endian struct format of one element in tensor_content)
_DTYPES: dict[int, tuple[str, str]] = {
    1: ("float_val", "<f"),
    2: ("double_val", "<d"),
    3: ("int_val", "<i"),
    4: ("int_val", "<B"),
    5: ("int_val", "<h"),
    6: ("int_val", "<b"),
    9: ("int64_val", "<q"),
    10: ("bool_val", "<?"),
    _DT_BFLOAT16: ("half_val", "<H"),
    17: ("int_val", "<H"),
    _DT_HALF: ("half_val", "<H"),
    22: ("uint32_val", "<I"),
    23: ("uint64_val", "<Q"),
}
_FLOAT32 = struct.Struct("<f")
_F64 = struct.Struct("<d")
_FAST_MAX = 4096  # longer payloads are not single scalars worth a fast-path attempt
_HALF = struct.Struct("<e")


def _from_half_bits(dtype: int, bits: int) -> float:
    bits &= 0xFFFF
    if dtype == _DT_BFLOAT16:
        # bfloat16 is the high 16 bits of a float32.
        return _FLOAT32.unpack((bits << 16).to_bytes(4, "little"))[0]
    return _HALF.unpack(bits.to_bytes(2, "little"))[0]


def _tensor_scalar(tensor) -> float:
    """The number in a rank-0 tensor; ValueError says why there is none."""
    dtype = tensor.dtype
    spec = _DTYPES.get(dtype)
    if spec is None:
        raise ValueError(f"dtype {dtype} is not a float, int or bool dtype")
    repeated, fmt = spec
    content = tensor.tensor_content
    if content:
        size = struct.calcsize(fmt)
        if len(content) != size:
            raise ValueError(f"tensor_content has {len(content)} bytes, a dtype-{dtype} scalar has {size}")
        number = struct.unpack(fmt, content)[0]
    else:
        values = getattr(tensor, repeated)
        if len(values) != 1:
            raise ValueError(f"{repeated} holds {len(values)} values for a rank-0 tensor")
        number = values[0]
    if repeated == "half_val":
        return _from_half_bits(dtype, int(number))
    return float(number)


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _canonical_scalar_key(tag: str) -> bytes:
    """The tag-dependent middle of the canonical encoding of a one-``simple_value`` scalar event.

    Such an event serializes as ``09 <f64 wall_time> [10 <varint step>] KEY <f32 value>`` with
    ``KEY = 2a <len> 0a <len> 0a <len> <tag> 15``. A payload that is exactly that, byte for byte,
    decodes to exactly those four fields, so the reader takes them with two ``unpack`` calls and
    a varint instead of building protobuf objects: most of the speed of the source.
    """
    tag_bytes = tag.encode("utf-8")
    value = b"\x0a" + _varint(len(tag_bytes)) + tag_bytes + b"\x15"
    summary = b"\x0a" + _varint(len(value) + 4) + value
    return b"\x2a" + _varint(len(summary) + 4) + summary


@contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
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
) -> SegmentBatch:
    """Read the verified frames of one event file of ``run`` from ``offset`` (a frame boundary).

    ``records_before`` is the number of frames before ``offset`` (the ``records`` of the batch
    that produced the checkpoint). ``memory`` is the run's :class:`RunMemory`, updated in place;
    pass the same object for all segments of a run, in order. ``end_offset`` stops reading there
    (used to rebuild memory up to a checkpoint). ``max_bytes`` bounds one call (at least one
    frame is read): the batch then has ``more`` set and the caller continues from its
    checkpoint; without it the call reads to the end of the file, ``read_size`` bytes per read.
    """
    if memory is None:
        memory = RunMemory()
    batch = SegmentBatch(path, offset, offset, records_before, StopReason.END.value)
    pos = offset
    chunk = max(read_size if max_bytes is None else min(max_bytes, read_size), HEADER_SIZE)
    while True:
        want = chunk if end_offset is None else min(chunk, end_offset - pos)
        if want <= 0:
            return batch
        try:
            data = read_new_bytes(path, pos, want)
        except OSError as exc:
            batch.stop = "unreadable"
            batch.problems.append(_unreadable_problem(path, exc, pos))
            return batch
        with _cyclic_gc_paused():
            scan = scan_frames(data, pos)
            _decode_frames(run, path, scan, batch, memory)
        batch.checkpoint = scan.checkpoint
        if scan.stop is not StopReason.CRC_MISMATCH and len(data) == want and (
            end_offset is None or scan.checkpoint < end_offset
        ):
            # The chunk, not necessarily the file, ended: continue from the verified boundary, with
            # a chunk big enough for the frame that did not fit.
            if max_bytes is not None and scan.frames:
                batch.more = True
                return batch
            pos = scan.checkpoint
            chunk = max(chunk, scan.needed)
            continue
        batch.stop = scan.stop.value
        if scan.stop is StopReason.TRUNCATED:
            if end_offset is None:
                batch.problems.append(SourceProblem(
                    path, ProblemKind.TRUNCATED,
                    scan.message, line=batch.records + 1, offset=scan.checkpoint,
                ))
            else:
                batch.stop = StopReason.END.value
        elif scan.stop is StopReason.CRC_MISMATCH:
            batch.problems.append(_crc_problem(path, scan.message, scan.checkpoint, batch.records + 1))
        return batch


def _unreadable_problem(path: str, exc: OSError, offset: int) -> SourceProblem:
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
    run: TensorBoardRun, path: str, scan: FrameScan, batch: SegmentBatch, memory: RunMemory
) -> None:
    append = batch.observations.append
    layouts = memory.scalar_layouts
    unpack_f64 = _F64.unpack_from
    unpack_f32 = _FLOAT32.unpack_from
    # NamedTuple's generated __new__ is a Python call; tuple.__new__ builds the same object ~5x faster.
    new_obs = tuple.__new__
    fast_max = _FAST_MAX
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
        _decode_event(run, path, payload, record, frame_offset, batch, memory)
    batch.records = record


def _decode_event(
    run: TensorBoardRun, path: str, payload: bytes | memoryview, record: int, frame_offset: int,
    batch: SegmentBatch, memory: RunMemory,
) -> None:
    """Decode one frame with protobuf (any event the canonical-scalar fast path did not take)."""
    plugins = memory.tag_plugins
    names = memory.metric_names
    layouts = memory.scalar_layouts
    dropped = batch.dropped
    append = batch.observations.append
    try:
        event = Event.FromString(payload)
    except DecodeError as exc:
        batch.problems.append(SourceProblem(
            path, ProblemKind.BAD_EVENT,
            f"record {record} has a valid checksum but is not a tensorflow.Event ({exc}); "
            "skipped it and went on with the next record",
            line=record, offset=frame_offset,
        ))
        return
    what = event.WhichOneof("what")
    if what == "summary":
        step = event.step
        wall_time = event.wall_time
        for value in event.summary.value:
            kind = value.WhichOneof("value")
            tag = value.tag or value.node_name
            if tag not in plugins:
                # TensorBoard keeps a tag's first metadata only; writers send it once per tag.
                if value.HasField("metadata"):
                    plugins[tag] = value.metadata.plugin_data.plugin_name
                elif kind in _MIGRATED_PLUGIN:
                    plugins[tag] = _MIGRATED_PLUGIN[kind]
            if kind == "simple_value":
                name = names.get(tag)
                if name is None:
                    name = names[tag] = run.metric_name(tag)
                    if value.tag:
                        layouts[_canonical_scalar_key(tag)] = name
                append(ScalarObservation(name, step, wall_time, value.simple_value, record, frame_offset))
            elif kind == "tensor":
                plugin = plugins.get(tag, "")
                if plugin != "scalars":
                    bucket = _DROPPED_PLUGIN.get(plugin, "tensor")
                    dropped[bucket] = dropped.get(bucket, 0) + 1
                    continue
                tensor = value.tensor
                if tensor.tensor_shape.dim:
                    dropped["non_scalar_tensor"] = dropped.get("non_scalar_tensor", 0) + 1
                    continue
                try:
                    number = _tensor_scalar(tensor)
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
                append(ScalarObservation(name, step, wall_time, number, record, frame_offset))
            elif kind is not None:
                bucket = _DROPPED_KIND.get(kind, kind)
                dropped[bucket] = dropped.get(bucket, 0) + 1
    elif what == "session_log" and event.session_log.status == _START:
        batch.restarts.append(SessionRestart(
            run.relative, event.step, event.wall_time, record, frame_offset,
            not memory.seen_session_start,
        ))
        memory.seen_session_start = True


def rebuild_run_memory(run: TensorBoardRun, path: str, offset: int) -> RunMemory:
    """The :class:`RunMemory` a reader had when it checkpointed ``path`` at ``offset``.

    Re-reads the run's segments whose names sort before ``path`` and ``path`` itself up to
    ``offset`` (bytes that were verified before, so this is deterministic).
    """
    memory = RunMemory()
    name = os.path.basename(path)
    for segment in run.segments():
        if os.path.basename(segment) >= name:
            break
        read_segment(run, segment, memory=memory)
    if offset > 0:
        read_segment(run, path, memory=memory, end_offset=offset)
    return memory


def read_run(run: TensorBoardRun) -> list[SegmentBatch]:
    """Read every segment of ``run`` from the start, sharing one memory (batch consumers, ``dump``)."""
    memory = RunMemory()
    return [read_segment(run, segment, memory=memory) for segment in run.segments()]


def in_read_order(batches: Iterable[SegmentBatch]) -> Iterator[ScalarObservation | SessionRestart]:
    """Observations and restarts of a run's batches interleaved as they appear in the files."""
    for batch in batches:
        yield from heapq.merge(batch.observations, batch.restarts, key=lambda item: item.offset)


def apply_tensorboard_purge(
    items: Iterable[ScalarObservation | SessionRestart], *, first_start_purges: bool = False
) -> list[ScalarObservation]:
    """TensorBoard's view of one run: each restart drops the points before it with step >= its step.

    ``items`` are one run's observations and restarts in read order (:func:`in_read_order`).
    By default the run's first ``START`` does not purge, as in TensorBoard's plugin
    ``EventAccumulator``; ``first_start_purges=True`` gives the legacy ``event_accumulator``.
    """
    kept: list[ScalarObservation] = []
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
