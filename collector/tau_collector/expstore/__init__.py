"""The local experiment store (TauGrid's expstore layout): schema, writer, summaries, compaction, read API."""

from .reader import MetricSummaryRow, ReducedSeries, Rows, RunRow, StoreReader
from .store import ExpStore, StoreError, StoreNotFoundError, open_store
from .writer import IdempotencyConflictError, WriteResult

__all__ = [
    "ExpStore",
    "IdempotencyConflictError",
    "MetricSummaryRow",
    "ReducedSeries",
    "Rows",
    "RunRow",
    "StoreError",
    "StoreNotFoundError",
    "StoreReader",
    "WriteResult",
    "open_store",
]
