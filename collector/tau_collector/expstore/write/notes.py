"""Notes and tags people write on a run: rows of TauGrid's ``observations`` and ``tags`` tables (scope ``run``).

A note is an observation (TauGrid's ``RecordObservation``, ``expstore/observation.go``): type ``observation``,
source ``human`` unless said otherwise, ``created_at`` stamped in RFC3339 seconds, its id ``obs-`` and twelve hex
digits of a hash of its fields and the time. TauGrid's idempotency rule holds: a note written with an
``idempotency_key`` registers the key in ``idempotency_keys`` (target type ``observation``) with the hash of
the request (author, source, type, scope and text); the same key with the same request again is the row
already written (``created`` False), with another request a :class:`NoteConflictError`. The note is added to
the notes' search index (``listing.note_search``) in the same transaction.

A tag is a ``tags`` row: set (replacing its value) or deleted. Unlike TauGrid's import, which refuses to
change a tag, these are edits people make. The run's listing row is refreshed in the same transaction.
Both refuse a run the store does not hold (:class:`RunNotFoundError`).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import sqlite3
from collections.abc import Iterable

from tau_collector.expstore.store import ExpStore, StoreError
from tau_collector.expstore.write.listing import index_note, note_runs_sql, refresh_runs
from tau_collector.reads.rows import NoteRow

__all__ = [
    "MAX_NOTES_PER_READ",
    "NOTE_COMMAND",
    "NoteConflictError",
    "RunNotFoundError",
    "delete_run_tag",
    "read_notes",
    "record_note",
    "run_tags",
    "runs_with_note",
    "set_run_tag",
]

NOTE_COMMAND = "taunotebook note"  # the ``idempotency_keys.command`` of a note (TauGrid's CLI writes "exp observe")
MAX_NOTES_PER_READ = 1000
_COLUMNS = "observation_id, scope_id, author, text, created_at, source, type, idempotency_key"


class NoteConflictError(StoreError):
    """The idempotency key was used for another request: nothing was written."""


class RunNotFoundError(StoreError):
    """The store holds no run with this id: nothing was written."""


def _request_hash(author: str, source: str, type_: str, run_id: str, text: str) -> str:
    # TauGrid's observationRequestHash: sha256 of Go's json.Marshal of the fields (keys sorted, HTML escaped).
    payload = {"author": author, "evidence": "", "scope_id": run_id, "scope_type": "run", "source": source,
               "text": text, "type": type_}
    raw = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    raw = raw.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return hashlib.sha256(raw.encode()).hexdigest()


def _observation_id(author: str, source: str, type_: str, run_id: str, text: str, now_nano: str) -> str:
    raw = "\x00".join((author, source, type_, "run", run_id, text, "", now_nano))
    return "obs-" + hashlib.sha256(raw.encode()).hexdigest()[:12]


def _require_run(tx, run_id: str) -> None:
    if tx.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is None:
        raise RunNotFoundError(f"the store holds no run {run_id!r}: notes and tags attach to runs it holds "
                               "(a run appears with its first metrics)")


def _row(r: tuple) -> NoteRow:
    return NoteRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7])


def record_note(store: ExpStore, run_id: str, text: str, *, author: str, source: str = "human",
                idempotency_key: str | None = None, command: str = NOTE_COMMAND) -> tuple[NoteRow, bool]:
    """Add a note to the run; returns (the note, whether it was written now). With ``idempotency_key``: the same
    key and request again returns the note written the first time; another request is a NoteConflictError."""
    type_ = "observation"
    request_hash = _request_hash(author, source, type_, run_id, text)
    with store.write_transaction() as tx:
        if idempotency_key:
            known = tx.execute("SELECT request_hash, target_id, target_type FROM idempotency_keys WHERE key = ?",
                               (idempotency_key,)).fetchone()
            if known is not None:
                if known[0] != request_hash or known[2] != "observation":
                    raise NoteConflictError(f"idempotency key {idempotency_key!r} was used for a different request; "
                                            "use a new key for a new note")
                row = tx.execute(f"SELECT {_COLUMNS} FROM observations WHERE observation_id = ?",
                                 (known[1],)).fetchone()
                if row is None:
                    raise NoteConflictError(f"idempotency key {idempotency_key!r} names observation {known[1]!r}, "
                                            "which the store no longer holds")
                return _row(row), False
        _require_run(tx, run_id)
        now = _dt.datetime.now(_dt.UTC)
        created_at = now.strftime("%Y-%m-%dT%H:%M:%SZ")
        note_id = _observation_id(author, source, type_, run_id, text, now.isoformat())
        cursor = tx.execute(
            "INSERT INTO observations(observation_id, idempotency_key, author, source, type, scope_type, scope_id, "
            "text, evidence, created_at) VALUES (?, ?, ?, ?, ?, 'run', ?, ?, NULL, ?)",
            (note_id, idempotency_key or None, author, source, type_, run_id, text, created_at))
        index_note(tx, cursor.lastrowid, run_id, text)
        if idempotency_key:
            tx.execute("INSERT INTO idempotency_keys(key, command, target_type, target_id, request_hash, created_at) "
                       "VALUES (?, ?, 'observation', ?, ?, ?)",
                       (idempotency_key, command, note_id, request_hash, created_at))
    return NoteRow(note_id, run_id, author, text, created_at, source, type_, idempotency_key or None), True


def read_notes(conn: sqlite3.Connection, run_id: str, limit: int = MAX_NOTES_PER_READ) -> list[NoteRow]:
    """The run's notes, oldest first (then in the order written), at most ``limit`` of the newest."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM (SELECT {_COLUMNS}, rowid AS r FROM observations WHERE scope_type = 'run' "
        "AND scope_id = ? ORDER BY created_at DESC, r DESC LIMIT ?) ORDER BY created_at, r",
        (run_id, max(1, min(limit, MAX_NOTES_PER_READ)))).fetchall()
    return [_row(r) for r in rows]


