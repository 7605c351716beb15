"""Protobuf's wire format read without generated classes: the few fields a reader needs from a message
(HParams plugin data, an event's summary values counted before decoding), with every length checked
against the message that holds it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["fields", "varint"]


def fields(data: bytes | memoryview) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value) of a protobuf message: ints for varints, slices of ``data`` otherwise
    (no copy for a memoryview). :class:`ValueError` for a message that is not well formed."""
    pos, end = 0, len(data)
    while pos < end:
        key, pos = varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = varint(data, pos)
        elif wire == 1:
            value, pos = data[pos:pos + 8], pos + 8
        elif wire == 2:
            length, pos = varint(data, pos)
            value, pos = data[pos:pos + length], pos + length
        elif wire == 5:
            value, pos = data[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"protobuf wire type {wire} is not read here")
        if pos > end:
            raise ValueError("protobuf field runs past the end of its message")
        yield number, wire, value


def varint(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("protobuf varint runs past the end of its message")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
