"""The Portal's one route table: every path it answers, the view that answers it, and where that view runs.

Data routes (TauGrid's v2 reads, our page data, the export, and our notes and tags, the only writes) are
:class:`~.dispatch.DataRoute` s matched on the still-escaped path and answered through one shell
(:class:`~.dispatch.View`; a write route's through :class:`~.dispatch.Writes`); the OpenAPI document, the
workspace directory and the Stellar pages are plain Starlette routes. A path no route matches is TauGrid's
``404 NOT_FOUND`` envelope (the app's error handler, :mod:`.app`).
"""

from __future__ import annotations

import functools

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from .context import Context, Portal
from .dispatch import DataRoute, View, Write, WriteRoute, Writes
from .errors import V2Error, json_response
from .openapi import openapi_document
from .prefixes import API_BASE, EXPORT_BASE, PAGE_DATA_BASE
from .views import (
    artifacts,
    checkpoints,
    experiment_runs,
    experiment_search,
    export,
    fault_events,
    job,
    media,
    metrics,
    notes,
    pages,
    parameter_importance,
    points,
    run,
    run_config,
    run_table,
    series,
    tails,
    workspace_experiments,
    workspaces,
)

__all__ = ["data_routes", "route_table"]


def data_routes(portal: Portal) -> list[DataRoute]:
    """The v2 reads, the page data, the export, and the notes and tags routes. ``inline=False``: the view reads
    every run of the workspace or a metric's files, so it always runs in a worker thread (the others first try
    the event loop)."""

    def route(path: str, view, **how) -> DataRoute:
        return DataRoute(path, View(portal, view, **how))

    return [
        route(API_BASE + "/runs/{run_id:segment}", run.read),
        route(API_BASE + "/runs/{run_id:segment}/metrics", metrics.read),
        route(API_BASE + "/runs/{run_id:segment}/series", series.read),
        route(API_BASE + "/runs/{run_id:segment}/config", run_config.read),
        route(API_BASE + "/runs/{run_id:segment}/checkpoints", checkpoints.read),
        # Our additions, the Portal's only writes: a run's notes (read, add) and its tags (set, delete).
        WriteRoute(API_BASE + "/runs/{run_id:segment}/notes",
                   Writes(portal, {"POST": Write(functools.partial(notes.add, portal), notes.NOTE_FIELDS)},
                          read=View(portal, notes.read)), name="notes"),
        WriteRoute(API_BASE + "/runs/{run_id:segment}/tags/{key:segment}",
                   Writes(portal, {"PUT": Write(functools.partial(notes.set_tag, portal), notes.TAG_FIELDS),
                                   "DELETE": Write(functools.partial(notes.delete_tag, portal), needs_body=False)}),
                   name="tags"),
        route(API_BASE + "/runs/{run_id:segment}/artifacts", artifacts.read),
        route(API_BASE + "/runs/{run_id:segment}/artifacts/{artifact_id:segment}", artifacts.download, inline=False),
        # Our additions (issue 29): the run's histograms, images and text; a tag is a query value, never a path.
        route(API_BASE + "/runs/{run_id:segment}/media", media.read),
        route(API_BASE + "/runs/{run_id:segment}/histograms", media.histograms, inline=False),
        route(API_BASE + "/runs/{run_id:segment}/histograms/at", media.histogram_at, inline=False),
        route(API_BASE + "/runs/{run_id:segment}/images", media.images),
        route(API_BASE + "/runs/{run_id:segment}/images/{digest:segment}", media.image, inline=False),
        route(API_BASE + "/runs/{run_id:segment}/text", media.text, inline=False),
        # Another read of a run: TauGrid reads the id and the method before it finds no such route.
        route(API_BASE + "/runs/{run_id:segment}/{_read:segment}", _no_such_read),
        route(API_BASE + "/experiments/search", experiment_search.read, inline=False),
        # Our addition: each hyperparameter's correlation and importance for a metric over a set of runs.
        route(API_BASE + "/parameter-importance", parameter_importance.read, inline=False),
        # TauGrid checks this route's method before its path id.
        route(API_BASE + "/experiments/{experiment_id:segment}/runs", experiment_runs.read, inline=False,
              method_first=True),
        route(PAGE_DATA_BASE + "/experiments", workspace_experiments.read, inline=False),
        route(PAGE_DATA_BASE + "/runs", run_table.read, inline=False),
        route(PAGE_DATA_BASE + "/runs/{run_id:segment}/points", points.read),
        route(PAGE_DATA_BASE + "/runs/{run_id:segment}/tails", tails.read),
        route(PAGE_DATA_BASE + "/runs/{run_id:segment}/notifications", notes.notifications),
        route(PAGE_DATA_BASE + "/runs/{run_id:segment}/job", job.read),
        route(EXPORT_BASE + "/{run_id:segment}", export.read, inline=False),
    ]


def _no_such_read(ctx: Context) -> Response:
    raise V2Error(404, "NOT_FOUND", "route was not found")


def route_table(portal: Portal, default_source: str) -> list[BaseRoute]:
    """Every route of a Portal serving ``portal``'s sources, ``default_source`` for requests that name none."""
    document = openapi_document()

    def openapi(request: Request) -> Response:
        return json_response(document)

    return [
        *data_routes(portal),
        Route("/openapi.json", openapi, methods=["GET"]),
        workspaces.route(portal.workspace, default_source),
        fault_events.route(portal, default_source),
        *pages.routes(portal.write_gate.page_key if portal.write_gate is not None else None),
    ]
