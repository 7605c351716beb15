"""The files a run was read from, kept with the run as TauGrid keeps them: rows of its ``artifacts`` table.

History files are type ``metrics-jsonl``, event files type ``tensorboard`` (TauGrid's words; a W&B
transaction log is ``wandb-log``: each source says, ``Source.artifact_type``). Two ways, as the two
writers of a store differ:

* the sidecar registers each file where the job wrote it (``uri`` its absolute path) as soon as it reads
  it, and again with its ``digest`` and ``size_bytes`` once the run is complete and the file closed
  (:func:`source_file_row`); a file the job deletes later stays listed, and a reader says it is gone;
* ``taunotebook import`` copies each file into the store (:func:`keep_source_file`), as TauGrid's JSONL
  import does (``artifacts/<run>/jsonl/<12 hex of its digest>-<name>``, id ``jsonl-history-<run>-<12 hex>``);
  event files keep their run's directory (``artifacts/<run>/tensorboard/<run>/<relative>/<name>``), so that
  importing ``artifacts/<run>/tensorboard`` rebuilds the same run. The files a run's rows name beside its
  history (a W&B run's ``files/media/``: ``Source.kept_files``) are copied beside the history's copy, type
  ``wandb-media`` (``artifacts/<run>/wandb-log/files/media/…`` beside the log's copy), so that importing
  ``artifacts/<run>/wandb-log`` rebuilds the run with its images. Such a file whose bytes the store already
  keeps by digest (an image the import stored under ``artifacts/sha256/…``) is a hard link of that file, not a
  second copy (a copy when the filesystem cannot link); its row is the same either way.

Copies stream in blocks and are published whole (temporary name, fsync, rename), hashed as they are copied; in two
halves (:func:`copy_source_file`, then :meth:`SourceCopy.publish`), so that an import copies a file on a thread of
its own while it reads the next and publishes the copies once the run is read.
"""

from __future__ import annotations

import errno
import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tau_collector.expstore.format.metric_files import id_component
from tau_collector.expstore.format.schema import ARTIFACTS_DIR
from tau_collector.expstore.store import ExpStore, utc_now_rfc3339
from tau_collector.expstore.write.artifacts import artifact_path_for_digest
from tau_collector.reads.rows import ArtifactRow

__all__ = ["METRICS_JSONL", "SETTLED_NS", "TENSORBOARD", "WANDB_LOG", "WANDB_MEDIA", "ReadDigest", "SourceCopy",
           "copy_source_file", "keep_source_file", "kept_folder", "source_file_row"]

METRICS_JSONL = "metrics-jsonl"
TENSORBOARD = "tensorboard"
WANDB_LOG = "wandb-log"
WANDB_MEDIA = "wandb-media"  # a file a W&B run's rows name (files/media/…), kept beside its history
_BLOCK = 1 << 20
_SHORT = 12


def _digest(path: str) -> tuple[str, int]:
    with open(path, "rb") as fh:
        digest = hashlib.file_digest(fh, "sha256")
        return "sha256:" + digest.hexdigest(), fh.tell()


def source_file_row(run_id: str, path: str, name: str, type: str, *, closed: bool) -> ArtifactRow:
    """The row of a file the job wrote, where it is; with its digest and size when ``closed`` (complete)."""
    digest = size = None
    if closed:
        digest, size = _digest(path)
    return ArtifactRow(run_id=run_id, type=type, uri=os.path.abspath(path), name=name, digest=digest,
                       size_bytes=size, created_at=utc_now_rfc3339(), tags={"original_path": os.path.abspath(path)})


def kept_folder(type: str) -> str:
    """The folder under ``artifacts/<run>/`` where an import keeps a source file of ``type``."""
    return "jsonl" if type == METRICS_JSONL else type


def keep_source_file(store: ExpStore, run_id: str, path: str, name: str, type: str, *,
                     folder: str | None = None) -> ArtifactRow:
    """Copy ``path`` into the store's ``artifacts/<run>/`` and return its row (the caller records it): under
    ``folder`` (by default the type's, :func:`kept_folder`) as ``name``, a history as TauGrid names it."""
    return copy_source_file(store, run_id, path, name, type, folder=folder).publish()


