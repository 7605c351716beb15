"""What a run configuration may hold, and the error for one that cannot be stored.

Shared by the JSON reading in :mod:`.run_config` and the YAML decoding in :mod:`.config_yaml`, so
neither imports the other for it. Nothing a file says sizes an allocation: a config file is read up to
:data:`MAX_CONFIG_BYTES`, nesting is bounded by :data:`MAX_DEPTH` and the number of values by
:data:`MAX_VALUES` (YAML aliases count every value they repeat, so they cannot multiply it).
"""

from __future__ import annotations

__all__ = ["MAX_CONFIG_BYTES", "MAX_DEPTH", "MAX_VALUES", "ConfigBudget", "ConfigError"]

MAX_CONFIG_BYTES = 1024 * 1024
MAX_DEPTH = 32
MAX_VALUES = 100_000


class ConfigError(ValueError):
    """A configuration that cannot be stored; the message names the file (or source) and where in it."""


class ConfigBudget:
    """Counts the values a parse builds; a config past :data:`MAX_VALUES` or :data:`MAX_DEPTH` is refused."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.values = 0

    def take(self, depth: int, count: int = 1) -> None:
        self.values += count
        if self.values > MAX_VALUES:
            raise ConfigError(f"{self.where}: more than {MAX_VALUES} values; a configuration this large is "
                              "not stored (keep hyperparameters, not data, in it)")
        if depth > MAX_DEPTH:
            raise ConfigError(f"{self.where}: nested deeper than {MAX_DEPTH} levels")
