"""The Portal's app factory: v2 Stellar API, OpenAPI document, Stellar pages, token gate and error envelopes."""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tau_collector.expstore import StoreReader

from .auth import TokenGate
from .errors import SECURITY_HEADERS, error_response, json_response
from .pages import page_routes
from .v2 import API_BASE, DEFAULT_LIMIT, DEFAULT_MAX_POINTS, MAX_LIMIT, MAX_MAX_POINTS, StellarV2

__all__ = ["create_app", "openapi_document"]

_ALL_METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT"]
_STATUS_CODES = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED", 409: "CONFLICT"}


def create_app(
    store: str | Path,
    *,
    token: str,
    workspace: str = "default",
    default_source: str = "local",
    kusto_configured: bool = False,
) -> ASGIApp:
    """The Portal for one store: every route but ``/openapi.json`` needs ``token`` (bearer or page cookie)."""
    reader = StoreReader(store)
    api = StellarV2(reader, workspace=workspace, default_source=default_source,
                    kusto_configured=kusto_configured)
    document = openapi_document()

    def openapi(request: Request) -> Response:
        return json_response(document)

    # Every method reaches the v2 handler, which answers 405 itself in TauGrid's order (after INVALID_PATH).
    routes = [
        Route("/openapi.json", openapi, methods=["GET"]),
        Route(API_BASE + "/{rest:path}", api.endpoint, methods=_ALL_METHODS),
        *page_routes(),
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: _http_error, Exception: _internal_error})
    # Slash redirects would answer unknown API paths with 307 instead of TauGrid's 404 envelope.
    app.router.redirect_slashes = False
    app.state.reader = reader
    app.state.workspace = workspace
    return _SecurityHeaders(TokenGate(app, token))


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


# -- OpenAPI ------------------------------------------------------------------------------

def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _q(name: str, schema: dict, description: str, **extra) -> dict:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description, **extra}


def _path(name: str, description: str) -> dict:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}, "description": description}


_COMMON = [
    _q("source", {"type": "string"}, "local | kusto | auto, case-insensitive; empty means the server default "
       "(local). Anything else is 400 INVALID_SOURCE; kusto without a cluster is 503 SOURCE_UNAVAILABLE."),
    _q("workspace", {"type": "string"}, "Must be empty or the server's workspace, else 403 WORKSPACE_FORBIDDEN."),
    _q("project", {"type": "string"}, "Disambiguates a run id present in several projects (else 409 CONFLICT)."),
]
_INT64 = {"type": "integer", "format": "int64"}


def _errors(*statuses: int) -> dict:
    texts = {400: "Invalid request (INVALID_SOURCE, INVALID_PATH, INVALID_ARGUMENT, EXACT_SERIES_REQUIRED, "
                  "RUN_MISMATCH, TARGET_MISMATCH, INVALID_CURSOR)",
             401: "Missing or wrong token", 403: "WORKSPACE_FORBIDDEN", 404: "NOT_FOUND",
             405: "METHOD_NOT_ALLOWED", 409: "CONFLICT", 500: "INTERNAL", 503: "SOURCE_UNAVAILABLE"}
    envelope = {"application/json": {"schema": _ref("ErrorEnvelope")}}
    return {str(s): {"description": texts[s], "content": envelope} for s in statuses}


def _operation(op_id: str, summary: str, params: list[dict], ok_schema: str) -> dict:
    responses = {"200": {"description": "OK", "content": {"application/json": {"schema": _ref(ok_schema)}}}}
    responses.update(_errors(400, 401, 403, 404, 405, 409, 500, 503))
    return {"get": {"operationId": op_id, "summary": summary, "parameters": params, "responses": responses}}


