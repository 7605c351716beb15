"""A histogram event read from its wire format without protobuf: the layout every writer gives an old ``histo``
value (tensorboardX's ``add_histogram_raw``/``add_histogram``, ``tf.compat.v1`` summaries).

``Event{wall_time, step, summary: Summary{value: [Value{tag, histo}]}}``: each field once, in field order, the
lengths nesting exactly to the frame's end. Such a frame differs from the tag's others only in its step, time and
``histo`` bytes; reading it takes one match where protobuf builds an event, a summary and a value object. Any
other layout (metadata, a second value, a negative step, a tag that is not UTF-8, fields out of order) is
``None``: protobuf reads it, as before, and the reader's rules about it stay protobuf's.

:class:`PendingHistograms` then makes the buckets of a block's histograms a group at a time: those of one
bucket layout (the same limits, the same number of counts) are one ``[n, k]`` array of counts, trimmed to their
filled buckets and cast through float32 as :func:`.data_compat.histogram_buckets` does to each, with no numpy
call per histogram. :func:`histogram_rows` reads many frames of one payload length in that layout at once, as
columns of a uint8 array: frames that differ from one read by :func:`histo_event` only in their numbers and tag.
"""

from __future__ import annotations

import re
import struct

import numpy as np

from tau_collector.sources.data_compat import HISTOGRAMS, canonical_histogram
from tau_collector.sources.data_compat import varint_value as _varint
from tau_collector.sources.media import HistogramRecord

__all__ = ["COLUMNS_MIN", "HistoValue", "PendingHistograms", "histo_event", "histogram_rows"]

_VARINT = rb"([\x80-\xff]{0,3}[\x00-\x7f])"  # a length: at most four bytes (256 MiB, over the record limit)
# wall_time (fixed64; left out when 0.0), the step (a varint of at most nine bytes: 0 <= step < 2**63; left out
# when 0), the summary's length, its value's key and length, the value's tag key and length.
_EVENT = re.compile(rb"(?:\x09(.{8}))?(?:\x10([\x80-\xff]{0,8}[\x00-\x7f]))?\x2a" + _VARINT + rb"\x0a" + _VARINT
                    + rb"\x0a" + _VARINT, re.S)
_HISTO = re.compile(rb"\x2a" + _VARINT)  # the value's ``histo`` (field 5, bytes) after the tag
_DOUBLE = struct.Struct("<d")


class _Lengths(dict):
    """A length varint's value by its bytes, remembered (a file's frames repeat a handful of lengths); at most
    :data:`_LENGTHS_KEPT` remembered, so no file decides how much this holds."""

    def __missing__(self, varint: bytes) -> int:
        value = _varint(varint)
        if len(self) < _LENGTHS_KEPT:
            self[varint] = value
        return value


_LENGTHS_KEPT = 4096
_LENGTH = _Lengths()


class HistoValue:
    """What the media reader takes of a ``Summary.Value`` holding ``histo`` (its ``tag``; no ``node_name``)."""

    __slots__ = ("histo", "tag")
    node_name = ""

    def __init__(self, tag: str, histo: bytes | memoryview) -> None:
        self.tag, self.histo = tag, histo


def histo_event(payload: bytes | memoryview) -> tuple[float, int, str, bytes | memoryview] | None:
    """(wall time, step, tag, the ``HistogramProto``'s bytes) of a frame in that layout, else None."""
    layout = _event_layout(payload)
    if layout is None:
        return None
    wall, step, tag_at, tag_end, histo_at = layout
    try:
        name = bytes(payload[tag_at:tag_end]).decode()
    except UnicodeDecodeError:
        return None
    return (_DOUBLE.unpack(wall)[0] if wall is not None else 0.0, _varint(step) if step is not None else 0, name,
            bytes(payload[histo_at:]))


