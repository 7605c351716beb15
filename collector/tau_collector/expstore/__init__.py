"""The local experiment store (TauGrid's expstore layout): schema, writer, summaries, compaction, the store's reader.

The rows its reader answers with and the non-blocking rule are the read contract's
(:mod:`tau_collector.reads`); run configurations are :mod:`tau_collector.taugrid.run_config`'s.

The names below are imported on first use: opening a store or catching its errors does not load
pyarrow and numpy, which only reading and writing metric files need (a sidecar that delivers to
ADX alone never loads them).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__all__ = [
    "CompactionPolicy",
    "ConfigConflictError",
    "ExpStore",
    "IdempotencyConflictError",
    "MetricWriter",
    "RunColumns",
    "StoreError",
    "StoreNotFoundError",
    "StoreReadOnlyError",
    "StoreReader",
    "WriteResult",
    "cluster_run",
    "compact_all",
    "compact_run",
    "open_store",
]

_HOME = {
    "ExpStore": "store", "StoreError": "store", "StoreNotFoundError": "store", "StoreReadOnlyError": "store",
    "open_store": "store",
    "IdempotencyConflictError": "writer", "WriteResult": "writer", "ConfigConflictError": "config_rows",
    "StoreReader": "reader",
    "MetricWriter": "writer", "RunColumns": "writer",
    "CompactionPolicy": "compaction", "compact_all": "compaction", "compact_run": "compaction",
    "cluster_run": "metric_clusters",
}

if TYPE_CHECKING:
    from tau_collector.expstore.compaction import CompactionPolicy, compact_all, compact_run
    from tau_collector.expstore.config_rows import ConfigConflictError
    from tau_collector.expstore.metric_clusters import cluster_run
    from tau_collector.expstore.reader import StoreReader
    from tau_collector.expstore.store import ExpStore, StoreError, StoreNotFoundError, StoreReadOnlyError, open_store
    from tau_collector.expstore.writer import IdempotencyConflictError, MetricWriter, RunColumns, WriteResult


def __getattr__(name: str) -> object:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
