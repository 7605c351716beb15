"""A histogram event read from its wire format without protobuf: the layout every writer gives an old ``histo``
value (tensorboardX's ``add_histogram_raw``/``add_histogram``, ``tf.compat.v1`` summaries).

``Event{wall_time, step, summary: Summary{value: [Value{tag, histo}]}}``: each field once, in field order, the
lengths nesting exactly to the frame's end. Such a frame differs from the tag's others only in its step, time and
``histo`` bytes; reading it takes one match where protobuf builds an event, a summary and a value object. Any
other layout (metadata, a second value, a negative step, a tag that is not UTF-8, fields out of order) is
``None``: protobuf reads it, as before, and the reader's rules about it stay protobuf's.
"""

from __future__ import annotations

import re
import struct

__all__ = ["HistoValue", "histo_event"]

_VARINT = rb"([\x80-\xff]{0,3}[\x00-\x7f])"  # a length: at most four bytes (256 MiB, over the record limit)
# wall_time (fixed64; left out when 0.0), the step (a varint of at most nine bytes: 0 <= step < 2**63; left out
# when 0), the summary's length, its value's key and length, the value's tag key and length.
_EVENT = re.compile(rb"(?:\x09(.{8}))?(?:\x10([\x80-\xff]{0,8}[\x00-\x7f]))?\x2a" + _VARINT + rb"\x0a" + _VARINT
                    + rb"\x0a" + _VARINT, re.S)
_HISTO = re.compile(rb"\x2a" + _VARINT)  # the value's ``histo`` (field 5, bytes) after the tag
_DOUBLE = struct.Struct("<d")


class HistoValue:
    """What the media reader takes of a ``Summary.Value`` holding ``histo`` (its ``tag``; no ``node_name``)."""

    __slots__ = ("histo", "tag")
    node_name = ""

    def __init__(self, tag: str, histo: bytes | memoryview) -> None:
        self.tag, self.histo = tag, histo


def _varint(data: bytes) -> int:
    number = shift = 0
    for byte in data:
        number |= (byte & 0x7F) << shift
        shift += 7
    return number


def histo_event(payload: bytes | memoryview) -> tuple[float, int, str, bytes | memoryview] | None:
    """(wall time, step, tag, the ``HistogramProto``'s bytes) of a frame in that layout, else None."""
    found = _EVENT.match(payload)
    if found is None:
        return None
    wall, step, summary, value, tag = found.groups()
    end = len(payload)
    if found.start(4) - 1 + _varint(summary) != end or found.start(5) - 1 + _varint(value) != end:
        return None
    tag_at = found.end()
    tag_end = tag_at + _varint(tag)
    if tag_end == tag_at:
        return None  # no tag: the value's node_name may name it (protobuf's reading)
    histo = _HISTO.match(payload, tag_end)
    if histo is None or histo.end() + _varint(histo.group(1)) != end:
        return None
    try:
        name = bytes(payload[tag_at:tag_end]).decode()
    except UnicodeDecodeError:
        return None
    return (_DOUBLE.unpack(wall)[0] if wall is not None else 0.0, _varint(step) if step is not None else 0, name,
            bytes(payload[histo.end():end]))
