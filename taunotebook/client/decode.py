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

__all__ = ["WireModel", "decode", "nan_for_null", "number_rows", "points", "wire", "wire_keys"]

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
            # Several types besides None (a config field's scalars): read as sent.
            return (args[0] if len(args) == 1 else Any), True
    return tp, False


# A converter reads one present, non-null value: (value, extra of the object being read) -> field value.
_Convert = Callable[[Any, dict[str, Any]], Any]


def _as_str(value: Any, extra: dict[str, Any]) -> str:
    return value if type(value) is str else str(value)


def _converter(tp: Any, what: str, key: str) -> _Convert:
    """How a value of type ``tp`` is read (built once per field, so a read costs no type inspection)."""
    inner, optional = _optional(tp)
    if optional:
        read = _converter(inner, what, key)
        if inner is str:
            return lambda v, extra: None if v == "" else read(v, extra)
        return read  # null never reaches a converter
    if tp is Any or typing.get_origin(tp) in (typing.Union, types.UnionType):
        return lambda v, extra: v  # Any, or a union of scalars (a config field): as sent
    origin = typing.get_origin(tp) or tp
    if dataclasses.is_dataclass(origin):
        return lambda v, extra: decode(origin, v, what)
    if origin is str:
        return _as_str
    if origin in (int, bool):
        return lambda v, extra: origin(v)
    if origin is float:
        return lambda v, extra: float(v)  # a server that cannot write NaN/Inf as numbers may send "NaN"
    if origin is datetime:
        def read_time(v: Any, extra: dict[str, Any]) -> datetime | None:
            try:
                return datetime.fromisoformat(str(v))
            except ValueError:
                # A timestamp quirk of a newer server must not make a whole read fail: kept, as sent, in extra.
                extra[key] = v
                return None
        return read_time
    if origin is tuple:
        (item_type, *_) = typing.get_args(tp) or (Any,)
        item = _converter(item_type, f"{what}[]", key)

        def read_tuple(v: Any, extra: dict[str, Any]) -> tuple:
            if isinstance(v, Mapping | str):
                raise TypeError(f"{what}: expected a JSON array, got {type(v).__name__}")
            return tuple(item(x, extra) for x in v)
        return read_tuple
    if origin is dict:
        _, item_type = typing.get_args(tp) or (str, Any)
        item = _converter(item_type, f"{what}{{}}", key)
        return lambda v, extra: {str(k): item(x, extra) for k, x in _obj(v, what).items()}
    raise TypeError(f"{what}: no conversion for a field of type {tp!r}")  # pragma: no cover - a model's mistake


def _zero(tp: Any, what: str) -> Callable[[], Any]:
    """The value of a field the answer leaves out (or sends as null) and that has no default."""
    if _optional(tp)[1]:
        return lambda: None
    origin = typing.get_origin(tp) or tp
    if dataclasses.is_dataclass(origin):
        return lambda: decode(origin, {}, what)
    if origin is dict:
        return dict
    zero = {str: "", int: 0, float: 0.0, bool: False, tuple: ()}.get(origin)
    return lambda: zero


@dataclasses.dataclass(frozen=True, slots=True)
class _Field:
    """One field's reading, compiled from its type and :func:`wire` metadata."""

    name: str
    path: tuple[str, ...]
    required: bool
    null: Any
    custom: Callable[[Mapping[str, Any]], Any] | None
    convert: _Convert | None
    zero: Callable[[], Any] | None  # None: the dataclass's own default applies


@dataclasses.dataclass(frozen=True, slots=True)
class _Plan:
    fields: tuple[_Field, ...]
    given: frozenset[str]
    known: frozenset[str]  # the top-level keys the fields read
    has_extra: bool


_PLANS: dict[type, _Plan] = {}


def _plan(cls: type) -> _Plan:
    plan = _PLANS.get(cls)
    if plan is not None:
        return plan
    hints = _hints(cls)
    steps, given, known, has_extra = [], set(), set(), False
    for f in dataclasses.fields(cls):
        spec = _spec(f)
        if f.name == EXTRA:
            has_extra = True
            continue
        if spec["given"]:
            given.add(f.name)
            continue
        path = _path(f)
        known.add(path[0])
        label = ".".join(path)
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        custom = spec["decode"]
        steps.append(_Field(f.name, path, spec["required"], spec["null"], custom,
                            None if custom else _converter(hints[f.name], label, path[-1]),
                            None if has_default or custom else _zero(hints[f.name], label)))
    plan = _PLANS[cls] = _Plan(tuple(steps), frozenset(given), frozenset(known), has_extra)
    return plan


def decode(cls: type[_T], data: Any, what: str | None = None, **given: Any) -> _T:
    """``data`` (a decoded JSON object) as the model ``cls``; ``given`` sets the fields not on the wire."""
    what = what or cls.__name__
    d = _obj(data, what)
    plan = _plan(cls)
    values: dict[str, Any] = {k: v for k, v in given.items() if k in plan.given}
    extra: dict[str, Any] = {}
    for f in plan.fields:
        if f.custom is not None:
            values[f.name] = f.custom(d)
            continue
        holder: Mapping[str, Any] | None = d
        if len(f.path) > 1:
            for part in f.path[:-1]:
                inner = holder.get(part) if holder is not None else None
                holder = None if inner is None else _obj(inner, f"{what}.{part}")
        key = f.path[-1]
        value = holder.get(key) if holder is not None else None
        if value is None:
            present = holder is not None and key in holder
            if f.required and not present:
                raise KeyError(key)
            if present and f.null is not None:
                values[f.name] = f.null
            elif f.zero is not None:
                values[f.name] = f.zero()
        else:
            values[f.name] = f.convert(value, extra)  # type: ignore[misc]
    if plan.has_extra:
        known = plan.known
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


def number_rows(key: str, what: str, depth: int = 2) -> Callable[[Mapping], tuple | None]:
    """A decoder for (nested) JSON arrays of numbers (``depth`` 1: numbers; 2: rows of numbers; 3: lists of rows)
    as tuples of floats, ``null`` numbers as NaN; a missing or ``null`` value is None at depth 3, else ``()``."""

    def level(value: Any, d: int, where: str) -> tuple:
        if isinstance(value, Mapping | str) or not isinstance(value, list | tuple):
            raise TypeError(f"{where}: expected a JSON array, got {type(value).__name__}")
        if d == 1:
            return tuple(nan_for_null(v) for v in value)
        return tuple(level(v, d - 1, f"{where}[]") for v in value)

    def read(d: Mapping[str, Any]) -> tuple | None:
        value = d.get(key)
        if value is None:
            return None if depth > 2 else ()
        return level(value, depth, f"{what}.{key}")

    return read


def nan_for_null(value: Any) -> float:
    """A float where ``null`` stands for a value JSON cannot carry (NaN)."""
    return math.nan if value is None else float(value)
