"""The Portal's app factory: its readers and sources, the one route table (:mod:`.routes`), and the gates in front.

In front of every route, outermost first: security headers, the Host allow-list, the token gate; in front of the
writes (notes and tags) the write gate besides (:mod:`.writes`: the token in a header, origin, a bounded body).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tau_collector.expstore import StoreReader
from tau_collector.reads import ExperimentReader

from .auth import TokenGate
from .context import Portal
from .errors import SECURITY_HEADERS, error_response
from .hosts import HostAllowList
from .kusto.connection import KustoSettings
from .openapi import openapi_document
from .routes import route_table
from .sources import Sources
from .writes import WriteGate

__all__ = ["create_app", "openapi_document"]

_STATUS_CODES = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED", 409: "CONFLICT"}


def create_app(
    store: str | Path | None,
    *,
    token: str,
    workspace: str = "default",
    default_source: str | None = None,
    kusto: KustoSettings | ExperimentReader | None = None,
    allow_hosts: Iterable[str] = (),
    cursor_key: bytes | None = None,
) -> ASGIApp:
    """The Portal for one store and/or one Kusto database: every route but ``/openapi.json`` needs ``token``.

    ``kusto`` (settings, or a reader) serves ``source=kusto`` and joins ``source=auto``. ``default_source``
    answers requests that name none: ``local``, or ``kusto`` for a Portal without a store.
    ``allow_hosts`` are the names besides loopback names and IP addresses it answers (:mod:`.hosts`).
    ``cursor_key`` signs listing cursors (default: random per process; worker processes share one).
    """
    if isinstance(kusto, KustoSettings):
        from .kusto import KustoConnection, KustoReader

        kusto = KustoReader(KustoConnection(kusto), workspace=workspace)
    reader = StoreReader(store) if store is not None else None
    default_source = default_source or ("local" if reader is not None else "kusto")
    hosts = HostAllowList(None, allow_hosts)  # type: ignore[arg-type]  # its app is set below
    portal = Portal(Sources(reader, default_source=default_source, kusto=kusto), workspace=workspace,
                    cursor_key=cursor_key, store_root=Path(store) if store is not None else None,
                    write_gate=WriteGate(token, hosts.allows) if token else None)
    app = Starlette(routes=route_table(portal, default_source),
                    exception_handlers={HTTPException: _http_error, Exception: _internal_error})
    # Slash redirects would answer unknown API paths with 307 instead of TauGrid's 404 envelope.
    app.router.redirect_slashes = False
    hosts.app = TokenGate(app, token)
    return _SecurityHeaders(hosts)


async def _http_error(request: Request, exc: Exception) -> Response:
    status = getattr(exc, "status_code", 500)
    if status == 404:
        return error_response(404, "NOT_FOUND", "route was not found")
    if status == 405:
        return error_response(405, "METHOD_NOT_ALLOWED", "method not allowed")
    return error_response(status, _STATUS_CODES.get(status, "INTERNAL" if status >= 500 else "INVALID_ARGUMENT"),
                          str(getattr(exc, "detail", "")) or "request failed")


async def _internal_error(request: Request, exc: Exception) -> Response:
    # Never a stack trace on the wire; the server log has it.
    return error_response(500, "INTERNAL", "experiment data request failed")


class _SecurityHeaders:
    """Adds ``nosniff`` and ``DENY`` to every response, pages and errors included."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", [])
                           if k.lower() not in (b"x-content-type-options", b"x-frame-options")]
                headers += [(k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)
