"""YAML config files decoded as ``gopkg.in/yaml.v3`` decodes them into ``any``, so hashes match TauGrid's.

PyYAML reads YAML 1.1 (``yes``/``no``/``on``/``off`` are booleans, ``1:30`` is a number); TauGrid's
``yaml.v3`` resolves plain scalars by its own YAML 1.2-like table (``resolve.go``): ``true``/``True``/
``TRUE`` and the ``false`` forms are booleans, ``~``/``null``/``Null``/``NULL``/empty are null,
``.inf``/``.nan`` forms are floats, an integer is Go's ``strconv.ParseInt(s, 0, 64)`` of the text
without ``_`` (so ``0x1f``, ``0o17``, ``0b101`` and ``017`` -- octal -- are integers), then
``ParseUint``, then a float of the form ``[-+]?(\\.d+|d+(\\.d*)?)([eE][-+]?d+)?``; everything else
(timestamps included, which ``yaml.v3`` hands to ``any`` as their text) is a string. So PyYAML only
parses (events); values are built here, with TauGrid's ``normalizeYAMLValue`` for mapping keys
(``fmt.Sprint``: ``1`` → ``"1"``, ``true`` → ``"true"``, null → ``"<nil>"``). Merge keys (``<<``) merge
with explicit keys winning; a key given twice is an error, as in ``yaml.v3``. Only the first document
is read. Aliases count every value they repeat against the budget, so a "billion laughs" file is
refused instead of expanded.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any

import yaml

from tau_collector.taugrid.config_limits import ConfigBudget, ConfigError
from tau_collector.taugrid.gojson import decode_go_utf8, encode_float

__all__ = ["go_sprint", "parse_yaml", "resolve_plain"]

_TAG = "tag:yaml.org,2002:"
_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_MAP: dict[str, Any] = {
    **dict.fromkeys(("true", "True", "TRUE"), True),
    **dict.fromkeys(("false", "False", "FALSE"), False),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), None),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), -math.inf),
}
_INT64 = (-(2**63), 2**63 - 1)
_MERGE = object()


_GO_DIGITS = {16: re.compile(r"[0-9a-fA-F]+"), 10: re.compile(r"[0-9]+"), 8: re.compile(r"[0-7]+"),
              2: re.compile(r"[01]+")}


def _go_parse_int(text: str) -> int | None:
    """Go's ``strconv.ParseInt(text, 0, 64)`` without its range check (or None): a sign, then
    ``0x``/``0o``/``0b`` prefixes (either case), a leading ``0`` for octal, else decimal."""
    negative = text.startswith("-")
    body = text[1:] if text[:1] in "+-" else text
    prefix = body[:2].lower()
    if prefix in ("0x", "0o", "0b"):
        base, digits = {"0x": 16, "0o": 8, "0b": 2}[prefix], body[2:]
    elif body.startswith("0") and len(body) > 1:
        base, digits = 8, body[1:]
    else:
        base, digits = 10, body
    if not _GO_DIGITS[base].fullmatch(digits):
        return None
    value = int(digits, base)
    return -value if negative else value


def resolve_plain(text: str) -> Any:
    """A plain (unquoted, untagged) scalar as ``yaml.v3`` resolves it into ``any``."""
    if text in _MAP:
        return _MAP[text]
    first = text[:1]
    if first == ".":
        if re.fullmatch(r"\.[0-9]+([eE][-+]?[0-9]+)?", text):
            value = float(text)
            return text if math.isinf(value) else value
        return text
    if not (first.isdigit() and first.isascii()) and first not in "+-":
        return text
    plain = text.replace("_", "")
    number = _go_parse_int(plain)
    if number is not None:
        if _INT64[0] <= number <= _INT64[1]:
            return number
        if 0 <= number < 2**64 and not plain.startswith("-"):
            return number  # ParseUint: a uint64
    if _FLOAT.fullmatch(plain):
        value = float(plain)
        if not math.isinf(value):  # ParseFloat's range error leaves it a string
            return value
    return text


def go_sprint(value: Any) -> str:
    """Go's ``fmt.Sprint`` of a scalar mapping key: ``%v`` (a float: shortest ``%g``, exponent form from
    1e6 up and below 1e-4)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "+Inf" if value > 0 else "-Inf"
        if value == 0:
            return "-0" if math.copysign(1.0, value) < 0 else "0"
        sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
        text = "".join(map(str, digits))
        exp10 = len(text) + int(exponent) - 1
        if -4 <= exp10 < 6:
            return encode_float(value)
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{'-' if sign else ''}{mantissa}e{'-' if exp10 < 0 else '+'}{abs(exp10):02d}"
    return str(value)


