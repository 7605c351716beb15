"""W&B's ``run-<id>.wandb`` transaction log: its history rows, config, summary and run identity.

The log is LevelDB framing (:mod:`.leveldb_log`) behind the header ``:W&B`` + magic ``0xBEE1`` + version 0,
of protobuf ``wandb_internal.Record`` messages. The few fields read here are taken from the wire format
(:mod:`.protobuf_wire`) with the field numbers of wandb's published ``wandb/proto/wandb_internal.proto``
(the tests decode the same records with wandb's own generated classes and compare). Generated classes
are not vendored: wandb's register ``wandb_internal.proto`` in protobuf's default descriptor pool, and a
job that imports ``wandb`` beside the sidecar's copy of another version would fail on the duplicate file.

- ``Record.history`` (2): ``HistoryItem`` s, each a ``key`` or a ``nested_key`` path and a value
  (``value_json``, or one of the typed fields newer clients may write); the path becomes a nested dict,
  as the JSONL history holds it, and the step (``HistoryRecord.step.num``) is ``_step`` unless an item says.
- ``Record.config`` (5) and ``RunRecord.config`` (17.4): ``ConfigItem`` updates and removals.
- ``Record.summary`` (3) and ``RunRecord.summary`` (17.5): ``SummaryItem`` updates and removals.
- ``Record.run`` (17): ``run_id`` (1), ``entity`` (2), ``project`` (3), ``display_name`` (8).
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from typing import Any

from tau_collector.sources.protobuf_wire import fields

__all__ = ["FILE_HEADER", "METADATA_KINDS", "WandbRecord", "WandbRunInfo", "apply_items", "decode_record",
           "record_kind"]

FILE_HEADER = b":W&B" + struct.pack("<HB", 0xBEE1, 0)

_HISTORY, _SUMMARY, _CONFIG, _RUN = 2, 3, 5, 17
_DOUBLE = struct.Struct("<d")
_NOT_RECORD_TYPE = frozenset({16, 19, 200})  # Record.control, uuid, _info: beside the record_type
# The records that change the run's config, summary or identity (read without the history between them).
METADATA_KINDS = frozenset({_SUMMARY, _CONFIG, _RUN})


@dataclass(slots=True)
class WandbRunInfo:
    """The run's identity as its ``RunRecord`` gives it (empty strings when absent)."""

    run_id: str = ""
    entity: str = ""
    project: str = ""
    display_name: str = ""


@dataclass(slots=True)
class WandbRecord:
    """The parts of one ``Record`` read here. ``kind`` is ``history``, ``config``, ``summary``, ``run`` or
    ``other``; ``row`` is a history row (nested dicts for nested keys); ``updates``/``removes`` are
    ``(path, value)``/``path`` of config or summary items (a run record's too: ``summary_updates``)."""

    kind: str
    row: dict[str, Any] | None = None
    updates: list[tuple[tuple[str, ...], Any]] = field(default_factory=list)
    removes: list[tuple[str, ...]] = field(default_factory=list)
    summary_updates: list[tuple[tuple[str, ...], Any]] = field(default_factory=list)
    summary_removes: list[tuple[str, ...]] = field(default_factory=list)
    run: WandbRunInfo | None = None


def _text(value: Any) -> str:
    return bytes(value).decode("utf-8", "replace")


def _json(value: Any) -> Any:
    try:
        return json.loads(bytes(value))
    except RecursionError:
        raise ValueError("a value_json nested too deep to read") from None


def _item(data: Any) -> tuple[tuple[str, ...], Any, bool]:
    """(path, value, has a value) of a HistoryItem, ConfigItem or SummaryItem."""
    key = None
    nested: list[str] = []
    value: Any = None
    has = False
    for number, wire, raw in fields(data):
        if number == 1 and wire == 2:
            key = _text(raw)
        elif number == 2 and wire == 2:
            nested.append(_text(raw))
        elif number in (16, 8) and wire == 2:  # value_json, json
            value, has = _json(raw), True
        elif number == 3 and wire == 0:  # none
            value, has = None, True
        elif number == 4 and wire == 0:  # boolean
            value, has = bool(raw), True
        elif number == 5 and wire == 0:  # integer (sint64)
            value, has = (raw >> 1) ^ -(raw & 1), True
        elif number == 6 and wire == 1:  # number (double)
            value, has = _DOUBLE.unpack(bytes(raw))[0], True
        elif number == 7 and wire == 2:  # text
            value, has = _text(raw), True
    path = tuple(nested) if nested else (key,) if key is not None else ()
    return path, value, has


