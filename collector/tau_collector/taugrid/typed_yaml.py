"""YAML decoded as ``gopkg.in/yaml.v3`` decodes it into Go types: a node tree, then typed values and yaml.v3's errors.

yaml.v3 decodes into a struct or map by the Go type of each field, which reads a file differently from
decoding it into plain values (:mod:`.config_yaml`): a string field takes any scalar's text (``name: 123``
is ``"123"``), an integer field takes an integer or a float (truncated) but not a quoted number, a bool
field takes ``true``/``false`` and the YAML 1.1 words (``yes``, ``on``, also quoted) but not ``"true"``;
a null leaves a field at its zero value and is dropped from a list; a key given twice, a key no field
has (when decoding strictly, ``KnownFields``) and every type mismatch of the document are collected and
reported together in yaml.v3's words (``line N: cannot unmarshal !!str `true` into bool``). A Go type is
described with :class:`Ptr`, :class:`Slice`, :class:`Map`, :class:`Struct` and the scalar names
(:data:`STR`, :data:`INT`, :data:`INT64`, :data:`BOOL`, :data:`ANY`, :data:`DURATION`).
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

import yaml

from tau_collector.taugrid.config_limits import ConfigBudget, ConfigError
from tau_collector.taugrid.config_yaml import resolve_plain
from tau_collector.taugrid.gojson import decode_go_utf8, go_quote

__all__ = ["ANY", "BOOL", "DURATION", "INT", "INT64", "STR", "DecodeFailed", "Decoder", "GeneralMap", "Map", "Node",
           "Ptr", "Slice", "Struct", "compose"]

_TAG = "tag:yaml.org,2002:"
_INT64_RANGE = (-(2**63), 2**63 - 1)


def _go_bytes_text(raw: bytes) -> str:
    # Go strings are bytes: a message holding a cut UTF-8 sequence reads as U+FFFD per bad byte.
    return decode_go_utf8(raw)


class Node:
    """A YAML node as yaml.v3 keeps it: kind, explicit tag, text, style and line."""

    __slots__ = ("content", "kind", "line", "quoted", "tag", "text")

    def __init__(self, kind: str, tag: str | None, line: int, text: str = "", quoted: bool = False) -> None:
        self.kind = kind
        self.tag = tag if tag not in (None, "!") else None
        self.line = line
        self.text = text
        self.quoted = quoted
        self.content: list[Node] = []

    def resolved(self) -> tuple[str, Any]:
        """(short tag, value) of a scalar, as yaml.v3's ``resolve`` gives them."""
        if self.quoted:
            return "!!str", self.text
        if self.tag is not None:
            kind = self.tag[len(_TAG):] if self.tag.startswith(_TAG) else self.tag
            if kind in ("str", "binary", "timestamp") or not self.tag.startswith(_TAG):
                return "!!" + kind if self.tag.startswith(_TAG) else self.tag, self.text
            if kind == "null":
                return "!!null", None
            value = resolve_plain(self.text)
            return "!!" + kind, value
        value = resolve_plain(self.text)
        return _short_tag(value), value

    def short_tag(self) -> str:
        if self.kind == "map":
            return "!!map"
        if self.kind == "seq":
            return "!!seq"
        return self.resolved()[0]


def _short_tag(value: Any) -> str:
    if value is None:
        return "!!null"
    if isinstance(value, bool):
        return "!!bool"
    if isinstance(value, int):
        return "!!int"
    if isinstance(value, float):
        return "!!float"
    return "!!str"


def compose(text: str) -> Node | None:
    """The first document's root node (None for a stream with no document); aliases share nodes."""
    anchors: dict[str, Node] = {}
    stack: list[Node] = []
    root: Node | None = None
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        line = event.start_mark.line + 1 if event.start_mark else 0
        if isinstance(event, yaml.DocumentEndEvent):
            break
        node: Node | None = None
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            node = Node("map" if isinstance(event, yaml.MappingStartEvent) else "seq", event.tag, line)
            if event.anchor:
                anchors[event.anchor] = node
            if stack:
                stack[-1].content.append(node)
            else:
                root = node
            stack.append(node)
            continue
        if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            stack.pop()
            continue
        if isinstance(event, yaml.ScalarEvent):
            node = Node("scalar", event.tag, line, event.value,
                         quoted=event.style is not None or not event.implicit[0])
            if event.tag not in (None, "!"):
                node.quoted = False
            if event.anchor:
                anchors[event.anchor] = node
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor not in anchors:
                raise ConfigError(f"yaml: unknown anchor '{event.anchor}' referenced")
            node = anchors[event.anchor]
        if node is not None:
            if stack:
                stack[-1].content.append(node)
            else:
                root = node
    return root


