"""Which listed history files a drain may leave out: those a checkpoint folded as completely read, checked as met."""

from __future__ import annotations

import os

from tau_collector.collect.options import CollectorError
from tau_collector.spool.checkpoint_folding import Mark


class Covered:
    """One drain's test of the files folded as completely read (:mod:`.checkpoint_folding`), counting them as
    it goes, so that a listing can leave them out without holding them.

    A full scan counts them against the number folded (more means a file appeared behind the mark); the first
    after a start, and any watch event naming one, also checks that none was modified after it was folded.
    Either would be data the mark hides: an error, never a skip. Each path is asked once a drain.
    """

    __slots__ = ("check_times", "counts", "current")

    def __init__(self, current: dict[str, Mark], *, check_times: bool) -> None:
        self.current = current
        self.check_times = check_times
        self.counts: dict[str, int] = {}  # covered files seen, by directory

    def __call__(self, path: str) -> bool:
        # Asked of every name in a directory of 200,000 files at each full listing: ``str.rpartition``, not
        # ``os.path.split`` twice (the paths are clean and absolute, so it splits them the same way).
        directory, _, name = path.rpartition(os.sep)
        directory = directory or os.sep
        mark = self.current.get(directory)
        if mark is None or name > mark.name or name.startswith("."):
            return False
        self.counts[directory] = self.counts.get(directory, 0) + 1
        if self.check_times:
            try:
                modified = os.stat(path).st_mtime_ns
            except FileNotFoundError:
                return True  # a folded file removed: everything in it was delivered
            if modified > mark.newest_mtime_ns:
                raise CollectorError(
                    f"history file {path} was written after the checkpoint recorded every file up to "
                    f"{mark.name} in its directory as completely read ({mark.key}); its new rows would be "
                    "missed. Write new rows to files named after the newest one")
        return True

    def check_counts(self) -> None:
        """After a full scan: no directory holds more covered files than its mark folded."""
        for directory, count in self.counts.items():
            mark = self.current[directory]
            if count > mark.files:
                raise CollectorError(
                    f"{count} history files in {directory} are named at or before {mark.name}, but the "
                    f"checkpoint folded {mark.files} as completely read ({mark.key}); a file appeared "
                    "behind the mark and would be missed. Write new rows to files named after the newest one")
