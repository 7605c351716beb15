"""The Portal's OpenAPI document: the v2 reads and the page-data routes, their parameters, limits and errors.

The answers' schemas are the fragments beside their encoders (:mod:`.wire`); this module adds the routes.

Served at ``/openapi.json`` (no token needed: it says nothing about any run); schemathesis fuzzes
the running Portal against it.
"""

from __future__ import annotations

from .params import CONFIG_FILTERS_LIMIT, DEFAULT_LIMIT, DEFAULT_MAX_POINTS, MAX_LIMIT, MAX_MAX_POINTS
from .prefixes import API_BASE, PAGE_DATA_BASE
from .views.artifacts import DEFAULT_ARTIFACTS, MAX_ARTIFACTS
from .views.media import DEFAULT_MAX_STEPS, MAX_KEEP, MAX_MAX_STEPS, THUMBNAIL_SIDE
from .views.parameter_importance import IDS_LIMIT as IMPORTANCE_IDS
from .views.parameter_importance import MIN_RUNS as IMPORTANCE_MIN_RUNS
from .views.parameter_importance import PARAMETERS_LIMIT as IMPORTANCE_PARAMETERS
from .views.parameter_importance import RUNS_LIMIT as IMPORTANCE_RUNS
from .views.run_table import METRICS_LIMIT, RUN_IDS_LIMIT, RUN_SORTS, RUNS_LIMIT
from .wire.common import INT64, STRINGS, ref
from .wire.schemas import component_schemas
from .wire.tails import MAX_TAIL_METRICS
from .writes import (
    MAX_AUTHOR_CHARS,
    MAX_BODY_BYTES,
    MAX_NOTE_CHARS,
    MAX_TAG_KEY_CHARS,
    MAX_TAG_VALUE_CHARS,
    RESERVED_TAG_PREFIXES,
    WRITE_TOKEN_HEADER,
)

__all__ = ["openapi_document"]


def _q(name: str, schema: dict, description: str, **extra) -> dict:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description, **extra}


def _path(name: str, description: str) -> dict:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}, "description": description}


_COMMON = [
    _q("source", {"type": "string"}, "local | kusto | auto, case-insensitive; empty means the server default "
       "(local; kusto for a Portal without a store). Anything else is 400 INVALID_SOURCE; a source the Portal "
       "does not have is 503 SOURCE_UNAVAILABLE; a failing cluster 502 UPSTREAM_FAILURE, a slow one 504 "
       "UPSTREAM_TIMEOUT."),
    _q("workspace", {"type": "string"}, "Must be empty or the server's workspace, else 403 WORKSPACE_FORBIDDEN."),
    _q("project", {"type": "string"}, "Disambiguates a run id present in several projects (else 409 CONFLICT)."),
]
_CONFIG_FILTERS = (f"Our addition: config.<key>=<value> (repeatable, at most {CONFIG_FILTERS_LIMIT}) keeps what has a "
                   "run whose flattened config field <key> has the text <value> (or, for a number, equals it); "
                   "one key given several times matches any of its values, different keys must all match. "
                   "include=config adds each item's config.")


def _errors(*statuses: int) -> dict:
    texts = {400: "Invalid request (INVALID_SOURCE, INVALID_PATH, INVALID_ARGUMENT, EXACT_SERIES_REQUIRED, "
                  "RUN_MISMATCH, TARGET_MISMATCH, INVALID_CURSOR)",
             401: "Missing or wrong token", 403: "WORKSPACE_FORBIDDEN", 404: "NOT_FOUND",
             405: "METHOD_NOT_ALLOWED", 409: "CONFLICT", 500: "INTERNAL", 502: "UPSTREAM_FAILURE (source=kusto)",
             503: "SOURCE_UNAVAILABLE", 504: "UPSTREAM_TIMEOUT (source=kusto)"}
    envelope = {"application/json": {"schema": ref("ErrorEnvelope")}}
    return {str(s): {"description": texts[s], "content": envelope} for s in statuses}


