"""TauGrid's identifier rule (``ValidateID``, ``core/exptelemetry/names.go``) and the id we derive from a name.

Run, project, experiment, group and workspace ids that cross into a store, a path or a URL follow one rule:
only ``[a-z0-9._-]``, a letter or digit first and last, no surrounding space, no ``/`` or ``\\``.

**Length.** TauGrid's ``ValidateID`` sets no length limit, but its v2 Stellar handlers refuse a path id
(``/runs/{run_id}``, ``/experiments/{experiment_id}/runs``) longer than 512 bytes (``decodeV2PathID``,
``portal/internal/expapi/v2.go``): TauGrid's collector would store a run its own API cannot reach. Here
one limit, :data:`MAX_ID_BYTES`, serves both sides: :func:`validate_id` (every flag of ``collect``,
``wrap``, ``project``, the notebook's ``%%tau_submit``, ``import``'s options) refuses a longer id, the
store refuses to register a run or experiment the API could not name (:func:`unreachable_id`), and the
Portal's path rule is :func:`unreachable_id` itself. Ids derived from names (``import``) are shorter.
"""

from __future__ import annotations

import re

from tau_collector.taugrid.gojson import go_quote

__all__ = ["MAX_ID_BYTES", "InvalidID", "derive_id", "is_valid_id", "unreachable_id", "validate_id"]

# TauGrid's decodeV2PathID: the longest path id (in bytes) the v2 Stellar API serves.
MAX_ID_BYTES = 512

_ALLOWED = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_.")
_EDGE = frozenset("-_.")
_OTHER = re.compile(r"[^a-z0-9._-]+")


class InvalidID(ValueError):
    """An id that breaks TauGrid's rule; the message is TauGrid's own."""


def _quote(value: str) -> str:
    return go_quote(value)  # Go's %q, as TauGrid's messages quote


def validate_id(kind: str, value: str) -> str:
    """``value`` if it is a valid TauGrid id, else :class:`InvalidID` with TauGrid's message naming ``kind``."""
    if not isinstance(value, str) or value == "":
        raise InvalidID(f"{kind} is required")
    invalid = f"{kind} {_quote(value)} is invalid (use lowercase alphanumerics with internal '-', '_' or '.')"
    if value.strip() != value or "/" in value or "\\" in value:
        raise InvalidID(invalid)
    for i, c in enumerate(value):
        if c not in _ALLOWED:
            raise InvalidID(invalid)
        if (i == 0 or i == len(value) - 1) and c in _EDGE:
            raise InvalidID(f"{kind} {_quote(value)} is invalid (must start and end with an alphanumeric)")
    if len(value) > MAX_ID_BYTES:  # ASCII by now: characters are bytes
        raise InvalidID(_too_long(kind, value))
    return value


def _too_long(kind: str, value: str) -> str:
    # The id itself is not quoted whole: it is long enough to bury the message.
    return (f"{kind} {_quote(value[:40] + '...')} is invalid ({len(value.encode('utf-8', 'surrogatepass'))} bytes; "
            f"at most {MAX_ID_BYTES}, the longest id TauGrid's v2 API serves in a path)")


def unreachable_id(kind: str, value: str) -> str | None:
    """Why the v2 API could not name ``value`` in a path (TauGrid's ``decodeV2PathID`` after unescaping), or None.

    Looser than :func:`validate_id` (stores may hold ids that break the ID rule; they are served by exact
    equality) but with the same length limit: empty or blank, ``.``, ``..``, ``/``, ``\\``, NUL, surrounding
    space (the handlers trim it away), more than :data:`MAX_ID_BYTES` bytes.
    """
    if not value or value.strip() != value or value in (".", "..") or any(c in value for c in "/\\\x00"):
        return (f"{kind} {_quote(value)} cannot be named in an API path "
                "(empty, '.', '..', '/', '\\', NUL or surrounding space)")
    if len(value.encode("utf-8", "surrogatepass")) > MAX_ID_BYTES:
        return _too_long(kind, value)
    return None


def is_valid_id(value: str) -> bool:
    try:
        validate_id("id", value)
    except InvalidID:
        return False
    return True


def derive_id(text: str, fallback: str = "run") -> str:
    """A valid id made from ``text`` (a path, a name): lowercased, each run of other characters (``/`` too)
    becomes one ``-``, leading and trailing ``.``/``_``/``-`` dropped; ``fallback`` when nothing is left.

    Deterministic and idempotent (a valid id maps to itself); distinct texts can map to one id
    (``Exp 1`` and ``exp-1``), so a caller that needs distinct ids must disambiguate.
    """
    cleaned = _OTHER.sub("-", text.lower()).strip("._-")
    return re.sub(r"-{2,}", "-", cleaned) or fallback
