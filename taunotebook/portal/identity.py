"""Which run, experiment or project a request names: path ids decoded exactly once, TauGrid's two id rules.

**Decoded once.** A path segment is read from the raw request path (ASGI ``raw_path``, :mod:`.dispatch`) and
percent-decoded exactly once, so ``/runs/pct%2561x`` names the run ``pct%61x`` and never ``pctax``:
every client that escapes an id once (``encodeURIComponent``, :func:`taunotebook.client.links.path_segment`)
reads back the same id. TauGrid's Go handlers unescape the already-decoded ``r.URL.Path`` a second
time; for the ids TauGrid can hold (its ID rule admits no ``%``) both readings agree.

**The path rule** (``decodeV2PathID``): unescape, trim; empty, ``.``, ``..``, ``/``, ``\\``, NUL or more
than 512 bytes is ``400 INVALID_PATH`` (:func:`tau_collector.taugrid.ids.unreachable_id`, whose limit the collector's
flags and the store's writer apply too, so that every stored run can be named here).

**The ID rule** (``ValidateID``, :mod:`tau_collector.taugrid.ids`) decides how a miss is answered. An id
that breaks it cannot name anything TauGrid stores, so asking for one that names nothing here is
``400 INVALID_ARGUMENT`` with TauGrid's message (``run_id "Run A" is invalid (use lowercase ...)``);
a valid id that names nothing is TauGrid's ``404 NOT_FOUND``. Stores written before ids were
checked may hold runs whose ids break the rule: those are still served, looked up by exact
equality, so such an id reaches its own run and only its own. Another workspace's run is
answered exactly like a missing one.
"""

from __future__ import annotations

import re
from urllib.parse import unquote_to_bytes

from tau_collector.taugrid.ids import MAX_ID_BYTES, InvalidID, unreachable_id, validate_id

from .errors import V2Error

__all__ = ["MAX_PATH_ID", "NOT_FOUND_MESSAGE", "decode_path_id", "miss"]

MAX_PATH_ID = MAX_ID_BYTES  # one limit for what is collected, stored and served (tau_collector.taugrid.ids)
NOT_FOUND_MESSAGE = "requested experiment data was not found"
_BAD_ESCAPE = re.compile(rb"%(?![0-9A-Fa-f]{2})")


def decode_path_id(raw: bytes | str) -> str:
    """One raw path segment as the id it names: percent-decoded once, trimmed, refused when unsafe."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8")
    if _BAD_ESCAPE.search(raw):  # Go's PathUnescape rejects a '%' without two hex digits
        raise V2Error(400, "INVALID_PATH", "path identifier is invalid")
    try:
        value = unquote_to_bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        raise V2Error(400, "INVALID_PATH", "path identifier is invalid") from None
    value = value.strip()
    if unreachable_id("path identifier", value):
        raise V2Error(400, "INVALID_PATH", "path identifier is invalid")
    return value


def miss(*named: tuple[str, str | None]) -> V2Error:
    """The answer when ``(kind, id)`` pairs name nothing: the first id breaking the ID rule, else 404."""
    for kind, value in named:
        if value:
            try:
                validate_id(kind, value)
            except InvalidID as err:
                return V2Error(400, "INVALID_ARGUMENT", str(err))
    return V2Error(404, "NOT_FOUND", NOT_FOUND_MESSAGE)
