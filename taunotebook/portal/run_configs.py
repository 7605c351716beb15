"""Run configurations on the wire (our additions to TauGrid's v2 reads): the config route, ``include=config``
and ``config.<key>=<value>`` filters.

A configuration's ``fields`` are the flattened scalars the store indexes (dotted keys, a short list as
its JSON text). A filter value matches a field whose text equals it (a string as is, a number, bool or
null as Go writes it in JSON: ``0.1``, ``32``, ``true``, ``null``), or, when the value is a JSON-style
number, a numeric field equal to it (``config.lr=1e-5`` matches ``0.00001``). A source that carries no
configurations (TauGrid's Kusto tables have none) has no config for any run.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from tau_collector.reads import ExperimentReader, ReadsRunConfigs
from tau_collector.taugrid.gojson import marshal
from tau_collector.taugrid.run_config import RunConfig

__all__ = ["CONFIG_KEYS_LIMIT", "CONFIG_VALUES_LIMIT", "config_space", "fields_json", "matches", "read_configs",
           "reads_configs"]

CONFIG_VALUES_LIMIT = 64  # distinct values per key in an experiment's config space
CONFIG_KEYS_LIMIT = 256  # keys per experiment's config space
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def reads_configs(reader: ExperimentReader) -> bool:
    """Whether the source carries run configurations (TauGrid's Kusto tables do not)."""
    return isinstance(reader, ReadsRunConfigs)


def read_configs(reader: ExperimentReader, run_ids: Iterable[str]) -> dict[str, RunConfig]:
    """The configs of ``run_ids`` in one read; ``{}`` from a source that carries none."""
    ids = list(run_ids)
    return reader.run_configs(ids) if ids and isinstance(reader, ReadsRunConfigs) else {}


def _wire(value: Any) -> Any:
    # JSON cannot carry a non-finite number; no writer stores one, but a hand-made row must not cost a 500.
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else "+Inf" if value > 0 else "-Inf"
    return value


def fields_json(fields: Mapping[str, Any]) -> dict[str, Any]:
    """A config's fields as the wire carries them (key-sorted, as TauGrid's Go maps are)."""
    return {key: _wire(fields[key]) for key in sorted(fields)}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else marshal(_wire(value)).decode()


def _field_matches(value: Any, wanted: tuple[str, ...]) -> bool:
    text = _text(value)
    for want in wanted:
        if text == want:
            return True
        if (isinstance(value, int | float) and not isinstance(value, bool) and _NUMBER.fullmatch(want)
                and float(want) == value):
            return True
    return False


def matches(config: RunConfig | None, filters: Mapping[str, tuple[str, ...]]) -> bool:
    """Whether a run's config satisfies every key's filter (a run without a config satisfies none)."""
    if config is None:
        return False
    return all(key in config.fields and _field_matches(config.fields[key], wanted) for key, wanted in filters.items())


def _rank(value: Any) -> tuple:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (0, float(value), "")
    return (1, 0.0, _text(value))


def config_space(configs: Iterable[RunConfig]) -> tuple[dict[str, list[Any]], list[str]]:
    """Each key of these configs with its distinct values (numbers ascending, then texts), and what was cut."""
    values: dict[str, dict[str, Any]] = {}
    for config in configs:
        for key, value in config.fields.items():
            values.setdefault(key, {}).setdefault(_text(value), _wire(value))
    cut: list[str] = []
    keys = sorted(values)
    if len(keys) > CONFIG_KEYS_LIMIT:
        cut.append(f"{len(keys)} config keys, the first {CONFIG_KEYS_LIMIT} listed")
        keys = keys[:CONFIG_KEYS_LIMIT]
    out: dict[str, list[Any]] = {}
    for key in keys:
        distinct = sorted(values[key].values(), key=_rank)
        if len(distinct) > CONFIG_VALUES_LIMIT:
            cut.append(f"config key {key} has {len(distinct)} values, the first {CONFIG_VALUES_LIMIT} listed")
            distinct = distinct[:CONFIG_VALUES_LIMIT]
        out[key] = distinct
    return out, cut
