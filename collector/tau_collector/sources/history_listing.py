"""Listing a history source's files as TauGrid's ``filepath.Glob`` does (sorted unique absolute paths), one
directory entry at a time, and -- for a drain -- only the first part of a backlog.

``glob`` reads a directory whole before matching its names; here a pattern's last component is matched against
:func:`os.scandir`'s entries as the directory is read, so what a listing holds is what it returns. A drain's
listing holds less still: files the collector folded as completely read (``skip``) are tested and dropped as they
are read, and of the rest it takes every file the collector has read before (``read``: checkpointed, or looked at
in memory; few, the checkpoint bounds them) but only the ``limit`` first *new* ones in reading order -- a bounded
selection as the directory is read (O(limit) memory, not O(files)). A fresh sidecar on a job that already wrote
200,000 files so reads them a bounded slice per drain, in the order a whole listing would give: the listing
returns the sorted paths up to the last new file it took (:attr:`Listing.cut_after`), and the collector drains
again at once from there.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from tau_collector.sources.jsonl import HistoryPathError

__all__ = ["Listing", "expand_history", "iter_glob", "list_history"]


@dataclass(frozen=True, slots=True)
class Listing:
    """A listing's paths in reading order; ``cut_after`` is the last of them when new files after it were left
    for a later listing (None: nothing was left out)."""

    paths: list[str]
    cut_after: str | None = None


def expand_history(patterns: list[str] | tuple[str, ...], *,
                   skip: Callable[[str], bool] | None = None) -> list[str]:
    """Expand ``--history`` arguments as TauGrid does: sorted unique absolute paths.

    An argument with ``*``, ``?`` or ``[`` is a glob (matching dotfiles too, like Go's
    ``filepath.Glob``); a path that does not exist (yet) is ignored; a directory is an error.
    Paths ``skip`` accepts (files already completely read) are left out without being stat'ed or held:
    a directory is read one entry at a time (:func:`iter_glob`), so what this holds is what it returns.
    """
    return list_history(patterns, skip=skip).paths


def list_history(patterns: list[str] | tuple[str, ...], *, skip: Callable[[str], bool] | None = None,
                 read: Callable[[str], bool] | None = None, limit: int | None = None) -> Listing:
    """:func:`expand_history` for a drain: with ``limit``, only the ``limit`` first paths ``read`` does not know
    (new files), with every known path before the last of them (see the module's docstring)."""
    if limit is not None and limit < 1:
        raise ValueError(f"a listing's limit must be at least 1, not {limit}")
    known: set[str] = set()
    new: list[str] = []
    dropped = False  # new paths were left out (past the ``limit`` first)
    for pattern in patterns:
        for absolute, entry in _candidates(pattern):
            if skip is not None and skip(absolute):
                continue
            if entry is not None and not entry.is_symlink():
                is_dir, exists = entry.is_dir(), True  # the directory entry's type: no stat
            else:
                is_dir, exists = os.path.isdir(absolute), os.path.exists(absolute)
            if is_dir:
                raise HistoryPathError(
                    f"history path {absolute} (from {pattern!r}) is a directory; pass the history file "
                    f"itself or a glob such as {os.path.join(pattern, '*.jsonl')!r}")
            if not exists:
                continue
            if read is not None and read(absolute):
                known.add(absolute)
                continue
            new.append(absolute)
            if limit is not None and len(new) >= 2 * limit:  # keep the first ``limit`` (sorting halves it)
                unique = sorted(set(new))
                dropped = dropped or len(unique) > limit
                new = unique[:limit]
    unique = sorted(set(new))
    if limit is not None and len(unique) > limit:
        dropped, unique = True, unique[:limit]
    if not dropped:
        return Listing(sorted(known.union(unique)))
    last = unique[-1]  # the known paths after it are read when a later listing gets there, in order
    return Listing(sorted(set(unique).union(path for path in known if path <= last)), last)


def iter_glob(pattern: str) -> Iterator[str]:
    """``glob.glob(pattern, include_hidden=True)``'s matches, in directory order, one at a time.

    ``glob`` lists a directory whole before matching its names (200,000 closed files: ~20 MB of names held);
    here only the directories the pattern's parent part matches are listed whole (they are few), and the last
    component's matches are taken from :func:`os.scandir` as it reads the directory.
    """
    head, tail = os.path.split(pattern)
    if not tail:  # "runs/*/": glob's own answer (directories only, never many files)
        yield from glob.glob(pattern, include_hidden=True)
        return
    if any(ch in head for ch in "*?["):
        directories = [d for d in glob.glob(head, include_hidden=True) if os.path.isdir(d)]
    else:
        directories = [head]
    if not any(ch in tail for ch in "*?["):
        for directory in directories:
            path = os.path.join(directory, tail)
            if os.path.lexists(path):
                yield path
        return
    match = re.compile(fnmatch.translate(tail)).match
    for directory in directories:
        try:
            with os.scandir(directory or os.curdir) as entries:
                for entry in entries:
                    if match(entry.name):
                        yield os.path.join(directory, entry.name)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue  # as glob: a directory that is not there (or not readable) matches nothing


def _candidates(pattern: str) -> Iterator[tuple[str, os.DirEntry[str] | None]]:
    """What ``pattern`` matches as clean absolute paths, with the directory entry when a directory was read (its
    type known without a ``stat``); the clean directory is made once, not once per entry."""
    head, tail = os.path.split(pattern)
    if not any(ch in pattern for ch in "*?[") or not tail or not any(ch in tail for ch in "*?[") \
            or any(ch in head for ch in "*?["):
        candidates = iter_glob(pattern) if any(ch in pattern for ch in "*?[") else iter([pattern])
        for candidate in candidates:
            yield os.path.normpath(os.path.abspath(candidate)), None
        return
    # The common case, a directory of files ("hist/*.jsonl"): names joined to the directory's clean path.
    directory = os.path.normpath(os.path.abspath(head or os.curdir))
    prefix = directory if directory.endswith(os.sep) else directory + os.sep
    match = re.compile(fnmatch.translate(tail)).match
    try:
        with os.scandir(head or os.curdir) as entries:
            for entry in entries:
                name = entry.name
                if match(name):
                    yield prefix + name, entry
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return