def _write(op_id: str, summary: str, params: list[dict], ok_schema: str, body: dict | None,
           created: bool = False) -> dict:
    """A write (our addition): the token in X-Tau-Token, a JSON body, TauGrid's error envelope."""
    ok = {"description": "OK", "content": {"application/json": {"schema": ref(ok_schema)}}}
    responses = {"201": {**ok, "description": "Created"}, "200": {**ok, "description": "Written before (the "
                 "idempotency key's note)"}} if created else {"200": ok}
    responses.update(_errors(400, 401, 403, 404, 405, 409, 500))
    texts = {413: "BODY_TOO_LARGE", 415: "UNSUPPORTED_MEDIA_TYPE (a write's body is application/json)"}
    responses.update({str(s): {"description": t, "content": {"application/json": {"schema": ref("ErrorEnvelope")}}}
                      for s, t in texts.items()})
    header = {"name": WRITE_TOKEN_HEADER, "in": "header", "required": True, "schema": {"type": "string"},
              "description": "The Portal's token (or a Stellar page's write key). Authorization or the page "
                             "cookie alone never authorize a write: 401."}
    op: dict = {"operationId": op_id, "summary": summary, "parameters": [*params, header], "responses": responses}
    if body is not None:
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": body}}}
    return op


def _operation(op_id: str, summary: str, params: list[dict], ok_schema: str) -> dict:
    responses = {"200": {"description": "OK", "content": {"application/json": {"schema": ref(ok_schema)}}}}
    responses.update(_errors(400, 401, 403, 404, 405, 409, 500, 502, 503, 504))
    return {"get": {"operationId": op_id, "summary": summary, "parameters": params, "responses": responses}}


FAULT_EVENTS = "/api/portal/experiments/{experiment_id}/fault-events"


def _fault_events_operation() -> dict:
    """TauGrid's Portal route, with its own error shapes (not the v2 envelope)."""
    error = {"application/json": {"schema": {"type": "object", "required": ["error"],
                                             "properties": {"error": {"type": "string"}}}}}
    scoped = {"application/json": {"schema": {"type": "object", "required": ["reason", "scope", "state"],
                                              "properties": {"reason": {"type": "string"},
                                                             "scope": {"type": "object"},
                                                             "state": {"type": "string"}}}}}
    ok = {"application/json": {"schema": ref("ExperimentFaultEvents")}}
    return {"get": {
        "operationId": "getExperimentFaultEvents",
        "summary": "TauGrid's Portal route: the experiment's job faults (killed for memory, a signal, a lost worker, "
                   "a retry) as node-scoped fault events with their coverage; coverage unavailable where the source "
                   "has no fault information (Kusto). Keys sorted, as TauGrid's writeScopedJSON writes them.",
        "parameters": [_path("experiment_id", "Experiment id, unescaped once more as TauGrid does; blank, a bad "
                                              "escape or a '/' is 400 {\"error\": \"invalid experiment ID\"}."),
                       _q("workspace", {"type": "string"}, "Empty or the served workspace; another is 404 "
                          "{\"error\": \"workspace not found\"}.")],
        "responses": {"200": {"description": "OK", "content": ok},
                      "400": {"description": "invalid experiment ID", "content": error},
                      "401": {"description": "Missing or wrong token",
                              "content": {"application/json": {"schema": ref("ErrorEnvelope")}}},
                      "404": {"description": "experiment not found (scoped), or workspace not found",
                              "content": {"application/json": {"schema": {"oneOf": [
                                  scoped["application/json"]["schema"], error["application/json"]["schema"]]}}}},
                      "405": {"description": "method not allowed (text)"}},
    }}