def _event_layout(payload: bytes | memoryview) -> tuple[bytes | None, bytes | None, int, int, int] | None:
    """(the wall time's bytes, the step's varint, where the tag starts and ends, where the histogram starts) of
    a frame in the writers' layout, else None."""
    found = _EVENT.match(payload)
    if found is None:
        return None
    wall, step, summary, value, tag = found.groups()
    end = len(payload)
    length = _LENGTH
    if found.start(4) - 1 + length[summary] != end or found.start(5) - 1 + length[value] != end:
        return None
    tag_at = found.end()
    tag_end = tag_at + length[tag]
    if tag_end == tag_at:
        return None  # no tag: the value's node_name may name it (protobuf's reading)
    histo = _HISTO.match(payload, tag_end)
    if histo is None or histo.end() + length[histo.group(1)] != end:
        return None
    return wall, step, tag_at, tag_end, histo.end()


class PendingHistograms:
    """Histogram records of a block whose ``buckets`` are made by :meth:`resolve`, a bucket layout at a time."""

    def __init__(self) -> None:
        # (count of counts, the limits' bytes) -> (records, lows, highs, the counts' bytes)
        self._groups: dict[tuple[int, bytes], tuple[list, list, list, list]] = {}

    def add(self, run: str, tag: str, step: int, wall_time: float, data: bytes, record: int, offset: int,
            max_values: int) -> HistogramRecord | None:
        """The record of ``data`` (a ``HistogramProto``), its buckets made by :meth:`resolve`; None when it
        cannot wait (a layout :func:`.data_compat.histogram_buckets` must read, or one it could refuse: more
        values than ``max_values``, fewer limits than its last bucket needs)."""
        layout = canonical_histogram(data)
        if layout is None:
            return None
        low, high, limits_at, limits_n, counts_at, counts_n = layout
        if 3 * max(limits_n, counts_n) > max_values or limits_n < counts_n - 1:
            return None
        item = HistogramRecord(run, tag, step, wall_time, None, record, offset)  # type: ignore[arg-type]
        group = self._groups.get((counts_n, data[limits_at:limits_at + 8 * limits_n]))
        if group is None:
            group = self._groups[(counts_n, data[limits_at:limits_at + 8 * limits_n])] = ([], [], [], [])
        group[0].append(item)
        group[1].append(low)
        group[2].append(high)
        group[3].append(data[counts_at:counts_at + 8 * counts_n])
        return item

    def add_layout(self, counts_n: int, limits: bytes, items: list[HistogramRecord], lows: list[float],
                   highs: list[float], counts: bytes) -> None:
        """Records whose histograms share ``limits`` and ``counts_n`` counts (``counts``: theirs, one after
        another), as :meth:`add` would take each."""
        group = self._groups.get((counts_n, limits))
        if group is None:
            group = self._groups[(counts_n, limits)] = ([], [], [], [])
        group[0].extend(items)
        group[1].extend(lows)
        group[2].extend(highs)
        group[3].append(counts)

    def resolve(self) -> None:
        """Give every record added its buckets: what ``histogram_buckets`` gives each, bit for bit."""
        for (k, limits_bytes), (items, lows, highs, counts_bytes) in self._groups.items():
            limits = np.frombuffer(limits_bytes, dtype="<f8")
            counts = np.frombuffer(b"".join(counts_bytes), dtype="<f8").reshape(len(items), k)
            low, high = np.array(lows, dtype=np.float64), np.array(highs, dtype=np.float64)
            filled = counts > 0
            held = filled.any(axis=1) if k else np.zeros(len(items), dtype=bool)
            for i in np.flatnonzero(~held).tolist():
                items[i].buckets = np.zeros((0, 3), dtype=np.float64)
            rows = np.flatnonzero(held)
            if not len(rows):
                continue
            first = filled[rows].argmax(axis=1)
            last = k - 1 - filled[rows, ::-1].argmax(axis=1)
            spans = first * k + last
            for span in np.unique(spans).tolist():
                start, end = divmod(span, k)
                picked = rows[spans == span]
                inner = limits[start:end]
                # Through float32, as the migration makes them: each double cast on assignment (as astype casts).
                buckets = np.empty((len(picked), end - start + 1, 3), dtype=np.float32)
                buckets[:, 0, 0] = low[picked]
                buckets[:, 1:, 0] = inner
                buckets[:, :-1, 1] = inner
                buckets[:, -1, 1] = high[picked]
                buckets[:, :, 2] = counts[picked, start:end + 1]
                wide = buckets.astype(np.float64)
                for j, i in enumerate(picked.tolist()):
                    items[i].buckets = wide[j]
        self._groups.clear()


