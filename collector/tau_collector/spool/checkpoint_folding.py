"""Keeping ``checkpoint.json`` bounded over a job's life: closed, fully read history files folded into
one *complete-through* entry per directory.

TauGrid's checkpoint has one ``sources`` entry per file ever read, and TauGrid's trainers write a
closed file per step: a week-old job would rewrite millions of entries after every chunk. A file
that is closed and completely read never needs its entry again, so the oldest of them are folded:

* A file is folded when it is fully read (its checkpoint offset is its size, under the same
  ``dev:ino``; or it is empty and never checkpointed), unchanged for ``closed_after`` seconds, and
  at least ``keep`` later-named files exist in its directory. Files are folded in name order and
  only as an unbroken run from the oldest: a file that is not ready stops the fold there.
* The entry keeps TauGrid's ``SourceCheckpoint`` shape. Its key (and ``path``) is
  ``tau-collector:complete-through:<absolute path of the last folded file>``: every file the history
  patterns match in that directory whose name sorts at or before that file's was read completely.
  ``file_id`` is ``tau-collector:complete-through``, ``offset`` the number of files folded,
  ``lines`` their lines, ``sequence``/``chunk_digest`` the latest chunk among them, ``updated_at``
  the newest modification time among them.
* The collector never reads or stats a covered file again, except to check (on its first full scan
  after a start, and for any covered file a watch event names) that none was modified after that
  time, and (on every full scan) that no more files are covered than were folded. Either is an error
  naming the file: a file written behind the mark would otherwise be lost silently.

TauGrid's collector given such a checkpoint stops before reading anything: the entry's key is not a
path its ``--history`` patterns produce, which it reports as ``checkpointed history source
disappeared`` (see docs/data-path.md). Nothing is delivered twice, and nothing is skipped.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from tau_collector.spool.checkpoint import Checkpoint, SourceCheckpoint
from tau_collector.taugrid.gojson import format_time, parse_time

__all__ = ["COMPLETE_THROUGH_FILE_ID", "COMPLETE_THROUGH_PREFIX", "ClosedFiles", "Mark", "marks"]

COMPLETE_THROUGH_PREFIX = "tau-collector:complete-through:"
COMPLETE_THROUGH_FILE_ID = "tau-collector:complete-through"


@dataclass(frozen=True, slots=True)
class Mark:
    """One directory's complete-through entry, decoded."""

    key: str
    directory: str
    name: str  # the last folded file's name: names <= it are covered
    files: int
    lines: int
    newest_mtime_ns: int
    entry: SourceCheckpoint

    def covers(self, path: str) -> bool:
        directory, name = os.path.split(path)
        return directory == self.directory and name <= self.name and not name.startswith(".")


def is_mark(key: str) -> bool:
    return key.startswith(COMPLETE_THROUGH_PREFIX)


def marks(checkpoint: Checkpoint) -> dict[str, Mark]:
    """The checkpoint's complete-through entries by directory (there are few: one per directory)."""
    found: dict[str, Mark] = {}
    sources = checkpoint.sources
    for key in [key for key in sources if key.startswith(COMPLETE_THROUGH_PREFIX)]:  # a scan in C: runs per drain
        entry = sources[key]
        directory, name = os.path.split(key.removeprefix(COMPLETE_THROUGH_PREFIX))
        try:
            newest = parse_time(entry.updated_at)
        except ValueError:
            newest = 0  # every covered file then looks modified: an error, never a silent skip
        found[directory] = Mark(key, directory, name, entry.offset, entry.lines, newest, entry)
    return found


class ClosedFiles:
    """The history files seen and not folded yet, per directory, and the folding of the oldest."""

    def __init__(self, *, keep: int = 64, closed_after: float = 60.0) -> None:
        self.keep = keep
        self.closed_after = closed_after
        self._names: dict[str, set[str]] = {}

    def note(self, path: str) -> None:
        directory, name = os.path.split(path)
        self._names.setdefault(directory, set()).add(name)

    def pending(self) -> int:
        return sum(len(names) for names in self._names.values())

    def ready(self) -> bool:
        """Whether some directory has enough unfolded names for :meth:`fold` to look at it."""
        return any(len(names) >= 2 * self.keep for names in self._names.values())

    def fold(self, checkpoint: Checkpoint) -> list[str]:
        """Fold what is ready into ``checkpoint`` (in place); returns the paths folded.

        Costs nothing until a directory holds ``2 * keep`` unfolded names, then one stat per
        candidate: each file is examined about once in its life.
        """
        folded: list[str] = []
        now = time.time_ns()
        settled_before = now - int(self.closed_after * 1e9)
        current = marks(checkpoint)
        for directory, names in self._names.items():
            if len(names) < 2 * self.keep:
                continue
            mark = current.get(directory)
            ordered = sorted(names)
            count = lines = sequence = 0
            digest, newest, last = "", 0, None
            if mark is not None:
                count, lines, newest = mark.files, mark.lines, mark.newest_mtime_ns
                sequence, digest = mark.entry.sequence, mark.entry.chunk_digest
            here: list[str] = []
            gone: list[str] = []
            for name in ordered[:-self.keep]:
                if name.startswith("."):
                    continue  # a writer's temporary file: read like any match, never folded
                path = os.path.join(directory, name)
                entry = checkpoint.sources.get(path)
                try:
                    st = os.stat(path)
                except FileNotFoundError:
                    if entry is None:
                        gone.append(name)  # renamed or removed before anything was read from it
                        continue
                    break  # a checkpointed file that vanished is the drain's error to report
                if st.st_mtime_ns > settled_before:
                    break
                if entry is None:
                    if st.st_size:
                        break  # not read yet
                elif entry.offset != st.st_size or entry.file_id != f"{st.st_dev}:{st.st_ino}":
                    break  # not completely read (or replaced: the drain reports that)
                else:
                    lines += entry.lines
                    if entry.sequence > sequence:
                        sequence, digest = entry.sequence, entry.chunk_digest
                count += 1
                newest = max(newest, st.st_mtime_ns)
                last = name
                here.append(path)
            names.difference_update(gone)
            if last is None:
                continue
            if mark is not None:
                del checkpoint.sources[mark.key]
            key = COMPLETE_THROUGH_PREFIX + os.path.join(directory, last)
            checkpoint.sources[key] = SourceCheckpoint(
                key, COMPLETE_THROUGH_FILE_ID, count, "", sequence, digest, lines, format_time(newest))
            for path in here:
                checkpoint.sources.pop(path, None)
                names.discard(os.path.basename(path))
            folded += here
        return folded
