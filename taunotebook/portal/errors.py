"""TauGrid's v2 responses: typed errors and Go-compatible JSON bodies (the metadata block and the error envelope
are encoded by :mod:`.wire.metadata`, re-exported here)."""

from __future__ import annotations

from starlette.responses import Response

from tau_collector.taugrid.gojson import RawJSON, encode_float, marshal
from taunotebook.error_classes import classify

from .wire.metadata import error_body, metadata, metadata_json, rfc3339_now

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


def error_response(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> Response:
    return json_response(error_body(status, code, message), status, headers)


def json_response(body: object, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    merged = dict(SECURITY_HEADERS)
    if headers:
        merged.update(headers)
    return Response(encode_json(body), status_code=status, media_type="application/json", headers=merged)


# -- Go encoding/json, SetEscapeHTML(false): tau_collector.taugrid.gojson does the encoding -----------------

go_float = encode_float  # a float64 as Go writes it; refuses non-finite values, as Go does


def encode_json(obj: object) -> bytes:
    """Compact, not HTML-escaped, key order kept, trailing newline: Go's ``json.Encoder`` output."""
    return marshal(obj, escape_html=False) + b"\n"
