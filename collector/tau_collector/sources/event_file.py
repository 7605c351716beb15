"""One event file's events: ``tensorflow.Event`` records decoded from verified TFRecord frames.

Two ways in. :func:`decode_event` parses a payload with protobuf (any event). Writers such as
tensorboardX and torch encode ``add_scalar`` events canonically: a one-``simple_value`` event is
``09 <f64 wall_time> [10 <varint step>] KEY <f32 value>`` with ``KEY`` depending on the tag only
(:func:`canonical_scalar_key`). A payload that is exactly that, byte for byte, decodes to exactly
those four fields, so readers that have seen the tag once take later events from the bytes
(:mod:`.run` one frame at a time, :mod:`.event_columns` a column at a time). rustboard ``event_file.rs``.
"""

from __future__ import annotations

from google.protobuf.message import DecodeError

from tau_collector.sources.protobuf_wire import fields
from tau_collector.sources.tensorboard_proto.event_pb2 import Event, SessionLog

__all__ = ["CANONICAL_MAX", "Event", "EventDecodeError", "SESSION_START", "canonical_scalar_key", "decode_event",
           "summary_value_count"]

SESSION_START = SessionLog.START
# Longer payloads are never one canonical scalar event worth a fast-path attempt.
CANONICAL_MAX = 4096


class EventDecodeError(ValueError):
    """A verified frame whose payload is not a ``tensorflow.Event``."""


def decode_event(payload: bytes | memoryview) -> Event:
    """The event a frame's payload holds; :class:`EventDecodeError` says why there is none."""
    try:
        return Event.FromString(payload)
    except DecodeError as exc:
        raise EventDecodeError(str(exc)) from None


def summary_value_count(payload: bytes | memoryview, limit: int) -> int:
    """How many summary values an event payload holds, counted from the wire format without decoding them,
    stopping once past ``limit`` (a guard before decoding: a 16 MiB record can hold a million values).
    A payload that is not well formed counts what was seen before the fault; decoding reports it."""
    count = 0
    try:
        for number, wire, summary in fields(memoryview(payload)):
            if number == 5 and wire == 2:  # Event.summary (repeated occurrences merge)
                for value_number, value_wire, _ in fields(summary):
                    count += value_number == 1 and value_wire == 2  # Summary.value
                    if count > limit:
                        return count
    except ValueError:
        pass
    return count


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def canonical_scalar_key(tag: str) -> bytes:
    """The tag-dependent middle of the canonical encoding of a one-``simple_value`` scalar event.

    ``KEY = 2a <len> 0a <len> 0a <len> <tag> 15``: the summary, its one value, the value's tag and
    the ``simple_value`` field key; the four value bytes follow it.
    """
    tag_bytes = tag.encode("utf-8")
    value = b"\x0a" + _varint(len(tag_bytes)) + tag_bytes + b"\x15"
    summary = b"\x0a" + _varint(len(value) + 4) + value
    return b"\x2a" + _varint(len(summary) + 4) + summary