def apply_items(into: dict[str, Any], updates: list[tuple[tuple[str, ...], Any]],
                removes: list[tuple[str, ...]] = ()) -> None:  # type: ignore[assignment]
    """Set each ``(path, value)`` in the nested dict ``into`` and delete each removed path."""
    for path, value in updates:
        node = into
        for part in path[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[path[-1]] = value
    for path in removes:
        node = into
        for part in path[:-1]:
            node = node.get(part)
            if not isinstance(node, dict):
                break
        else:
            node.pop(path[-1], None)


def _items(data: Any, kinds: tuple[int, int] = (1, 2)) -> tuple[list, list]:
    updates, removes = [], []
    for number, wire, raw in fields(data):
        if wire != 2 or number not in kinds:
            continue
        path, value, has = _item(raw)
        if not path:
            continue
        if number == kinds[0] and has:
            updates.append((path, value))
        elif number == kinds[1]:
            removes.append(path)
    return updates, removes


def _history(data: Any, max_items: int | None) -> dict[str, Any]:
    if max_items is not None:
        count = sum(1 for number, wire, _ in fields(data) if number == 1 and wire == 2)
        if count > max_items:
            raise ValueError(f"a history row of {count} items, more than the limit of {max_items}")
    items = []
    step = None
    for number, wire, raw in fields(data):
        if number == 1 and wire == 2:
            path, value, has = _item(raw)
            if path and has:
                items.append((path, value))
        elif number == 2 and wire == 2:
            step = 0
            for step_number, step_wire, num in fields(raw):
                if step_number == 1 and step_wire == 0:
                    step = num - (1 << 64) if num >= 1 << 63 else num
    row: dict[str, Any] = {}
    apply_items(row, items)
    if step is not None and "_step" not in row:
        row["_step"] = step
    return row


def _run(data: Any, record: WandbRecord) -> None:
    info = WandbRunInfo()
    for number, wire, raw in fields(data):
        if wire != 2:
            continue
        if number == 1:
            info.run_id = _text(raw)
        elif number == 2:
            info.entity = _text(raw)
        elif number == 3:
            info.project = _text(raw)
        elif number == 8:
            info.display_name = _text(raw)
        elif number == 4:
            updates, removes = _items(raw)
            record.updates += updates
            record.removes += removes
        elif number == 5:
            updates, removes = _items(raw)
            record.summary_updates += updates
            record.summary_removes += removes
    record.run = info


def decode_record(payload: bytes | memoryview, *, max_items: int | None = None) -> WandbRecord:
    """The parts of a ``Record`` read here; :class:`ValueError` for a payload that is not well formed, or a
    history row of more than ``max_items`` items (counted before any is decoded)."""
    for number, wire, raw in fields(memoryview(payload)):
        if wire != 2:
            continue
        if number == _HISTORY:
            return WandbRecord("history", row=_history(raw, max_items))
        if number == _CONFIG:
            updates, removes = _items(raw)
            return WandbRecord("config", updates=updates, removes=removes)
        if number == _SUMMARY:
            updates, removes = _items(raw)
            return WandbRecord("summary", summary_updates=updates, summary_removes=removes)
        if number == _RUN:
            record = WandbRecord("run")
            _run(raw, record)
            return record
    return WandbRecord("other")


def record_kind(payload: bytes | memoryview) -> int:
    """The field number of the ``Record``'s one message field (its ``record_type``) without decoding it; 0 if none.
    :class:`ValueError` for a payload that is not well formed."""
    for number, wire, _ in fields(memoryview(payload)):
        if wire == 2 and number not in _NOT_RECORD_TYPE:
            return number
    return 0
