"""What a reader may offer beyond :class:`~.contract.ExperimentReader`: one small protocol per capability.

The Portal asks ``isinstance(reader, Capability)`` (never ``getattr``) and answers without the capability
where a reader lacks it. Which reader has which is pinned by ``tests/portal/test_reader_capabilities.py``:

- :class:`PinsRequests`: ``pinned()``, one view of the source for a whole request (store and Kusto);
- :class:`HasGeneration`: ``generation()``, a token that stays the same object while the data is unchanged,
  for answer caches (store);
- :class:`CachesDerived`: ``derived(key, build)``, a value built once and kept until the data changes (store);
- :class:`ReadsRunConfigs`: ``run_configs(run_ids)``, each run's
  :class:`~tau_collector.taugrid.run_config.RunConfig` (store; ``source=auto`` from whichever source has them);
- :class:`ReadsNamedSummaries`: ``metric_summaries_named(run_id, names)``, a few summaries and every name
  without reading the whole catalog (store);
- :class:`ReadsExperimentTable`: ``experiments()``, the experiments table's rows (store);
- :class:`HasListings`: the indexed listings a search or a runs table is answered from in one query
  (store; usable only when ``has_listings()`` says so: a store last written by TauGrid has none);
- :class:`ExportsSeries`: ``export_series(...)``, every stored point of a series in batches (store);
- :class:`ReadsNotes`: ``notes(run_id)``, the notes people wrote on a run (``observations``), and
  ``runs_with_note(run_ids, text)`` (store).
- :class:`ReadsArtifacts`: ``artifacts(run_id, ...)``, a run's rows of TauGrid's ``artifacts`` table (store);
- :class:`ReadsMedia`: a run's histograms, images and text (store; Kusto holds MetricEvents only).

A reader's capabilities are its class's methods, so each check is answered once per reader class and
remembered: Python 3.11 walks every member of a protocol on each ``isinstance``, tens of microseconds that a
live pane's poll (a fraction of a millisecond) would pay several times over.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from tau_collector.reads.media_rows import HistogramSeries, ImagesAt, MediaTag, TextAt
from tau_collector.reads.rows import (
    ExperimentDetails,
    ExperimentListingRow,
    ExperimentRow,
    MetricSummaryRow,
    MetricValueRow,
    NoteRow,
    RunRow,
)

if TYPE_CHECKING:
    from tau_collector.taugrid.run_config import RunConfig

__all__ = [
    "CAPABILITIES",
    "CachesDerived",
    "ExportsSeries",
    "HasGeneration",
    "HasListings",
    "PinsRequests",
    "ReadsArtifacts",
    "ReadsExperimentTable",
    "ReadsMedia",
    "ReadsNamedSummaries",
    "ReadsNotes",
    "ReadsRunConfigs",
]

_T = TypeVar("_T")
_OFFERED: dict[tuple[type, type], bool] = {}  # (capability, reader class) -> whether it offers it


class _Capability(type(Protocol)):  # type: ignore[misc]
    """The protocols' metaclass: ``isinstance`` as Python answers it, remembered per class of reader."""

    def __instancecheck__(cls, instance: object) -> bool:
        key = (cls, type(instance))
        offered = _OFFERED.get(key)
        if offered is None:
            offered = _OFFERED[key] = super().__instancecheck__(instance)
        return offered


@runtime_checkable
class PinsRequests(Protocol, metaclass=_Capability):
    """One view of the source for a request: a store checks its index once, Kusto reads runs once."""

    def pinned(self) -> AbstractContextManager[None]: ...


@runtime_checkable
class HasGeneration(Protocol, metaclass=_Capability):
    """A token that is the same object while the data is unchanged: what was computed under it still holds."""

    def generation(self) -> object: ...


@runtime_checkable
class CachesDerived(Protocol, metaclass=_Capability):
    """``build()`` once per change of the data, under ``key`` (an encoded answer of a wide run, a listing)."""

    def derived(self, key: tuple, build: Callable[[], _T]) -> _T: ...


@runtime_checkable
class ReadsRunConfigs(Protocol, metaclass=_Capability):
    """Each run's configuration among ``run_ids`` that has one, in one read."""

    def run_configs(self, run_ids: Iterable[str]) -> dict[str, RunConfig]: ...


