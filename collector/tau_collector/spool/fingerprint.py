"""Which file is which: a file's identity and the digest of the bytes a checkpoint has consumed.

TauGrid's checkpoint names a source file by ``"<dev>:<ino>"`` and the SHA-256 of its bytes up to the
checkpoint offset (TAUGRID-REFERENCE §2.2–2.3); a file replaced or rewritten under the same name
fails one of the two. Vector's ``fingerprinter.rs`` has the same job. :class:`Fingerprints` keeps,
per file, the running digest verified once against its checkpoint, so a long run never re-reads
what it already consumed, and the stat signature of the last read, so an unchanged file is skipped.
"""

from __future__ import annotations

import hashlib
import os

__all__ = ["FingerprintError", "Fingerprints", "file_id", "prefix_sha256", "signature"]

_BLOCK = 1 << 20


class FingerprintError(ValueError):
    """A checkpointed file is no longer the file the checkpoint was made of."""


def file_id(path: str) -> str:
    """``"<dev>:<ino>"`` of ``path``: a rotated or replaced file gets a different id."""
    st = os.stat(path)
    return f"{st.st_dev}:{st.st_ino}"


def signature(path: str) -> tuple[str, int, int] | None:
    """(file id, size, mtime) of ``path``, None when it does not exist: unchanged means nothing new."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (f"{st.st_dev}:{st.st_ino}", st.st_size, st.st_mtime_ns)


def _hash_prefix(path: str, offset: int) -> tuple[hashlib._Hash, int]:
    """SHA-256 of the first ``offset`` bytes of ``path`` and how many bytes there were."""
    digest = hashlib.sha256()
    remaining = offset
    with open(path, "rb") as handle:
        while remaining:
            block = handle.read(min(remaining, _BLOCK))
            if not block:
                break
            digest.update(block)
            remaining -= len(block)
    return digest, offset - remaining


def prefix_sha256(path: str, offset: int) -> str:
    """SHA-256 hex of the first ``offset`` bytes of ``path``; ``""`` at offset 0 (TauGrid's rule).

    Raises ``ValueError`` when the file is shorter than ``offset``.
    """
    if offset == 0:
        return ""
    digest, read = _hash_prefix(path, offset)
    if read < offset:
        raise ValueError(
            f"{path}: file has only {read} bytes, fewer than the checkpoint offset {offset}; the file was "
            "truncated or replaced — start with a fresh checkpoint")
    return digest.hexdigest()


class Fingerprints:
    """Per file: the running prefix digest and the signature of the last read."""

    def __init__(self) -> None:
        self._prefix: dict[str, hashlib._Hash] = {}
        self.seen: dict[str, tuple[str, int, int]] = {}

    def prefix(self, path: str, *, file_id_: str | None, offset: int, prefix_sha: str) -> hashlib._Hash:
        """The digest of ``path`` up to its checkpoint, verified against it on first use.

        ``file_id_``/``offset``/``prefix_sha`` are the checkpoint's (``file_id_`` None: none yet).
        Raises :class:`FingerprintError` when the file is not the checkpointed one any more.
        """
        digest = self._prefix.get(path)
        if digest is not None:
            return digest
        if file_id_ is None:
            digest = hashlib.sha256()
        else:
            if file_id(path) != file_id_:
                raise FingerprintError(f"history file identity changed for {path}")
            size = os.path.getsize(path)
            if offset > size:
                raise FingerprintError(f"checkpoint offset {offset} is outside {path} size {size}")
            digest, _ = _hash_prefix(path, offset)
            if (digest.hexdigest() if offset else "") != prefix_sha:
                raise FingerprintError(f"history prefix mismatch for {path} at offset {offset}")
        self._prefix[path] = digest
        return digest

    def forget(self, path: str) -> None:
        """``path`` was folded into a complete-through entry: it is never read again."""
        self._prefix.pop(path, None)
        self.seen.pop(path, None)

    def advance(self, path: str, digest: hashlib._Hash) -> None:
        """The file was consumed further: ``digest`` now covers its checkpoint."""
        self._prefix[path] = digest