def _download_operation(run_id: dict) -> dict:
    responses = {"200": {"description": "The file's bytes, streamed (ETag: its digest when registered with one)",
                         "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}}}
    responses.update(_errors(400, 401, 403, 404, 405, 409, 500, 503))
    return {"get": {"operationId": "downloadRunArtifact",
                    "summary": "Our addition: one artifact's file; 404 NOT_FOUND when the run has no such artifact or "
                               "its file is gone or not on this machine",
                    "parameters": [run_id, _path("artifact_id", "An artifact_id of the run's listing."), *_COMMON],
                    "responses": responses}}


def _image_operation(run_id: dict) -> dict:
    binary = {"schema": {"type": "string", "format": "binary"}}
    responses = {"200": {"description": "The image's bytes (Content-Type from its row; types a browser could run "
                                        "go out as application/octet-stream), or its thumbnail: a PNG at most "
                                        f"{THUMBNAIL_SIDE} px a side (the image itself when already that small). "
                                        "ETag from the digest; Cache-Control: private, max-age=31536000, immutable",
                         "content": {"image/png": binary, "image/*": binary, "application/octet-stream": binary}},
                 "304": {"description": "Not modified: If-None-Match names the ETag"},
                 "422": {"description": "UNDECODABLE_IMAGE: a thumbnail of a stored image that cannot be decoded, "
                                        "or too large to, in words",
                         "content": {"application/json": {"schema": ref("ErrorEnvelope")}}}}
    responses.update(_errors(400, 401, 403, 404, 405, 409, 500, 503))
    return {"get": {"operationId": "getRunImage",
                    "summary": "Our addition: one image of the run by the sha256 of its bytes (an images answer's "
                               "url); 404 NOT_FOUND for a digest the run does not hold",
                    "parameters": [run_id, _path("digest", "64 lowercase hex digits: the image's sha256."), *_COMMON,
                                   _q("thumbnail", {"type": "string", "enum": ["1", "0", "true", "false"]},
                                      f"1: a PNG thumbnail at most {THUMBNAIL_SIDE} px a side.")],
                    "responses": responses}}


def openapi_document() -> dict:
    """The v2 routes as OpenAPI 3.0: parameters, limits and the error envelope, for clients and schemathesis."""
    string_list = STRINGS
    schemas = component_schemas()  # each answer shape's fragment, beside its encoder in .wire
    run_id = _path("run_id", "Run id, percent-decoded once and trimmed; empty, '.', '..', '/', '\\\\', NUL or "
                             "more than 512 bytes is 400 INVALID_PATH. An id that breaks TauGrid's ID rule and "
                             "names no stored run is 400 INVALID_ARGUMENT; a valid one, 404 NOT_FOUND.")
    target_q = _q("target", {"type": "string"}, "The run's id, experiment id or run group id (required).")
    series_params = [
        run_id, *_COMMON, target_q,
        _q("metric", {"type": "string"}, "Metric name (required, with target: 400 EXACT_SERIES_REQUIRED)."),
        _q("run_id", {"type": "string"}, "If given, must equal the path's run id (400 RUN_MISMATCH)."),
        _q("start_step", INT64, "First step (inclusive); start_step <= end_step."),
        _q("end_step", INT64, "Last step (inclusive)."),
        _q("step_interval", {"type": "integer", "minimum": 1},
           "Keep the first step, steps (step - first) % interval == 0, and the last step."),
        _q("max_points", {"type": "integer", "minimum": 1, "maximum": MAX_MAX_POINTS,
                          "default": DEFAULT_MAX_POINTS},
           "Point budget; larger series are M4-reduced (first/last/min/max per bucket) and marked partial."),
    ]
    artifact_params = [
        run_id, *_COMMON,
        _q("type", {"type": "string"}, "Only rows of this type (metrics-jsonl, tensorboard, image, checkpoint, …)."),
        _q("after", {"type": "string"}, "The next_after of the previous page: rows after that artifact."),
        _q("limit", {"type": "integer", "minimum": 1, "maximum": MAX_ARTIFACTS, "default": DEFAULT_ARTIFACTS},
           "Page size."),
    ]
    tag_q = _q("tag", {"type": "string"}, "The tag (required: 400 INVALID_ARGUMENT); one the run does not have is "
               "404 NOT_FOUND.")
    step_q = _q("step", INT64, "The step asked for (required; int64).")
    histogram_params = [
        run_id, *_COMMON, tag_q,
        _q("step_min", INT64, "First step (inclusive); step_min <= step_max."),
        _q("step_max", INT64, "Last step (inclusive)."),
        _q("max_steps", {"type": "integer", "minimum": 1, "maximum": MAX_MAX_STEPS, "default": DEFAULT_MAX_STEPS},
           "At most this many steps, spread over the range."),
        _q("keep", {"type": "string"}, f"Steps the reduction never drops: int64s, comma-separated (at most "
           f"{MAX_KEEP})."),
        _q("buckets", {"type": "string", "enum": ["true", "false", "1", "0"], "default": "true"},
           "false: the summaries only (the distribution bands), buckets null."),
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
        _q("include", string_list, "Our addition: config adds each run's flattened config fields.", style="form",
           explode=True),
    ]
    importance_params = [
        *_COMMON,
        _q("metric", {"type": "string"}, "The metric whose value the parameters explain (required; one no selected "
           "run logged is 400 INVALID_ARGUMENT)."),
        _q("reduction", {"type": "string", "enum": ["final", "best", "latest"], "default": "final"},
           "final: the latest value of a run that has ended; latest: of any run; best: its min or max by goal."),
        _q("goal", {"type": "string", "enum": ["min", "max"]}, "best's direction; by default max for a metric "
           "named like accuracy, reward or score, else min."),
        _q("experiment_id", string_list, f"Experiments whose runs are scored (repeatable, at most {IMPORTANCE_IDS}).",
           style="form", explode=True),
        _q("run_id", string_list, f"Runs scored besides (repeatable, at most {IMPORTANCE_IDS}); with neither, every "
           f"run of the workspace. Fewer than {IMPORTANCE_MIN_RUNS} runs with a value score nothing.",
           style="form", explode=True),
    ]
    page_params = [
        _q("limit", {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
           "Page size."),
        _q("cursor", {"type": "string"}, "Opaque next_cursor of the previous page (400 INVALID_CURSOR if altered "
                                         "or issued for another query)."),
    ]
    search_params = [
        *_COMMON[:2], *page_params,
        _q("q", {"type": "string"}, "Case-insensitive substring of the experiment's id, name, description, project, "
                                    "or its runs' tags and metric names."),
        _q("project", {"type": "string"}, "Project."),
        _q("lifecycle", {"type": "string"}, "Experiments with a run in this lifecycle state."),
        _q("tag", string_list, "key=value, repeatable; each needs a run that has it.", style="form", explode=True),
        _q("metric_name", string_list, "Each needs a run that has it; repeatable.", style="form", explode=True),
        _q("since", {"type": "string"}, "Updated, or with a run started, at or after: RFC3339, a Go duration or Nd."),
        _q("window", {"type": "string"}, "A Go duration up to 720h: the range ending now."),
        _q("start", {"type": "string", "format": "date-time"}, "Range start (RFC3339), with end; at most 30 days."),
        _q("end", {"type": "string", "format": "date-time"}, "Range end (RFC3339), with start."),
        _q("include", string_list, "Our addition: config adds each experiment's config space.", style="form",
           explode=True),
    ]
    points_params = [
        run_id, *_COMMON,
        _q("metric", {"type": "string"}, "Metric name (required: 400 EXACT_SERIES_REQUIRED)."),
        _q("target", {"type": "string"}, "If given, the run's id, experiment id or run group id."),
        _q("start_step", INT64, "First step (inclusive); start_step <= end_step."),
        _q("end_step", INT64, "Last step (inclusive)."),
    ]
    tails_params = [
        run_id, *_COMMON,
        _q("metric", {**string_list, "maxItems": MAX_TAIL_METRICS},
           f"Metrics to read; repeatable, each once, at most {MAX_TAIL_METRICS}.", style="form", explode=True),
        _q("since", {"type": "array", "items": {"type": "string"}},
           "Per metric, by position: the first step wanted (int64; blank: the whole range, reduced).", style="form",
           explode=True),
        _q("count", {"type": "array", "items": {"type": "string"}},
           "Per metric, by position: the catalog count held; unchanged with since = latest_step reads no points.",
           style="form", explode=True),
        _q("catalog_since", {"type": "string"}, "The cursor of an earlier answer: names only when changed."),
        _q("max_points", {"type": "integer", "minimum": 1, "maximum": MAX_MAX_POINTS, "default": DEFAULT_MAX_POINTS},
           "Each metric's points are M4-reduced to this many."),
        _q("target", {"type": "string"}, "If given, the run's id, experiment id or run group id."),
    ]
    table_params = [
        *_COMMON,
        _q("experiment", {"type": "string"}, "Only this experiment's runs."),
        _q("group", {"type": "string"}, "Only this run group's runs."),
        _q("run_id", {**string_list, "maxItems": RUN_IDS_LIMIT},
           f"Only these runs; repeatable, at most {RUN_IDS_LIMIT}.", style="form", explode=True),
        _q("metric", {**string_list, "maxItems": METRICS_LIMIT},
           f"Metrics whose latest/min/max each run carries; repeatable, at most {METRICS_LIMIT}. Default: loss, "
           "else a metric named like a loss, else the one most runs have.", style="form", explode=True),
        _q("offset", {"type": "integer", "minimum": 0}, "The window's first row (0 = the first matching run)."),
        _q("limit", {"type": "integer", "minimum": 1, "maximum": RUNS_LIMIT},
           f"Rows in the window, at most {RUNS_LIMIT} (the default)."),
        _q("sort", {"type": "string", "enum": list(RUN_SORTS)},
           "Order of the rows: a column, or the first metric's latest/min/max (runs without it last)."),
        _q("order", {"type": "string", "enum": ["asc", "desc"]},
           "asc or desc; default desc for created_at (newest first), asc otherwise."),
        _q("state", {"type": "string"}, "Only runs in this state."),
        _q("tag", {"type": "string"}, "Only runs with this tag, as key=value."),
        _q("note", {"type": "string"}, "Only runs with a note containing this text, in any case."),
        _q("q", {"type": "string"}, "Only runs whose ids, state, tags (key=value), config fields or notes contain "
           "this text, in any case."),
    ]
    note_body = {
        "type": "object", "additionalProperties": False, "required": ["text"],
        "properties": {
            "text": {"type": "string", "minLength": 1, "maxLength": MAX_NOTE_CHARS, "description": "The note."},
            "author": {"type": "string", "minLength": 1, "maxLength": MAX_AUTHOR_CHARS,
                       "description": "Who wrote it; default: the user the Portal runs as."},
            "idempotency_key": {"type": "string", "description": "TauGrid's rule: the same key and note again is "
                                "the note written before (200); the same key with another note is 409 CONFLICT."},
        },
        "description": f"At most {MAX_BODY_BYTES} bytes (413 BODY_TOO_LARGE).",
    }
    tag_key = _path("key", f"The tag's key: at most {MAX_TAG_KEY_CHARS} characters, no '=' or control characters, "
                           f"not starting with {', '.join(RESERVED_TAG_PREFIXES)} (the collector's).")
    tag_body = {"type": "object", "additionalProperties": False, "required": ["value"],
                "properties": {"value": {"type": "string", "maxLength": MAX_TAG_VALUE_CHARS}}}
    refusals = (" A run served from Kusto is 409 READ_ONLY_SOURCE; a store this Portal cannot write 409 "
                "READ_ONLY_STORE; a request from another site 403 CROSS_SITE_WRITE.")
    return {
        "openapi": "3.0.3",
        "info": {"title": "taunotebook local Portal: TauGrid v2 Stellar API and page data", "version": "2",
                 "description": "TauGrid's canonical v2 Stellar reads over a local expstore, and the local "
                                "Portal's page data (what v2 does not carry). Errors are "
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
            f"{API_BASE}/runs/{{run_id}}/config": _operation(
                "getRunConfig", "Our addition: the run's configuration (normalized values, flattened fields, "
                "format, uri, config_hash); a run without one is 200 with availability unavailable",
                [run_id, *_COMMON], "RunConfig"),
            f"{API_BASE}/runs/{{run_id}}/checkpoints": _operation(
                "getRunCheckpoints", "Our addition: the run's checkpoints (step, uri, digest, size_bytes; step order) "
                "and its retries (the step each resumed from); a source without checkpoints answers empty lists "
                "with availability unavailable", [run_id, *_COMMON], "RunCheckpoints"),
            f"{API_BASE}/runs/{{run_id}}/notes": {
                **_operation("getRunNotes", "Our addition: the notes people wrote on the run (TauGrid's observations), "
                             "oldest first", [run_id, *_COMMON], "NoteList"),
                "post": _write("addRunNote", "Our addition: add a note to the run." + refusals,
                               [run_id, *_COMMON], "NoteWritten", note_body, created=True),
            },
            f"{API_BASE}/runs/{{run_id}}/tags/{{key}}": {
                "put": _write("setRunTag", "Our addition: set the run's tag; the answer is its tags after." + refusals,
                              [run_id, tag_key, *_COMMON], "RunTags", tag_body),
                "delete": _write("deleteRunTag", "Our addition: remove the run's tag (one it does not have is fine); "
                                 "the answer is its tags after." + refusals, [run_id, tag_key, *_COMMON], "RunTags",
                                 None),
            },
            f"{PAGE_DATA_BASE}/runs/{{run_id}}/notifications": _operation(
                "getRunNotifications", "Page data: the webhook notifications the run's wrap sent (its notification "
                "run events), oldest first", [run_id, *_COMMON], "Notifications"),
            f"{API_BASE}/runs/{{run_id}}/artifacts": _operation(
                "listRunArtifacts", "Our addition: the run's rows of TauGrid's artifacts table (its history and "
                "event files, images, checkpoints) in step order, paged by after; file says whether each is "
                "present, gone (deleted after it was registered) or remote", artifact_params, "ArtifactList"),
            f"{API_BASE}/runs/{{run_id}}/artifacts/{{artifact_id}}": _download_operation(run_id),
            f"{API_BASE}/runs/{{run_id}}/media": _operation(
                "getRunMedia", "Our addition: the run's histogram, image and text tags with their counts and step "
                "ranges; a Kusto-served run answers no tags and says in unavailable that its media live with the "
                "run's store", [run_id, *_COMMON], "MediaTags"),
            f"{API_BASE}/runs/{{run_id}}/histograms": _operation(
                "getRunHistograms", "Our addition: a histogram tag over a step range, reduced to at most max_steps "
                "steps (never dropping a keep step): each step's summary (count, min, max, percentiles) and buckets",
                histogram_params, "Histograms"),
            f"{API_BASE}/runs/{{run_id}}/histograms/at": _operation(
                "getRunHistogramAt", "Our addition: the histogram of a tag at exactly one step; 404 when the tag has "
                "no value there", [run_id, *_COMMON, tag_q, step_q], "Histograms"),
            f"{API_BASE}/runs/{{run_id}}/images": _operation(
                "getRunImages", "Our addition: every image of a tag at the stored step nearest step (the earlier on "
                "a tie), each with the url of its bytes and of its thumbnail",
                [run_id, *_COMMON, tag_q, step_q,
                 _q("inline_thumbnails", {"type": "string", "enum": ["true", "false", "1", "0"], "default": "false"},
                    "true: each image that is its own thumbnail and at most 4,096 bytes carries them as a data: URI "
                    "(thumbnail_data; 64 KiB an answer), the others null.")],
                "ImagesAt"),
            f"{API_BASE}/runs/{{run_id}}/images/{{digest}}": _image_operation(run_id),
            f"{API_BASE}/runs/{{run_id}}/text": _operation(
                "getRunText", "Our addition: the strings of a text tag at the stored step nearest step",
                [run_id, *_COMMON, tag_q, step_q], "TextAt"),
            f"{API_BASE}/experiments/{{experiment_id}}/runs": _operation(
                "listExperimentRuns", "An experiment's runs, newest first, paged by cursor. " + _CONFIG_FILTERS,
                list_params, "RunList"),
            f"{API_BASE}/experiments/search": _operation(
                "searchExperiments", "The workspace's experiments, latest run first, paged by cursor. "
                + _CONFIG_FILTERS, search_params, "ExperimentSearch"),
            f"{API_BASE}/parameter-importance": _operation(
                "getParameterImportance", "Our addition: each hyperparameter's correlation with and random-forest "
                "importance for a metric's final, best or latest value over the runs of the named experiments and "
                f"runs (at most {IMPORTANCE_RUNS} runs, the newest, and {IMPORTANCE_PARAMETERS} parameters, cuts "
                "said in warnings); too few runs with a value is 200 with no parameters and the reason in "
                "availability", importance_params, "ParameterImportance"),
            f"{PAGE_DATA_BASE}/runs/{{run_id}}/points": _operation(
                "getPointDetails", "Page data: a metric's non-finite observations and wall-time samples",
                points_params, "PointDetails"),
            f"{PAGE_DATA_BASE}/runs/{{run_id}}/tails": _operation(
                "getRunTails", "Page data: several metrics' new points, their catalog entries and the run's state "
                "in one answer (a live pane's poll)", tails_params, "Tails"),
            f"{PAGE_DATA_BASE}/runs/{{run_id}}/job": _operation(
                "getRunJob", "Page data: the resources the run's job asked for, where it is in its lifecycle (queued, "
                "admitted, running, retried N, succeeded / failed / cancelled, with the reason in words) and its "
                "faults", [run_id, *_COMMON], "RunJob"),
            FAULT_EVENTS: _fault_events_operation(),
            f"{PAGE_DATA_BASE}/runs": _operation(
                "listRunTable", f"Page data: a window (at most {RUNS_LIMIT} rows, newest first unless sorted) of the "
                "workspace's runs that pass the filters, with their config fields and chosen metrics' latest/min/max, "
                "and how many runs match", table_params, "RunTable"),
            f"{PAGE_DATA_BASE}/experiments": _operation(
                "listExperiments", "Page data: the workspace's experiments with their run counts", _COMMON,
                "ExperimentList"),
        },
    }
