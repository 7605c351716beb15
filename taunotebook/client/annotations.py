"""The client's notes, tags and notifications of a run (the local Portal's addition; its only writes)."""

from __future__ import annotations

import contextlib
import uuid

import httpx

from .links import API_PATH, PAGE_DATA_PATH, path_segment
from .models import Run
from .note_models import Note, NoteList, NoteWritten, Notification, NotificationList, RunTagsAnswer
from .run_handle import RunHandle

__all__ = ["RunAnnotations"]


class RunAnnotations:
    """A run's notes and tags (read and written) and the notifications its wrap sent.

    A mixin of :class:`~.client.PortalClient`: it reads through the client's transport (``_get``, ``_send``,
    ``_common``, ``_optional``, ``_http``) and defaults (``project``, ``base_url``)."""

    project: str | None
    base_url: str
    _http: httpx.Client

    def notes(self, run_id: str, *, project: str | None = None, source: str | None = None) -> list[Note]:
        """``GET /api/v2/stellar/runs/{run_id}/notes``: the run's notes, oldest first."""
        params = [*self._common(source), *self._optional(project)]
        return list(self._get(f"{API_PATH}/runs/{path_segment(run_id, 'run_id')}/notes", params,
                              NoteList.from_json).notes)

    def add_note(self, run_id: str, text: str, *, author: str | None = None, idempotency_key: str | None = None,
                 project: str | None = None, source: str | None = None) -> Note:
        """``POST /api/v2/stellar/runs/{run_id}/notes``: add a note (``author`` default: the Portal's user).

        Sent with an idempotency key (a fresh one unless given), so a retry after a lost answer is the same note,
        never a second one; a key used before for another note is a :class:`ClientError` with code ``CONFLICT``.
        """
        body = {"text": text, "idempotency_key": idempotency_key or f"note-{uuid.uuid4().hex}"}
        if author is not None:
            body["author"] = author
        params = [*self._common(source), *self._optional(project)]
        return self._send("POST", f"{API_PATH}/runs/{path_segment(run_id, 'run_id')}/notes", params, body,
                          NoteWritten.from_json).note

    def run_tags(self, run_id: str, *, project: str | None = None, source: str | None = None) -> dict[str, str]:
        """The run's tags (those of :meth:`run`)."""
        params = [*self._common(source), *self._optional(project)]
        return dict(self._get(f"{API_PATH}/runs/{path_segment(run_id, 'run_id')}", params, Run.from_response).tags)

    def set_tag(self, run_id: str, key: str, value: str, *, project: str | None = None,
                source: str | None = None) -> dict[str, str]:
        """``PUT /api/v2/stellar/runs/{run_id}/tags/{key}``; returns the run's tags after."""
        path = f"{API_PATH}/runs/{path_segment(run_id, 'run_id')}/tags/{path_segment(key, 'tag key')}"
        params = [*self._common(source), *self._optional(project)]
        return dict(self._send("PUT", path, params, {"value": value}, RunTagsAnswer.from_json).tags)

    def delete_tag(self, run_id: str, key: str, *, project: str | None = None,
                   source: str | None = None) -> dict[str, str]:
        """``DELETE /api/v2/stellar/runs/{run_id}/tags/{key}`` (a tag the run lacks is fine); the tags after."""
        path = f"{API_PATH}/runs/{path_segment(run_id, 'run_id')}/tags/{path_segment(key, 'tag key')}"
        params = [*self._common(source), *self._optional(project)]
        return dict(self._send("DELETE", path, params, None, RunTagsAnswer.from_json).tags)

    def notifications(self, run_id: str, *, project: str | None = None,
                      source: str | None = None) -> list[Notification]:
        """``GET /stellar/data/runs/{run_id}/notifications`` (page data): the webhooks the run's wrap sent."""
        params = [*self._common(source), *self._optional(project)]
        return list(self._get(f"{PAGE_DATA_PATH}/runs/{path_segment(run_id, 'run_id')}/notifications", params,
                              NotificationList.from_json).notifications)

    def run_handle(self, run_id: str, *, project: str | None = None) -> RunHandle:
        """The run's notes and tags through this client: ``.note(text)``, ``.notes()``, ``.tags[key] = value``."""
        return RunHandle(lambda: contextlib.nullcontext(self), run_id,
                         project if project is not None else self.project)
