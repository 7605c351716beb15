"""The one interface every source implements, and the bounded batch it hands to the projection.

A source is a paths provider and a reader in one (Vector's ``lib/file-source`` shape): it says
which input files it has (all of them, or those among the paths a watcher saw change), and it
reads one bounded :class:`Batch` of an input from a checkpoint :class:`Position`. What a batch
could not read is in its ``problems``; what it skipped on purpose (audio, values nested too
deep) in its ``dropped`` counts; histograms, images and text in its ``media``. Checkpoints,
fingerprints, spooling and delivery are not a source's business (:mod:`tau_collector.collect.loop`,
:mod:`tau_collector.spool.fingerprint`, :mod:`tau_collector.spool.manifest`,
:mod:`tau_collector.collect.import_pass`).

A source may also have the run's configuration (hyperparameters: Tune's ``params.json``, W&B's
``config.yaml``, TensorBoard HParams): :meth:`Source.run_config`, stored by whoever delivers the
source's points (the collector, the import) in the expstore's ``configs`` table.
"""

from __future__ import annotations

import abc
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from tau_collector.sources.read_limits import DEFAULT_LIMITS, Limits
from tau_collector.sources.records import HistoryRow, SourceProblem

if TYPE_CHECKING:
    from tau_collector.sources.event_columns import ScalarColumns
    from tau_collector.sources.media import MediaRecord
    from tau_collector.sources.tensorboard_run import SessionRestart
    from tau_collector.taugrid.run_config import RunConfig

__all__ = ["Batch", "Position", "Source", "SourceInput", "hash_range"]


@dataclass(frozen=True, slots=True)
class SourceInput:
    """One file a source reads: the unit of a checkpoint.

    ``path`` is absolute. ``metric_file_id``/``metric_file_path`` name the logical source of its
    points (a history file; or a TensorBoard run, whose event files all share its id). ``group``
    is what the source needs to read it in context (a TensorBoard run), else None.
    """

    path: str
    metric_file_id: str
    metric_file_path: str
    group: Any = None


@dataclass(frozen=True, slots=True)
class Position:
    """How far an input was read: a byte offset and the lines (or records) before it."""

    offset: int = 0
    records: int = 0


@dataclass(slots=True)
class Batch:
    """What one bounded read of one input produced.

    The points come as ``rows`` (history objects, for the projection to judge one by one) or as
    ``columns`` (event-file scalars, already numbers) -- or both empty. ``media`` holds the histograms,
    images and text read (:mod:`.media`), which never become MetricEvents. ``end`` is the checkpoint
    after the batch; ``more`` says a bound (not the end of what is readable) ended it: read again
    from ``end``. ``stopped`` says the input cannot go on until it changes (a checksum mismatch).
    """

    input: SourceInput
    start: Position
    end: Position
    rows: list[HistoryRow] = field(default_factory=list)
    columns: ScalarColumns | None = None
    problems: list[SourceProblem] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)
    restarts: list[SessionRestart] = field(default_factory=list)
    media: list[MediaRecord] = field(default_factory=list)
    more: bool = False
    stopped: bool = False
    unreadable: bool = False

    @property
    def consumed(self) -> int:
        return self.end.offset - self.start.offset

    def drop(self, bucket: str, count: int = 1) -> None:
        self.dropped[bucket] = self.dropped.get(bucket, 0) + count


class Source(abc.ABC):
    """A kind of input (JSONL history, TensorBoard runs, W&B run folders, Ray Tune trials).

    ``step_field``/``time_field`` name the step and time of the rows it yields (the projection
    reads them); ``strict`` sources follow TauGrid, for whom a history file that cannot be read
    or was replaced stops the collector, while the others report it and go on.
    """

    kind: ClassVar[str]
    # The type of its files as artifacts of the run (TauGrid's ``artifacts`` table): history is ``metrics-jsonl``.
    artifact_type: ClassVar[str] = "metrics-jsonl"
    strict: ClassVar[bool] = False
    step_field: str = "_step"
    time_field: str = "_timestamp"
    # Set by a full listing that took only its ``limit`` first new files: the last path it returned (see prepare).
    cut_after: str | None = None

    def __init__(self, limits: Limits = DEFAULT_LIMITS) -> None:
        self.limits = limits

    def prepare(self, known: Callable[[str], bool] | None, *,  # noqa: B027 - optional
                read: Callable[[str], bool] | None = None, limit: int | None = None) -> None:
        """Before a drain lists inputs: ``known(path)`` says a path is closed and already read completely.

        Sources whose listing can skip such files cheaply (history chunk directories) keep it and leave those
        paths out of a full listing (never stat'ed or held: a job's 200,000th file costs what its 200th did);
        each path is asked once a listing. None means nothing is known yet. Such a source may also take only the
        ``limit`` first files ``read(path)`` does not know (new files) in a full listing, with the known ones
        before the last of them, and set :attr:`cut_after` to that last path when it left new files out: a
        backlog of 200,000 files no collector read is then drained a bounded slice at a time, in reading order.
        """

    def every_input(self) -> Iterator[SourceInput]:
        """Every input, also those folded as completely read, for registering them all once the run ended; a
        source whose files can be many yields them as it lists them (in no set order, a path perhaps twice)."""
        self.prepare(None)
        yield from self.inputs(None)

    @abc.abstractmethod
    def inputs(self, changed: set[str] | None = None) -> list[SourceInput]:
        """Every input, in reading order; with ``changed``, only those among these paths."""

    @abc.abstractmethod
    def read(self, source_input: SourceInput, start: Position, *, final: bool, prefix_hash: Any = None) -> Batch:
        """One bounded batch of ``source_input`` from ``start``.

        ``final``: the job has completed, so a tail that does not end cleanly is all there will
        ever be. ``prefix_hash`` (a ``hashlib.sha256`` over the bytes before ``start``), when
        given, is updated with the bytes the batch consumed.
        """

    def owns(self, path: str) -> bool:
        """Whether a checkpointed ``path`` is one of this source's inputs (present or not)."""
        return False

    def watch_roots(self) -> list[str]:
        """Directories whose changes may concern this source."""
        return []

    def kept_files(self, source_input: SourceInput) -> list[tuple[str, str]]:
        """The files beside ``source_input`` that its rows name (a W&B run's ``files/media/``), to keep with the run
        as artifacts: (path, name relative to the folder where the input's own copy is kept). None by default."""
        return []

    def run_config(self) -> RunConfig | None:
        """The run's configuration (hyperparameters) as far as the source can tell now, or None.

        Reads at most a small, bounded file (or the first records of event files); raises
        :class:`~tau_collector.taugrid.run_config.ConfigError` for a configuration it cannot read,
        naming the file and the place, and ``OSError`` when the file cannot be read at all.
        """
        return None


def hash_range(digest: Any, path: str, start: int, end: int) -> None:
    """Add the bytes ``[start, end)`` of ``path`` to ``digest`` (bytes just read: the page cache has them)."""
    with open(path, "rb", buffering=0) as handle:
        position = start
        while position < end:
            piece = os.pread(handle.fileno(), min(1 << 20, end - position), position)
            if not piece:
                raise OSError(f"{path} shrank below byte {end} while it was read")
            digest.update(piece)
            position += len(piece)