def runs_with_note(conn: sqlite3.Connection, run_ids: Iterable[str], text: str) -> set[str]:
    """Which of ``run_ids`` have a note containing ``text`` (any case)."""
    wanted = set(run_ids)
    if not wanted or not text:
        return set()
    conn.create_function("tau_lower", 1, lambda s: s.lower() if isinstance(s, str) else s, deterministic=True)
    sql, args = note_runs_sql(conn, text)
    return {r for (r,) in conn.execute(sql, args) if r in wanted}


def run_tags(conn, run_id: str) -> dict[str, str]:
    return dict(conn.execute("SELECT key, value FROM tags WHERE scope_type = 'run' AND scope_id = ? ORDER BY key",
                             (run_id,)).fetchall())


def set_run_tag(store: ExpStore, run_id: str, key: str, value: str) -> dict[str, str]:
    """Set the run's tag ``key`` to ``value``; returns the run's tags after."""
    with store.write_transaction() as tx:
        _require_run(tx, run_id)
        tx.execute("INSERT INTO tags(scope_type, scope_id, key, value) VALUES ('run', ?, ?, ?) "
                   "ON CONFLICT(scope_type, scope_id, key) DO UPDATE SET value = excluded.value", (run_id, key, value))
        refresh_runs(tx, [run_id])
        return run_tags(tx, run_id)


def delete_run_tag(store: ExpStore, run_id: str, key: str) -> dict[str, str]:
    """Remove the run's tag ``key`` (none is fine); returns the run's tags after."""
    with store.write_transaction() as tx:
        _require_run(tx, run_id)
        tx.execute("DELETE FROM tags WHERE scope_type = 'run' AND scope_id = ? AND key = ?", (run_id, key))
        refresh_runs(tx, [run_id])
        return run_tags(tx, run_id)
