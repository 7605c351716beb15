"""Who may read: the token gate (bearer header or page cookie) and workspace scoping."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from http.cookies import SimpleCookie
from urllib.parse import urlencode

from starlette.responses import HTMLResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from tau_collector.reads import WORKSPACE_TAG, RunRow

from .errors import V2Error, error_response
from .params import parse_query

__all__ = [
    "TokenGate",
    "cookie_name",
    "generate_token",
    "resolve_workspace",
    "run_in_workspace",
]

# Reachable without a token: the schema says nothing about any run.
PUBLIC_PATHS = frozenset({"/openapi.json"})
UNAUTHORIZED_MESSAGE = (
    "a token is required: send 'Authorization: Bearer <token>', or open the URL that "
    "'taunotebook portal' printed (it carries ?token=...)"
)


_UNAUTHORIZED_PAGE = (
    "<!doctype html><html><head><meta charset='utf-8'><title>Tau Portal: token needed</title></head>"
    "<body style='font-family:sans-serif;max-width:40em;margin:3em auto'>"
    "<h1>This Portal needs its token</h1>"
    "<p>The link you opened carries no valid token. Open the URL that <code>taunotebook portal</code> "
    "printed when it started (it ends in <code>?token=...</code>), or the <em>Open in Stellar</em> link "
    "of a loss pane. If the Portal was restarted, it has a new token.</p></body></html>"
)


def _wants_html(scope: Scope) -> bool:
    for name, value in scope.get("headers", ()):
        if name == b"accept":
            return b"text/html" in value
    return False


def generate_token() -> str:
    """A fresh token, as ``jupyter lab`` generates one: 48 hex characters."""
    return secrets.token_hex(24)


def cookie_name(scope: Scope) -> str:
    # Cookies ignore ports, so two Portals on one host would overwrite each other's cookie otherwise.
    server = scope.get("server") or ("", 0)
    return f"tau_portal_{server[1] or 0}"


class TokenGate:
    """ASGI middleware: every route but :data:`PUBLIC_PATHS` needs the token.

    A page opened with ``?token=<t>`` gets an HttpOnly, SameSite=Strict cookie and is redirected to
    the same URL without the token, so the token leaves the address bar and the browser history.
    """

    def __init__(self, app: ASGIApp, token: str) -> None:
        if not token:
            raise ValueError("the Portal needs a non-empty token")
        self.app = app
        self._token = token.encode()
        # The cookie holds a value derived from the token, never the token itself.
        self._cookie_value = hmac.new(self._token, b"tau-portal-cookie", hashlib.sha256).hexdigest()

    def _equal(self, given: str, expected: bytes) -> bool:
        return hmac.compare_digest(given.encode("utf-8", "replace"), expected)

    def _authorized(self, scope: Scope) -> bool:
        wanted_cookie = cookie_name(scope)
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                scheme, _, credential = value.decode("latin-1").strip().partition(" ")
                if scheme.lower() == "bearer" and self._equal(credential.strip(), self._token):
                    return True
            elif name == b"cookie":
                jar = SimpleCookie()
                try:
                    jar.load(value.decode("latin-1"))
                except Exception:  # a malformed Cookie header is simply no credential
                    continue
                morsel = jar.get(wanted_cookie)
                if morsel is not None and self._equal(morsel.value, self._cookie_value.encode()):
                    return True
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        if path in PUBLIC_PATHS:
            await self.app(scope, receive, send)
            return
        # Only a page URL carrying ?token= needs the query parsed here (most requests are API polls).
        query = parse_query(scope) if b"token=" in scope.get("query_string", b"") else []
        given = [v for k, v in query if k == "token"]
        if given and not path.startswith("/api/") and scope.get("method") in ("GET", "HEAD"):
            if self._equal(given[0], self._token):
                await self._set_cookie_and_redirect(scope, receive, send, path, query)
                return
        if not self._authorized(scope):
            headers = {"WWW-Authenticate": 'Bearer realm="tau-portal"'}
            if not path.startswith("/api/") and _wants_html(scope):
                # A person opened a page: say it in words, not as a JSON envelope.
                response: Response = HTMLResponse(_UNAUTHORIZED_PAGE, status_code=401, headers=headers)
            else:
                response = error_response(401, "UNAUTHORIZED", UNAUTHORIZED_MESSAGE, headers)
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _set_cookie_and_redirect(self, scope: Scope, receive: Receive, send: Send, path: str,
                                       query: list[tuple[str, str]]) -> None:
        rest = urlencode([(k, v) for k, v in query if k != "token"])
        # A relative Location keeps working behind a prefix-stripping proxy (jupyter-server-proxy).
        last = path.rsplit("/", 1)[-1]
        location = "./" + last + (f"?{rest}" if rest else "")
        response = Response(status_code=302, headers={"Location": location, "Cache-Control": "no-store"})
        response.set_cookie(cookie_name(scope), self._cookie_value, httponly=True, samesite="strict", path="/")
        await response(scope, receive, send)


def resolve_workspace(served: str, requested: str | None) -> str:
    """The workspace a request reads: the server's own; naming any other one is forbidden."""
    wanted = (requested or "").strip()
    if wanted and wanted != served:
        raise V2Error(403, "WORKSPACE_FORBIDDEN", f"workspace {wanted!r} is not served by this Portal")
    return served


def run_in_workspace(run: RunRow, workspace: str) -> bool:
    """TauGrid's workspace filter: tagged with this workspace, or not tagged at all."""
    return run.tags.get(WORKSPACE_TAG, workspace) == workspace
