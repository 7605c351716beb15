"""Typed failures of a Kusto read, one per TauGrid v2 envelope (``KUSTO-READS.md`` §4.5).

The v2 layer maps them without reading their text: :class:`KustoUpstreamError` → 502
``UPSTREAM_FAILURE``, :class:`KustoUnavailable` → 503 ``SOURCE_UNAVAILABLE``, :class:`KustoTimeout` → 504
``UPSTREAM_TIMEOUT``. All three are dependency errors, retryable. A read that fails midway raises;
it never returns the rows it had, so partial data is never presented as whole.
"""

from __future__ import annotations

__all__ = ["AmbiguousRunError", "KustoError", "KustoTimeout", "KustoUnavailable", "KustoUpstreamError"]


class KustoError(Exception):
    """A Kusto read failed. ``status`` and ``code`` are the v2 envelope's; the message says what and where."""

    status = 502
    code = "UPSTREAM_FAILURE"

    def __init__(self, message: str, *, kind: str = "") -> None:
        super().__init__(message)
        self.kind = kind  # the upstream fault's class, e.g. "throttled", "unauthorized", "query", "network"


class KustoUpstreamError(KustoError):
    """The cluster answered with an error, or an answer that cannot be read (502 ``UPSTREAM_FAILURE``)."""


class KustoUnavailable(KustoError):
    """No Kusto source is configured for this Portal (503 ``SOURCE_UNAVAILABLE``).

    A configured cluster that cannot be reached is a 502 ``UPSTREAM_FAILURE``, as in TauGrid (every
    transport error there is ``execute Kusto query: ...``)."""

    status = 503
    code = "SOURCE_UNAVAILABLE"


class KustoTimeout(KustoError):
    """The cluster did not answer in time (504 ``UPSTREAM_TIMEOUT``)."""

    status = 504
    code = "UPSTREAM_TIMEOUT"


class AmbiguousRunError(LookupError):
    """A run id names runs in several projects of the workspace (TauGrid's 409 ``CONFLICT``); pass ``project``."""

    status = 409
    code = "CONFLICT"

    def __init__(self, run_id: str, projects: list[str]) -> None:
        super().__init__(f"run {run_id!r} exists in projects {', '.join(sorted(projects))}; name the project "
                         "(project=)")
        self.run_id = run_id
        self.projects = projects
