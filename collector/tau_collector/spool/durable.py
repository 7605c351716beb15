"""Making a rename survive a crash: the one rule for syncing a directory after a file appears in or leaves it,
and TauGrid's atomic file write and durable removal built on it.

A renamed, linked or unlinked name is durable only once its directory is synced. Every writer here
(the spool and checkpoint, history chunks, the expstore's files) uses :func:`fsync_directory`, with
one error policy: a directory that cannot be opened, or an I/O error while syncing, is raised --
the caller is about to record that the name is durable, and must not. Only a filesystem that does
not implement ``fsync`` on directories at all (``EINVAL``/``ENOTSUP``/``EOPNOTSUPP``/``EBADF``, as
some network and FUSE filesystems answer) is accepted as it is: the rename itself is atomic there
and nothing more can be done.
"""

from __future__ import annotations

import ctypes
import errno
import os
import tempfile
from collections.abc import Iterable

__all__ = ["SYNCFS_FROM", "FilesystemSync", "fsync_directories", "fsync_directory", "make_dirs", "make_dirs_many",
           "remove_durable", "write_file_atomic", "write_files", "write_files_synced"]

_UNSUPPORTED = frozenset({errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EBADF})
# Syncs issued together: the filesystem commits its journal once for all of them (ext4, XFS), where one
# after another each waits for a commit of its own (500 small files: 1.4 s in turn, 0.14 s four at a time).
_SYNC_THREADS = 8


def fsync_directory(directory: str | os.PathLike[str]) -> None:
    """Sync ``directory`` so that the names created, renamed or removed in it survive a crash."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in _UNSUPPORTED:
            raise
    finally:
        os.close(fd)


def _all(sync, paths: list) -> None:
    """``sync`` every one of ``paths``, several at once; the first error is raised once all have ended."""
    if len(paths) <= 1:
        for path in paths:
            sync(path)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(min(_SYNC_THREADS, len(paths)), thread_name_prefix="fsync") as pool:
        for future in [pool.submit(sync, path) for path in paths]:
            future.result()


def _write_synced(item: tuple[str | os.PathLike[str], bytes]) -> None:
    path, data = item
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def write_files_synced(items: Iterable[tuple[str | os.PathLike[str], bytes]]) -> None:
    """Write each ``(path, bytes)`` and sync it, several files at once; the first error is raised (the caller
    removes what was written). Their names are durable only once their directories are synced."""
    _all(_write_synced, list(items))


def write_files(items: Iterable[tuple[str | os.PathLike[str], bytes]]) -> None:
    """Write each ``(path, bytes)``, not synced: for a caller that syncs their filesystem after
    (:class:`FilesystemSync`)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)
    for path, data in items:  # no buffered file object a file: three system calls (a delivery's thousand images)
        fd = os.open(path, flags, 0o644)
        try:
            view, written = memoryview(data), 0
            while written < len(view):
                written += os.write(fd, view[written:])
        finally:
            os.close(fd)


# From this many files a publication syncs their filesystem once (twice: the bytes, then the renames) instead of
# each file and directory: a delivery of a thousand images is two waits, not a thousand (a busy machine gives
# the CPU back late after every wait). Below it, a sync per file: the filesystem may hold others' unwritten data.
SYNCFS_FROM = 16


def _syncfs():
    try:
        call = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):  # not Linux (or no C library to ask): each file is synced instead
        return None
    call.argtypes, call.restype = [ctypes.c_int], ctypes.c_int
    return call


_SYNCFS = _syncfs()


class FilesystemSync:
    """``syncfs(2)`` of the filesystem holding a directory: every file written there, and every rename, durable
    at once. Opened before the files are written, so a write-back error on that filesystem since then is raised
    by :meth:`sync` (Linux 5.8 and later report it, as ``fsync`` does). :meth:`open` gives None where the call
    does not exist: the caller then syncs each file and directory."""

    def __init__(self, directory: str, fd: int) -> None:
        self.directory = directory
        self._fd = fd

    @classmethod
    def open(cls, directory: str | os.PathLike[str]) -> FilesystemSync | None:
        if _SYNCFS is None:
            return None
        return cls(os.fspath(directory), os.open(directory, os.O_RDONLY | os.O_DIRECTORY))

    def sync(self) -> None:
        if _SYNCFS(self._fd) != 0:
            code = ctypes.get_errno()
            raise OSError(code, f"syncfs: {os.strerror(code)}")

    def close(self) -> None:
        os.close(self._fd)


def fsync_directories(directories: Iterable[str | os.PathLike[str]]) -> None:
    """:func:`fsync_directory` of each of ``directories`` (once each, several at once)."""
    _all(fsync_directory, list(dict.fromkeys(os.fspath(d) for d in directories)))


def _mkdir_missing(directory: str) -> list[str]:
    """Create ``directory`` and its missing parents (outermost first); the directories created, in that order.

    A file in the way makes the ``mkdir`` below it fail, as ``os.makedirs`` does."""
    missing = []
    path = directory
    while not os.path.lexists(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    if not missing:
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), directory)
    created = []
    for new in reversed(missing):
        try:
            os.mkdir(new)
        except FileExistsError:
            if not os.path.isdir(new):
                raise
        created.append(new)
    return created


def make_dirs_many(directories: Iterable[str | os.PathLike[str]]) -> None:
    """:func:`make_dirs` of each of ``directories``, the parents of the directories it creates synced once each
    at the end (several at once), not after every ``mkdir``."""
    created = []
    for directory in dict.fromkeys(os.path.abspath(d) for d in directories):
        if not os.path.isdir(directory):
            created.extend(_mkdir_missing(directory))
    fsync_directories(os.path.dirname(new) for new in created)


def make_dirs(directory: str | os.PathLike[str]) -> None:
    """``os.makedirs(directory, exist_ok=True)``, with each directory it creates made durable in its parent.

    A file synced into a new directory is lost with that directory if the directory's own name was
    never synced into its parent: a store, spool or run directory created just before the first
    chunk is acknowledged must survive a power loss as surely as the chunk. Costs one ``stat`` when
    ``directory`` exists.
    """
    path = os.path.abspath(directory)
    if os.path.isdir(path):
        return
    for new in _mkdir_missing(path):
        fsync_directory(os.path.dirname(new))


def write_file_atomic(path: str, data: bytes | Iterable[bytes], *, mode: int = 0o644) -> None:
    """TauGrid's ``WriteFileAtomic``: temp file ``.<name>.tmp-*`` beside it, fsync, rename; then
    fsync the directory so the rename itself survives a crash. ``data`` may come in pieces."""
    directory = os.path.dirname(path) or "."
    make_dirs(directory)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".tmp-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            if isinstance(data, bytes | bytearray | memoryview):
                handle.write(data)
            else:
                handle.writelines(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.rename(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_directory(directory)


def remove_durable(path: str) -> None:
    os.unlink(path)
    fsync_directory(os.path.dirname(path) or ".")
