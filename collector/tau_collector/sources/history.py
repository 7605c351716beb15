"""The JSONL history source: TauGrid's ``--history`` files and globs (TAUGRID-REFERENCE §1.6, §2.3).

Its inputs are the files the patterns match (sorted, absolute, as TauGrid's ``filepath.Glob``);
each is read with :func:`.jsonl.read_history` in bounded batches. TauGrid stops on a history file
that cannot be read or was replaced, so this source is ``strict``. A top-level W&B-shaped media value
(``{"_type": "histogram"}``, ``image-file``: what ``taunotebook.log`` writes; image paths relative to the
file's directory) is read into the batch's media (:mod:`.wandb_media`); the scalars are TauGrid's.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Iterator
from typing import Any

from tau_collector.sources.base import Batch, Position, Source, SourceInput, hash_range
from tau_collector.sources.history_listing import iter_glob, list_history
from tau_collector.sources.jsonl import history_metric_file_id, read_history
from tau_collector.sources.read_limits import DEFAULT_LIMITS, Limits
from tau_collector.sources.records import ProblemKind
from tau_collector.sources.wandb_media import ImageWaits, media_scope, take_media

__all__ = ["HistorySource", "read_history_batch"]


def read_history_batch(source: Source, source_input: SourceInput, start: Position, *, final: bool,
                       prefix_hash: Any) -> Batch:
    """One bounded batch of a JSONL file, for any source whose input is a history-shaped file."""
    limits = source.limits
    read = read_history(source_input.path, start.offset, start.records, final=final, prefix_hash=prefix_hash,
                        max_bytes=limits.batch_bytes, max_rows=limits.batch_records,
                        max_line_bytes=limits.max_line_bytes, max_fields=limits.max_row_fields)
    return Batch(source_input, start, Position(read.offset, read.lines), rows=read.rows, problems=read.problems,
                 more=not read.reached_end,
                 unreadable=any(p.kind == ProblemKind.UNREADABLE for p in read.problems))


def history_input(path: str) -> SourceInput:
    return SourceInput(path, history_metric_file_id(path), path)


class HistorySource(Source):
    kind = "jsonl"
    strict = True

    def __init__(self, patterns: list[str], *, step_field: str = "_step", time_field: str = "_timestamp",
                 limits: Limits = DEFAULT_LIMITS) -> None:
        super().__init__(limits)
        self.patterns = list(patterns)
        self._absolute = [os.path.abspath(p) for p in patterns]
        self.step_field = step_field
        self.time_field = time_field
        # Files the collector has folded as completely read: left out of a full scan, never stat'ed or held.
        self.known: Callable[[str], bool] | None = None
        # Files it has read before, and how many new files a full listing takes (see ``Source.prepare``).
        self.read_before: Callable[[str], bool] | None = None
        self.limit: int | None = None
        self.image_waits = ImageWaits()  # a live row's image file not written yet: the row is read again

    def prepare(self, known: Callable[[str], bool] | None, *, read: Callable[[str], bool] | None = None,
                limit: int | None = None) -> None:
        self.known, self.read_before, self.limit = known, read, limit

    def inputs(self, changed: set[str] | None = None) -> list[SourceInput]:
        """Raises :class:`.jsonl.HistoryPathError` for a pattern naming a directory."""
        self.cut_after = None
        if changed is None:
            listing = list_history(self.patterns, skip=self.known, read=self.read_before, limit=self.limit)
            paths, self.cut_after = listing.paths, listing.cut_after
        else:
            paths = sorted(p for p in changed if self.owns(p) and os.path.isfile(p))
        return [history_input(path) for path in paths]

    def every_input(self) -> Iterator[SourceInput]:
        """Every file the patterns match, one at a time as the directories are read (a job's 200,000 closed files
        are never listed whole); a file two patterns match comes twice."""
        for pattern in self.patterns:
            for candidate in iter_glob(pattern) if any(ch in pattern for ch in "*?[") else (pattern,):
                absolute = os.path.normpath(os.path.abspath(candidate))
                if os.path.isfile(absolute):
                    yield history_input(absolute)

    def read(self, source_input: SourceInput, start: Position, *, final: bool, prefix_hash: Any = None) -> Batch:
        batch = read_history_batch(self, source_input, start, final=final, prefix_hash=None)
        if batch.rows:
            limits = self.limits
            scope = media_scope(os.path.dirname(source_input.path), limits, separator=None)
            batch.rows = take_media(batch, batch.rows, scope, step_field=self.step_field, time_field=self.time_field,
                                    image_budget=limits.batch_bytes, final=final, waits=self.image_waits)
        if prefix_hash is not None and batch.end.offset > start.offset:  # after take_media, which may end it sooner
            hash_range(prefix_hash, source_input.path, start.offset, batch.end.offset)
        return batch

    def owns(self, path: str) -> bool:
        for pattern in self._absolute:
            if any(ch in pattern for ch in "*?["):
                # Go's Glob, like glob.glob, never matches across a separator.
                if pattern.count(os.sep) == path.count(os.sep) and fnmatch.fnmatchcase(path, pattern):
                    return True
            elif path == pattern:
                return True
        return False

    def watch_roots(self) -> list[str]:
        roots = []
        for pattern in self.patterns:
            head = pattern
            while any(ch in head for ch in "*?["):
                head = os.path.dirname(head)
            roots.append(os.path.dirname(os.path.abspath(head)) if not os.path.isdir(head) else head)
        return roots
