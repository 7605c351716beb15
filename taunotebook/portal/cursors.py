"""Listing cursors: the last item of a page and the query's filters, signed so that only this Portal's pages resume.

TauGrid's v2 listings (``/experiments/search``, ``/experiments/{id}/runs``) page by an opaque cursor. Ours is
``{"v":1,"f":<filter hash>,"t":<sort time>,"i":<item id>}`` with an HMAC-SHA256 of it, URL-safe base64: a
cursor from another server (another key), an edited one, or one of another query is ``400 INVALID_CURSOR``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets

from .errors import V2Error

__all__ = ["Cursors"]

_TOKEN = re.compile(r"[A-Za-z0-9_-]+")


class Cursors:
    """Signs and reads the cursors of one Portal (per process unless a key is given: workers share one)."""

    def __init__(self, key: bytes | None = None) -> None:
        self._key = key or secrets.token_bytes(32)

    def encode(self, filter_hash: str, sort_at: str, item_id: str) -> str:
        body = json.dumps({"v": 1, "f": filter_hash, "t": sort_at, "i": item_id}, separators=(",", ":")).encode()
        mac = hmac.new(self._key, body, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(body + mac).decode().rstrip("=")

    def decode(self, raw: str, filter_hash: str) -> tuple[str, str] | None:
        """(sort time, item id) of a cursor of this query, None for no cursor; ``400 INVALID_CURSOR`` otherwise."""
        if not raw:
            return None
        try:
            if not _TOKEN.fullmatch(raw):
                raise ValueError
            token = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4))
        except ValueError:
            raise V2Error(400, "INVALID_CURSOR", "cursor is malformed") from None
        if len(token) <= 32:
            raise V2Error(400, "INVALID_CURSOR", "cursor is malformed")
        body, signature = token[:-32], token[-32:]
        if not hmac.compare_digest(signature, hmac.new(self._key, body, hashlib.sha256).digest()):
            raise V2Error(400, "INVALID_CURSOR", "cursor signature is invalid")
        try:
            payload = json.loads(body)
            ok = (payload.get("v") == 1 and payload.get("f") == filter_hash
                  and isinstance(payload.get("t"), str) and payload["t"]
                  and isinstance(payload.get("i"), str) and payload["i"])
        except (ValueError, AttributeError):
            ok = False
        if not ok:
            raise V2Error(400, "INVALID_CURSOR", "cursor does not match this query")
        return payload["t"], payload["i"]
