"""Run artifacts in TauGrid's ``artifacts`` table: checkpoints, media and the files a run was read from.

A row names a file that belongs to a run (its ``type``, ``uri``, ``step``, ``digest``, ``size_bytes``,
``content_type``, ``caption``: TauGrid's columns). Bytes the store keeps itself are written under its
``artifacts/`` directory, content-addressed (``artifacts/sha256/<aa>/<digest>``) so the same image
logged twice, or by two runs, is one file; files that live elsewhere (a checkpoint on a shared disk,
the event file a run wrote) are registered by their URI without a copy.

The ``artifact_id`` is derived from the row's identity (run, type, name, step), so registering the
same artifact again — a restarted collector, a re-import — replaces the row instead of adding one.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

from tau_collector.expstore.format.schema import ARTIFACTS_DIR
from tau_collector.expstore.store import ExpStore, utc_now_rfc3339
from tau_collector.reads.rows import ArtifactRow

__all__ = [
    "ARTIFACT_COLUMNS",
    "artifact_path_for_digest",
    "local_path_of",
    "read_artifact",
    "read_artifacts",
    "record_artifacts",
    "record_artifacts_in",
    "store_artifact_bytes",
    "store_artifacts_bytes",
]

ARTIFACT_COLUMNS = ("artifact_id", "run_id", "type", "uri", "name", "content_type", "digest", "size_bytes",
            "step", "created_at", "caption", "tags", "rank")

# Read in bounded batches: a run with a million images pages through them.
MAX_ARTIFACTS_PER_READ = 10_000


def artifact_path_for_digest(digest: str) -> str:
    """The store-relative path of content-addressed bytes (``digest`` is ``sha256:<hex>``)."""
    algo, _, hexdigest = digest.partition(":")
    if algo != "sha256" or len(hexdigest) != 64 or any(c not in "0123456789abcdef" for c in hexdigest):
        raise ValueError(f"artifact digest {digest!r} is not 'sha256:<64 lowercase hex digits>'")
    return f"{ARTIFACTS_DIR}/sha256/{hexdigest[:2]}/{hexdigest}"


def store_artifact_bytes(store: ExpStore, data: bytes) -> tuple[str, str, int]:
    """Keep ``data`` under the store's ``artifacts/``, once per digest; returns (digest, relative path, size).

    Crash-safe like metric files: written to a temporary name, fsynced and renamed into place, so a
    file under its digest name is always whole. The caller registers it with :func:`record_artifacts`.
    """
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    rel = artifact_path_for_digest(digest)
    path = store.absolute(rel)
    if not (path.exists() and path.stat().st_size == len(data)):
        store.publish_file(rel, lambda tmp: _write_bytes(tmp, data))
    return digest, rel, len(data)


def store_artifacts_bytes(store: ExpStore, items: list[bytes]) -> list[tuple[str, str, int]]:
    """:func:`store_artifact_bytes` of many (a delivery's images) with one sync for them all: the files not yet
    kept are written, synced together and renamed into place, each directory synced once
    (:meth:`.ExpStore.publish_files`) -- as crash-safe, without a sync per file in turn."""
    out, missing = [], {}
    root = os.fspath(store.root)
    for data in items:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        rel = artifact_path_for_digest(digest)
        out.append((digest, rel, len(data)))
        if rel not in missing and not _kept(os.path.join(root, rel), len(data)):
            missing[rel] = data
    if missing:
        store.publish_files(list(missing.items()))
    return out


def _kept(path: str, size: int) -> bool:
    """Bytes of ``size`` already kept at ``path`` (one ``stat``)."""
    try:
        return os.stat(path).st_size == size
    except (FileNotFoundError, NotADirectoryError):
        return False


def _write_bytes(path: Path, data: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(data)


def record_artifacts(store: ExpStore, rows: Iterable[ArtifactRow]) -> int:
    """Register (or re-register) artifacts in one transaction; returns how many rows were written."""
    rows = list(rows)
    if not rows:
        return 0
    with store.write_transaction() as tx:
        return record_artifacts_in(tx, rows)


def record_artifacts_in(tx, rows: Iterable[ArtifactRow]) -> int:
    """:func:`record_artifacts` inside the caller's transaction ``tx`` (beside a delivery's other rows)."""
    batch = [_as_params(r) for r in rows]
    if batch:
        placeholders = ", ".join("?" for _ in ARTIFACT_COLUMNS)
        tx.executemany(
            f"INSERT OR REPLACE INTO artifacts({', '.join(ARTIFACT_COLUMNS)}) VALUES ({placeholders})", batch)
    return len(batch)


def _as_params(r: ArtifactRow) -> tuple:
    return (r.artifact_id, r.run_id, r.type, r.uri, r.name, r.content_type, r.digest, r.size_bytes,
            r.step, r.created_at or utc_now_rfc3339(), r.caption, r.tags_json(), r.rank)


def read_artifacts(store: ExpStore, run_id: str, *, type: str | None = None,
                   step_min: int | None = None, step_max: int | None = None,
                   after_id: str | None = None, limit: int = MAX_ARTIFACTS_PER_READ) -> list[ArtifactRow]:
    """A run's artifacts, ordered by (step, name, artifact_id), one bounded page at a time.

    ``after_id`` continues a listing after the last row of the previous page.
    """
    if limit <= 0:
        raise ValueError(f"limit must be positive, got {limit}")
    limit = min(limit, MAX_ARTIFACTS_PER_READ)
    sql = [f"SELECT {', '.join(ARTIFACT_COLUMNS)} FROM artifacts WHERE run_id = ?"]
    params: list[object] = [run_id]
    if type is not None:
        sql.append("AND type = ?")
        params.append(type)
    if step_min is not None:
        sql.append("AND step >= ?")
        params.append(step_min)
    if step_max is not None:
        sql.append("AND step <= ?")
        params.append(step_max)
    if after_id is not None:
        sql.append("AND (COALESCE(step, -9223372036854775808), name, artifact_id) > "
                   "(SELECT COALESCE(step, -9223372036854775808), name, artifact_id FROM artifacts "
                   "WHERE artifact_id = ?)")
        params.append(after_id)
    sql.append("ORDER BY COALESCE(step, -9223372036854775808), name, artifact_id LIMIT ?")
    params.append(limit)
    rows = store.connection().execute(" ".join(sql), params).fetchall()
    return [ArtifactRow.from_row(dict(zip(ARTIFACT_COLUMNS, r, strict=True))) for r in rows]


def local_path_of(store: ExpStore, row: ArtifactRow) -> Path | None:
    """The file behind a row when it is on this machine (under the store, or a ``file:``/plain path)."""
    uri = row.uri
    if uri.startswith("file://"):
        return Path(uri[len("file://"):])
    if "://" in uri:
        return None
    p = Path(uri)
    return p if p.is_absolute() else store.absolute(os.path.normpath(uri))


def read_artifact(store: ExpStore, run_id: str, artifact_id: str) -> ArtifactRow | None:
    """One row of the run by its ``artifact_id`` (a download names it); None when the run has no such row."""
    row = store.connection().execute(
        f"SELECT {', '.join(ARTIFACT_COLUMNS)} FROM artifacts WHERE run_id = ? AND artifact_id = ?",
        (run_id, artifact_id)).fetchone()
    return None if row is None else ArtifactRow.from_row(dict(zip(ARTIFACT_COLUMNS, row, strict=True)))
