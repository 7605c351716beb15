"""One decoder for every client model: a JSON object to a frozen dataclass, driven by ``dataclasses.fields()``.

A model declares its fields with the wire's names and Python types; :func:`decode` reads each field's key
and converts the value by the field's type (``str``, ``int``, ``float``, ``bool``, ``datetime``, a nested
model, ``tuple[T, ...]``, ``dict[str, T]``, ``T | None``, ``array``). What a type alone cannot say is in
the field's metadata, written with :func:`wire`: another key or a key inside a nested object (``at``), a
key that must be present (``required``), a value for ``null`` (``null``), or a decoder of its own
(``decode``). A key the model does not know goes to its ``extra`` field, so nothing a newer Portal adds is
lost. A missing or ``null`` value is the field's default, else its type's zero (``""``, ``0``, ``()``,
``{}``, ``None``).
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from array import array
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, TypeVar

__all__ = ["WireModel", "decode", "wire", "wire_keys"]

_T = TypeVar("_T")
_META = "taunotebook.wire"
EXTRA = "extra"  # the field that keeps the keys a model does not know


def wire(*, key: str | None = None, at: tuple[str, ...] | None = None, required: bool = False,
         null: Any = None, decode: Callable[[Mapping[str, Any]], Any] | None = None, sent: Any = None,
         given: bool = False) -> dict:
    """A field's metadata for :func:`decode` (pass as ``field(metadata=wire(...))``).

    ``key``: the wire's key when it is not the field's name; ``at``: a path into nested objects
    (``("run", "state")``); ``required``: a missing key is a ``KeyError``; ``null``: the value of an explicit
    ``null`` (default ``None``); ``decode``: reads the field from the whole object itself (``at``/``key``
    then name the keys it consumes) and ``sent`` the JSON type it reads there; ``given``: not on the wire,
    passed to :func:`decode` by the caller.
    """
    return {_META: {"key": key, "at": at, "required": required, "null": null, "decode": decode, "sent": sent,
                    "given": given}}


_DEFAULTS = {"key": None, "at": None, "required": False, "null": None, "decode": None, "sent": None, "given": False}


def _spec(f: dataclasses.Field) -> dict:
    return f.metadata.get(_META, _DEFAULTS)


def _path(f: dataclasses.Field) -> tuple[str, ...]:
    spec = _spec(f)
    return spec["at"] or (spec["key"] or f.name,)


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    return hints


def wire_keys(cls: type) -> dict[str, Any]:
    """The keys a model reads, each with the type of the field read from it; a key read through a path
    (``at``) maps to a dict of the keys read inside it."""
    out: dict[str, Any] = {}
    hints = _hints(cls)
    for f in dataclasses.fields(cls):
        spec = _spec(f)
        if f.name == EXTRA or spec["given"]:
            continue
        *outer, key = _path(f)
        holder = out
        for part in outer:
            holder = holder.setdefault(part, {})
        holder.setdefault(key, spec["sent"] or hints[f.name])
    return out


def _obj(data: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise TypeError(f"{what}: expected a JSON object, got {type(data).__name__}")
    return data


def _optional(tp: Any) -> tuple[Any, bool]:
    """(the type inside ``T | None``, whether it was optional)."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) < len(typing.get_args(tp)):
            # Several types besides None (a config field's scalars): the union itself, read as sent.
            return (args[0] if len(args) == 1 else tp), True
    return tp, False


def _zero(tp: Any, what: str) -> Any:
    """The value of a field the answer leaves out (or sends as null) and that has no default."""
    if _optional(tp)[1]:
        return None
    origin = typing.get_origin(tp) or tp
    if dataclasses.is_dataclass(origin):
        return decode(origin, {}, what)
    return {str: "", int: 0, float: 0.0, bool: False, tuple: (), dict: {}}.get(origin)


def _float(value: Any) -> float:
    # Go cannot encode NaN/Inf in JSON: a server may send a string ("NaN", "-Infinity") for a non-finite value.
    return float(value)


