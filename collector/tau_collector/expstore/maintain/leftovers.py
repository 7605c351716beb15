"""Sweeping what a killed writer, compaction or clustering left in a run's directories.

Every data file is published (temporary name, fsync, rename) before the transaction that registers it,
so a process killed in between leaves a file no reader will ever look at: a delivery's file whose chunk
was not acknowledged (the spool redelivers it, into a new file), a compaction's or clustering's
replacement whose originals are still registered, or the levels file beside either. One killed in the
middle of a write leaves its temporary file (``.<name>.tmp-<pid>-<hex>``, :meth:`..store.ExpStore.publish_file`).
None of these is ever complete *and* needed -- what it holds is registered elsewhere or will be
redelivered -- so they are removed, never registered.

Who sweeps: the next writer of the run (once per run per :class:`..write.writer.MetricWriter`, before its
first file of that run) and every compaction or clustering of it; never a reader. What is removed: a
``.parquet`` or levels ``.npz`` whose file id is neither registered (``metric_files``) nor retired
(``metric_file_retirements``, deleted after their grace by compaction), once it is ``grace_seconds`` old
(a live writer registers its file milliseconds after publishing it; a clustering of a large run, minutes);
a temporary file of a process that is not alive here, or of any process once it is ``grace_seconds`` old
(another host's writer on a shared store has pids this host cannot see). A run's media files
(``media/run=<run>/<kind>/``) the same way, against the paths ``media_files`` names. The sweep streams the directory
(no list of its names) and asks the index one primary-key question per file name.
"""

from __future__ import annotations

import os
import re
import sqlite3
import time
from pathlib import Path

from tau_collector.expstore.format.levels import levels_path
from tau_collector.expstore.format.media_files import MEDIA_DIR
from tau_collector.expstore.format.metric_files import id_component, metric_file_path
from tau_collector.expstore.store import ExpStore

__all__ = ["GRACE_SECONDS", "TEMPORARY_GRACE_SECONDS", "sweep_run", "sweep_run_directories"]

GRACE_SECONDS = 3600.0
MEDIA_KINDS = ("histograms", "text")
TEMPORARY_GRACE_SECONDS = 60.0  # a temporary file of a dead process: it never writes again, but give a clock skew room
_TEMPORARY = re.compile(r"\.(?P<name>.+)\.tmp-(?P<pid>\d+)-[0-9a-f]+")


def run_directories(store: ExpStore, project: str, experiment_id: str, run_group_id: str, run_id: str
                    ) -> tuple[Path, Path]:
    """The directory of a run's metric files and that of their levels files."""
    relative = metric_file_path(project, experiment_id, run_group_id, run_id, "x")
    return store.absolute(relative).parent, store.absolute(levels_path(relative)).parent


def sweep_run(store: ExpStore, run_id: str, *, grace_seconds: float = GRACE_SECONDS,
              now: float | None = None) -> int:
    """:func:`sweep_run_directories` for a run the index knows; 0 for one it does not."""
    row = store.connection().execute(
        "SELECT project, experiment_id, run_group_id FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    if row is None:
        return 0
    return sweep_run_directories(store, row[0], row[1] or "", row[2], run_id, grace_seconds=grace_seconds, now=now)


def sweep_run_directories(store: ExpStore, project: str, experiment_id: str, run_group_id: str, run_id: str, *,
                          grace_seconds: float = GRACE_SECONDS, now: float | None = None) -> int:
    """Remove the run's unregistered files and dead temporary files (see the module doc); how many."""
    now = time.time() if now is None else now
    conn = store.connection()
    removed = 0
    metrics_dir, levels_dir = run_directories(store, project, experiment_id, run_group_id, run_id)
    for directory, suffix in ((metrics_dir, ".parquet"), (levels_dir, ".npz")):
        try:
            entries = os.scandir(directory)
        except (FileNotFoundError, NotADirectoryError):
            continue
        with entries:
            for entry in entries:
                name = entry.name
                temporary = _TEMPORARY.fullmatch(name)
                if temporary is not None:
                    if _temporary_is_dead(entry, int(temporary["pid"]), now, grace_seconds):
                        removed += _unlink(entry.path)
                    continue
                if not name.endswith(suffix):
                    continue
                file_id = name[: -len(suffix)]
                if conn.execute("SELECT 1 FROM metric_files WHERE file_id = ? UNION ALL "
                                "SELECT 1 FROM metric_file_retirements WHERE file_id = ? LIMIT 1",
                                (file_id, file_id)).fetchone() is not None:
                    continue
                if _age(entry, now) >= grace_seconds:
                    removed += _unlink(entry.path)
    return removed + _sweep_media(store, run_id, now, grace_seconds)


def _sweep_media(store: ExpStore, run_id: str, now: float, grace_seconds: float) -> int:
    """The run's media files (:mod:`..format.media_files`) no ``media_files`` row names -- a delivery's or a media
    compaction's file published but never registered, or one a compaction retired and was killed before
    removing -- once ``grace_seconds`` old, and dead temporary files there."""
    removed = 0
    named: set[str] | None = None
    directories = [f"{MEDIA_DIR}/run={id_component(run_id)}/{kind}" for kind in MEDIA_KINDS]
    while directories:  # a kind's folder, and the first layout's folder a tag in it
        relative = directories.pop()
        try:
            entries = os.scandir(store.absolute(relative))
        except (FileNotFoundError, NotADirectoryError):
            continue
        with entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    directories.append(f"{relative}/{entry.name}")
                    continue
                temporary = _TEMPORARY.fullmatch(entry.name)
                if temporary is not None:
                    if _temporary_is_dead(entry, int(temporary["pid"]), now, grace_seconds):
                        removed += _unlink(entry.path)
                    continue
                if not entry.name.endswith(".parquet") or _age(entry, now) < grace_seconds:
                    continue
                if named is None:
                    try:
                        named = {p for (p,) in store.connection().execute(
                            "SELECT DISTINCT path FROM media_files WHERE run_id = ?", (run_id,))}
                    except sqlite3.OperationalError:
                        return removed  # a store without media tables names none: leave its files be
                if f"{relative}/{entry.name}" not in named:
                    removed += _unlink(entry.path)
    return removed


def _temporary_is_dead(entry: os.DirEntry, pid: int, now: float, grace_seconds: float) -> bool:
    if pid == os.getpid():
        return False  # ours: being written now
    age = _age(entry, now)
    if age >= grace_seconds:
        return True
    return age >= min(grace_seconds, TEMPORARY_GRACE_SECONDS) and not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _age(entry: os.DirEntry, now: float) -> float:
    try:
        return now - entry.stat(follow_symlinks=False).st_mtime
    except FileNotFoundError:
        return -1.0


def _unlink(path: str) -> int:
    try:
        os.unlink(path)
    except FileNotFoundError:
        return 0
    return 1
