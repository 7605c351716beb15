"""Where a request's data comes from: the reader interface every route reads through, and one reader per source.

TauGrid's ``source`` parameter (``local | kusto | auto``, case-insensitive, empty for the server's
default) picks a reader. ``local`` is the expstore's :class:`~tau_collector.expstore.StoreReader`.
A Kusto reader plugs in as a second :class:`ExperimentReader`; until one is given, ``source=kusto``
is ``503 SOURCE_UNAVAILABLE`` and ``source=auto`` reads the local store (with a warning when a
Kusto cluster is configured).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Protocol

from tau_collector.expstore import ReducedSeries, Rows, RunRow
from tau_collector.expstore.run_events import RunEvent
from tau_collector.expstore.summaries import MetricSummaryRow

from .errors import V2Error

__all__ = ["SOURCES", "ExperimentReader", "Sources"]

SOURCES = ("local", "kusto", "auto")


class ExperimentReader(Protocol):
    """What the routes read; :class:`~tau_collector.expstore.StoreReader` is the local one."""

    def runs(self, workspace: str | None = None, *, project: str | None = None,
             run_group_id: str | None = None) -> list[RunRow]: ...

    def run(self, run_id: str, project: str | None = None) -> RunRow | None: ...

    def metric_summaries(self, run_id: str) -> list[MetricSummaryRow]: ...

    def metric_summary(self, run_id: str, metric: str) -> MetricSummaryRow | None: ...

    def run_events(self, run_id: str, *, type: str | None = None) -> list[RunEvent]: ...

    def series(self, run_id: str, metric: str, start_step: int | None = None, end_step: int | None = None,
               max_points: int = 8000, *, step_interval: int | None = None,
               finite_only: bool = False) -> ReducedSeries: ...

    def non_finite(self, run_id: str, metric: str, start_step: int | None = None, end_step: int | None = None,
                   limit: int | None = None) -> tuple[int, Rows]: ...


class Sources:
    """The readers of one Portal, and TauGrid's ``source`` parameter resolved against them."""

    def __init__(self, local: ExperimentReader, *, default_source: str = "local", kusto_configured: bool = False,
                 kusto: ExperimentReader | None = None) -> None:
        if default_source not in SOURCES:
            raise ValueError(f"default_source must be one of {', '.join(SOURCES)}, not {default_source!r}")
        self.local = local
        self.kusto = kusto
        self.default_source = default_source
        self.kusto_configured = kusto_configured or kusto is not None

    @contextlib.contextmanager
    def pinned(self) -> Iterator[None]:
        """One request: readers that can (``StoreReader.pinned``) check their store for changes once."""
        with contextlib.ExitStack() as stack:
            for reader in (self.local, self.kusto):
                if reader is not None and hasattr(reader, "pinned"):
                    stack.enter_context(reader.pinned())
            yield

    def name(self, raw: str) -> str:
        """The requested source, checked: ``400 INVALID_SOURCE`` unless local, kusto, auto or empty."""
        source = raw.strip().lower()
        if source and source not in SOURCES:
            raise V2Error(400, "INVALID_SOURCE", "source must be local, kusto, or auto")
        return source or self.default_source

    def reader(self, source: str) -> tuple[ExperimentReader, str, list[str]]:
        """(the reader, the source it serves, warnings) for a checked source name."""
        if source == "kusto":
            if self.kusto is not None:
                return self.kusto, "kusto", []
            if not self.kusto_configured:
                raise V2Error(503, "SOURCE_UNAVAILABLE",
                              "Kusto source is not configured for this Portal; use source=local")
            raise V2Error(503, "SOURCE_UNAVAILABLE",
                          "Kusto reads are not available in the local Portal yet; use source=local")
        if source == "auto" and self.kusto_configured and self.kusto is None:
            return self.local, "local", ["source=auto skipped Kusto because it is not available in the local Portal"]
        return self.local, "local", []
