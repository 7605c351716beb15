"""Who may write, and what a write may carry: the gate in front of the Portal's write routes (notes and tags).

Every rule of the reads holds (the ``Host`` allow-list and the token gate stand in front of every route), and a
write must pass more, in this order:

1. **The token in a header**: ``X-Tau-Token`` carries the Portal's token, or the page write key a Stellar page is
   served with (:func:`page_write_key`, derived from the token). The cookie a page holds is never enough, and
   neither is ``Authorization``: behind ``jupyter-server-proxy`` the proxy adds ``Authorization: Bearer`` to every
   request it forwards, a page of another site's included. A page of another origin cannot send a custom header
   without a CORS preflight, which the Portal never grants, and cannot read a Stellar page to learn its key.
2. **Origin**: a request a browser sent says where from. ``Origin: null`` and an origin whose host the ``Host``
   allow-list would refuse are refused, and so is ``Sec-Fetch-Site`` other than ``same-origin`` or ``none``.
   A request without these headers is no browser's (a script with the token).
3. **A JSON body of bounded size**: ``Content-Type: application/json`` (a form cannot be posted across sites
   without a preflight then), at most :data:`MAX_BODY_BYTES`; an object with known keys only.

Each refusal is TauGrid's error envelope, in words saying what to send instead.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from starlette.types import Receive, Scope

from .errors import V2Error

__all__ = [
    "MAX_AUTHOR_CHARS",
    "MAX_BODY_BYTES",
    "MAX_NOTE_CHARS",
    "MAX_TAG_KEY_CHARS",
    "MAX_TAG_VALUE_CHARS",
    "RESERVED_TAG_PREFIXES",
    "WRITE_TOKEN_HEADER",
    "WriteGate",
    "check_author",
    "check_note_text",
    "check_tag_key",
    "check_tag_value",
    "page_write_key",
]

WRITE_TOKEN_HEADER = "X-Tau-Token"
MAX_BODY_BYTES = 64 * 1024
MAX_NOTE_CHARS = 10_000
MAX_AUTHOR_CHARS = 128
MAX_TAG_KEY_CHARS = 128
MAX_TAG_VALUE_CHARS = 1024
# The collector's own tags (workspace, status, importer provenance): written by it, never by a person.
RESERVED_TAG_PREFIXES = ("tau_", "tau.", "jsonl.")
_SAFE_FETCH_SITES = ("same-origin", "none")


def page_write_key(token: str) -> str:
    """The key a Stellar page sends in ``X-Tau-Token``: derived from the token, useless for reads."""
    return hmac.new(token.encode(), b"tau-portal-page-write", hashlib.sha256).hexdigest()


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin-1")
    return None


def _control(text: str, allowed: str = "") -> bool:
    return any((ord(c) < 32 and c not in allowed) or ord(c) == 127 for c in text)


def check_note_text(value: Any) -> str:
    if not isinstance(value, str):
        raise V2Error(400, "INVALID_ARGUMENT", "text must be a string: the note's text")
    if not value.strip():
        raise V2Error(400, "INVALID_ARGUMENT", "text is empty: a note needs some text")
    if len(value) > MAX_NOTE_CHARS:
        raise V2Error(400, "INVALID_ARGUMENT", f"text is {len(value)} characters long; a note holds at most "
                                               f"{MAX_NOTE_CHARS}")
    if _control(value, "\n\t\r"):
        raise V2Error(400, "INVALID_ARGUMENT", "text holds a control character (only newlines and tabs may be in "
                                               "a note)")
    return value.strip()


def check_author(value: Any, default: str) -> str:
    if value is None:
        return default
    if not isinstance(value, str) or not value.strip():
        raise V2Error(400, "INVALID_ARGUMENT", "author must be a non-empty string (or left out: the Portal's user)")
    if len(value) > MAX_AUTHOR_CHARS or _control(value):
        raise V2Error(400, "INVALID_ARGUMENT", f"author must be at most {MAX_AUTHOR_CHARS} characters, without "
                                               "control characters")
    return value.strip()


def check_tag_key(key: str) -> str:
    if not key:
        raise V2Error(400, "INVALID_ARGUMENT", "the tag key is empty")
    if len(key) > MAX_TAG_KEY_CHARS:
        raise V2Error(400, "INVALID_ARGUMENT", f"the tag key is {len(key)} characters long; at most "
                                               f"{MAX_TAG_KEY_CHARS}")
    if "=" in key or _control(key):
        raise V2Error(400, "INVALID_ARGUMENT", f"tag key {key!r} may not hold '=' or control characters (a tag is "
                                               "filtered as key=value)")
    if key.startswith(RESERVED_TAG_PREFIXES):
        raise V2Error(400, "INVALID_ARGUMENT", f"tag key {key!r} is reserved for the collector (keys starting with "
                                               f"{', '.join(RESERVED_TAG_PREFIXES)}); choose another key")
    return key


def check_tag_value(value: Any) -> str:
    if not isinstance(value, str):
        raise V2Error(400, "INVALID_ARGUMENT", "value must be a string: the tag's value")
    if len(value) > MAX_TAG_VALUE_CHARS or _control(value):
        raise V2Error(400, "INVALID_ARGUMENT", f"the tag value must be at most {MAX_TAG_VALUE_CHARS} characters, "
                                               "without control characters")
    return value.strip()


class WriteGate:
    """The checks of the module doc for one Portal: its token, and the ``Host`` rule applied to ``Origin``."""

    def __init__(self, token: str, host_allowed: Callable[[str], bool]) -> None:
        self.page_key = page_write_key(token)  # what the Stellar pages are served with
        self._secrets = (token.encode(), self.page_key.encode())
        self._host_allowed = host_allowed

    def _credential(self, scope: Scope) -> None:
        given = _header(scope, WRITE_TOKEN_HEADER.lower().encode())
        if not given:
            raise V2Error(401, "UNAUTHORIZED", f"a write needs the Portal's token in the {WRITE_TOKEN_HEADER} "
                                               "header (a cookie or Authorization alone never authorizes a write)")
        given_bytes = given.strip().encode("utf-8", "replace")
        if not any(hmac.compare_digest(given_bytes, s) for s in self._secrets):
            raise V2Error(401, "UNAUTHORIZED", f"the {WRITE_TOKEN_HEADER} header does not carry this Portal's "
                                               "token (a restarted Portal has a new one: reload the page)")

    def _origin(self, scope: Scope) -> None:
        site = _header(scope, b"sec-fetch-site")
        if site is not None and site.strip().lower() not in _SAFE_FETCH_SITES:
            raise V2Error(403, "CROSS_SITE_WRITE", f"a write from another site is refused (Sec-Fetch-Site: "
                                                   f"{site.strip()}); write from the Portal's own pages or a script")
        origin = _header(scope, b"origin")
        if origin is None:
            return
        parts = urlsplit(origin.strip())
        if origin.strip().lower() == "null" or parts.scheme not in ("http", "https") or not parts.netloc:
            raise V2Error(403, "CROSS_SITE_WRITE", f"a write from origin {origin.strip()!r} is refused: writes come "
                                                   "from the Portal's own pages or a script")
        if not self._host_allowed(parts.netloc):
            raise V2Error(403, "CROSS_SITE_WRITE", f"a write from origin {origin.strip()!r} is refused: its host is "
                                                   "not one this Portal answers (see --allow-host)")

    async def body(self, scope: Scope, receive: Receive, *, allowed: Iterable[str],
                   needs_body: bool = True) -> Mapping[str, Any]:
        """The checked JSON object a write carries (empty for a write without a body); raises :class:`V2Error`."""
        self._credential(scope)
        self._origin(scope)
        if not needs_body:
            return {}
        content_type = (_header(scope, b"content-type") or "").split(";", 1)[0].strip().lower()
        if content_type != "application/json":
            raise V2Error(415, "UNSUPPORTED_MEDIA_TYPE", "a write's body is JSON: send Content-Type: "
                                                         "application/json")
        length = _header(scope, b"content-length")
        if length is not None and length.strip().isdigit() and int(length) > MAX_BODY_BYTES:
            raise V2Error(413, "BODY_TOO_LARGE", f"the body is {int(length)} bytes; a write carries at most "
                                                 f"{MAX_BODY_BYTES}")
        raw = bytearray()
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise V2Error(400, "INVALID_ARGUMENT", "the client went away before sending the body")
            raw += message.get("body", b"")
            more = message.get("more_body", False)
            if len(raw) > MAX_BODY_BYTES:
                raise V2Error(413, "BODY_TOO_LARGE", f"the body is over {MAX_BODY_BYTES} bytes, the most a write "
                                                     "carries")
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise V2Error(400, "INVALID_ARGUMENT", f"the body is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise V2Error(400, "INVALID_ARGUMENT", "the body must be a JSON object")
        unknown = sorted(set(data) - set(allowed))
        if unknown:
            raise V2Error(400, "INVALID_ARGUMENT", f"unknown field(s) {', '.join(map(repr, unknown))}; a write "
                                                   f"takes {', '.join(sorted(allowed))}")
        return data
