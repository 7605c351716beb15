"""Run events in TauGrid's ``events`` table: what happened to a run besides its metrics.

The collector records the problems it meets while reading a run's sources (a corrupt event file,
bad history rows) here, so that the Portal and the loss pane can say them in words.
"""

from __future__ import annotations

import orjson

from tau_collector.expstore.store import ExpStore
from tau_collector.reads.rows import RunEvent

__all__ = ["read_run_events", "record_run_events"]


def record_run_events(store: ExpStore, events: list[RunEvent]) -> None:
    if not events:
        return
    with store.write_transaction() as tx:
        for e in events:
            tx.execute(
                "INSERT OR IGNORE INTO events(event_id, run_id, time, type, source, severity, message, payload) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (e.event_id, e.run_id, e.time, e.type, e.source, e.severity, e.message,
                 orjson.dumps(e.payload).decode() if e.payload is not None else None),
            )


def read_run_events(store: ExpStore, run_id: str, *, type: str | None = None) -> list[RunEvent]:
    sql = "SELECT run_id, time, type, source, severity, message, payload FROM events WHERE run_id = ?"
    params: list[str] = [run_id]
    if type is not None:
        sql += " AND type = ?"
        params.append(type)
    rows = store.connection().execute(sql + " ORDER BY time, rowid", params).fetchall()
    return [RunEvent(r[0], r[1], r[2], r[3], r[4], r[5], orjson.loads(r[6]) if r[6] else None) for r in rows]
