"""TauGrid's ``metadata`` block (on every answer) and error envelope: their encoders and OpenAPI fragments."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from tau_collector.taugrid.gojson import RawJSON, marshal
from taunotebook.error_classes import classify

from .common import STRINGS

__all__ = ["ERROR_ENVELOPE", "METADATA", "error_body", "metadata", "metadata_json", "rfc3339_now"]

_now_text: tuple[int, str] = (0, "")


def rfc3339_now() -> str:
    """Go's ``time.Now().UTC().Format(time.RFC3339)``: whole seconds, ``Z``."""
    global _now_text
    second = int(time.time())
    if _now_text[0] != second:
        _now_text = (second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    return _now_text[1]


def metadata(requested_source: str, served_sources: Iterable[str], partial: bool,
             warnings: Sequence[str] = (), now: str | None = None) -> dict:
    """The v2 ``metadata`` block (TAUGRID-REFERENCE §3.1); empty lists are omitted as Go's omitempty does."""
    now = now or rfc3339_now()
    served = sorted({s for s in served_sources if s}) or [requested_source]
    availability: dict = {"state": "available"}
    if partial or warnings:
        availability["state"] = "degraded"
        if warnings:
            availability["reasons"] = list(warnings)
    out = {
        "generated_at": now,
        "provenance": {"requested_source": requested_source, "served_sources": served},
        "freshness": {"state": "immediate" if served == ["local"] else "unknown", "as_of": now},
        "availability": availability,
        "partial": bool(partial),
    }
    if warnings:
        out["warnings"] = list(warnings)
    return out


_ENCODED_METADATA: dict[tuple, RawJSON] = {}


def metadata_json(requested_source: str, served_sources: Iterable[str], partial: bool,
                  warnings: Sequence[str] = ()) -> RawJSON:
    """:func:`metadata`, encoded; a block already encoded this second is reused (live panes poll a lot)."""
    now = rfc3339_now()
    key = (now, requested_source, tuple(served_sources), bool(partial), tuple(warnings))
    encoded = _ENCODED_METADATA.get(key)
    if encoded is None:
        if len(_ENCODED_METADATA) >= 256:
            _ENCODED_METADATA.clear()
        block = metadata(requested_source, key[2], partial, warnings, now)
        encoded = _ENCODED_METADATA[key] = RawJSON(marshal(block, escape_html=False).decode())
    return encoded


def error_body(status: int, code: str, message: str) -> dict:
    """TauGrid's error envelope: the code, the message, and how a client should take it."""
    classification, retryable = classify(status)
    return {"error": {"code": code, "message": message, "classification": classification, "retryable": retryable}}


METADATA = {
    "type": "object", "additionalProperties": False,
    "required": ["generated_at", "provenance", "freshness", "availability", "partial"],
    "properties": {
        "generated_at": {"type": "string", "format": "date-time"},
        "provenance": {"type": "object", "additionalProperties": False,
                       "required": ["requested_source", "served_sources"],
                       "properties": {"requested_source": {"type": "string"},
                                      "served_sources": {**STRINGS, "minItems": 1}}},
        "freshness": {"type": "object", "additionalProperties": False, "required": ["state", "as_of"],
                      "properties": {"state": {"type": "string", "enum": ["immediate", "unknown"]},
                                     "as_of": {"type": "string", "format": "date-time"}}},
        "availability": {"type": "object", "additionalProperties": False, "required": ["state"],
                         "properties": {"state": {"type": "string", "enum": ["available", "degraded", "unavailable"]},
                                        "reasons": {**STRINGS, "minItems": 1}}},
        "partial": {"type": "boolean"},
        "warnings": {**STRINGS, "minItems": 1},
    },
}

ERROR_ENVELOPE = {
    "type": "object", "required": ["error"], "additionalProperties": False,
    "properties": {"error": {
        "type": "object", "additionalProperties": False,
        "required": ["code", "message", "classification", "retryable"],
        "properties": {
            "code": {"type": "string"}, "message": {"type": "string"},
            "classification": {"type": "string",
                               "enum": ["client", "authorization", "not_found", "dependency", "internal"]},
            "retryable": {"type": "boolean"},
        }}},
}
