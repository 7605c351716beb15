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

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from tau_collector.expstore.format.metric_files import id_component
from tau_collector.expstore.format.schema import ARTIFACTS_DIR
from tau_collector.expstore.store import ExpStore, utc_now_rfc3339
from tau_collector.expstore.write.artifacts import artifact_path_for_digest
from tau_collector.reads.rows import ArtifactRow

__all__ = ["METRICS_JSONL", "TENSORBOARD", "WANDB_LOG", "WANDB_MEDIA", "SourceCopy", "copy_source_file",
           "keep_source_file", "kept_folder", "source_file_row"]

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


def copy_source_file(store: ExpStore, run_id: str, path: str, name: str, type: str, *,
                     folder: str | None = None) -> SourceCopy:
    """The first half of :func:`keep_source_file`: ``path`` copied (and hashed as it is copied) to a temporary
    name beside where it is kept, synced, with the row it will have. What takes time (reading, hashing, the bytes
    reaching the disk) is done here, so an import does it on a thread beside the reading of its next file; an
    ``OSError`` leaves no temporary file behind."""
    run_dir = f"{ARTIFACTS_DIR}/{id_component(run_id)}"
    if type == METRICS_JSONL:
        with open(path, "rb") as fh:  # the name holds the digest: hashed once before the copy
            short = hashlib.file_digest(fh, "sha256").hexdigest()[:_SHORT]
        rel = f"{run_dir}/{kept_folder(type)}/{short}-{os.path.basename(path)}"
        artifact_id = f"jsonl-history-{run_id}-{short}"
    else:
        rel = f"{run_dir}/{folder or kept_folder(type)}/{name}"
        artifact_id = ""
    tmp = store.temporary_path(rel)
    try:
        digest, size = None, None
        if type == WANDB_MEDIA:
            stored = _stored_copy(store, path)
            if stored is not None:
                digest, size = stored
                _link_or_copy(store.absolute(artifact_path_for_digest(digest)), tmp, path)
        if digest is None:
            digest, size = _copy_hashed(path, tmp)
        else:
            _sync(tmp)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    row = ArtifactRow(run_id=run_id, type=type, uri=rel, name=name, digest=digest, size_bytes=size,
                      created_at=utc_now_rfc3339(), tags={"original_path": os.path.abspath(path)},
                      artifact_id=artifact_id)
    return SourceCopy(store, path, tmp, rel, row)


def _copy_hashed(path: str, tmp: Path) -> tuple[str, int]:
    """Copy ``path`` to the new file ``tmp`` and sync it; (digest, size) of the bytes written, hashed as they are
    copied (the one pass over them: one buffer, read into, hashed and written from)."""
    hashed = hashlib.sha256()
    buffer = bytearray(_BLOCK)
    view = memoryview(buffer)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    with open(path, "rb", buffering=0) as src:
        dst = os.open(tmp, flags, 0o644)
        try:
            size = 0
            while n := src.readinto(buffer):
                piece = view[:n]
                hashed.update(piece)
                written = 0
                while written < n:
                    written += os.write(dst, piece[written:])
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
