"""The client's exceptions: TauGrid's error envelope as typed errors, and any other answer turned into one."""

from __future__ import annotations

import email.utils
import http
import json
import math
from datetime import UTC, datetime
from typing import Any

import httpx

from taunotebook.error_classes import classify

__all__ = [
    "ENV_TOKEN",
    "ENV_URL",
    "AuthorizationError",
    "ClientError",
    "DependencyError",
    "InternalError",
    "NotFoundError",
    "PortalError",
    "PortalUnreachable",
    "error_from_response",
    "redact",
    "retry_after",
]

ENV_URL = "TAU_PORTAL_URL"
ENV_TOKEN = "TAU_PORTAL_TOKEN"
# A server asking for a very long pause (or a hostile one) must not hang a notebook cell for hours.
MAX_RETRY_AFTER_SECONDS = 60.0


class PortalError(Exception):
    """An error answer from the Portal, carrying TauGrid's envelope fields.

    ``status`` is the HTTP status (``None`` when the Portal was never reached); ``code``, ``message``,
    ``classification`` and ``retryable`` come from ``{"error": {...}}`` when the server sent TauGrid's
    envelope, and are derived from the status otherwise. ``attempts`` counts the requests made.
    """

    def __init__(
        self,
        status: int | None,
        code: str,
        message: str,
        classification: str,
        retryable: bool,
        *,
        method: str = "GET",
        url: str = "",
        attempts: int = 1,
        body: Any = None,
    ) -> None:
        self.status = status
        self.code = code
        self.message = message
        self.classification = classification
        self.retryable = retryable
        self.method = method
        self.url = url
        self.attempts = attempts
        self.body = body
        super().__init__(self._describe())

    def _describe(self) -> str:
        where = f" ({self.method} {self.url})" if self.url else ""
        status = f"{self.status} " if self.status is not None else ""
        tries = f"; gave up after {self.attempts} attempts" if self.attempts > 1 else ""
        hint = _HINTS.get(type(self), "")
        return f"{status}{self.code}: {self.message}{where}{tries}{hint}"

    def __str__(self) -> str:
        # attempts is filled in after construction by the retry loop; describe the final state.
        return self._describe()

    def __reduce__(self):
        # Exceptions cross process boundaries (multiprocessing, ipyparallel); rebuild with every field.
        kw = {"method": self.method, "url": self.url, "attempts": self.attempts, "body": self.body}
        args = (self.status, self.code, self.message, self.classification, self.retryable)
        return _rebuild_error, (type(self), args, kw)


def _rebuild_error(cls: type[PortalError], args: tuple, kw: dict[str, Any]) -> PortalError:
    return cls(*args, **kw)


class AuthorizationError(PortalError):
    """401/403: no token, a wrong token, or a workspace this caller may not read."""


class NotFoundError(PortalError):
    """404: the run, experiment or route does not exist in this workspace."""


class ClientError(PortalError):
    """Any other 4xx: the request itself is wrong (bad parameter, cursor, path id); retrying will not help."""


class DependencyError(PortalError):
    """502/503/504: a source behind the Portal (Kusto, the store) failed or is unavailable; usually retryable."""


class InternalError(PortalError):
    """Any other 5xx."""


class PortalUnreachable(PortalError):
    """No HTTP answer at all: connection refused, DNS failure, timeout, connection dropped."""


_HINTS: dict[type, str] = {
    AuthorizationError: f" — pass token= or set {ENV_TOKEN} (the token printed by `taunotebook portal`)",
    PortalUnreachable: f" — is the Portal running at this address? (base_url= or {ENV_URL})",
}

_BY_CLASSIFICATION: dict[str, type[PortalError]] = {
    "authorization": AuthorizationError,
    "not_found": NotFoundError,
    "client": ClientError,
    "dependency": DependencyError,
    "internal": InternalError,
}


def _classify_status(status: int) -> tuple[str, bool]:
    """TauGrid's rule, plus one of ours: a 429 (not a TauGrid v2 code) from a gateway is worth waiting for."""
    classification, retryable = classify(status)
    return classification, retryable or status == 429


def _status_code_name(status: int) -> str:
    try:
        return http.HTTPStatus(status).name
    except ValueError:
        return f"HTTP_{status}"


def error_from_response(response: httpx.Response) -> PortalError:
    """Turn any non-2xx answer into a typed error, whether or not it is TauGrid's v2 envelope."""
    status = response.status_code
    classification, retryable = _classify_status(status)
    code = _status_code_name(status)
    message = response.reason_phrase or code
    body: Any
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        body = response.text
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        # TauGrid's v2 envelope: {"error": {"code", "message", "classification", "retryable"}}.
        env = body["error"]
        code = str(env.get("code") or code)
        message = str(env.get("message") or message)
        classification = str(env.get("classification") or classification)
        if isinstance(env.get("retryable"), bool):
            retryable = env["retryable"]
    elif isinstance(body, dict) and "error" in body:
        # The Portal boundary's {"error": "..."}, or the deprecated API's {"error", "code", "detail", "status"}.
        if isinstance(body.get("code"), str) and body["code"]:
            code = body["code"]
        parts = [str(body["error"])]
        if body.get("detail"):
            parts.append(str(body["detail"]))
        message = ": ".join(p for p in parts if p)
    elif isinstance(body, dict) and "reason" in body:
        # The Portal boundary's workspace gate: {"reason", "scope", "state"}.
        context = ", ".join(f"{k}={body[k]}" for k in ("scope", "state") if body.get(k))
        message = str(body["reason"]) + (f" ({context})" if context else "")
    elif isinstance(body, str) and body.strip():
        # Proxies answer with plain text or HTML; the first line is usually the useful part.
        message = body.strip().splitlines()[0][:200]
    if 300 <= status < 400:
        location = response.headers.get("location", "")
        message = f"redirected to {location or '?'}; the Portal URL may be wrong or need a sign-in"
    cls = _BY_CLASSIFICATION.get(classification)
    if cls is None:
        # An unknown classification from a newer server: fall back on the status, never lose the error.
        cls = _BY_CLASSIFICATION[_classify_status(status)[0]]
    request = response.request
    return cls(
        status,
        code,
        message,
        classification,
        retryable,
        method=request.method,
        url=redact(request.url),
        body=body,
    )


def redact(url: httpx.URL) -> str:
    # Error messages end up in notebooks and logs; a ?token= copied into the base URL must not.
    return str(url.copy_remove_param("token"))


def retry_after(response: httpx.Response | None) -> float | None:
    """The server's ``Retry-After`` in seconds (0 .. :data:`MAX_RETRY_AFTER_SECONDS`), or None."""
    if response is None:
        return None
    value = response.headers.get("retry-after")
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    if math.isnan(seconds):
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_SECONDS)
