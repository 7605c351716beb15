"""TauGrid's v2 wire pieces: the error envelope, the metadata block, and Go-compatible JSON bodies."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from decimal import Decimal

from starlette.responses import Response

__all__ = [
    "SECURITY_HEADERS",
    "V2Error",
    "classify",
    "encode_json",
    "error_body",
    "error_response",
    "json_response",
    "metadata",
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


def classify(status: int) -> tuple[str, bool]:
    """(classification, retryable) for a status, by TauGrid's ``WriteV2Error`` rules."""
    if status in (401, 403):
        return "authorization", False
    if status == 404:
        return "not_found", False
    if status in (502, 503, 504):
        return "dependency", True
    if status >= 500:
        return "internal", True
    return "client", False


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


def rfc3339_now() -> str:
    """Go's ``time.Now().UTC().Format(time.RFC3339)``: whole seconds, ``Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def metadata(requested_source: str, served_sources: Iterable[str], partial: bool,
             warnings: Sequence[str] = ()) -> dict:
    """The v2 ``metadata`` block (TAUGRID-REFERENCE §3.1); empty lists are omitted as Go's omitempty does."""
    now = rfc3339_now()
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


# -- Go encoding/json, SetEscapeHTML(false) ------------------------------------------------


def go_float(value: float) -> str:
    """A float64 as Go's encoding/json writes it: shortest digits, ``1`` not ``1.0``, ``1e-7``, ``1e+21``."""
    if not math.isfinite(value):
        raise ValueError("non-finite float has no JSON form")  # Go refuses too; callers drop such points
    text = repr(value)
    if "e" not in text:
        return text[:-2] if text.endswith(".0") else text
    magnitude = abs(value)
    if 1e-6 <= magnitude < 1e21:
        # Python switches to exponent form earlier than Go does; reuse the shortest digits positionally.
        text = format(Decimal(text), "f")
        return text
    mantissa, exponent = text.split("e")
    exp = int(exponent)
    return f"{mantissa}e{'+' if exp >= 0 else '-'}{abs(exp)}"


def _go_string(text: str) -> str:
    # ensure_ascii=False leaves U+2028/U+2029 raw; Go escapes them even with SetEscapeHTML(false).
    return json.dumps(text, ensure_ascii=False).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _encode(obj: object, out: list[str]) -> None:
    if obj is None:
        out.append("null")
    elif obj is True:
        out.append("true")
    elif obj is False:
        out.append("false")
    elif isinstance(obj, str):
        out.append(_go_string(obj))
    elif isinstance(obj, int):
        out.append(str(obj))
    elif isinstance(obj, float):
        out.append(go_float(obj))
    elif isinstance(obj, dict):
        out.append("{")
        first = True
        for key, value in obj.items():
            if not first:
                out.append(",")
            first = False
            out.append(_go_string(str(key)))
            out.append(":")
            _encode(value, out)
        out.append("}")
    elif isinstance(obj, RawJSON):
        out.append(obj.text)
    elif isinstance(obj, list | tuple):
        out.append("[")
        for i, value in enumerate(obj):
            if i:
                out.append(",")
            _encode(value, out)
        out.append("]")
    else:
        raise TypeError(f"cannot encode {type(obj).__name__} as JSON")


class RawJSON:
    """Pre-encoded JSON spliced in as is (the series points, encoded in bulk)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def encode_json(obj: object) -> bytes:
    """Compact, not HTML-escaped, key order kept, trailing newline: Go's ``json.Encoder`` output."""
    out: list[str] = []
    _encode(obj, out)
    out.append("\n")
    return "".join(out).encode("utf-8", "replace")
