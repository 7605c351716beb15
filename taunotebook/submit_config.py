"""A submitted run's configuration: ``--config k=v`` items and ``--config-file``, merged into the job's JSON file.

The job reads its configuration from the JSON file ``$TAU_RUN_CONFIG`` names (``config.json`` in
the run's directory); the run's collector stores the same file as the run's configuration in the
expstore, so the runs table and the compare page show it. ``k=v`` values are JSON when they parse as
JSON (``0.1``, ``32``, ``true``, ``null``, ``"text"``, ``[64, 64]``), else the text itself; a dotted
key nests (``optimizer.lr=0.1`` is ``{"optimizer": {"lr": 0.1}}``). Items override the file's values
(nested mappings merge), in the order given.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tau_collector.taugrid.run_config import ConfigError, config_format, parse_config, read_config_bytes

__all__ = ["CONFIG_ENV", "RUN_CONFIG_FILE", "build_config", "parse_items", "read_config_mapping", "write_config"]

CONFIG_ENV = "TAU_RUN_CONFIG"
RUN_CONFIG_FILE = "config.json"


def _value(text: str) -> Any:
    try:
        value = json.loads(text, parse_constant=lambda token: text)
    except ValueError:
        return text
    return value


def _set(target: dict[str, Any], key: str, value: Any, item: str) -> None:
    parts = key.split(".")
    if any(not p.strip() for p in parts):
        raise ValueError(f"--config {item!r}: the key {key!r} has an empty part")
    node = target
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ValueError(f"--config {item!r}: {part!r} already holds a value, not a mapping")
        node = child
    node[parts[-1]] = value


def parse_items(items: Iterable[str]) -> dict[str, Any]:
    """``k=v`` items as a nested mapping (see the module docstring); ValueError names a bad item."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--config {item!r} must be KEY=VALUE, e.g. --config lr=0.1")
        _set(out, key.strip(), _value(text), item)
    return out


def read_config_mapping(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A ``.json``/``.yaml``/``.yml`` file's mapping, read by the store's rules; ValueError says what is wrong."""
    path = os.fspath(path)
    fmt = config_format(path)
    if fmt == "raw":
        raise ValueError(f"--config-file {path}: give a .json, .yaml or .yml file")
    try:
        value = parse_config(read_config_bytes(path), fmt, path)
    except ConfigError as exc:
        raise ValueError(f"--config-file {exc}") from None
    except OSError as exc:
        raise ValueError(f"--config-file {path}: cannot read it ({exc.strerror or exc})") from None
    if not isinstance(value, dict):
        raise ValueError(f"--config-file {path}: must hold a mapping of names to values")
    return value


def _merge(base: dict[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _check(value: Any, where: str) -> None:
    """The value must be JSON the store can keep: str keys, finite numbers, plain containers."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"config key {key!r} at {where or 'the top'} must be a string")
            _check(item, f"{where}.{key}" if where else key)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _check(item, f"{where}[{index}]")
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"config value {where} is {value}: JSON cannot carry it")
    elif value is not None and not isinstance(value, (str, bool, int, float)):
        raise ValueError(f"config value {where} is a {type(value).__name__}; give numbers, strings, booleans, "
                         "null, lists or mappings")


def build_config(config: Mapping[str, Any] | None = None, config_file: str | os.PathLike[str] | None = None,
                 items: Iterable[str] = ()) -> dict[str, Any] | None:
    """The run's configuration: the file's mapping, then ``config``, then the ``k=v`` items; None if none is given."""
    if config is None and config_file is None and not items:
        return None
    merged: dict[str, Any] = read_config_mapping(config_file) if config_file is not None else {}
    if config is not None:
        if not isinstance(config, Mapping):
            raise ValueError(f"config must be a mapping of names to values, not {type(config).__name__}")
        _check(config, "")
        merged = _merge(merged, config)
    merged = _merge(merged, parse_items(items))
    _check(merged, "")
    return merged


def write_config(directory: Path, config: Mapping[str, Any]) -> Path:
    """Write the job's ``config.json`` into the run directory; its path is what ``$TAU_RUN_CONFIG`` names."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / RUN_CONFIG_FILE
    path.write_text(json.dumps(config, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
