"""Where a request's data comes from: TauGrid's ``source`` parameter resolved to a reader.

Every reader keeps the read contract (:mod:`tau_collector.reads`:
:class:`~tau_collector.reads.ExperimentReader`, its rows and the non-blocking rule). TauGrid's
``source`` parameter (``local | kusto | auto``, case-insensitive, empty for the server's default)
picks a reader. ``local`` is the store's :class:`~tau_collector.expstore.StoreReader`; ``kusto`` the
Portal's :class:`~.kusto.KustoReader` (``503 SOURCE_UNAVAILABLE`` when the Portal has no cluster, or
no store for ``local``). ``auto`` is TauGrid's merge (``expapi/search_sources.go``,
``v2ExactRun``), one :class:`AutoReader` per request:

* runs are read from both sources; a run id both hold is the local record ("source=auto kept local
  records for N duplicate Kusto run IDs"), runs only Kusto holds are added ("source=auto merged N
  Kusto-backed runs with local expstore runs"): both warnings make the answer ``degraded``, as TauGrid's;
* everything else about a run (metrics, series, page data) comes from the source that served it, and
  ``served_sources``/the run's ``source`` name that source;
* a failing source is skipped with TauGrid's warning ("source=auto skipped Kusto run search because it
  failed: …", "… fell back to Kusto because local run search failed: …"); both failing is an error.
  One difference: a run the local store does not hold while Kusto fails is that Kusto error (502/504),
  not ``404`` as TauGrid answers, since only Kusto could say whether the run exists;
* without a Kusto cluster, ``auto`` is the local store (no warning), as TauGrid's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from tau_collector.reads import (
    ExperimentReader,
    MetricSummaryRow,
    NoteRow,
    PinsRequests,
    ReadsNotes,
    ReadsRunConfigs,
    ReducedSeries,
    Rows,
    RunEvent,
    RunRow,
    WouldBlock,
)

from .errors import V2Error
from .kusto.errors import AmbiguousRunError, KustoError
from .kusto.queries import RUN_LIMIT

__all__ = ["SOURCES", "AutoReader", "Sources", "served_by", "served_sources"]

SOURCES = ("local", "kusto", "auto")
_T = TypeVar("_T")


class AutoReader:
    """``source=auto`` for one request: both sources' runs, TauGrid's merge, each run read from its source."""

    def __init__(self, local: ExperimentReader, kusto: ExperimentReader) -> None:
        self.local = local
        self.kusto = kusto
        self.warnings: list[str] = []  # TauGrid's merge warnings, in the order they arose
        self._from_kusto: set[str] = set()

    def source_of(self, run_id: str) -> str:
        return "kusto" if run_id in self._from_kusto else "local"

    def _for(self, run_id: str) -> ExperimentReader:
        return self.kusto if run_id in self._from_kusto else self.local

    def _local(self, read: Callable[[], _T]) -> tuple[_T | None, Exception | None]:
        try:
            return read(), None
        except (WouldBlock, V2Error):
            raise
        except Exception as error:  # a store that cannot be read: TauGrid falls back to Kusto
            return None, error

    def _both_failed(self, kind: str, local_error: Exception, kusto_error: KustoError) -> KustoError:
        return type(kusto_error)(f"local {kind} search: {local_error}; Kusto {kind} search: {kusto_error}",
                                 kind=kusto_error.kind)

    def runs(self, workspace: str | None = None, *, project: str | None = None, experiment_id: str | None = None,
             run_group_id: str | None = None) -> list[RunRow]:
        filters = {"project": project, "experiment_id": experiment_id, "run_group_id": run_group_id}
        local, local_error = self._local(lambda: self.local.runs(workspace, **filters))
        try:
            kusto = self.kusto.runs(workspace, **filters)
        except KustoError as error:
            if local_error is not None:
                raise self._both_failed("run", local_error, error) from error
            self.warnings.append(f"source=auto skipped Kusto run search because it failed: {error}")
            return list(local or [])
        if local_error is not None:
            return self._fell_back(local_error, kusto)
        if len(kusto) > RUN_LIMIT:  # the Kusto reader's "more matched"
            kusto = kusto[:RUN_LIMIT]
            self.warnings.append("source=auto search is limited to the returned source windows; narrow the "
                                 "filters or increase limit (maximum 1000)")
        return self._merge(list(local or []), kusto)

    def _fell_back(self, local_error: Exception, kusto: list[RunRow]) -> list[RunRow]:
        self.warnings.append(f"source=auto fell back to Kusto because local run search failed: {local_error}")
        self._from_kusto.update(r.run_id for r in kusto)
        return kusto

    def _merge(self, local: list[RunRow], kusto: list[RunRow]) -> list[RunRow]:
        seen = {r.run_id for r in local}
        added = [r for r in kusto if r.run_id not in seen]
        duplicates = len(kusto) - len(added)
        self._from_kusto.update(r.run_id for r in added)
        if added:
            self.warnings.append(f"source=auto merged {len(added)} Kusto-backed runs with local expstore runs")
        if duplicates:
            self.warnings.append(f"source=auto kept local records for {duplicates} duplicate Kusto run IDs")
        runs = local + added
        runs.sort(key=lambda r: r.run_id)
        runs.sort(key=lambda r: r.created_at, reverse=True)
        return runs

    def run(self, run_id: str, project: str | None = None) -> RunRow | None:
        local, local_error = self._local(lambda: self.local.run(run_id, project))
        try:
            kusto = self.kusto.run(run_id, project)
        except AmbiguousRunError:
            if local is None:
                raise
            kusto = local  # several Kusto runs under the local one's id: the local record wins, as one duplicate
        except KustoError as error:
            if local is None:  # only Kusto could say whether the run exists: say that it failed
                raise (self._both_failed("run", local_error, error) if local_error else error) from error
            self.warnings.append(f"source=auto skipped Kusto run search because it failed: {error}")
            return local
        found = [kusto] if kusto is not None else []
        if local_error is not None:
            return next(iter(self._fell_back(local_error, found)), None)
        return next(iter(self._merge([local] if local is not None else [], found)), None)

    def metric_summaries(self, run_id: str) -> list[MetricSummaryRow]:
        return self._for(run_id).metric_summaries(run_id)

    def metric_summary(self, run_id: str, metric: str) -> MetricSummaryRow | None:
        return self._for(run_id).metric_summary(run_id, metric)

    def run_events(self, run_id: str, *, type: str | None = None) -> list[RunEvent]:
        return self._for(run_id).run_events(run_id, type=type)

    def series(self, run_id: str, metric: str, start_step: int | None = None, end_step: int | None = None,
               max_points: int = 8000, *, step_interval: int | None = None,
               finite_only: bool = False) -> ReducedSeries:
        return self._for(run_id).series(run_id, metric, start_step, end_step, max_points,
                                        step_interval=step_interval, finite_only=finite_only)

    def non_finite(self, run_id: str, metric: str, start_step: int | None = None, end_step: int | None = None,
                   limit: int | None = None) -> tuple[int, Rows]:
        return self._for(run_id).non_finite(run_id, metric, start_step, end_step, limit)

    def run_configs(self, run_ids: Iterable[str]) -> dict:
        """Each run's configuration from the source that holds it; a source without configurations has none."""
        ids = list(run_ids)
        found: dict = {}
        for reader in (self.local, self.kusto):
            mine = [r for r in ids if self._for(r) is reader]
            if mine and isinstance(reader, ReadsRunConfigs):
                found.update(reader.run_configs(mine))
        return found


    def notes(self, run_id: str, *, limit: int = 1000) -> list[NoteRow]:
        """The run's notes from the source that holds it (Kusto holds none)."""
        reader = self._for(run_id)
        return reader.notes(run_id, limit=limit) if isinstance(reader, ReadsNotes) else []

    def runs_with_note(self, run_ids: Iterable[str], text: str) -> set[str]:
        local = [r for r in run_ids if self._for(r) is self.local]
        return self.local.runs_with_note(local, text) if isinstance(self.local, ReadsNotes) else set()


