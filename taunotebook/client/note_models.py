"""A run's notes and tags as the local Portal answers them (our addition to TauGrid's v2 API), typed and frozen."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .decode import WireModel, decode, wire
from .models import Metadata

__all__ = ["Note", "NoteList", "NoteWritten", "Notification", "NotificationList", "RunTagsAnswer"]


@dataclass(frozen=True, slots=True)
class Note(WireModel):
    """One note on a run (a row of TauGrid's ``observations``): who wrote what, and when (RFC 3339 text)."""

    observation_id: str = field(metadata=wire(required=True))
    text: str = ""
    author: str = ""
    created_at: str = ""
    source: str = ""
    type: str = ""
    idempotency_key: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class NoteList(WireModel):
    """``GET /runs/{run_id}/notes``: the run's notes, oldest first."""

    metadata: Metadata
    run_id: str
    notes: tuple[Note, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> NoteList:
        return decode(cls, data, "note list")


@dataclass(frozen=True, slots=True)
class NoteWritten(WireModel):
    """``POST /runs/{run_id}/notes``: the note, and whether it was written now (False: its idempotency key's)."""

    metadata: Metadata
    run_id: str
    note: Note
    created: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> NoteWritten:
        return decode(cls, data, "written note")


@dataclass(frozen=True, slots=True)
class RunTagsAnswer(WireModel):
    """``PUT``/``DELETE /runs/{run_id}/tags/{key}``: the run's tags after the write."""

    metadata: Metadata
    run_id: str
    tags: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> RunTagsAnswer:
        return decode(cls, data, "run tags")


@dataclass(frozen=True, slots=True)
class Notification(WireModel):
    """One webhook delivery the run's wrap recorded: when, how it went in words, and its details."""

    time: str = ""
    severity: str = ""
    message: str = ""
    trigger: str | None = None
    outcome: str | None = None
    url: str | None = None
    attempts: int | None = None
    status: int | None = None
    state: str | None = None
    reason: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class NotificationList(WireModel):
    """``GET /stellar/data/runs/{run_id}/notifications`` (page data): what the run's wrap sent, oldest first."""

    metadata: Metadata
    run_id: str
    notifications: tuple[Notification, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> NotificationList:
        return decode(cls, data, "notification list")