@runtime_checkable
class ReadsNamedSummaries(Protocol, metaclass=_Capability):
    """(every metric name of the run, sorted; the summaries of those of ``names`` it has), by name."""

    def metric_summaries_named(self, run_id: str, names: Iterable[str]) -> tuple[tuple[str, ...],
                                                                                 dict[str, MetricSummaryRow]]: ...


@runtime_checkable
class ReadsExperimentTable(Protocol, metaclass=_Capability):
    """The experiments table (names, descriptions, times); without it experiments are named by their runs."""

    def experiments(self) -> list[ExperimentRow]: ...


@runtime_checkable
class HasListings(Protocol, metaclass=_Capability):
    """Searches and windows answered from an index of runs, filtered, sorted and cut in one query.

    Only when :meth:`has_listings` is true: the listings exist and cover every run.
    """

    def has_listings(self) -> bool: ...

    def search_experiments(self, workspace: str, **filters: Any) -> list[ExperimentListingRow]: ...

    def experiment_details(self, workspace: str, experiment_ids: list[str],
                           with_run_ids: bool = False) -> dict[str, ExperimentDetails]: ...

    def run_window(self, workspace: str, **query: Any) -> tuple[int, list[RunRow]]: ...

    def summaries_of(self, run_ids: list[str], metrics: list[str]) -> dict[tuple[str, str], MetricSummaryRow]: ...

    def runs_per_metric(self, workspace: str, experiment: str = "") -> dict[str, int]: ...

    def metric_values(self, workspace: str, metric: str, *, project: str = "", experiment_ids: Sequence[str] = (),
                      run_ids: Sequence[str] = (), limit: int) -> tuple[int, list[MetricValueRow]]: ...


@runtime_checkable
class ExportsSeries(Protocol, metaclass=_Capability):
    """Every stored point of one series with ``start_step <= step <= end_step``, in step order, in batches."""

    def export_series(self, run_id: str, metric: str, start_step: int | None = None,
                      end_step: int | None = None) -> Iterator[Any]: ...


@runtime_checkable
class ReadsArtifacts(Protocol, metaclass=_Capability):
    """A run's rows of TauGrid's ``artifacts`` table (checkpoints, media, history files), one bounded page at a time;
    one row by id, and where its bytes are (``present``, ``gone``, ``remote``)."""

    def artifacts(self, run_id: str, *, type: str | None = None, step_min: int | None = None,
                  step_max: int | None = None, after_id: str | None = None, limit: int = ...) -> list[Any]: ...

    def artifact(self, run_id: str, artifact_id: str) -> Any: ...

    def artifact_file(self, row: Any) -> tuple[str, Any]: ...


@runtime_checkable
class ReadsMedia(Protocol, metaclass=_Capability):
    """A run's histograms, images and text (:mod:`.media_rows`): its tags with counts, a histogram tag over a
    step range reduced to at most ``max_steps`` (never dropping a step of ``keep``), one step exactly, the text
    and the images at the step nearest a requested one, and one image row by the digest of its bytes."""

    def media_tags(self, run_id: str) -> list[MediaTag]: ...

    def histograms(self, run_id: str, tag: str, *, step_min: int | None = None, step_max: int | None = None,
                   max_steps: int = ..., keep: tuple[int, ...] = (), buckets: bool = True) -> HistogramSeries: ...

    def histogram_at(self, run_id: str, tag: str, step: int) -> HistogramSeries | None: ...

    def text_at(self, run_id: str, tag: str, step: int) -> TextAt | None: ...

    def images_near(self, run_id: str, tag: str, step: int) -> ImagesAt | None: ...

    def image(self, run_id: str, digest: str) -> Any: ...


@runtime_checkable
class ReadsNotes(Protocol, metaclass=_Capability):
    """A run's notes (TauGrid's ``observations`` with scope ``run``), oldest first, at most ``limit``; and which of
    ``run_ids`` have a note containing ``text`` (any case)."""

    def notes(self, run_id: str, *, limit: int = ...) -> list[NoteRow]: ...

    def runs_with_note(self, run_ids: Iterable[str], text: str) -> set[str]: ...


# Every optional capability, in the order the module lists them (the capability table's columns).
CAPABILITIES: tuple[type, ...] = (PinsRequests, HasGeneration, CachesDerived, ReadsRunConfigs, ReadsNamedSummaries,
                                  ReadsExperimentTable, HasListings, ExportsSeries, ReadsArtifacts, ReadsNotes,
                                  ReadsMedia)
