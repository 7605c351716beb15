"""``GET /api/portal/experiments/{id}/fault-events``: an experiment's job faults, as TauGrid's Portal answers.

TauGrid's newest Stellar workspace (``useExperimentFaultEventsQuery`` in ``portal/frontend/src/stellar/
queries.ts``) asks this of the Portal for the experiment it shows; ``handleExperimentFaultEvents``
(``portal/internal/portalapi/experiment_faults.go``) answers. We answer its way, with our events
(:mod:`..wire.fault_events`): a non-GET is ``405`` ``method not allowed`` (text); an id that does not
unescape, is blank or holds a ``/`` is ``400 {"error": "invalid experiment ID"}``; an experiment with no
run in the served workspace is ``404`` ``{"reason": "experiment not found", "scope", "state":
"unavailable"}``. A Portal whose source has no fault information (Kusto: faults are recorded in the local
store only) answers ``200`` with coverage ``unavailable``, as TauGrid's does for a non-local source.
A ``?workspace=`` naming another workspace is ``404 {"error": "workspace not found"}`` (TauGrid's answer
for a workspace its directory does not give the viewer).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import unquote

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from tau_collector.job.faults import FAULT_EVENT
from tau_collector.taugrid.gojson import format_time

from ..context import Portal
from ..errors import SECURITY_HEADERS, encode_json
from ..sources import Sources
from ..wire.fault_events import fault_response, scoped_error, unavailable_response
from .workspaces import workspace_directory

__all__ = ["FAULT_EVENTS_PATH", "route"]

FAULT_EVENTS_PATH = "/api/portal/experiments/{experiment_id}/fault-events"
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
NON_LOCAL = "run faults are unavailable from the kusto source: the job wrapper records them in the local store"


def _json(body: object, status: int = 200) -> Response:
    # TauGrid's portal writeJSON: Go's Encoder without HTML escaping, charset named.
    return Response(encode_json(body), status_code=status, media_type="application/json; charset=utf-8",
                    headers=SECURITY_HEADERS)


def _now() -> str:
    import time

    return format_time(time.time_ns())


def answer(sources: Sources, workspace: str, scope: dict, experiment_id: str, generated_at: str) -> Response:
    """The answer for a checked ``experiment_id`` in ``workspace``."""
    if sources.local is None or sources.default_source == "kusto":
        return _json(unavailable_response(experiment_id, generated_at, scope, [NON_LOCAL]))
    runs = sources.local.runs(workspace, experiment_id=experiment_id)
    if not runs:
        if sources.kusto is not None:  # the experiment may be Kusto's: no fault information there
            return _json(unavailable_response(experiment_id, generated_at, scope, [NON_LOCAL]))
        return _json(scoped_error("experiment not found", scope), 404)
    events = [e for run in runs for e in sources.local.run_events(run.run_id, type=FAULT_EVENT)]
    return _json(fault_response(experiment_id, generated_at, scope, runs, events))


def route(portal: Portal, default_source: str, clock: Callable[[], str] = _now) -> Route:
    """The route; behind the token gate like every other read."""
    scope = workspace_directory(portal.workspace, default_source)["selected"]

    def fault_events(request: Request) -> Response:
        if request.method != "GET":
            return PlainTextResponse("method not allowed\n", status_code=405, headers=SECURITY_HEADERS)
        raw = request.path_params["experiment_id"]
        experiment_id = unquote(raw) if not _BAD_ESCAPE.search(raw) else None
        if experiment_id is None or not experiment_id.strip() or "/" in experiment_id:
            return _json({"error": "invalid experiment ID"}, 400)
        wanted = request.query_params.get("workspace", "").strip()
        if wanted and wanted != portal.workspace:
            return _json({"error": "workspace not found"}, 404)
        with portal.sources.pinned():
            return answer(portal.sources, portal.workspace, scope, experiment_id, clock())

    return Route(FAULT_EVENTS_PATH, fault_events, methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"])