# -- Go types and yaml.v3's decoding into them -----------------------------------------


class Ptr(NamedTuple):
    elem: Any


class Slice(NamedTuple):
    elem: Any


class Map(NamedTuple):
    elem: Any


class Struct(NamedTuple):
    name: str
    fields: dict[str, Any]


STR, INT, INT64, BOOL, ANY, DURATION = "string", "int", "int64", "bool", "interface {}", "duration"


def _type_name(t: Any) -> str:
    if isinstance(t, Ptr):
        return _type_name(t.elem)
    if isinstance(t, Slice):
        return "[]" + _type_name(t.elem)
    if isinstance(t, Map):
        return "map[string]" + _type_name(t.elem)
    if isinstance(t, Struct):
        return t.name
    return t


class GeneralMap(dict):
    """A YAML mapping with a non-string key, decoded into ``any`` (Go's ``map[interface{}]interface{}``)."""


class DecodeFailed(Exception):
    """yaml.v3 stopped decoding at once (``failf``): the message is the whole error."""


class Decoder:
    def __init__(self, strict: bool, budget: ConfigBudget) -> None:
        self.strict = strict
        self.budget = budget
        self.errors: list[str] = []

    def terror(self, node: Node, tag: str, t: Any) -> None:
        if node.tag is not None:
            tag = "!!" + node.tag[len(_TAG):] if node.tag.startswith(_TAG) else node.tag
        value = ""
        if tag not in ("!!seq", "!!map"):
            raw = node.text.encode("utf-8", "surrogatepass")
            value = f" `{_go_bytes_text(raw[:7])}...`" if len(raw) > 10 else f" `{node.text}`"
        self.errors.append(f"line {node.line}: cannot unmarshal {tag}{value} into {_type_name(t)}")

    def decode(self, node: Node, t: Any, depth: int = 0) -> tuple[bool, Any]:
        self.budget.take(depth)
        if isinstance(t, Ptr):
            if node.kind == "scalar" and node.short_tag() == "!!null":
                return True, None
            return self.decode(node, t.elem, depth)
        if t == DURATION and not (node.kind == "scalar" and node.short_tag() == "!!null"):
            ok, text = self.decode(node, STR, depth)
            if not ok:
                return False, None
            try:
                return True, _parse_duration(text)
            except ValueError as exc:
                raise DecodeFailed(f"invalid duration {go_quote(text)}: {exc}") from None
        if node.kind == "scalar":
            return self.scalar(node, t)
        if node.kind == "seq":
            return self.sequence(node, t, depth)
        return self.mapping(node, t, depth)

    def scalar(self, node: Node, t: Any) -> tuple[bool, Any]:
        tag, value = node.resolved()
        if value is None:
            return (True, None) if t == ANY or isinstance(t, (Slice, Map)) else (False, None)
        if t == ANY:
            return True, value
        if t == STR:
            return True, node.text
        if t in (INT, INT64) and not isinstance(value, (bool, str)):
            if isinstance(value, float):
                if value != value or not -(2.0**63) <= value < 2.0**63:
                    self.terror(node, tag, t)
                    return False, None
                value = int(value)
            if _INT64_RANGE[0] <= value <= _INT64_RANGE[1]:
                return True, value
        if t == BOOL:
            if isinstance(value, bool):
                return True, value
            if isinstance(value, str):
                if value in ("y", "Y", "yes", "Yes", "YES", "on", "On", "ON"):
                    return True, True
                if value in ("n", "N", "no", "No", "NO", "off", "Off", "OFF"):
                    return True, False
        self.terror(node, tag, t)
        return False, None

    def sequence(self, node: Node, t: Any, depth: int) -> tuple[bool, Any]:
        if t == ANY:
            elem = ANY
        elif isinstance(t, Slice):
            elem = t.elem
        else:
            self.terror(node, "!!seq", t)
            return False, None
        out = []
        for item in node.content:
            ok, value = self.decode(item, elem, depth + 1)
            if ok:
                out.append(value)
        return True, out

    def mapping(self, node: Node, t: Any, depth: int) -> tuple[bool, Any]:
        pairs = list(zip(node.content[::2], node.content[1::2], strict=True))
        before = len(self.errors)
        for i, (key, _) in enumerate(pairs):
            for other, _ in pairs[i + 1:]:
                if key.kind == other.kind and key.text == other.text and key.kind == "scalar":
                    self.errors.append(f"line {other.line}: mapping key {go_quote(other.text)} already defined at "
                                       f"line {key.line}")
        if len(self.errors) > before:
            return False, None
        if isinstance(t, Struct):
            return self.struct(pairs, t, depth)
        if isinstance(t, Map):
            return True, self.map_items(pairs, STR, t.elem, depth)
        if t == ANY:
            string_keys = all((key.kind == "scalar" and key.short_tag() in ("!!str", "!!merge")) or _is_merge(key)
                              for key, _ in pairs)
            items = self.map_items(pairs, ANY, ANY, depth)
            return True, (items if string_keys else GeneralMap(items))
        self.terror(node, "!!map", t)
        return False, None

    def map_items(self, pairs: list[tuple[Node, Node]], key_type: Any, elem: Any, depth: int) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        merges: list[Node] = []
        for key, value in pairs:
            if _is_merge(key):
                merges.append(value)
                continue
            ok, name = self.decode(key, key_type, depth + 1)
            if not ok:
                continue
            ok, item = self.decode(value, elem, depth + 1)
            if ok or (value.kind == "scalar" and value.short_tag() == "!!null"):
                out[name] = item
        for merge in merges:
            for source in (merge.content if merge.kind == "seq" else [merge]):
                if source.kind != "map":
                    raise DecodeFailed("map merge requires map or sequence of maps as the value")
                ok, items = self.mapping(source, Map(elem) if key_type == STR else ANY, depth + 1)
                for name, item in (items or {}).items():
                    out.setdefault(name, item)
        return out

    def struct(self, pairs: list[tuple[Node, Node]], t: Struct, depth: int,
               done: set[str] | None = None) -> tuple[bool, Any]:
        out: dict[str, Any] = {}
        seen: set[str] = set()
        merged = done if done is not None else None
        merge: Node | None = None
        for key, value in pairs:
            if _is_merge(key):
                merge = value
                continue
            ok, name = self.decode(key, STR, depth + 1)
            if not ok:
                continue
            if merged is not None:
                if name in merged:
                    continue
                merged.add(name)
            if name in t.fields:
                if name in seen:
                    self.errors.append(f"line {key.line}: field {name} already set in type {t.name}")
                    continue
                seen.add(name)
                ok, item = self.decode(value, t.fields[name], depth + 1)
                if ok:
                    out[name] = item
            elif self.strict:
                self.errors.append(f"line {key.line}: field {name} not found in type {t.name}")
        if merge is not None:
            names = set(out) | seen if merged is None else merged
            for source in (merge.content if merge.kind == "seq" else [merge]):
                if source.kind != "map":
                    raise DecodeFailed("map merge requires map or sequence of maps as the value")
                source_pairs = list(zip(source.content[::2], source.content[1::2], strict=True))
                _, items = self.struct(source_pairs, t, depth + 1, names)
                for name, item in (items or {}).items():
                    out.setdefault(name, item)
        return True, out


def _is_merge(node: Node) -> bool:
    return node.kind == "scalar" and node.text == "<<" and not node.quoted and \
        node.tag in (None, _TAG + "merge")


_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": 10**9, "m": 60 * 10**9,
          "h": 3600 * 10**9}
_DURATION_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)")


def _parse_duration(text: str) -> int:
    """Go's ``time.ParseDuration`` (nanoseconds); ValueError with Go's message."""
    bad = ValueError(f"time: invalid duration {go_quote(text)}")
    body = text
    sign = 1
    if body[:1] in "+-":
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    if body == "0":
        return 0
    if not body:
        raise bad
    total = 0.0
    at = 0
    while at < len(body):
        match = _DURATION_PART.match(body, at)
        if not match or match.group(1) in ("", "."):
            if match is None and re.match(r"[0-9.]+", body[at:]):
                raise ValueError(f"time: missing unit in duration {go_quote(text)}")
            raise bad
        total += float(match.group(1)) * _UNITS[match.group(2)]
        at = match.end()
    if total > 2**63 - 1:
        raise ValueError(f"time: invalid duration {go_quote(text)}")
    return sign * int(total)