# --- a payload length's histogram frames at once ---------------------------------------------------------------------

COLUMNS_MIN = 8  # fewer frames of one payload length are read one at a time
_PROBES = 4  # frames of one length and step width whose layout is tried on the others before the rest go one by one
_SINGULAR = (0x09, 0x11, 0x19, 0x21, 0x29)  # HistogramProto's min, max, num, sum, sum_squares: fixed64, optional


def histogram_rows(payloads: np.ndarray, records: np.ndarray, offsets: np.ndarray, run: str, plugins: dict[str, str],
                   max_values: int, pending: PendingHistograms
                   ) -> tuple[np.ndarray, list[HistogramRecord], np.ndarray]:
    """The histogram frames among ``payloads`` (an ``[n, length]`` uint8 array of one payload length) that the
    one-at-a-time reading would give to ``pending``, read as columns: (which rows were taken, their records).

    A frame is taken when it has the layout of another frame of its step width that :func:`histo_event` and
    :func:`.data_compat.canonical_histogram` read -- every byte equal but the wall time, the step varint (of
    the same width), the tag, ``min``/``max``/``num``/``sum``/``sum_squares``, the limits and the counts --
    and its tag is a histograms series of ``plugins`` (known before this block). In that layout each field is
    where the other frame has it (every key byte differs from the optional fields before it, so there is one
    way to read it), so its numbers are read at those places. Any other frame is left for the caller to read.

    The third answer marks the frames of that layout whose tag ``plugins`` does not know yet, but the first of
    each such tag: once the caller has read the others (the first registers its tag), they can be asked again."""
    n, size = payloads.shape
    taken = np.zeros(n, dtype=bool)
    waiting = np.zeros(n, dtype=bool)
    items: list[HistogramRecord] = []
    if size < 12:
        return taken, items, waiting
    # A wall time (``\x09`` and 8 bytes) then a step (``\x10`` and a varint of at most 9 bytes) first.
    ends = payloads[:, 10:10 + min(9, size - 10)] < 0x80
    step_width = np.where(ends.any(axis=1), ends.argmax(axis=1) + 1, 0)
    step_width[(payloads[:, 0] != 0x09) | (payloads[:, 9] != 0x10)] = 0
    for width in np.unique(step_width[step_width > 0]).tolist():
        left = np.flatnonzero(step_width == width)
        for _ in range(_PROBES):
            if len(left) < COLUMNS_MIN:
                break
            layout = _columns_layout(payloads[left[0]].tobytes(), width, max_values)
            if layout is None:
                left = left[1:]
                continue
            fixed, fields = layout
            same = (payloads[np.ix_(left, fixed)] == payloads[left[0], fixed]).all(axis=1)
            rows = left[same]
            left = left[~same]
            done, later, some = _take_rows(payloads[rows], records[rows], offsets[rows], width, fields, run, plugins,
                                           pending)
            taken[rows[done]] = True
            waiting[rows[later]] = True
            items += some
    return taken, items, waiting


def _columns_layout(payload: bytes, width: int, max_values: int) -> tuple[np.ndarray, tuple] | None:
    """Of one frame: the places whose bytes every frame of its layout has (as an index array), and where its
    fields are: (tag start, tag end, min's place or -1, max's place or -1, limits' place and count, counts'
    place and count). None: a frame the one-at-a-time reading does not give to ``pending``."""
    found = _event_layout(payload)
    if found is None or found[0] is None or found[1] is None or len(found[1]) != width:
        return None
    _, _, tag_at, tag_end, histo_at = found
    layout = canonical_histogram(payload[histo_at:])
    if layout is None:
        return None
    _, _, limits_at, limits_n, counts_at, counts_n = layout
    if 3 * max(limits_n, counts_n) > max_values or limits_n < counts_n - 1:
        return None  # PendingHistograms.add refuses it: the reading one at a time decides
    variable = np.zeros(len(payload), dtype=bool)
    variable[1:9] = variable[10:10 + width] = variable[tag_at:tag_end] = True
    places = {}
    at = histo_at
    for key in _SINGULAR:  # canonical_histogram's reading: each present in this order
        if payload[at] == key:
            places[key] = at + 1
            variable[at + 1:at + 9] = True
            at += 9
    limits_at += histo_at
    counts_at += histo_at
    variable[limits_at:limits_at + 8 * limits_n] = variable[counts_at:counts_at + 8 * counts_n] = True
    return np.flatnonzero(~variable), (tag_at, tag_end, places.get(0x09, -1), places.get(0x11, -1), limits_at,
                                       limits_n, counts_at, counts_n)


