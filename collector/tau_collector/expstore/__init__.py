"""The local experiment store (TauGrid's expstore layout), in layers: formats, writing, maintenance, reading.

- :mod:`.format`: the index schema and layout, metric files, their Parquet encoding, series levels.
- :mod:`.store`: opening and creating a store directory, and the SQLite discipline every layer shares.
- :mod:`.maintain`: compaction, clustering by metric, and the child process they run in.
- :mod:`.write`: the writer and the index rows it keeps (runs, summaries, run listings, configs, events,
  notes and tags people write);
  their reading SQL lives beside their writing SQL.
- :mod:`.read`: :class:`StoreReader` over one :class:`~.read.file_slices.FileSlices` (file lists, decoded
  slices, caches) shared with its level reads; merge, M4 and export.

A layer imports only the layers listed before it (the writer starts maintenance, so :mod:`.write` comes
after :mod:`.maintain`; the store's migration builds the run listings of :mod:`.write.listing`, which
imports nothing of the store); ``tests/collector/test_module_boundaries.py`` checks it.

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
    "cluster_live",
    "cluster_run",
    "compact_all",
    "compact_run",
    "open_store",
    "read_artifacts",
    "read_run_events",
    "record_artifacts",
    "record_note",
    "record_run_events",
    "store_artifact_bytes",
]

_HOME = {
    "ExpStore": "store", "StoreError": "store", "StoreNotFoundError": "store", "StoreReadOnlyError": "store",
    "open_store": "store",
    "IdempotencyConflictError": "write.writer", "WriteResult": "write.writer",
    "MetricWriter": "write.writer", "RunColumns": "write.writer",
    "ConfigConflictError": "write.config_rows", "StoreReader": "read.reader",
    "CompactionPolicy": "maintain.compaction", "compact_all": "maintain.compaction",
    "compact_run": "maintain.compaction", "cluster_run": "maintain.metric_clusters",
    "cluster_live": "maintain.live_clusters",
    "read_run_events": "write.run_events", "record_run_events": "write.run_events",
    "read_artifacts": "write.artifacts", "record_artifacts": "write.artifacts",
    "store_artifact_bytes": "write.artifacts",
    "record_note": "write.notes",
}

if TYPE_CHECKING:
    from tau_collector.expstore.maintain.compaction import CompactionPolicy, compact_all, compact_run
    from tau_collector.expstore.maintain.live_clusters import cluster_live
    from tau_collector.expstore.maintain.metric_clusters import cluster_run
    from tau_collector.expstore.read.reader import StoreReader
    from tau_collector.expstore.store import ExpStore, StoreError, StoreNotFoundError, StoreReadOnlyError, open_store
    from tau_collector.expstore.write.artifacts import read_artifacts, record_artifacts, store_artifact_bytes
    from tau_collector.expstore.write.config_rows import ConfigConflictError
    from tau_collector.expstore.write.notes import record_note
    from tau_collector.expstore.write.run_events import read_run_events, record_run_events
    from tau_collector.expstore.write.writer import IdempotencyConflictError, MetricWriter, RunColumns, WriteResult


def __getattr__(name: str) -> object:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
