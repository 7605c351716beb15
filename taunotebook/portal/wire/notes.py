"""Notes and tags on a run (our addition to TauGrid's v2 API): the note encoder and the answers' OpenAPI fragments.

A note is a row of TauGrid's ``observations`` table about a run; the run's tags are its ``tags`` rows (as
``/runs/{run_id}`` carries them). The run's webhook notifications are its ``notification`` run events.
"""

from __future__ import annotations

from tau_collector.reads import NoteRow, RunEvent

from .common import NONNEG, ref

__all__ = ["NOTE", "NOTE_LIST", "NOTE_WRITTEN", "NOTIFICATIONS", "RUN_TAGS", "note_json", "notification_json"]


def note_json(note: NoteRow) -> dict:
    out = {"observation_id": note.observation_id, "author": note.author, "source": note.source, "type": note.type,
           "text": note.text, "created_at": note.created_at}
    if note.idempotency_key:
        out["idempotency_key"] = note.idempotency_key
    return out


_NOTIFICATION_KEYS = ("trigger", "outcome", "url", "attempts", "status", "state", "reason")


def notification_json(event: RunEvent) -> dict:
    """A webhook delivery as ``tau-collector wrap`` recorded it: when, the outcome in words, and its details."""
    out: dict = {"time": event.time, "severity": event.severity, "message": event.message}
    payload = event.payload or {}
    out.update({k: payload[k] for k in _NOTIFICATION_KEYS if payload.get(k) not in (None, "")})
    return out


_STRING = {"type": "string"}
NOTE = {
    "type": "object", "additionalProperties": False,
    "required": ["observation_id", "author", "source", "type", "text", "created_at"],
    "properties": {k: _STRING for k in ("observation_id", "author", "source", "type", "text", "created_at",
                                        "idempotency_key")},
}
NOTE_LIST = {"type": "object", "additionalProperties": False, "required": ["metadata", "run_id", "notes"],
             "properties": {"metadata": ref("Metadata"), "run_id": _STRING,
                            "notes": {"type": "array", "items": ref("Note")}}}
NOTE_WRITTEN = {"type": "object", "additionalProperties": False, "required": ["metadata", "run_id", "note", "created"],
                "properties": {"metadata": ref("Metadata"), "run_id": _STRING, "note": ref("Note"),
                               "created": {"type": "boolean",
                                           "description": "false: the idempotency key's note, written before"}}}
RUN_TAGS = {"type": "object", "additionalProperties": False, "required": ["metadata", "run_id", "tags"],
            "properties": {"metadata": ref("Metadata"), "run_id": _STRING,
                           "tags": {"type": "object", "additionalProperties": _STRING}}}
NOTIFICATIONS = {
    "type": "object", "additionalProperties": False, "required": ["metadata", "run_id", "notifications"],
    "properties": {
        "metadata": ref("Metadata"), "run_id": _STRING,
        "notifications": {"type": "array", "items": {
            "type": "object", "additionalProperties": False, "required": ["time", "severity", "message"],
            "properties": {**{k: _STRING for k in ("time", "severity", "message", "trigger", "outcome", "url", "state",
                                                   "reason")},
                           "attempts": NONNEG, "status": {"type": "integer"}}}},
    },
}
