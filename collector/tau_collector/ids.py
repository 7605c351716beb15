"""TauGrid's identifier rule (``ValidateID``, ``core/exptelemetry/names.go``) and the id we derive from a name.

Run, project, experiment, group and workspace ids that cross into a store, a path or a URL follow one rule:
only ``[a-z0-9._-]``, a letter or digit first and last, no surrounding space, no ``/`` or ``\\``. TauGrid sets
no length limit, so neither do we: whatever stores an id on a filesystem must fit long ones itself.
"""

from __future__ import annotations

import json
import re

__all__ = ["InvalidID", "derive_id", "is_valid_id", "validate_id"]

_ALLOWED = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_.")
_EDGE = frozenset("-_.")
_OTHER = re.compile(r"[^a-z0-9._-]+")


class InvalidID(ValueError):
    """An id that breaks TauGrid's rule; the message is TauGrid's own."""


def _quote(value: str) -> str:
    # Go's %q for the strings that reach these messages (JSON quoting differs only for rare control characters).
    return json.dumps(value, ensure_ascii=False)


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
    return value


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
