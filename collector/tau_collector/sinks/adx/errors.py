"""What the ADX sinks tell about a failed Azure call: retry or stop (TauGrid's rules), and the words to say it in.

``adx-queued-v1`` and ``adx-streaming`` classify every storage, ingestion and Kusto error the same
way (``adx_queued.go``): throttling, timeouts, HTTP 408/409/429/5xx and network failures are
retried; authentication failures and HTTP 400/401/403/404 are fatal. Messages never carry a SAS.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

__all__ = ["describe", "http_status", "is_retryable", "redact_url"]

_RETRYABLE_HTTP = frozenset({408, 409, 429})
_FATAL_HTTP = frozenset({400, 401, 403, 404})
_SIGNED_QUERY = re.compile(r"(https?://[^\s?'\"<>]+)\?[^\s'\"<>]*")
_SAS_PARAM = re.compile(r"(?i)\b(sig|se|st|sp|sv|spr|srt|ss|skoid|sktid|skt|ske|sks|skv)=[^&\s'\"]+")


def http_status(error: BaseException) -> int | None:
    """The HTTP status an Azure SDK error carries, if any."""
    status = getattr(error, "status_code", None)
    if isinstance(status, int):
        return status
    response = getattr(error, "http_response", None) or getattr(error, "response", None)
    status = getattr(response, "status_code", None) or getattr(response, "status", None)
    return status if isinstance(status, int) else None


def is_retryable(error: BaseException) -> bool:
    """True when TauGrid would retry this error (throttling, timeouts, 5xx, network), False when fatal."""
    from azure.core.exceptions import (
        ClientAuthenticationError,
        ServiceRequestError,
        ServiceResponseError,
    )
    from azure.kusto.data.exceptions import (
        KustoAuthenticationError,
        KustoNetworkError,
        KustoThrottlingError,
    )

    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (ClientAuthenticationError, KustoAuthenticationError)):
            return False
        if isinstance(current, (KustoThrottlingError, KustoNetworkError)):
            return True
        status = http_status(current)
        if status is not None:
            if status in _FATAL_HTTP:
                return False
            return status in _RETRYABLE_HTTP or status >= 500
        if isinstance(current, (ServiceRequestError, ServiceResponseError, ConnectionError, TimeoutError)):
            return True
        if type(current).__module__.startswith(("requests", "urllib3")) and isinstance(current, OSError):
            return True  # requests' ConnectionError/Timeout: the endpoint is unreachable right now
        current = current.__cause__ or current.__context__
    return False


def redact_url(url: str) -> str:
    """A storage URL without its SAS, for error messages."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def describe(error: BaseException) -> str:
    """``ExceptionType [HTTP status]: message`` on one line, at most 400 characters of message, no SAS."""
    status = None
    current: BaseException | None = error
    while current is not None and status is None:
        status = http_status(current)
        current = current.__cause__
    text = " ".join(str(error).split())
    # Storage errors may quote signed URLs; never print a SAS.
    text = _SIGNED_QUERY.sub(r"\1?REDACTED", text)
    text = _SAS_PARAM.sub(r"\1=REDACTED", text)
    head = f"{type(error).__name__}" + (f" HTTP {status}" if status else "")
    return f"{head}: {text[:400]}"