class _Node:
    """A mapping or sequence being built, with what it counts against the budget."""

    __slots__ = ("anchor", "keys", "kind", "line", "merges", "pending_key", "size", "value")

    def __init__(self, kind: str, anchor: str | None, line: int) -> None:
        self.kind = kind
        self.anchor = anchor
        self.line = line
        self.value: Any = {} if kind == "map" else []
        self.keys: dict[str, int] = {}
        self.merges: list[Any] = []
        self.pending_key: Any = None
        self.size = 1


def _scalar(event: yaml.ScalarEvent, where: str) -> Any:
    tag = event.tag
    text = event.value
    if tag in (None, "!"):
        return resolve_plain(text) if event.implicit[0] and event.style is None else text
    if not tag.startswith(_TAG):
        raise ConfigError(f"{where}: line {event.start_mark.line + 1}: YAML tag {tag} is not a plain value")
    kind = tag[len(_TAG):]
    if kind in ("str", "timestamp"):
        return text
    resolved = resolve_plain(text) if kind != "null" else None
    if kind == "null" or (kind == "int" and isinstance(resolved, int) and not isinstance(resolved, bool)) \
            or (kind == "bool" and isinstance(resolved, bool)):
        return resolved
    if kind == "float" and isinstance(resolved, (int, float)) and not isinstance(resolved, bool):
        return float(resolved)
    raise ConfigError(f"{where}: line {event.start_mark.line + 1}: cannot decode !!{kind} {text!r}")


def _key_text(key: Any, where: str, line: int) -> str:
    if isinstance(key, (dict, list)):
        raise ConfigError(f"{where}: line {line}: a mapping key must be a plain value, not a "
                          f"{'mapping' if isinstance(key, dict) else 'sequence'}")
    return key if isinstance(key, str) else go_sprint(key)


def parse_yaml(raw: bytes, where: str, *, budget: ConfigBudget) -> Any:
    """The first document of ``raw`` as ``yaml.v3`` decodes it into ``any`` (see the module docstring)."""
    text = decode_go_utf8(raw)
    stack: list[_Node] = []
    anchors: dict[str, tuple[Any, int]] = {}
    result: Any = None
    done = False

    def place(value: Any, size: int, line: int) -> None:
        nonlocal result, done
        if not stack:
            result, done = value, True
            return
        top = stack[-1]
        top.size += size
        if top.kind == "seq":
            top.value.append(value)
            return
        if top.pending_key is None:
            top.pending_key = (value,)
            return
        (key,) = top.pending_key
        top.pending_key = None
        if key is _MERGE:
            sources = value if isinstance(value, list) else [value]
            if not all(isinstance(s, dict) for s in sources):
                raise ConfigError(f"{where}: line {line}: a merge key (<<) needs a mapping or a list of mappings")
            top.merges.extend(sources)
            return
        name = _key_text(key, where, line)
        if name in top.keys:
            raise ConfigError(f"{where}: line {line}: mapping key {name!r} already defined at line {top.keys[name]}")
        top.keys[name] = line
        top.value[name] = value

    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if done:
                break
            line = event.start_mark.line + 1 if event.start_mark else 0
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                budget.take(len(stack))
                if event.tag not in (None, "!", _TAG + "map", _TAG + "seq", _TAG + "omap"):
                    raise ConfigError(f"{where}: line {line}: YAML tag {event.tag} is not a plain value")
                stack.append(_Node("map" if isinstance(event, yaml.MappingStartEvent) else "seq", event.anchor,
                                   line))
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                node = stack.pop()
                value = node.value
                if node.merges:
                    merged: dict[str, Any] = {}
                    for source in node.merges:  # earlier sources win over later ones
                        for key, item in source.items():
                            merged.setdefault(key, item)
                    merged.update(value)  # explicit keys win over merged ones
                    value = merged
                if node.anchor:
                    anchors[node.anchor] = (value, node.size)
                place(value, node.size, node.line)
            elif isinstance(event, yaml.ScalarEvent):
                budget.take(len(stack))
                if stack and stack[-1].kind == "map" and stack[-1].pending_key is None and event.tag is None \
                        and event.style is None and event.value == "<<":
                    value: Any = _MERGE
                else:
                    value = _scalar(event, where)
                if event.anchor:
                    anchors[event.anchor] = (value, 1)
                place(value, 1, line)
            elif isinstance(event, yaml.AliasEvent):
                if event.anchor not in anchors:
                    raise ConfigError(f"{where}: line {line}: unknown anchor {event.anchor!r}")
                value, size = anchors[event.anchor]
                budget.take(len(stack), size)
                place(value, size, line)
            elif isinstance(event, yaml.DocumentEndEvent) and not stack:
                done = True
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        at = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise ConfigError(f"{where}: not valid YAML at {at}{exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: not valid YAML: {exc}") from None
    return result
