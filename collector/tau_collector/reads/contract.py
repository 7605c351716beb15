"""The reader interface every Portal route reads through: :class:`ExperimentReader`.

Two implementations: the local store's :class:`~tau_collector.expstore.StoreReader`
(``tau_collector/expstore/read/reader.py``) and the Portal's Kusto reader (``taunotebook/portal/kusto/reader.py``);
``source=auto`` (``taunotebook/portal/sources.py``) merges the two behind the same interface. Both answer
with the rows of :mod:`.rows` and keep the non-blocking rule of :mod:`.blocking`.

Readers may offer more; each such capability is a ``runtime_checkable`` protocol of :mod:`.capabilities`
(configs, listings, caches, export), which the Portal checks with ``isinstance`` and answers without where
a reader lacks it.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from tau_collector.reads.rows import MetricSummaryRow, ReducedSeries, Rows, RunEvent, RunRow

__all__ = ["ExperimentReader"]


@runtime_checkable
class ExperimentReader(Protocol):
    """What the routes read; :class:`~tau_collector.expstore.StoreReader` is the local one."""

    def runs(self, workspace: str | None = None, *, project: str | None = None, experiment_id: str | None = None,
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
