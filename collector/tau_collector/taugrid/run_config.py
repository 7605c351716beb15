"""A run's configuration (hyperparameters) by TauGrid's rules: normalized JSON, indexed fields, ``config_hash``.

TauGrid's ``exp track --config FILE`` (``portal/internal/cli/exp_track.go``) makes a ``configs`` row
from a file: ``format`` from the extension (``json``, ``yaml``/``yml``, else ``raw``), the file
parsed (JSON with every number a float64; YAML by ``gopkg.in/yaml.v3``), ``normalized_json`` = Go's
``json.Marshal`` of that value (map keys sorted, ``<>&`` escaped, Go's float text), ``config_hash``
= SHA-256 hex of the normalized JSON, and ``indexed_fields`` = the value flattened into dotted keys
(``optimizer.lr``): scalars, lists of at most 8 scalars, a ``{"value": scalar}`` map read as its
value (W&B's shape), nulls left out. A run with one config carries its hash as ``runs.config_hash``;
with several, SHA-256 of their sorted hashes joined by newlines. We make the same bytes, so a store
written here and TauGrid's agree on every hash.

:class:`RunConfig` is what readers get: ``values`` is the normalized JSON as Python objects,
``fields`` the indexed fields with a list shown as its JSON text, so every field is a scalar a
runs table can show and filter on. Nothing a file says sizes an allocation: a config file is read
up to :data:`MAX_CONFIG_BYTES`, nesting is bounded by :data:`MAX_DEPTH` and the number of values by
:data:`MAX_VALUES` (YAML aliases cannot multiply it); those bounds and :class:`ConfigError` live in
:mod:`.config_limits`, YAML decoding in :mod:`.config_yaml` (loaded only for a YAML file).

A run configuration is part of what readers answer (:mod:`tau_collector.reads`), and what sources hand
to sinks; the store keeps it in its ``configs`` table (:mod:`tau_collector.expstore.write.config_rows`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from tau_collector.taugrid.config_limits import MAX_CONFIG_BYTES, MAX_DEPTH, MAX_VALUES, ConfigBudget, ConfigError
from tau_collector.taugrid.gojson import GoJSONError, GoMap, decode_go_utf8, marshal

__all__ = [
    "MAX_CONFIG_BYTES",
    "MAX_DEPTH",
    "MAX_VALUES",
    "ConfigError",
    "RunConfig",
    "combined_config_hash",
    "config_format",
    "field_text",
    "fields_from_rows",
    "flatten_fields",
    "indexed_fields_json",
    "normalized_json",
    "parse_config",
    "read_config_bytes",
    "read_config_file",
    "run_config",
    "run_config_from_row",
]

_PLAIN_FIELD = {str, int, float, bool, type(None)}
_MAX_LIST_FIELD = 8  # TauGrid indexes a list of at most 8 scalars as one field


Scalar = str | int | float | bool | None


@dataclass(frozen=True, slots=True)
class RunConfig:
    """One run's configuration as stored in TauGrid's ``configs`` table.

    ``config_hash``: SHA-256 hex of the normalized JSON; ``format``: ``json``, ``yaml`` or
    ``tensorboard-hparams`` (what the file at ``uri`` is); ``uri``: where the configuration was
    read; ``values``: the normalized JSON object; ``fields``: the flattened scalars (dotted keys),
    a list of up to 8 scalars shown as its JSON text.
    """

    config_hash: str
    format: str
    uri: str
    values: dict[str, Any] = field(default_factory=dict)
    fields: dict[str, Scalar] = field(default_factory=dict)

    @property
    def normalized_json(self) -> str:
        """The ``configs.normalized_json`` text (Go's ``json.Marshal`` of ``values``)."""
        return normalized_json(self.values)

    @property
    def indexed_fields(self) -> str:
        """The ``configs.indexed_fields`` text, ``""`` when there are none (stored as NULL)."""
        return indexed_fields_json(self.normalized_json)


# -- Go's json.Marshal of a decoded value ----------------------------------------------


def _go_typed(value: Any) -> Any:
    """``value`` with every dict a :class:`GoMap` (Go marshals map keys sorted)."""
    if isinstance(value, dict):
        return GoMap({k: _go_typed(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_go_typed(v) for v in value]
    return value


def normalized_json(value: Any) -> str:
    """Go's ``json.Marshal`` of a decoded config value: keys sorted, HTML-escaped, Go's float text."""
    try:
        return marshal(_go_typed(value)).decode()
    except GoJSONError as exc:
        raise ConfigError(f"a config value is not finite ({exc}); JSON cannot carry it") from None


def combined_config_hash(hashes: Iterable[str]) -> str:
    """``runs.config_hash`` of a run with these configs: the hash itself for one, else SHA-256 of the
    sorted hashes joined by newlines (TauGrid's ``buildTrackConfigRecords``)."""
    ordered = sorted(hashes)
    if len(ordered) == 1:
        return ordered[0]
    return hashlib.sha256("\n".join(ordered).encode()).hexdigest()


# -- indexed fields: TauGrid's flattenConfigFields ------------------------------------------


def _scalar(value: Any) -> bool:
    # Go's configScalar after json.Unmarshal: string, bool, float64 (a JSON null is not a scalar).
    return isinstance(value, (str, bool, int, float))


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        if "value" in value and _scalar(value["value"]):
            if prefix:
                out[prefix] = value["value"]
            return
        for key in sorted(value):
            _flatten(f"{prefix}.{key}" if prefix else key, value[key], out)
    elif isinstance(value, list):
        if prefix and len(value) <= _MAX_LIST_FIELD and all(_scalar(item) for item in value):
            out[prefix] = value
    elif prefix and _scalar(value):
        out[prefix] = value


def flatten_fields(value: Any) -> dict[str, Any]:
    """TauGrid's indexed fields of a normalized config value (dotted keys; lists kept as lists)."""
    out: dict[str, Any] = {}
    _flatten("", value, out)
    return out


def indexed_fields_json(normalized: str) -> str:
    """TauGrid's ``indexedConfigFields``: the normalized JSON decoded again (every number a float64),
    flattened, marshalled; ``""`` when nothing is indexed."""
    fields = flatten_fields(json.loads(normalized, parse_int=float))
    return marshal(GoMap(fields)).decode() if fields else ""


def field_text(value: Any) -> Scalar:
    """An indexed field as a :class:`RunConfig` field: a list becomes its compact JSON text."""
    if isinstance(value, list):
        return marshal(value).decode()
    return value


def _fields_of(indexed: Mapping[str, Any]) -> dict[str, Scalar]:
    return {key: field_text(value) for key, value in indexed.items()}


# -- parsing files ------------------------------------------------------------------------


def config_format(path: str) -> str:
    """TauGrid's ``detectConfigFormat``: ``json``, ``yaml`` (``.yaml``/``.yml``), else ``raw``."""
    ext = os.path.splitext(path)[1].lower()
    return {".json": "json", ".yaml": "yaml", ".yml": "yaml"}.get(ext, "raw")


def _check_json(value: Any, budget: ConfigBudget, depth: int = 0) -> None:
    budget.take(depth)
    if isinstance(value, dict):
        for item in value.values():
            _check_json(item, budget, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check_json(item, budget, depth + 1)


def _json_number(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        # Go's json.Unmarshal into a float64: "cannot unmarshal number ... (value out of range)".
        raise ValueError(f"number {text[:40]} is out of range for a float64")
    return number


def _parse_json(raw: bytes, where: str) -> Any:
    """JSON as Go's ``json.Unmarshal`` into ``any`` reads it: every number a float64."""
    text = decode_go_utf8(raw)

    def refuse(token: str) -> float:
        raise ValueError(f"{token} is not JSON")

    try:
        value = json.loads(text, parse_int=_json_number, parse_float=_json_number, parse_constant=refuse)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}: not valid JSON at line {exc.lineno}, column {exc.colno} "
                          f"(byte {exc.pos}): {exc.msg}") from None
    except (ValueError, RecursionError) as exc:
        raise ConfigError(f"{where}: not valid JSON: {exc}") from None
    _check_json(value, ConfigBudget(where))
    return value


def parse_config(raw: bytes, format: str, where: str) -> Any:
    """The decoded value of config bytes in ``format`` (``json`` or ``yaml``), as TauGrid decodes it."""
    if format == "json":
        return _parse_json(raw, where)
    if format == "yaml":
        from tau_collector.taugrid.config_yaml import parse_yaml

        return parse_yaml(raw, where, budget=ConfigBudget(where))
    raise ConfigError(f"{where}: a {format!r} config is not read; use a .json, .yaml or .yml file")


def read_config_bytes(path: str) -> bytes:
    """The bytes of a config file, read no further than :data:`MAX_CONFIG_BYTES` (a longer file is refused)."""
    with open(path, "rb") as handle:
        raw = handle.read(MAX_CONFIG_BYTES + 1)
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_CONFIG_BYTES} bytes; a configuration this large is not "
                          "stored (keep hyperparameters, not data, in it)")
    return raw


def read_config_file(path: str | os.PathLike[str], *, format: str | None = None,
                     uri: str | None = None) -> RunConfig:
    """The :class:`RunConfig` of a JSON or YAML file (TauGrid's ``exp track --config``).

    ``uri`` defaults to the file's absolute path. :class:`ConfigError` says what is wrong and where;
    ``OSError`` when the file cannot be read.
    """
    path = os.fspath(path)
    fmt = format or config_format(path)
    value = parse_config(read_config_bytes(path), fmt, path)
    return run_config(value, format=fmt, uri=uri or os.path.abspath(path), where=path)


# -- the RunConfig of a decoded value -----------------------------------------------------


def run_config(value: Any, *, format: str, uri: str, where: str | None = None) -> RunConfig:
    """The :class:`RunConfig` of a decoded config object (Go-typed: dicts, lists, str, bool, None, int, float).

    The object must be a mapping: a run's configuration is named values.
    """
    where = where or uri
    if not isinstance(value, dict):
        kind = "null" if value is None else type(value).__name__
        raise ConfigError(f"{where}: a run configuration must be a mapping of names to values, not {kind}")
    if not format or not uri:
        raise ConfigError("a run configuration needs a format and a uri")
    text = normalized_json(value)
    indexed = indexed_fields_json(text)
    return RunConfig(hashlib.sha256(text.encode()).hexdigest(), format, uri, json.loads(text),
                     _fields_of(json.loads(indexed)) if indexed else {})


def run_config_from_row(config_hash: str, format: str, uri: str, normalized: str | None,
                        indexed: str | None) -> RunConfig:
    """A ``configs`` row as a :class:`RunConfig` (a row TauGrid wrote may lack either text, or hold a non-object)."""
    values: Any = {}
    if normalized:
        try:
            values = json.loads(normalized)
        except ValueError:
            values = {}
    return RunConfig(config_hash, format, uri, values if isinstance(values, dict) else {},
                     _row_fields(indexed, values))


def _loads(text: str) -> Any:
    # orjson where it can (5-10x json's speed on 10,000 rows); json for what it refuses (NaN, integers past 64 bits).
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def _row_fields(indexed: str | None, values: Any) -> dict[str, Scalar]:
    fields: Mapping[str, Any] | None = None
    if indexed:
        try:
            parsed = _loads(indexed)
            fields = parsed if isinstance(parsed, dict) else None
        except ValueError:
            fields = None
        if fields is not None and "[" not in indexed and "{" not in indexed[1:]:
            return fields  # the common case: no list, no object, so every field a scalar already
    if fields is None:
        fields = flatten_fields(values)
    if all(type(v) in _PLAIN_FIELD for v in fields.values()):
        return dict(fields)
    return {str(k): field_text(v) if isinstance(v, list) else v for k, v in fields.items()
            if v is None or _scalar(v) or isinstance(v, list)}


def fields_from_rows(rows: Iterable[tuple[str | None, str | None]]) -> dict[str, Scalar]:
    """A run's config fields from its ``configs`` rows' ``(indexed_fields, normalized_json)`` texts (in ``uri``
    order, a later row's key winning), as :func:`run_config_from_row` reads them, without decoding a
    ``normalized_json`` that an ``indexed_fields`` text stands for (what a read of 10,000 runs' fields skips)."""
    out: dict[str, Scalar] = {}
    for indexed, normalized in rows:
        values: Any = {}
        if not indexed and normalized:
            try:
                values = json.loads(normalized)
            except ValueError:
                values = {}
        out.update(_row_fields(indexed, values))
    return out
