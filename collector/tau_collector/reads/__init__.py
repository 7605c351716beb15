"""The read contract: what every reader of experiments answers, in the Portal's words rather than a store's.

- :mod:`.contract`: :class:`ExperimentReader`, the interface every Portal route reads through; the local
  store's ``StoreReader`` (``tau_collector.expstore.read.reader``) and the Kusto reader
  (``taunotebook/portal/kusto/reader.py``) are its two implementations;
- :mod:`.capabilities`: what a reader may offer besides (configs, listings, caches, export), one
  ``runtime_checkable`` protocol each, checked with ``isinstance``;
- :mod:`.rows`: the rows readers answer with (:class:`RunRow`, :class:`MetricSummaryRow`, :class:`Rows`,
  :class:`ReducedSeries`, :class:`RunEvent`, ...) and the names they carry (:data:`WORKSPACE_TAG`,
  :data:`SOURCE_PROBLEM`, :data:`RUN_SORTS`);
- :mod:`.blocking`: the non-blocking rule (:class:`WouldBlock`, :func:`may_block`, :func:`no_blocking`);
- :mod:`.lifecycle`: TauGrid's ``ClassifyRun`` over a run's row and summaries.

Nothing here loads pyarrow or numpy, and nothing here imports the expstore: the store is one
implementation of this contract, not its home.
"""

from __future__ import annotations

from tau_collector.reads.blocking import QUICK_FILE_ROWS, QUICK_POINTS, WouldBlock, may_block, no_blocking
from tau_collector.reads.capabilities import (
    CAPABILITIES,
    CachesDerived,
    ExportsSeries,
    HasGeneration,
    HasListings,
    PinsRequests,
    ReadsArtifacts,
    ReadsExperimentTable,
    ReadsMedia,
    ReadsNamedSummaries,
    ReadsNotes,
    ReadsRunConfigs,
)
from tau_collector.reads.contract import ExperimentReader
from tau_collector.reads.media_rows import HistogramSeries, ImagesAt, MediaTag, TextAt
from tau_collector.reads.rows import (
    RUN_SORTS,
    SOURCE_PROBLEM,
    WORKSPACE_TAG,
    ArtifactRow,
    ExperimentDetails,
    ExperimentListingRow,
    ExperimentRow,
    MetricSummaryRow,
    MetricValueRow,
    NoteRow,
    ReducedSeries,
    Rows,
    RunEvent,
    RunRow,
)

__all__ = [
    "CAPABILITIES",
    "QUICK_FILE_ROWS",
    "QUICK_POINTS",
    "RUN_SORTS",
    "SOURCE_PROBLEM",
    "WORKSPACE_TAG",
    "ArtifactRow",
    "CachesDerived",
    "ExperimentDetails",
    "ExperimentListingRow",
    "ExperimentReader",
    "ExperimentRow",
    "ExportsSeries",
    "HasGeneration",
    "HasListings",
    "HistogramSeries",
    "ImagesAt",
    "MediaTag",
    "MetricSummaryRow",
    "MetricValueRow",
    "NoteRow",
    "PinsRequests",
    "ReadsArtifacts",
    "ReadsExperimentTable",
    "ReadsMedia",
    "ReadsNamedSummaries",
    "ReadsNotes",
    "ReadsRunConfigs",
    "ReducedSeries",
    "Rows",
    "RunEvent",
    "RunRow",
    "TextAt",
    "WouldBlock",
    "may_block",
    "no_blocking",
]