@dataclass(slots=True)
class SourceCopy:
    """A file copied into the store under a temporary name and synced (:func:`copy_source_file`), not yet under its
    name: :meth:`publish` puts it there (rename, directory synced) and gives its row; :meth:`discard` deletes it."""

    store: ExpStore
    path: str  # the file copied
    tmp: Path
    rel: str
    row: ArtifactRow

    def publish(self) -> ArtifactRow:
        self.store.publish_temporary(self.tmp, self.rel)
        return self.row

    def discard(self) -> None:
        self.tmp.unlink(missing_ok=True)


class ReadDigest:
    """The running SHA-256 of a file's bytes from its start as an import reads them (``update`` as a
    ``hashlib.sha256``'s), how many it has hashed, and the file's stamp taken before the first of them: device,
    inode, size, modification and change times (``None`` when the file changed less than :data:`SETTLED_NS` before,
    or cannot be stat'ed). Its copy (:func:`copy_source_file`) takes this digest instead of hashing the bytes again
    when the file still has that stamp after the copy and the digest covers all of it: no write changed it since
    the stamp (a write sets the change time, which a process cannot set back), so the bytes copied are the bytes
    hashed."""

    __slots__ = ("_hash", "size", "stamp")

    def __init__(self, stamp: tuple | None, hashed: Any = None, size: int = 0) -> None:
        self.stamp = stamp
        self._hash = hashlib.sha256() if hashed is None else hashed
        self.size = size

    @classmethod
    def of(cls, path: str) -> ReadDigest:
        """A digest of no bytes yet, stamped with ``path`` as it is now."""
        try:
            return cls(_settled_stamp(os.stat(path), time.time_ns()))
        except OSError:
            return cls(None)

    def update(self, data: Any) -> None:
        self._hash.update(data)
        self.size += memoryview(data).nbytes

    def hexdigest(self) -> str:
        return self._hash.hexdigest()

    def copy(self) -> ReadDigest:
        return ReadDigest(self.stamp, self._hash.copy(), self.size)


# A file changed this recently may change again within the same tick of the filesystem's clock, leaving its change
# time as it was: its stamp is not trusted (git's "racily clean" entries), its copy hashed.
SETTLED_NS = 2_000_000_000


def _stamp(st: os.stat_result) -> tuple:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _settled_stamp(st: os.stat_result, now_ns: int) -> tuple | None:
    return _stamp(st) if now_ns - max(st.st_mtime_ns, st.st_ctime_ns) > SETTLED_NS else None


def copy_source_file(store: ExpStore, run_id: str, path: str, name: str, type: str, *,
                     folder: str | None = None, read: ReadDigest | None = None) -> SourceCopy:
    """The first half of :func:`keep_source_file`: ``path`` copied to a temporary name beside where it is kept,
    synced, with the row it will have (the digest and size of the bytes copied). What takes time (reading, hashing,
    the bytes reaching the disk) is done here, so an import does it on a thread beside the reading of its next
    file; an ``OSError`` leaves no temporary file behind. With the import's ``read`` digest of the whole file,
    unchanged since it was read (:class:`ReadDigest`), the kernel copies the file and the bytes are not hashed
    again; otherwise they are hashed as they are copied."""
    run_dir = f"{ARTIFACTS_DIR}/{id_component(run_id)}"
    if type == METRICS_JSONL:  # named after its digest: written beside that name, named once hashed
        rel = f"{run_dir}/{kept_folder(type)}/{os.path.basename(path)}"
    else:
        rel = f"{run_dir}/{folder or kept_folder(type)}/{name}"
    tmp = store.temporary_path(rel)
    try:
        digest, size = None, None
        if type == WANDB_MEDIA:
            stored = _stored_copy(store, path)
            if stored is not None:
                digest, size = stored
                _link_or_copy(store.absolute(artifact_path_for_digest(digest)), tmp, path)
                _sync(tmp)
        elif read is not None:
            copied = _copy_as_read(path, tmp, read)
            if copied is not None:
                digest, size = copied
        if digest is None:
            digest, size = _copy_hashed(path, tmp)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    artifact_id = ""
    if type == METRICS_JSONL:
        short = digest.removeprefix("sha256:")[:_SHORT]
        rel = f"{run_dir}/{kept_folder(type)}/{short}-{os.path.basename(path)}"
        artifact_id = f"jsonl-history-{run_id}-{short}"
    row = ArtifactRow(run_id=run_id, type=type, uri=rel, name=name, digest=digest, size_bytes=size,
                      created_at=utc_now_rfc3339(), tags={"original_path": os.path.abspath(path)},
                      artifact_id=artifact_id)
    return SourceCopy(store, path, tmp, rel, row)