def _convert(tp: Any, value: Any, what: str, key: str, extra: dict[str, Any]) -> Any:
    inner, optional = _optional(tp)
    if optional and (value is None or (inner is str and value == "")):
        return None
    tp = inner
    if tp is Any or typing.get_origin(tp) in (typing.Union, types.UnionType):
        return value  # Any, or a union of scalars (a config field): as sent
    origin = typing.get_origin(tp) or tp
    if dataclasses.is_dataclass(origin):
        return decode(origin, value, what)
    if origin is str:
        return str(value)
    if origin is bool:
        return bool(value)
    if origin is int:
        return int(value)
    if origin is float:
        return _float(value)
    if origin is datetime:
        try:
            return datetime.fromisoformat(str(value))
        except ValueError:
            # A timestamp quirk of a newer server must not make a whole read fail: kept, as sent, in extra.
            extra[key] = value
            return None
    if origin is tuple:
        (item, *_) = typing.get_args(tp) or (Any,)
        if isinstance(value, Mapping | str):
            raise TypeError(f"{what}: expected a JSON array, got {type(value).__name__}")
        return tuple(_convert(item, v, f"{what}[]", key, extra) for v in value)
    if origin is dict:
        _, item = typing.get_args(tp) or (str, Any)
        return {str(k): _convert(item, v, f"{what}.{k}", key, extra) for k, v in _obj(value, what).items()}
    raise TypeError(f"{what}: no conversion for a field of type {tp!r}")  # pragma: no cover - a model's mistake


def decode(cls: type[_T], data: Any, what: str | None = None, **given: Any) -> _T:
    """``data`` (a decoded JSON object) as the model ``cls``; ``given`` sets the fields not on the wire."""
    what = what or cls.__name__
    d = _obj(data, what)
    hints = _hints(cls)
    values: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    known: set[str] = set()
    has_extra = False
    for f in dataclasses.fields(cls):
        spec = _spec(f)
        if f.name == EXTRA:
            has_extra = True
            continue
        if spec["given"]:
            if f.name in given:
                values[f.name] = given[f.name]
            continue
        path = _path(f)
        known.add(path[0])
        if spec["decode"] is not None:
            values[f.name] = spec["decode"](d)
            continue
        holder: Mapping[str, Any] | None = d
        for part in path[:-1]:
            inner = holder.get(part) if holder is not None else None
            holder = None if inner is None else _obj(inner, f"{what}.{part}")
        key = path[-1]
        present = holder is not None and key in holder
        if spec["required"] and not present:
            raise KeyError(key)
        value = holder.get(key) if holder is not None else None
        label = ".".join(path) if what == cls.__name__ else f"{what}.{'.'.join(path)}"
        if value is None and present and spec["null"] is not None:
            values[f.name] = spec["null"]
        elif value is None:
            if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
                continue  # the dataclass's own default
            values[f.name] = _zero(hints[f.name], label)
        else:
            values[f.name] = _convert(hints[f.name], value, label, key, extra)
    if has_extra:
        extra.update((k, v) for k, v in d.items() if k not in known)
        values[EXTRA] = extra
    return cls(**values)


class WireModel:
    """A model :func:`decode` builds: ``Model.from_json(data)`` is ``decode(Model, data)``."""

    __slots__ = ()

    @classmethod
    def from_json(cls, data: Any) -> Any:
        return decode(cls, data)


def points(typecode: str, key: str, what: str, item: Callable[[Any], Any] = float) -> Callable[[Mapping], array]:
    """A decoder for a JSON array of numbers as a compact ``array`` (``"q"`` int64, ``"d"`` float64)."""
    convert = int if typecode == "q" else item

    def read(d: Mapping[str, Any]) -> array:
        value = d.get(key)
        if isinstance(value, Mapping | str):
            raise TypeError(f"{what}.{key}: expected a JSON array, got {type(value).__name__}")
        return array(typecode, (convert(v) for v in value or ()))

    return read


def nan_for_null(value: Any) -> float:
    """A float where ``null`` stands for a value JSON cannot carry (NaN)."""
    return math.nan if value is None else float(value)
