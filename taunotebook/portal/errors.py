"""TauGrid's v2 wire pieces: the error envelope, the metadata block, and Go-compatible JSON bodies."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from starlette.responses import Response

from tau_collector.taugrid.gojson import RawJSON, encode_float, marshal
from taunotebook.error_classes import classify

__all__ = [
    "SECURITY_HEADERS",
    "RawJSON",
    "V2Error",
    "classify",
    "encode_json",
    "error_body",
    "error_response",
    "json_response",
    "metadata",
    "metadata_json",
    "rfc3339_now",
]

# Sent on every response, as TauGrid's setSecurityHeaders does.
SECURITY_HEADERS = {"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY"}


class V2Error(Exception):
    """A request that ends in TauGrid's typed error envelope (raised by handlers, rendered once)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def error_body(status: int, code: str, message: str) -> dict:
    classification, retryable = classify(status)
    return {"error": {"code": code, "message": message, "classification": classification, "retryable": retryable}}


def error_response(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> Response:
    return json_response(error_body(status, code, message), status, headers)


def json_response(body: object, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    merged = dict(SECURITY_HEADERS)
    if headers:
        merged.update(headers)
    return Response(encode_json(body), status_code=status, media_type="application/json", headers=merged)


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


# -- Go encoding/json, SetEscapeHTML(false): tau_collector.taugrid.gojson does the encoding -----------------

go_float = encode_float  # a float64 as Go writes it; refuses non-finite values, as Go does


def encode_json(obj: object) -> bytes:
    """Compact, not HTML-escaped, key order kept, trailing newline: Go's ``json.Encoder`` output."""
    return marshal(obj, escape_html=False) + b"\n"
