"""The one dispatcher of the Portal's data routes: Starlette's router over still-escaped paths, and one ASGI shell.

A data route (:class:`DataRoute`) matches the request's raw path (ASGI ``raw_path``), so that each path id is
percent-decoded exactly once, by the view's context (:mod:`.identity`), and an escaped ``/`` inside an id
never splits it. ``{name:segment}`` is one segment, empty included (an empty id is ``400 INVALID_PATH``, as
TauGrid's, not an unknown route); a name starting with ``_`` matches a segment that is not an id (not
decoded). Every method reaches the route: TauGrid answers ``405`` only after the path's ids are read. The
shell (:class:`View`) reads the query, holds one view of the sources for the request, builds the
:class:`~.context.Context` and runs the view on the event loop when its answer is at hand, else in a worker
thread (:mod:`.serving`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from urllib.parse import quote

from starlette.convertors import Convertor, register_url_convertor
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Route
from starlette.types import Receive, Scope, Send

from .context import Context, Portal
from .params import Query, parse_query
from .serving import answer, serve

__all__ = ["DataRoute", "View", "raw_path", "respond"]

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

    def respond(self, method: str, query: Query, raw_ids: Mapping[str, bytes]) -> Response:
        """The view's answer (raises :class:`~.errors.V2Error` for the envelope): one pinned view of the sources."""
        with self.portal.sources.pinned():
            return self.view(self.portal.context(method, query, raw_ids, method_first=self.method_first))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method, query, raw_ids = scope["method"], Query(parse_query(scope)), scope["path_params"]
        await serve(scope, receive, send, lambda: self.respond(method, query, raw_ids), inline=self.inline)


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


def respond(routes: Sequence[BaseRoute], path: str, method: str = "GET", query: Query | None = None) -> Response:
    """In process, no server: the answer of the data route ``path`` (still escaped) names, envelopes included."""
    scope = {"type": "http", "raw_path": path.encode("latin-1"), "path": path, "method": method}
    for route in routes:
        if isinstance(route, DataRoute):
            matched, child = route.matches(scope)
            if matched is Match.FULL:
                view: View = route.endpoint  # type: ignore[assignment]
                return answer(functools.partial(view.respond, method, query or Query([]), child["path_params"]))
    raise LookupError(f"no data route matches {path}")
