"""The loss pane's status line in words: a healthy poll's, and a failed one's with when it retries."""

from __future__ import annotations

from collections.abc import Iterable

from taunotebook.client import AuthorizationError, NotFoundError, PortalError, PortalUnreachable

__all__ = ["failure_words", "ok_words"]


def ok_words(primary: dict, warnings: Iterable[str]) -> str:
    """``connected`` (or why the primary run failed), then the compare notes and the runs' warnings."""
    warnings = list(warnings)
    text = "connected"
    if primary["state"] == "failed":
        text = "the run failed" + (f": {primary['status_message']}" if primary.get("status_message") else "")
    if warnings:
        text += " — " + "; ".join(dict.fromkeys(warnings))
    return text


def failure_words(err: Exception, interval: float, base_url: str, run_id: str,
                  job_lifecycle: dict | None) -> tuple[str, str]:
    """The status ``(kind, message)`` of a failed poll that is retried in ``interval`` seconds."""
    wait = f"retrying in {interval:.0f} s…" if interval >= 1 else "retrying…"
    if isinstance(err, PortalUnreachable):
        return "unreachable", f"Portal unreachable at {base_url} ({wait})"
    if isinstance(err, AuthorizationError):
        return "unauthorized", (f"the Portal refused access ({err.status} {err.code}): pass token= or set "
                                f"TAU_PORTAL_TOKEN to the token `taunotebook portal` printed ({wait})")
    if isinstance(err, NotFoundError) and job_lifecycle is not None:
        return "not_found", f"run {run_id!r} {job_lifecycle['text']}; no metrics in the Portal yet ({wait})"
    if isinstance(err, NotFoundError):
        return "not_found", (f"run {run_id!r} was not found in the Portal (404) — not indexed yet, or another "
                             f"workspace/project ({wait})")
    if isinstance(err, PortalError):
        return "error", f"the Portal answered {err.status or ''} {err.code}: {err.message} ({wait})"
    return "error", f"the pane failed: {type(err).__name__}: {err} ({wait})"
