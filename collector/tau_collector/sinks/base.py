"""The one interface every sink implements, and the chunk it receives from the spool."""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from tau_collector.projection.metric_event import MetricEvent
from tau_collector.sources.records import SourceProblem

if TYPE_CHECKING:
    from tau_collector.projection.columns import PointColumns
    from tau_collector.reads.rows import ArtifactRow
    from tau_collector.sources.media import MediaRecord
    from tau_collector.taugrid.run_config import RunConfig

__all__ = ["Chunk", "MediaChunk", "RunConfigConflict", "RunFile", "RunIdentity", "Sink", "SinkError"]


@dataclass(frozen=True, slots=True)
class Chunk:
    """One spooled delivery unit: all new events of one source in one drain, or the terminal marker.

    ``ndjson`` is canonical MetricEvent NDJSON (``chunk_digest`` = its sha256 hex), exactly the
    bytes of the pending manifest. ``non_finite`` holds the observations that cannot be
    MetricEvents (NaN/±Inf values, DESIGN §5): MetricEvent-shaped records whose ``value`` is not
    finite; only sinks that can keep them (the expstore) use them, none may encode them.
    """

    sequence: int
    kind: str  # "history" | "terminal"
    chunk_digest: str
    ndjson: bytes
    event_count: int
    non_finite: tuple[MetricEvent, ...] = ()
    events: tuple[MetricEvent, ...] | None = None  # ``ndjson`` decoded, when the spool already has it
    points: PointColumns | None = None
    key: str = ""

    def decoded_events(self) -> list[MetricEvent]:
        """The chunk's events; decodes (strictly) only when the spool did not hand them over."""
        if self.events is not None:
            return list(self.events)
        from tau_collector.projection.metric_event import decode_canonical_ndjson

        return decode_canonical_ndjson(self.ndjson)


@dataclass(frozen=True, slots=True)
class RunIdentity:
    """Where a run belongs, as its source knows it: what a store needs to list a run that has only media."""

    project: str
    experiment_id: str
    run_group_id: str
    tags: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class MediaChunk:
    """The histograms, images and text of one spooled chunk, for sinks that keep them (never MetricEvents).

    ``key`` is the spool record's digest; ``source`` the file they were read from. Delivering it again (a
    replay after a crash, a re-read of the same frames) changes nothing a reader sees. ``identity``: the
    run's project, experiment and group, so a run that logs only media is listed; None in a record spooled
    before it was carried (the run row is then left to the run's points).
    """

    key: str
    run_id: str
    source: str
    records: tuple[MediaRecord, ...]
    identity: RunIdentity | None = None


@dataclass(frozen=True, slots=True)
class RunFile:
    """A file a run is read from: its absolute ``path``, its ``name`` in the run, its artifact ``type``."""

    path: str
    name: str
    type: str


class SinkError(Exception):
    """Delivery failed. ``retryable`` tells the spool whether to back off and try again."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


class RunConfigConflict(SinkError):
    """The run already has another configuration in this sink: nothing was written (not retryable)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=False)


class Sink(abc.ABC):
    """A destination. ``deliver`` returns only once the chunk is durably acknowledged."""

    name: ClassVar[str]
    # Keeps points, not events: delivers a chunk's ``points`` alone, idempotently on the chunk's digest and
    # sequence. A collector whose sinks all do spools its chunks as columns (:mod:`..column_spool`).
    keeps_points: ClassVar[bool] = False
    # Keeps a run's artifacts (:meth:`put_artifacts`): a collector whose sinks keep none does not hash its files.
    keeps_artifacts: ClassVar[bool] = False

    @abc.abstractmethod
    def identity(self) -> str:
        """A stable description of where and how this sink delivers (part of the config identity)."""

    @abc.abstractmethod
    def deliver(self, chunk: Chunk) -> None:
        """Deliver idempotently: re-delivering an acknowledged chunk must be a no-op."""

    def deliver_media(self, chunk: MediaChunk) -> None:  # noqa: B027 - optional
        """Keep histograms, images and text idempotently; a sink of MetricEvents (ADX) ignores them."""

    def report(self, run_id: str, problems: list[SourceProblem]) -> None:  # noqa: B027 - optional
        """Keep the problems met while reading the run's sources where readers can show them."""

    def put_run_config(self, run_id: str, config: RunConfig) -> None:  # noqa: B027 - optional
        """Keep the run's configuration where readers can show it; a sink of metric events only ignores it.

        Raises :class:`RunConfigConflict` when the run already
        has another configuration.
        """

    def put_artifacts(self, rows: list[ArtifactRow]) -> None:  # noqa: B027 - optional
        """Register files of a run (its checkpoints, the files it is read from) where readers find them: the one
        way rows reach a sink's ``artifacts`` (:class:`~tau_collector.collect.delivery.Delivery` says when, and
        how often it retries). Only a sink that :attr:`keeps_artifacts` is given any."""

    def known_artifacts(self, run_id: str, type: str) -> list[ArtifactRow]:
        """The run's artifacts of ``type`` this sink already holds (a restarted collector skips re-hashing them);
        ``[]`` for a sink that keeps none."""
        return []

    def local_directories(self) -> list[str]:
        """Directories this sink writes on this machine (a watching collector takes no change there as news)."""
        return []

    def close(self) -> None:  # noqa: B027 - most sinks hold nothing to release
        """Release connections and files."""