def openapi_document() -> dict:
    """The v2 routes as OpenAPI 3.0: parameters, limits and the error envelope, for clients and schemathesis."""
    string_list = {"type": "array", "items": {"type": "string"}}
    nonneg = {"type": "integer", "minimum": 0}
    schemas = {
        "ErrorEnvelope": {
            "type": "object", "required": ["error"], "additionalProperties": False,
            "properties": {"error": {
                "type": "object", "additionalProperties": False,
                "required": ["code", "message", "classification", "retryable"],
                "properties": {
                    "code": {"type": "string"}, "message": {"type": "string"},
                    "classification": {"type": "string",
                                       "enum": ["client", "authorization", "not_found", "dependency", "internal"]},
                    "retryable": {"type": "boolean"},
                }}},
        },
        "Metadata": {
            "type": "object", "additionalProperties": False,
            "required": ["generated_at", "provenance", "freshness", "availability", "partial"],
            "properties": {
                "generated_at": {"type": "string", "format": "date-time"},
                "provenance": {"type": "object", "additionalProperties": False,
                               "required": ["requested_source", "served_sources"],
                               "properties": {"requested_source": {"type": "string"},
                                              "served_sources": {**string_list, "minItems": 1}}},
                "freshness": {"type": "object", "additionalProperties": False, "required": ["state", "as_of"],
                              "properties": {"state": {"type": "string", "enum": ["immediate", "unknown"]},
                                             "as_of": {"type": "string", "format": "date-time"}}},
                "availability": {"type": "object", "additionalProperties": False, "required": ["state"],
                                 "properties": {"state": {"type": "string",
                                                          "enum": ["available", "degraded", "unavailable"]},
                                                "reasons": {**string_list, "minItems": 1}}},
                "partial": {"type": "boolean"},
                "warnings": {**string_list, "minItems": 1},
            },
        },
        "Run": {
            "type": "object", "additionalProperties": False,
            "required": ["run_id", "project", "run_group_id", "state", "lifecycle_state", "successful",
                         "created_at", "tags", "metric_names", "source"],
            "properties": {
                **{k: {"type": "string"} for k in (
                    "run_id", "experiment_id", "project", "run_group_id", "parent_run_id", "state",
                    "lifecycle_state", "owner", "created_at", "started_at", "completed_at", "config_hash",
                    "code_sha", "image_digest", "result_uri", "source")},
                "successful": {"type": "boolean"},
                "success_reasons": string_list,
                "tags": {"type": "object", "additionalProperties": {"type": "string"}},
                "metric_names": string_list,
            },
        },
        "RunDetail": {"type": "object", "additionalProperties": False, "required": ["metadata", "run"],
                      "properties": {"metadata": _ref("Metadata"), "run": _ref("Run")}},
        "Metric": {
            "type": "object", "additionalProperties": False,
            "required": ["name", "count", "finite_count", "non_finite_count"],
            "properties": {
                "name": {"type": "string"}, "count": nonneg, "finite_count": nonneg, "non_finite_count": nonneg,
                "min_step": _INT64, "max_step": _INT64, "latest_step": _INT64,
                "latest_wall_time": {**_INT64, "description": "microseconds since the epoch, UTC"},
                "latest_value": {"type": "number"}, "min_value": {"type": "number"},
                "max_value": {"type": "number"}, "updated_at": {"type": "string"},
            },
        },
        "MetricCatalog": {"type": "object", "additionalProperties": False,
                          "required": ["metadata", "run_id", "metrics"],
                          "properties": {"metadata": _ref("Metadata"), "run_id": {"type": "string"},
                                         "metrics": {"type": "array", "items": _ref("Metric")}}},
        "Series": {
            "type": "object", "additionalProperties": False,
            "required": ["metadata", "target", "run_id", "metric", "max_points", "source_points",
                         "returned_points", "points"],
            "properties": {
                "metadata": _ref("Metadata"), "target": {"type": "string"}, "run_id": {"type": "string"},
                "metric": {"type": "string"}, "start_step": _INT64, "end_step": _INT64,
                "step_interval": {"type": "integer", "minimum": 1},
                "max_points": {"type": "integer", "minimum": 1, "maximum": MAX_MAX_POINTS},
                "source_points": nonneg, "returned_points": nonneg,
                "points": {"type": "array", "items": {
                    "type": "object", "additionalProperties": False, "required": ["step", "value"],
                    "properties": {"step": _INT64, "value": {"type": "number"}}}},
            },
        },
        "RunList": {"type": "object", "additionalProperties": False, "required": ["metadata", "target", "runs"],
                    "properties": {"metadata": _ref("Metadata"), "target": {"type": "string"},
                                   "runs": {"type": "array", "items": _ref("Run")},
                                   "next_cursor": {"type": "string"}}},
    }
    run_id = _path("run_id", "Run id (unescaped and trimmed; empty, '.', '..', '/', '\\\\', NUL or more than "
                             "512 bytes is 400 INVALID_PATH).")
    target_q = _q("target", {"type": "string"}, "The run's id, experiment id or run group id (required).")
    series_params = [
        run_id, *_COMMON, target_q,
        _q("metric", {"type": "string"}, "Metric name (required, with target: 400 EXACT_SERIES_REQUIRED)."),
        _q("run_id", {"type": "string"}, "If given, must equal the path's run id (400 RUN_MISMATCH)."),
        _q("start_step", _INT64, "First step (inclusive); start_step <= end_step."),
        _q("end_step", _INT64, "Last step (inclusive)."),
        _q("step_interval", {"type": "integer", "minimum": 1},
           "Keep the first step, steps (step - first) % interval == 0, and the last step."),
        _q("max_points", {"type": "integer", "minimum": 1, "maximum": MAX_MAX_POINTS,
                          "default": DEFAULT_MAX_POINTS},
           "Point budget; larger series are M4-reduced (first/last/min/max per bucket) and marked partial."),
    ]
    list_params = [
        _path("experiment_id", "Experiment id (same rules as run ids)."), *_COMMON,
        _q("target", {"type": "string"}, "If given, must equal the path's experiment id (400 TARGET_MISMATCH)."),
        _q("limit", {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
           "Page size."),
        _q("cursor", {"type": "string"}, "Opaque next_cursor of the previous page (400 INVALID_CURSOR if altered "
                                         "or issued for another query)."),
        _q("q", {"type": "string"}, "Case-insensitive substring of run id, project, group, owner, tags, metrics."),
        _q("group", {"type": "string"}, "Run group id."),
        _q("state", {"type": "string"}, "Run state, case-insensitive."),
        _q("lifecycle", {"type": "string"}, "pending | running | failed | incomplete | succeeded."),
        _q("tag", string_list, "key=value, repeatable; all must match.", style="form", explode=True),
        _q("metric_name", string_list, "Runs that have every named metric; repeatable.", style="form",
           explode=True),
        _q("since", {"type": "string"}, "Created at or after: RFC3339, a Go duration (24h) or Nd before now."),
    ]
    return {
        "openapi": "3.0.3",
        "info": {"title": "taunotebook local Portal: TauGrid v2 Stellar API", "version": "2",
                 "description": "TauGrid's canonical v2 Stellar reads over a local expstore. Errors are "
                                "{\"error\":{code,message,classification,retryable}}."},
        "components": {"schemas": schemas,
                       "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "security": [{"bearer": []}],
        "paths": {
            f"{API_BASE}/runs/{{run_id}}": _operation("getRun", "One run", [run_id, *_COMMON], "RunDetail"),
            f"{API_BASE}/runs/{{run_id}}/metrics": _operation(
                "getRunMetrics", "The run's metric catalog (name-sorted summaries)", [run_id, *_COMMON],
                "MetricCatalog"),
            f"{API_BASE}/runs/{{run_id}}/series": _operation(
                "getRunSeries", "One metric of one run, reduced to max_points", series_params, "Series"),
            f"{API_BASE}/experiments/{{experiment_id}}/runs": _operation(
                "listExperimentRuns", "An experiment's runs, newest first, paged by cursor", list_params,
                "RunList"),
        },
    }
