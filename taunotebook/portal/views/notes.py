"""Notes and tags on a run (our addition): ``/runs/{run_id}/notes`` (read, add) and ``/runs/{run_id}/tags/{key}``
(set, delete), and the page data ``/stellar/data/runs/{run_id}/notifications`` (the webhooks a run sent).

The writes are the Portal's first: the gate in front of them is :mod:`..writes`; here each names the run as a
read does (source, workspace, ``project``: a run of another workspace is ``404`` as for a read), refuses a run
Kusto serves and a store this process cannot write (``409``, in words), checks its fields' limits and writes
TauGrid's rows (:mod:`tau_collector.expstore.write.notes`).
"""

from __future__ import annotations

import getpass
import sqlite3
from collections.abc import Mapping
from typing import Any

from starlette.responses import Response

from tau_collector.expstore.store import StoreReadOnlyError
from tau_collector.expstore.write.notes import (
    NoteConflictError,
    RunNotFoundError,
    delete_run_tag,
    record_note,
    set_run_tag,
)
from tau_collector.reads import ReadsNotes
from tau_collector.taugrid.ids import InvalidID, validate_id

from ..context import Context, Found, Portal
from ..errors import V2Error, json_response, metadata_json
from ..wire.notes import note_json, notification_json
from ..writes import check_author, check_note_text, check_tag_key, check_tag_value

__all__ = ["NOTE_FIELDS", "NOTIFY_EVENT", "TAG_FIELDS", "add", "delete_tag", "notifications", "read", "set_tag"]

NOTE_FIELDS = ("text", "author", "idempotency_key")
TAG_FIELDS = ("value",)
NOTIFY_EVENT = "notification"  # the run event type of a webhook delivery (tau-collector wrap)


def _default_author() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no user name in this environment (a container without a passwd entry)
        return "unknown"


def read(ctx: Context) -> Response:
    """``GET``: the run's notes, oldest first (a Kusto-served run has none)."""
    source, workspace = ctx.source_and_workspace()
    found = ctx.exact_run(source, workspace)
    notes = found.reader.notes(found.run.run_id) if isinstance(found.reader, ReadsNotes) else []
    return json_response({"metadata": metadata_json(source, [found.served], False, found.warnings),
                          "run_id": found.run.run_id, "notes": [note_json(n) for n in notes]})


def notifications(ctx: Context) -> Response:
    """``GET`` (page data): the webhook notifications the run's wrap sent, oldest first."""
    source, workspace = ctx.source_and_workspace()
    found = ctx.exact_run(source, workspace)
    events = found.reader.run_events(found.run.run_id, type=NOTIFY_EVENT)
    return json_response({"metadata": metadata_json(source, [found.served], False, found.warnings),
                          "run_id": found.run.run_id, "notifications": [notification_json(e) for e in events]})


def _writable_run(ctx: Context) -> tuple[str, Found]:
    source, workspace = ctx.source_and_workspace()
    found = ctx.exact_run(source, workspace)
    if found.served != "local":
        raise V2Error(409, "READ_ONLY_SOURCE", f"run {found.run.run_id!r} is served from Kusto, which this Portal "
                                               "only reads: notes and tags are kept in a local store, and this "
                                               "run is not in it")
    return source, found


def _store_errors(write):
    try:
        return write()
    except NoteConflictError as err:
        raise V2Error(409, "CONFLICT", str(err)) from None
    except RunNotFoundError:
        raise V2Error(404, "NOT_FOUND", "requested experiment data was not found") from None
    except StoreReadOnlyError:
        raise V2Error(409, "READ_ONLY_STORE", "this Portal's store is read-only: notes and tags cannot be written "
                                              "to it") from None
    except sqlite3.OperationalError as err:
        if getattr(err, "sqlite_errorname", "").startswith("SQLITE_READONLY"):
            raise V2Error(409, "READ_ONLY_STORE", "this Portal's store is read-only: notes and tags cannot be "
                                                  "written to it") from None
        raise


def add(portal: Portal, ctx: Context, body: Mapping[str, Any]) -> Response:
    """``POST``: a note (``text``; ``author``, default the Portal's user; ``idempotency_key``, TauGrid's rule)."""
    text = check_note_text(body.get("text"))
    author = check_author(body.get("author"), _default_author())
    key = body.get("idempotency_key")
    if key is not None:
        if not isinstance(key, str):
            raise V2Error(400, "INVALID_ARGUMENT", "idempotency_key must be a string")
        try:
            validate_id("idempotency_key", key)
        except InvalidID as err:
            raise V2Error(400, "INVALID_ARGUMENT", str(err)) from None
    source, found = _writable_run(ctx)
    store = portal.writable_store()
    note, created = _store_errors(lambda: record_note(store, found.run.run_id, text, author=author,
                                                      idempotency_key=key or None))
    return json_response({"metadata": metadata_json(source, [found.served], False, found.warnings),
                          "run_id": found.run.run_id, "note": note_json(note), "created": created},
                         201 if created else 200)


def _tag_key(ctx: Context) -> str:
    return check_tag_key(ctx.ids["key"])


def _tags_answer(source: str, found: Found, tags: dict[str, str]) -> Response:
    return json_response({"metadata": metadata_json(source, [found.served], False, found.warnings),
                          "run_id": found.run.run_id, "tags": dict(sorted(tags.items()))})


def set_tag(portal: Portal, ctx: Context, body: Mapping[str, Any]) -> Response:
    """``PUT``: set the tag (``value``); the answer is the run's tags after."""
    key = _tag_key(ctx)
    if "value" not in body:
        raise V2Error(400, "INVALID_ARGUMENT", "value is required: the body is {\"value\": \"...\"}")
    value = check_tag_value(body["value"])
    source, found = _writable_run(ctx)
    store = portal.writable_store()
    return _tags_answer(source, found, _store_errors(lambda: set_run_tag(store, found.run.run_id, key, value)))


def delete_tag(portal: Portal, ctx: Context, body: Mapping[str, Any]) -> Response:
    """``DELETE``: remove the tag (a tag the run does not have is fine); the answer is the run's tags after."""
    key = _tag_key(ctx)
    source, found = _writable_run(ctx)
    store = portal.writable_store()
    return _tags_answer(source, found, _store_errors(lambda: delete_run_tag(store, found.run.run_id, key)))

