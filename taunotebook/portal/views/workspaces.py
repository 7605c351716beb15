"""``GET /api/portal/workspaces``: the workspace directory TauGrid's own Stellar app asks for first.

TauGrid's Portal frontend (``portal/frontend/src/App.tsx``) starts by reading this directory
(``useDirectory`` in ``data.tsx``) and draws nothing until it has a ``selected`` scope whose
``experimentsNative`` names ``/api/v2/stellar``. We answer as TauGrid's Portal answers in its
single-workspace mode (``handleWorkspaces`` in ``portal/internal/portalapi/workspace.go``): the one
served workspace, selected, ``managed: false``, fields in Go's order with its ``omitempty`` rules.
The local Portal has no cluster, namespace or queue: those are empty. ``authorizationMode`` is
``token`` (ours: TauGrid's values are ``workspace-rbac`` and ``cluster-wide``; its frontend only shows it).
A ``?workspace=`` query does not select another workspace: as in TauGrid's single-workspace mode,
the directory always answers the served one (the v2 reads answer ``403`` for another).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..errors import json_response

__all__ = ["WORKSPACES_PATH", "route", "workspace_directory"]

WORKSPACES_PATH = "/api/portal/workspaces"


def workspace_directory(workspace: str, default_source: str) -> dict:
    """TauGrid's ``workspaceDirectoryResponse`` for a Portal serving ``workspace`` from ``default_source``."""
    scope = {
        "workspace": workspace,
        "name": workspace,
        "cluster": "",
        "namespace": "",
        "source": default_source,
        "authorizationMode": "token",
        "experimentsUrl": "/stellar",
        "experimentsNative": {"state": "available", "apiBasePath": "/api/v2/stellar"},
        "availability": "available",
        "managed": False,
    }
    return {"workspaces": [scope], "selected": scope, "managed": False}


def route(workspace: str, default_source: str) -> Route:
    """The route; behind the token gate like every other read. Non-GET: TauGrid's ``405 {"error": ...}``."""
    body = workspace_directory(workspace, default_source)

    def workspaces(request: Request) -> Response:
        if request.method not in ("GET", "HEAD"):
            return json_response({"error": "method not allowed"}, status=405)
        return json_response(body)

    return Route(WORKSPACES_PATH, workspaces, methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"])
