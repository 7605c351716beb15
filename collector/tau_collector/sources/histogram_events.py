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
call per histogram.
"""

from __future__ import annotations

import re
import struct

import numpy as np

from tau_collector.sources.data_compat import canonical_histogram
from tau_collector.sources.data_compat import varint_value as _varint
from tau_collector.sources.media import HistogramRecord

__all__ = ["HistoValue", "PendingHistograms", "histo_event"]

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
    try:
        name = bytes(payload[tag_at:tag_end]).decode()
    except UnicodeDecodeError:
        return None
    return (_DOUBLE.unpack(wall)[0] if wall is not None else 0.0, _varint(step) if step is not None else 0, name,
            bytes(payload[histo.end():end]))


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
