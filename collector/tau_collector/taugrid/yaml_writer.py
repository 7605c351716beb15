"""Block YAML that ``gopkg.in/yaml.v3`` decodes to exactly the values written.

Every string value is double-quoted, with each code point yaml.v3 would not read back as itself
escaped: controls, DEL, the C1 range (U+0085 is a line break to YAML and would read as a space),
U+2028/U+2029, U+FEFF and U+FFFE/U+FFFF. A mapping key is written plain only when yaml.v3 reads it
back as that very string (``[A-Za-z_][A-Za-z0-9_.-]*`` and not ``null``, ``true``, ``<<`` …), else it is
double-quoted like a value (``A: B`` and ``#X`` stay keys), and a key too long for an implicit key
(yaml.v3 looks at most 1024 characters ahead for its ``:``) is written as an explicit ``? key``.
Numbers are written so they resolve to the same int or float (``.inf``, ``.nan``), ``None`` as ``null``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from tau_collector.taugrid.config_yaml import resolve_plain

__all__ = ["dump_yaml", "quote_string"]

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_SHORT = {"\0": "\\0", "\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v", "\f": "\\f", "\r": "\\r",
          "\x1b": "\\e", '"': '\\"', "\\": "\\\\"}
_LONGEST_IMPLICIT_KEY = 1000  # characters; yaml.v3 refuses an implicit key past 1024


def _raw_ok(code: int) -> bool:
    # What yaml.v3's reader takes as a printable character and its scanner keeps as itself in a
    # double-quoted scalar (no line breaks, no BOM).
    return (0x20 <= code <= 0x7E or 0xA0 <= code <= 0xD7FF or 0xE000 <= code <= 0xFFFD or code >= 0x10000) \
        and code not in (0x2028, 0x2029, 0xFEFF)


def quote_string(text: str) -> str:
    """``text`` as a YAML double-quoted scalar that yaml.v3 reads back unchanged.

    A lone surrogate (undecodable bytes carried by ``surrogateescape``) cannot be written: ValueError.
    """
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in _SHORT:
            out.append(_SHORT[ch])
        elif 0xD800 <= code <= 0xDFFF:
            raise ValueError(f"string {text[:40]!r} holds a lone surrogate (U+{code:04X}); it is not text YAML "
                             "can carry")
        elif _raw_ok(code):
            out.append(ch)
        elif code <= 0xFF:
            out.append(f"\\x{code:02X}")
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04X}")
        else:
            out.append(f"\\U{code:08X}")
    out.append('"')
    return "".join(out)


def _key(key: Any) -> str:
    text = str(key) if not isinstance(key, str) else key
    if _PLAIN_KEY.fullmatch(text) and resolve_plain(text) == text:
        return text
    return quote_string(text)


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        return repr(value)
    if isinstance(value, Mapping):
        return "{}"
    if isinstance(value, (list, tuple)):
        return "[]"
    return quote_string(str(value))


def _entry(key: Any, item: Any, pad: str, lines: list[str], indent: int) -> None:
    name = _key(key)
    nested = isinstance(item, (Mapping, list, tuple)) and bool(item)
    if len(name) > _LONGEST_IMPLICIT_KEY:
        lines.append(f"{pad}? {name}")
        if nested:
            lines.append(f"{pad}:")
            lines.append(dump_yaml(item, indent + 1))
        else:
            lines.append(f"{pad}: {_scalar(item)}")
    elif nested:
        lines.append(f"{pad}{name}:")
        lines.append(dump_yaml(item, indent + 1))
    else:
        lines.append(f"{pad}{name}: {_scalar(item)}")


def dump_yaml(value: Mapping[str, Any] | list[Any], indent: int = 0) -> str:
    """Block YAML of nested mappings and lists (no trailing newline); see the module docstring."""
    pad = "  " * indent
    lines: list[str] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            _entry(key, item, pad, lines, indent)
    else:
        for item in value:
            if isinstance(item, (Mapping, list, tuple)) and item:
                lines.append(f"{pad}-")
                lines.append(dump_yaml(item, indent + 1))
            else:
                lines.append(f"{pad}- {_scalar(item)}")
    return "\n".join(lines)
