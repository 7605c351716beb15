"""The local experiment store (TauGrid's expstore layout): schema, writer, summaries, compaction, read API."""

from .reader import MetricSummary, Rows, Run, Series, StoreReader
from .store import ExpStore, StoreError, StoreNotFoundError, open_store
from .writer import IdempotencyConflictError, WriteResult

__all__ = [
    "ExpStore",
    "IdempotencyConflictError",
    "MetricSummary",
    "Rows",
    "Run",
    "Series",
    "StoreError",
    "StoreNotFoundError",
    "StoreReader",
    "WriteResult",
    "open_store",
]
