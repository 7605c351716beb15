"""The one dispatcher of the Portal's data routes: Starlette's router over still-escaped paths, and one ASGI shell.

A data route (:class:`DataRoute`) matches the request's raw path (ASGI ``raw_path``), so that each path id is
percent-decoded exactly once, by the view's context (:mod:`.identity`), and an escaped ``/`` inside an id
never splits it. ``{name:segment}`` is one segment, empty included (an empty id is ``400 INVALID_PATH``, as
TauGrid's, not an unknown route); a name starting with ``_`` matches a segment that is not an id (not
decoded). Every method reaches the route: TauGrid answers ``405`` only after the path's ids are read. The
shell (:class:`View`) reads the query, holds one view of the sources for the request, builds the
:class:`~.context.Context` and runs the view on the event loop when its answer is at hand, else in a worker
thread (:mod:`.serving`).

A write route (:class:`WriteRoute`, notes and tags) answers its writing methods through :class:`Writes`: the
write gate first (:mod:`.writes`: the token in a header, origin, a bounded JSON body), then its handler in a
worker thread; its ``GET``, if it has one, is a :class:`View` as any read.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import anyio.to_thread
from starlette.convertors import Convertor, register_url_convertor
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Route
from starlette.types import Receive, Scope, Send

from .context import Context, Portal
from .errors import V2Error, error_response
from .params import Query, parse_query
from .serving import answer, serve

__all__ = ["DataRoute", "View", "Write", "WriteRoute", "Writes", "raw_path", "respond"]

ViewFunction = Callable[[Context], Response]
_RAW_PATH = "taunotebook.raw_path"  # the scope's key for the path as routes match it


class _Segment(Convertor[str]):
    """One path segment, still escaped; possibly empty."""

    regex = "[^/]*"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("segment", _Segment())


def raw_path(scope: Scope) -> str:
    """The request's path as sent, still escaped (one character per byte), without its query."""
    path = scope.get(_RAW_PATH)
    if path is None:  # read once per request, not once per route tried
        raw = scope.get("raw_path")
        if raw is None:  # a server that gives no raw path: re-escape the decoded one (a %2F reads as a '/')
            raw = quote(scope.get("path", ""), safe="/").encode()
        path = scope[_RAW_PATH] = raw.split(b"?", 1)[0].decode("latin-1")
    return path


class View:
    """The ASGI shell of one data route: its view, and whether it may answer on the event loop."""

    def __init__(self, portal: Portal, view: ViewFunction, *, inline: bool = True, method_first: bool = False) -> None:
        self.portal = portal
        self.view = view
        self.inline = inline  # False: listings and exports read files or every run, always in a worker thread
        self.method_first = method_first  # TauGrid checks the method before the path id (experiment runs)

    def respond(self, method: str, query: Query, raw_ids: Mapping[str, bytes],
                headers: Mapping[str, str] | None = None) -> Response:
        """The view's answer (raises :class:`~.errors.V2Error` for the envelope): one pinned view of the sources."""
        with self.portal.sources.pinned():
            return self.view(self.portal.context(method, query, raw_ids, method_first=self.method_first,
                                                 headers=headers))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method, query, raw_ids = scope["method"], Query(parse_query(scope)), scope["path_params"]
        headers = Headers(scope=scope)
        await serve(scope, receive, send, lambda: self.respond(method, query, raw_ids, headers), inline=self.inline)


class DataRoute(Route):
    """A route matched against the still-escaped path; its path parameters are the raw bytes of each segment."""

    def __init__(self, path: str, view: View) -> None:
        super().__init__(path, view, methods=None, name=view.view.__module__.rsplit(".", 1)[-1])

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] != "http":
            return Match.NONE, {}
        match = self.path_regex.match(raw_path(scope))
        if match is None:
            return Match.NONE, {}
        ids = {name: value.encode("latin-1") for name, value in match.groupdict().items() if not name.startswith("_")}
        return Match.FULL, {"endpoint": self.endpoint, "path_params": ids}


@dataclass(frozen=True)
class Write:
    """One writing method of a route: its handler, the body fields it takes, whether it takes a body at all."""

    handler: Callable[[Context, Mapping[str, Any]], Response]
    fields: tuple[str, ...] = ()
    needs_body: bool = True


class Writes:
    """The ASGI shell of a write route: ``GET``/``HEAD`` to its read view (if any), its writes through the gate."""

    def __init__(self, portal: Portal, writes: Mapping[str, Write], read: View | None = None) -> None:
        self.portal = portal
        self.writes = dict(writes)
        self.read = read
        self.allowed = ", ".join([*(("GET", "HEAD") if read is not None else ()), *self.writes])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope["method"]
        if method in ("GET", "HEAD") and self.read is not None:
            await self.read(scope, receive, send)
            return
        write = self.writes.get(method)
        if write is None or self.portal.write_gate is None:
            response = error_response(405, "METHOD_NOT_ALLOWED", f"method not allowed: this route takes "
                                                                 f"{self.allowed}", {"Allow": self.allowed})
            await response(scope, receive, send)
            return
        try:
            body = await self.portal.write_gate.body(scope, receive, allowed=write.fields,
                                                     needs_body=write.needs_body)
        except V2Error as err:
            await error_response(err.status, err.code, err.message)(scope, receive, send)
            return
        query, raw_ids = Query(parse_query(scope)), scope["path_params"]

        def handle() -> Response:
            with self.portal.sources.pinned():
                return write.handler(self.portal.write_context(query, raw_ids), body)

        # A write waits for the store's lock and syncs its commit: never on the event loop.
        response = await anyio.to_thread.run_sync(answer, handle)
        await response(scope, receive, send)


class WriteRoute(DataRoute):
    """A data route whose methods besides ``GET`` write (:class:`Writes`)."""

    def __init__(self, path: str, writes: Writes, name: str) -> None:
        Route.__init__(self, path, writes, methods=None, name=name)


def respond(routes: Sequence[BaseRoute], path: str, method: str = "GET", query: Query | None = None,
            headers: Mapping[str, str] | None = None) -> Response:
    """In process, no server: the answer of the data route ``path`` (still escaped) names, envelopes included."""
    scope = {"type": "http", "raw_path": path.encode("latin-1"), "path": path, "method": method}
    for route in routes:
        if isinstance(route, DataRoute):
            matched, child = route.matches(scope)
            if matched is Match.FULL:
                view = route.endpoint.read if isinstance(route.endpoint, Writes) else route.endpoint
                if view is None:
                    continue
                return answer(functools.partial(view.respond, method, query or Query([]), child["path_params"],
                                                headers))
    raise LookupError(f"no data route matches {path}")
