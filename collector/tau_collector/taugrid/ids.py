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

import hashlib
import re

from tau_collector.taugrid.gojson import go_quote

__all__ = ["MAX_ID_BYTES", "InvalidID", "derive_id", "go_lower", "go_trim", "id_from_title", "id_problem",
           "is_valid_id", "kubernetes_label_value", "unreachable_id", "validate_id"]

# TauGrid's decodeV2PathID: the longest path id (in bytes) the v2 Stellar API serves.
MAX_ID_BYTES = 512

_OTHER = re.compile(r"[^a-z0-9._-]+")


class InvalidID(ValueError):
    """An id that breaks TauGrid's rule; the message is TauGrid's own."""


def validate_id(kind: str, value: str) -> str:
    """``value`` if it is a valid TauGrid id, else :class:`InvalidID` with TauGrid's message naming ``kind``."""
    problem = id_problem(kind, value) if isinstance(value, str) else f"{kind} is required"
    if problem:
        raise InvalidID(problem)
    if len(value) > MAX_ID_BYTES:  # ASCII by now: characters are bytes
        raise InvalidID(_too_long(kind, value))
    return value


def _too_long(kind: str, value: str) -> str:
    # The id itself is not quoted whole: it is long enough to bury the message.
    return (f"{kind} {go_quote(value[:40] + '...')} is invalid ({len(value.encode('utf-8', 'surrogatepass'))} bytes; "
            f"at most {MAX_ID_BYTES}, the longest id TauGrid's v2 API serves in a path)")


def unreachable_id(kind: str, value: str) -> str | None:
    """Why the v2 API could not name ``value`` in a path (TauGrid's ``decodeV2PathID`` after unescaping), or None.

    Looser than :func:`validate_id` (stores may hold ids that break the ID rule; they are served by exact
    equality) but with the same length limit: empty or blank, ``.``, ``..``, ``/``, ``\\``, NUL, surrounding
    space (the handlers trim it away), more than :data:`MAX_ID_BYTES` bytes.
    """
    if not value or value.strip() != value or value in (".", "..") or any(c in value for c in "/\\\x00"):
        return (f"{kind} {go_quote(value)} cannot be named in an API path "
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


# -- identity rules (exptelemetry.ValidateID, experiment.KubernetesLabelValue) ----------


def id_problem(kind: str, value: str) -> str | None:
    """TauGrid's ``ValidateID`` message for ``value``, or None when it is a valid id (no length limit)."""
    if value == "":
        return f"{kind} is required"
    invalid = f"{kind} {go_quote(value)} is invalid (use lowercase alphanumerics with internal '-', '_' or '.')"
    if go_trim(value) != value or "/" in value or "\\" in value:
        return invalid
    last = len(value.encode("utf-8", "surrogatepass")) - 1
    at = 0
    for ch in value:
        if not ("a" <= ch <= "z" or "0" <= ch <= "9" or ch in "-_."):
            return invalid
        if (at == 0 or at == last) and ch in "-_.":
            return f"{kind} {go_quote(value)} is invalid (must start and end with an alphanumeric)"
        at += 1
    return None


# Go's unicode.IsSpace: the characters strings.TrimSpace removes.
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
            "\u2028\u2029\u202f\u205f\u3000"


def go_trim(value: str) -> str:
    """Go's ``strings.TrimSpace`` (Python's ``str.strip`` also removes U+001C..U+001F)."""
    return value.strip(_GO_SPACE)


def _label_hash(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _valid_label(value: str) -> bool:
    for ch in value:
        if not (ch.islower() or ch.isdigit() or ch in "-_."):
            return False
    return value[:1] in _LABEL_EDGE and value[-1:] in _LABEL_EDGE


_LABEL_EDGE = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


def kubernetes_label_value(value: str) -> str:
    """TauGrid's ``KubernetesLabelValue``: trimmed, lowercased, each run of characters outside
    ``[a-z0-9._-]`` one ``-``, ``-_.`` trimmed from the ends; a 12-hex SHA-256 of the trimmed text when
    nothing is left; past 63 bytes cut to fit ``-<hash>``."""
    original = go_trim(value)
    if not original:
        return ""
    out: list[str] = []
    dash = False
    for ch in go_lower(original):
        if "a" <= ch <= "z" or "0" <= ch <= "9" or ch in "-_.":
            out.append(ch)
            dash = False
        elif not dash:
            out.append("-")
            dash = True
    normalized = "".join(out).strip("-_.") or _label_hash(original)
    if len(normalized) <= 63 and _valid_label(normalized):
        return normalized
    suffix = "-" + _label_hash(original)
    limit = 63 - len(suffix)
    normalized = normalized[:limit].strip("-_.")
    return normalized + suffix if normalized else suffix.strip("-")


def go_lower(value: str) -> str:
    # Go's strings.ToLower maps each rune alone ("İ" is "i", no final-sigma rule).
    return "".join(ch.lower()[0] for ch in value)


def id_from_title(title: str) -> str:
    """TauGrid's ``experiment.IDFromTitle``: the experiment id a human-written title stands for."""
    return kubernetes_label_value(title)


