"""Which chunk keys the index keeps: each spool stream's recent keys, the older ones pruned as no spool can replay them.

The writer records one ``idempotency_keys`` row per delivered chunk so that a re-delivered chunk is a
no-op. Kept forever, those rows grow with the store's age (~0.9 MB per 10M events at a chunk a second).
What a spool can replay is bounded by its protocol (:mod:`tau_collector.spool.manifest`): it writes
``pending/<sequence>`` only after the previous chunk was checkpointed, and on start it re-delivers the one
pending chunk whose sequence is ``next_sequence`` -- the newest it ever handed to a sink -- and deletes any
older one. So of a stream's keys (a stream is one spool: the sink's ``source_id``, a spool directory) only
the key of its newest sequence can ever be asked for again.

**Horizon.** With each chunk of a stream the writer records ``(stream, sequence, key)`` and the stream's
newest sequence, and deletes, in the same transaction, the keys of that stream whose sequence is more than
:data:`STREAM_WINDOW` (16) away from it (older: acknowledged long ago; newer: left by an earlier spool in the
same directory, see below). ``STREAM_WINDOW`` is a margin over the protocol's one
sequence: a finished job's spool leaves 17 keys (~2 KB).

**Below the horizon.** A chunk of a stream whose sequence lies below the horizon and whose key is not
recorded cannot be a replay of that spool (which only re-delivers its newest sequence); it comes from a
spool that started again in the same directory (a lost or recreated spool) and is written as new data,
and the stream's newest sequence moves back to it. Such a spool re-reads its sources with its own chunk
boundaries, so its chunks' keys (content digests) would not have matched the old ones even unpruned:
pruning changes nothing for it, and a chunk that carries new points is never dropped.

**Non-finite observations.** A spool writes a drain's non-finite observations to ``nonfinite/<key>.ndjson``
before it delivers the drain's history chunk, and removes the file once that chunk is checkpointed; a start
re-delivers the files still there. Their chunk comes under the sequence of that history chunk (the
checkpoint's ``next_sequence``, also on replay), so its key is pruned with the stream's others; the sink keys
it without the sequence (a replay after the checkpoint was written carries the next one). Until issue 30 it
came under sequence 0, which moved the stream's newest sequence back to 0: each such delivery pruned the keys
of the spool's last 16 chunks and a later history chunk pruned the non-finite key, so a start after a kill
between delivery and checkpoint wrote both again (counted twice in the summaries).

**Idle streams.** A finished job's spool is gone, but its stream kept ``STREAM_WINDOW + 1`` keys, a few KB
a job for good: over a year of jobs more than the rest of the job's index rows (runs, summaries, files).
So of a stream not written for :data:`IDLE_STREAM_SECONDS` (a day: no delivery is in flight, and a spool
suspended that long still replays only its newest sequence) only the keys of its newest sequence are kept
(:func:`prune_idle_streams`, run by a writer at its first delivery and then at most every
:data:`IDLE_SWEEP_SECONDS`); its ``idempotency_streams`` row stays, so a chunk below the horizon is still
known as new data.

Keys recorded without a stream (an importer's file and block keys and non-finite observations, sequence 0)
are kept as before.
"""

from __future__ import annotations

import sqlite3

__all__ = ["IDLE_STREAM_SECONDS", "IDLE_SWEEP_SECONDS", "STREAM_WINDOW", "prune_idle_streams", "record_stream_key"]

STREAM_WINDOW = 16
IDLE_STREAM_SECONDS = 24 * 3600.0
IDLE_SWEEP_SECONDS = 3600.0


def record_stream_key(tx: sqlite3.Connection, stream: str, sequence: int, key: str, now: str,
                      *, window: int = STREAM_WINDOW) -> int:
    """Inside the write transaction that records ``key``: note it under ``(stream, sequence)``, make
    ``sequence`` the stream's newest and prune the stream's keys beyond ``window`` of it; returns how many
    keys were pruned."""
    if window < 1:
        raise ValueError(f"idempotency window must be at least 1 sequence, got {window}")
    tx.execute("INSERT OR IGNORE INTO idempotency_stream_keys(stream, sequence, key) VALUES (?, ?, ?)",
               (stream, sequence, key))
    tx.execute("INSERT INTO idempotency_streams(stream, last_sequence, updated_at) VALUES (?, ?, ?) "
               "ON CONFLICT(stream) DO UPDATE SET last_sequence = excluded.last_sequence, "
               "updated_at = excluded.updated_at", (stream, sequence, now))
    pruned = 0
    # Two range conditions on the (stream, sequence, key) primary key: each a seek, usually finding one row.
    for condition, bound in (("sequence < ?", sequence - window), ("sequence > ?", sequence + window)):
        gone = [k for (k,) in tx.execute(
            f"SELECT key FROM idempotency_stream_keys WHERE stream = ? AND {condition}", (stream, bound))]
        if gone:
            tx.executemany("DELETE FROM idempotency_keys WHERE key = ?", [(k,) for k in gone])
            tx.execute(f"DELETE FROM idempotency_stream_keys WHERE stream = ? AND {condition}", (stream, bound))
            pruned += len(gone)
    return pruned


def prune_idle_streams(tx: sqlite3.Connection, cutoff: str) -> int:
    """Inside a write transaction: of each stream last written before ``cutoff`` (RFC 3339 text, as
    ``updated_at``), delete the keys of every sequence but its newest; returns how many keys were pruned.
    One pass over the streams, each a seek on its keys."""
    gone = tx.execute(
        "SELECT k.stream, k.sequence, k.key FROM idempotency_streams s JOIN idempotency_stream_keys k "
        "ON k.stream = s.stream WHERE s.updated_at < ? AND k.sequence != s.last_sequence", (cutoff,)).fetchall()
    if gone:
        tx.executemany("DELETE FROM idempotency_keys WHERE key = ?", [(k,) for _, _, k in gone])
        tx.executemany("DELETE FROM idempotency_stream_keys WHERE stream = ? AND sequence = ? AND key = ?", gone)
    return len(gone)
