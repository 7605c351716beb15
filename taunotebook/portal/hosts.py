"""Which ``Host`` the Portal answers: loopback names and IP addresses always, other names only when allowed.

Defence in depth against DNS rebinding: a page at ``http://evil.example:PORT`` whose name is made
to resolve to 127.0.0.1 sends ``Host: evil.example:PORT``. Jupyter's server refuses such requests
the same way (``local_hostnames``). Always answered: ``localhost`` and ``*.localhost`` (browsers
resolve them to loopback themselves), and IP literals (an address cannot be rebound: a request
naming one reached the browser's origin itself). Other names only when the Portal was started
with ``--allow-host NAME`` (repeatable) or ``TAU_PORTAL_ALLOW_HOSTS`` (comma-separated):
``NAME`` exactly, ``.example.com`` for it and its subdomains, ``*`` for any. Starlette's
``TrustedHostMiddleware`` is not used: it cuts IPv6 literals at their first ``:`` and answers in
plain text, not in the Portal's envelope.
"""

from __future__ import annotations

import html
import ipaddress
import os
from collections.abc import Iterable

from starlette.responses import HTMLResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from .errors import error_response

__all__ = ["ENV_ALLOW_HOSTS", "HostAllowList", "allowed_hosts_from_env", "host_name"]

ENV_ALLOW_HOSTS = "TAU_PORTAL_ALLOW_HOSTS"


def allowed_hosts_from_env(environ: dict[str, str] | None = None) -> list[str]:
    """The names in ``TAU_PORTAL_ALLOW_HOSTS`` (comma- or space-separated)."""
    raw = (environ if environ is not None else os.environ).get(ENV_ALLOW_HOSTS, "")
    return [n for n in raw.replace(",", " ").split() if n]


def host_name(header: str) -> str:
    """The name or address in a ``Host`` header: port, IPv6 brackets and a trailing dot dropped, lowercased."""
    host = header.strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else host
    if host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host.rstrip(".")


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class HostAllowList:
    """ASGI middleware: requests naming another host are refused with ``400 HOST_NOT_ALLOWED``, in words."""

    def __init__(self, app: ASGIApp, allowed: Iterable[str] = ()) -> None:
        self.app = app
        names = [host_name(n) for n in allowed if n and n.strip()]
        self.any = "*" in names
        self.exact = frozenset(n for n in names if not n.startswith("."))
        self.suffixes = tuple(n for n in names if n.startswith("."))
        self._seen: dict[str, bool] = {}  # Host header -> allowed; a Portal sees few distinct ones

    def allows(self, header: str) -> bool:
        known = self._seen.get(header)
        if known is None:
            if len(self._seen) >= 256:
                self._seen.clear()
            known = self._seen[header] = self._allows(header)
        return known

    def _allows(self, header: str) -> bool:
        name = host_name(header)
        if self.any or name in self.exact or name == "localhost" or name.endswith(".localhost") or _is_ip(name):
            return True
        return any(name == s[1:] or name.endswith(s) for s in self.suffixes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = next((v.decode("latin-1") for k, v in scope.get("headers", ()) if k == b"host"), None)
        # No Host at all (HTTP/1.0 tools) is no browser, so nothing to rebind.
        if header is None or self.allows(header):
            await self.app(scope, receive, send)
            return
        name = host_name(header)
        message = (f"Host {name!r} is not allowed: this Portal answers localhost and IP addresses; to reach it "
                   f"by this name, start it with --allow-host {name} (or set {ENV_ALLOW_HOSTS}={name})")
        accept = next((v for k, v in scope.get("headers", ()) if k == b"accept"), b"")
        response: Response
        if b"text/html" in accept:
            response = HTMLResponse(
                "<!doctype html><html><head><meta charset='utf-8'><title>Tau Portal: host not allowed</title>"
                f"</head><body><h1>Host not allowed</h1><p>{html.escape(message)}</p></body></html>",
                status_code=400)
        else:
            response = error_response(400, "HOST_NOT_ALLOWED", message)
        await response(scope, receive, send)