def served_by(reader: ExperimentReader, run_id: str, served: str) -> str:
    """The source that served ``run_id``: ``source=auto``'s choice for it, else the reader's own ``served``."""
    return reader.source_of(run_id) if isinstance(reader, AutoReader) else served


def served_sources(reader: ExperimentReader, served: str, run_ids: Iterable[str]) -> list[str]:
    """TauGrid's ``served_sources`` for an answer about these runs (``sourceListForRuns``): the sources that
    served them; none for no runs, which the metadata block answers with the requested source."""
    return sorted({served_by(reader, r, served) for r in run_ids})


class Sources:
    """The readers of one Portal, and TauGrid's ``source`` parameter resolved against them."""

    def __init__(self, local: ExperimentReader | None, *, default_source: str = "local",
                 kusto: ExperimentReader | None = None) -> None:
        if default_source not in SOURCES:
            raise ValueError(f"default_source must be one of {', '.join(SOURCES)}, not {default_source!r}")
        if local is None and kusto is None:
            raise ValueError("a Portal needs a local store, a Kusto cluster, or both")
        self.local = local
        self.kusto = kusto
        self.default_source = default_source

    @contextlib.contextmanager
    def pinned(self) -> Iterator[None]:
        """One request: readers that can (``StoreReader.pinned``, ``KustoReader.pinned``) hold one view of it."""
        with contextlib.ExitStack() as stack:
            for reader in (self.local, self.kusto):
                if isinstance(reader, PinsRequests):
                    stack.enter_context(reader.pinned())
            yield

    def name(self, raw: str) -> str:
        """The requested source, checked: ``400 INVALID_SOURCE`` unless local, kusto, auto or empty."""
        source = raw.strip().lower()
        if source and source not in SOURCES:
            raise V2Error(400, "INVALID_SOURCE", "source must be local, kusto, or auto")
        return source or self.default_source

    def reader(self, source: str) -> tuple[ExperimentReader, str, list[str]]:
        """(the reader, the source it serves, warnings) for a checked source name.

        ``auto`` gives a fresh :class:`AutoReader` whose ``warnings`` list is the one returned: the merge's
        warnings join it as the request reads.
        """
        if source == "kusto":
            if self.kusto is None:
                raise V2Error(503, "SOURCE_UNAVAILABLE",
                              "Kusto source is not configured for this Portal: start it with --kusto-cluster and "
                              "--kusto-database (or TAU_PORTAL_KUSTO_CLUSTER/_DATABASE), or use source=local")
            return self.kusto, "kusto", []
        if self.local is None:
            if source == "local":
                raise V2Error(503, "SOURCE_UNAVAILABLE",
                              "this Portal serves no local store (it was started without --store): use source=kusto")
            return self.kusto, "kusto", []  # auto over the one source there is
        if source == "auto" and self.kusto is not None:
            auto = AutoReader(self.local, self.kusto)
            return auto, "auto", auto.warnings
        return self.local, "local", []
