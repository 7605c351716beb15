"""The W&B source: a run folder's ``files/wandb-history.jsonl``, nested dicts flattened as ``a.b``.

W&B's history rows are house rows (``_step``, ``_timestamp`` with its fraction); a logged dict
shows in W&B as ``val.acc``, so it is flattened with ``.``; media and tables (``_type``) are
skipped. The file is read in bounded batches like any history file (:mod:`.jsonl`).

The run's configuration is ``files/config.yaml``: W&B writes each key as ``{desc, value}`` beside
its bookkeeping (``wandb_version``, ``_wandb``); the configuration stored is the values (what
``wandb.config`` held), read by TauGrid's YAML rules (:mod:`tau_collector.taugrid.config_yaml`),
with the file as its ``uri``.
"""

from __future__ import annotations

import os
from typing import Any

from tau_collector.sources.base import Batch, Position, Source, SourceInput
from tau_collector.sources.flatten import NESTED_TOO_DEEP, flatten_rows
from tau_collector.sources.history import history_input, read_history_batch
from tau_collector.sources.read_limits import DEFAULT_LIMITS, Limits
from tau_collector.taugrid.run_config import ConfigError, RunConfig, parse_config, read_config_bytes, run_config

__all__ = ["WANDB_CONFIG", "WANDB_HISTORY", "WandbSource", "wandb_config_values"]

WANDB_HISTORY = os.path.join("files", "wandb-history.jsonl")
WANDB_CONFIG = os.path.join("files", "config.yaml")
WANDB_BOOKKEEPING = frozenset({"wandb_version", "_wandb"})


def wandb_config_values(document: object, where: str) -> dict:
    """``wandb.config`` from a decoded ``config.yaml``: bookkeeping keys dropped, ``{desc, value}`` unwrapped."""
    if not isinstance(document, dict):
        raise ConfigError(f"{where}: a W&B config.yaml holds a mapping of keys to {{desc, value}}")
    values = {}
    for key, item in document.items():
        if key in WANDB_BOOKKEEPING:
            continue
        if isinstance(item, dict) and "value" in item and set(item) <= {"desc", "value"}:
            item = item["value"]
        values[key] = item
    return values


class WandbSource(Source):
    kind = "wandb"

    def __init__(self, run_folder: str, *, limits: Limits = DEFAULT_LIMITS) -> None:
        super().__init__(limits)
        self.run_folder = os.path.abspath(run_folder)
        self.history = os.path.join(self.run_folder, WANDB_HISTORY)

    @staticmethod
    def detect(directory: str) -> bool:
        return os.path.isfile(os.path.join(directory, WANDB_HISTORY))

    def inputs(self, changed: set[str] | None = None) -> list[SourceInput]:
        if changed is not None and self.history not in changed:
            return []
        return [history_input(self.history)]

    def read(self, source_input: SourceInput, start: Position, *, final: bool, prefix_hash: Any = None) -> Batch:
        batch = read_history_batch(self, source_input, start, final=final, prefix_hash=prefix_hash)
        batch.rows, too_deep = flatten_rows(batch.rows, separator=".", max_depth=self.limits.max_depth)
        if too_deep:
            batch.drop(NESTED_TOO_DEEP, too_deep)
        return batch

    def owns(self, path: str) -> bool:
        return path == self.history

    def run_config(self) -> RunConfig | None:
        """The run's ``wandb.config`` from ``files/config.yaml``; None without the file or without values."""
        path = os.path.join(self.run_folder, WANDB_CONFIG)
        if not os.path.isfile(path):
            return None
        values = wandb_config_values(parse_config(read_config_bytes(path), "yaml", path), path)
        return run_config(values, format="yaml", uri=path) if values else None