_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)


def _copy_as_read(path: str, tmp: Path, read: ReadDigest) -> tuple[str, int] | None:
    """``path`` copied to the new file ``tmp`` by the kernel and synced, with ``read``'s digest, when the file has
    ``read``'s stamp before and after the copy and ``read`` hashed all of it; None (nothing left at ``tmp``) when
    not: the caller hashes as it copies."""
    if read.stamp is None:
        return None
    with open(path, "rb", buffering=0) as src:
        if _stamp(os.fstat(src.fileno())) != read.stamp or read.size != read.stamp[2]:
            return None
        dst = os.open(tmp, _CREATE, 0o644)
        try:
            size = _kernel_copy(src.fileno(), dst)
            os.fsync(dst)
        finally:
            os.close(dst)
        if size == read.size and _stamp(os.fstat(src.fileno())) == read.stamp:
            return "sha256:" + read.hexdigest(), size
    tmp.unlink()
    return None


def _kernel_copy(src: int, dst: int) -> int:
    """Copy from ``src``'s position to its end onto ``dst`` (``copy_file_range``: the kernel moves the bytes, or
    shares the blocks where the filesystem can); by reads and writes where the call is missing or refused."""
    size = 0
    if hasattr(os, "copy_file_range"):
        try:
            while n := os.copy_file_range(src, dst, _BLOCK * 64):
                size += n
            return size
        except OSError as exc:
            if size or exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP,
                                         errno.EPERM, errno.EBADF):
                raise
    buffer = bytearray(_BLOCK)
    view = memoryview(buffer)
    while n := os.readv(src, [buffer]):
        _write_all(dst, view[:n])
        size += n
    return size


def _write_all(fd: int, data: memoryview) -> None:
    written = 0
    while written < len(data):
        written += os.write(fd, data[written:])


def _copy_hashed(path: str, tmp: Path) -> tuple[str, int]:
    """Copy ``path`` to the new file ``tmp`` and sync it; (digest, size) of the bytes written, hashed as they are
    copied (the one pass over them: one buffer, read into, hashed and written from)."""
    hashed = hashlib.sha256()
    buffer = bytearray(_BLOCK)
    view = memoryview(buffer)
    with open(path, "rb", buffering=0) as src:
        dst = os.open(tmp, _CREATE, 0o644)
        try:
            size = 0
            while n := src.readinto(buffer):
                piece = view[:n]
                hashed.update(piece)
                _write_all(dst, piece)
                size += n
            os.fsync(dst)
        finally:
            os.close(dst)
    return "sha256:" + hashed.hexdigest(), size


def _sync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _stored_copy(store: ExpStore, path: str) -> tuple[str, int] | None:
    """(digest, size) of ``path`` when the store already keeps the same bytes under ``artifacts/sha256/…``."""
    digest, size = _digest(path)
    kept = store.absolute(artifact_path_for_digest(digest))
    try:
        return (digest, size) if kept.stat().st_size == size else None
    except OSError:
        return None


def _link_or_copy(kept: Path, tmp: Path, path: str) -> None:
    """``tmp`` as a hard link of ``kept`` (the bytes stored once); a copy of ``path`` where the filesystem cannot
    link (the same bytes: ``kept`` is stored under their digest)."""
    try:
        os.link(kept, tmp)
    except OSError:
        _copy_hashed(path, tmp)