def _take_rows(rows: np.ndarray, records: np.ndarray, offsets: np.ndarray, width: int, fields: tuple, run: str,
               plugins: dict[str, str], pending: PendingHistograms
               ) -> tuple[np.ndarray, np.ndarray, list[HistogramRecord]]:
    """The frames ``rows`` of one layout given to ``pending``: (which, which wait for their tag, their records);
    a frame whose tag is not UTF-8 or not a histograms series already seen is not given; of a tag not seen yet,
    every frame but the first waits."""
    tag_at, tag_end, low_at, high_at, limits_at, limits_n, counts_at, counts_n = fields
    tag_of, tag_rows = _same_bytes(rows[:, tag_at:tag_end])
    good = np.zeros(len(tag_rows), dtype=bool)
    unseen = np.zeros(len(tag_rows), dtype=bool)
    names = []
    for t, r in enumerate(tag_rows.tolist()):
        try:
            name = rows[r, tag_at:tag_end].tobytes().decode()
        except UnicodeDecodeError:  # histo_event leaves it to protobuf
            names.append("")
            continue
        names.append(name)
        good[t] = plugins.get(name) == HISTOGRAMS
        unseen[t] = name not in plugins
    done = good[tag_of]
    later = unseen[tag_of]
    later[tag_rows[unseen]] = False  # each unseen tag's first frame: the caller reads it, registering the tag
    if not done.all():
        keep = np.flatnonzero(done)
        rows, records, offsets, tag_of = rows[keep], records[keep], offsets[keep], tag_of[keep]
    if not len(rows):
        return done, later, []
    walls = rows[:, 1:9].copy().view("<f8")[:, 0]
    step = (rows[:, 10:10 + width].astype(np.int64) & 0x7F) << (7 * np.arange(width, dtype=np.int64))
    steps = step.sum(axis=1)
    lows = rows[:, low_at:low_at + 8].copy().view("<f8")[:, 0] if low_at >= 0 else np.zeros(len(rows))
    highs = rows[:, high_at:high_at + 8].copy().view("<f8")[:, 0] if high_at >= 0 else np.zeros(len(rows))
    limits_of, limits_rows = _same_bytes(rows[:, limits_at:limits_at + 8 * limits_n])
    every = []
    for g, first in enumerate(limits_rows.tolist()):
        picked = np.flatnonzero(limits_of == g) if len(limits_rows) > 1 else np.arange(len(rows))
        tags = [names[t] for t in tag_of[picked].tolist()]
        items = [HistogramRecord(run, tag, step, wall, None, record, offset)  # type: ignore[arg-type]
                 for tag, step, wall, record, offset in zip(tags, steps[picked].tolist(), walls[picked].tolist(),
                                                            records[picked].tolist(), offsets[picked].tolist(),
                                                            strict=True)]
        counts = np.ascontiguousarray(rows[picked, counts_at:counts_at + 8 * counts_n]).tobytes()
        pending.add_layout(counts_n, rows[first, limits_at:limits_at + 8 * limits_n].tobytes(), items,
                           lows[picked].tolist(), highs[picked].tolist(), counts)
        every += items
    return done, later, every


def _same_bytes(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The equal rows of a uint8 matrix: (each row's group, each group's first row), compared byte for byte."""
    if not len(matrix):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if not matrix.shape[1] or (matrix == matrix[0]).all():  # one group: the usual limits of a block
        return np.zeros(len(matrix), dtype=np.int64), np.zeros(1, dtype=np.int64)
    keys = np.ascontiguousarray(matrix).view(np.dtype((np.void, matrix.shape[1])))[:, 0]
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    return inverse.reshape(-1), first
