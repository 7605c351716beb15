"""TauGrid's rule from an HTTP status to an error classification, shared by the Portal and its client.

The Portal writes it into every error envelope (``WriteV2Error`` in TauGrid's ``expapi/v2.go``); the
client applies it to answers that carry no envelope (a proxy's page, a gateway's 502). It lives here,
outside both, because the kernel side must not import the server's web framework.
"""

from __future__ import annotations

__all__ = ["CLASSIFICATIONS", "classify"]

CLASSIFICATIONS = ("client", "authorization", "not_found", "dependency", "internal")


def classify(status: int) -> tuple[str, bool]:
    """(classification, retryable) for an HTTP error status, by TauGrid's rules."""
    if status in (401, 403):
        return "authorization", False
    if status == 404:
        return "not_found", False
    if status in (502, 503, 504):
        return "dependency", True
    if status >= 500:
        return "internal", True
    return "client", False
