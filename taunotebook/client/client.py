"""``PortalClient``: a sync client for TauGrid's v2 Stellar reads and the local Portal's page data."""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx

from .artifact_models import Artifact, ArtifactPage
from .checkpoint_models import Checkpoint, RunCheckpoints
from .config_models import ExperimentPage, ExperimentSummary, RunConfiguration
from .errors import (
    ENV_TOKEN,
    ENV_URL,
    ClientError,
    InternalError,
    PortalError,
    PortalUnreachable,
    error_from_response,
    redact,
    retry_after,
)
from .importance_models import ParameterImportance
from .links import API_PATH, PAGE_DATA_PATH, path_segment, portal_root, stellar_url
from .media_models import Histograms, ImagesAt, MediaTags, TextAt
from .models import ExperimentList, PointDetails, Run, RunMetrics, RunPage, Series
from .note_models import Note, NoteList, NoteWritten, Notification, NotificationList, RunTagsAnswer
from .run_handle import RunHandle
from .series_columns import SeriesColumns, read_export_csv
from .table_models import RunTable
from .tail_models import Tails

__all__ = ["SOURCES", "PortalClient", "check_source"]

SOURCES = ("local", "kusto", "auto")  # TauGrid's source parameter


def check_source(source: str | None, what: str = "source") -> str | None:
    """``source`` lowercased and trimmed (None stays None: the Portal's default); anything else is a ValueError."""
    if source is None:
        return None
    if not isinstance(source, str) or source.strip().lower() not in SOURCES:
        raise ValueError(f"{what} must be one of {', '.join(SOURCES)} (or None for the Portal's default), "
                         f"got {source!r}")
    return source.strip().lower()

_T = TypeVar("_T")


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    return str(value)


def _config_params(config: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """``config={"lr": 0.1, "optimizer.name": ["adam", "sgd"]}`` as ``config.<key>=<value>`` filters.

    A string is sent as is; a number, bool or None as JSON writes it; a list, tuple or set gives
    alternatives (any of them matches). A list-valued field is matched by its JSON text (``"[64,64]"``).
    """
    params: list[tuple[str, str]] = []
    for key, value in (config or {}).items():
        if not str(key).strip():
            raise ValueError("config filter keys must not be empty")
        values = value if isinstance(value, list | tuple | set | frozenset) else [value]
        for v in values:
            if isinstance(v, dict | list | tuple):
                raise TypeError(f"config filter {key!r}: a value must be a string, number, bool or None, not "
                                f"{type(v).__name__}")
            params.append((f"config.{key}", v if isinstance(v, str) else json.dumps(v)))
    return params


class PortalClient:
    """A sync client for TauGrid's v2 Stellar reads and the local Portal's page data; a context manager.

    ``base_url`` and ``token`` default to ``TAU_PORTAL_URL`` and ``TAU_PORTAL_TOKEN``; a base URL with
    ``?token=`` (as printed by ``taunotebook portal``) supplies the token too. ``source``, ``workspace``
    and ``project`` are sent with every read that takes them unless a call overrides them. Errors the
    server marks ``retryable`` (and connection failures) are retried ``retries`` times with exponential
    backoff starting at ``backoff`` seconds, or after the server's ``Retry-After``.
    """

    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        *,
        source: str | None = None,
        workspace: str | None = None,
        project: str | None = None,
        timeout: float | None = 10.0,
        retries: int = 3,
        backoff: float = 0.25,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        base_url = base_url or os.environ.get(ENV_URL) or None
        if not base_url:
            raise ValueError(
                f"no Portal URL: pass base_url= or set {ENV_URL} (and {ENV_TOKEN} for the token), "
                "e.g. the URL `taunotebook portal` prints"
            )
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"Portal URL must be http(s)://host[:port][/prefix], got {base_url!r}")
        root, url_token = portal_root(base_url)
        # The URL's own token is more specific than an environment left over from another Portal.
        token = token or url_token or os.environ.get(ENV_TOKEN) or None
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}")
        self.base_url = root + "/"
        self.source = check_source(source)
        self.workspace = workspace
        self.project = project
        self.retries = retries
        self.backoff = backoff
        headers = {"Accept": "application/json", "User-Agent": "taunotebook-portal-client"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._token = token  # a write sends it in X-Tau-Token too (Authorization alone never writes)
        self._http = httpx.Client(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(timeout),
            transport=transport,
            follow_redirects=False,
        )

    # -- lifecycle

    def __enter__(self) -> PortalClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def __repr__(self) -> str:
        return f"PortalClient({self.base_url!r}, source={self.source!r}, workspace={self.workspace!r})"

    # -- the four reads

    def run(self, run_id: str, *, source: str | None = None) -> Run:
        """``GET /api/v2/stellar/runs/{run_id}``."""
        return self._get(f"{API_PATH}/runs/{path_segment(run_id, 'run_id')}", self._common(source), Run.from_response)

    def metrics(self, run_id: str, *, source: str | None = None) -> RunMetrics:
        """``GET /api/v2/stellar/runs/{run_id}/metrics``."""
        path = f"{API_PATH}/runs/{path_segment(run_id, 'run_id')}/metrics"
        return self._get(path, self._common(source), RunMetrics.from_json)

    def series(
        self,
        run_id: str,
        metric: str,
        *,
        target: str | None = None,
        start_step: int | None = None,
        end_step: int | None = None,
        step_interval: int | None = None,
        max_points: int | None = None,
        project: str | None = None,
        source: str | None = None,
    ) -> Series:
        """``GET /api/v2/stellar/runs/{run_id}/series``; ``target`` defaults to the run id.

        Unset limits are not sent, so the server's defaults apply (TauGrid: ``max_points`` 8000, at most 12000).
        """
        params = self._common(source)
        params += [("target", target if target is not None else run_id), ("metric", metric)]
        params += self._optional(project, start_step=start_step, end_step=end_step, step_interval=step_interval,
                                 max_points=max_points)
        return self._get(f"{API_PATH}/runs/{path_segment(run_id, 'run_id')}/series", params, Series.from_json)

    def _optional(self, project: str | None, **values: Any) -> list[tuple[str, str]]:
        """Query parameters of the ``values`` that are set, then ``project`` (the client's when not given)."""
        values["project"] = project if project is not None else self.project
        return [(key, _query_value(value)) for key, value in values.items() if value is not None]

    def _listing_params(self, source: str | None, limit: int | None, cursor: str | None,
                        config: Mapping[str, Any] | None, include_config: bool,
                        filters: dict[str, Any]) -> list[tuple[str, str]]:
        params = self._common(source)
        if "project" not in filters and self.project is not None:
            filters["project"] = self.project
        for key, value in (("limit", limit), ("cursor", cursor), *filters.items()):
            if value is None:
                continue
            if isinstance(value, list | tuple | set | frozenset):
                params += [(key, _query_value(v)) for v in value]
            else:
                params.append((key, _query_value(value)))
        params += _config_params(config)
        if include_config:
            params.append(("include", "config"))
        return params

    def experiment_runs(
        self,
        experiment_id: str,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        source: str | None = None,
        config: Mapping[str, Any] | None = None,
        include_config: bool = False,
        **filters: Any,
    ) -> RunPage:
        """``GET /api/v2/stellar/experiments/{experiment_id}/runs``: one page, newest first.

        ``filters`` are TauGrid's listing filters (``q``, ``project``, ``group``, ``state``, ``lifecycle``,
        ``tag``, ``metric_name``, ``since``); a list value is sent as a repeated parameter. The local
        Portal's additions: ``config={"lr": 0.1}`` keeps runs whose config has those values (see
        :func:`_config_params`), ``include_config=True`` fills each :attr:`Run.config`.
        """
        params = self._listing_params(source, limit, cursor, config, include_config, filters)
        path = f"{API_PATH}/experiments/{path_segment(experiment_id, 'experiment_id')}/runs"
        return self._get(path, params, RunPage.from_json)

    def iter_experiment_runs(
        self, experiment_id: str, *, limit: int | None = None, source: str | None = None, **filters: Any
    ) -> Iterator[Run]:
        """Every run of the experiment, following ``next_cursor`` page by page."""
        for page in self.iter_experiment_run_pages(experiment_id, limit=limit, source=source, **filters):
            yield from page.runs

    def iter_experiment_run_pages(
        self, experiment_id: str, *, limit: int | None = None, source: str | None = None, **filters: Any
    ) -> Iterator[RunPage]:
        """Every page of the experiment's runs, following ``next_cursor`` until the server omits it."""
        return _follow(lambda cursor: self.experiment_runs(experiment_id, limit=limit, cursor=cursor, source=source,
                                                           **dict(filters)))

    def search_experiments(
        self,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        source: str | None = None,
        config: Mapping[str, Any] | None = None,
        include_config: bool = False,
        **filters: Any,
    ) -> ExperimentPage:
        """``GET /api/v2/stellar/experiments/search``: one page of experiments, latest run first.

        ``filters`` are TauGrid's (``q``, ``project``, ``lifecycle``, ``tag``, ``metric_name``, ``since``,
        ``window``, ``start``, ``end``); ``config=`` and ``include_config=`` as for :meth:`experiment_runs`
        (an experiment matches when one of its runs has every config value; ``include_config`` fills
        each :attr:`ExperimentSummary.config` with its runs' distinct values).
        """
        params = self._listing_params(source, limit, cursor, config, include_config, filters)
        return self._get(f"{API_PATH}/experiments/search", params, ExperimentPage.from_json)

    def iter_experiments(self, *, limit: int | None = None, source: str | None = None,
                         **filters: Any) -> Iterator[ExperimentSummary]:
        """Every experiment :meth:`search_experiments` finds, following ``next_cursor`` page by page."""
        for page in _follow(lambda cursor: self.search_experiments(limit=limit, cursor=cursor, source=source,
                                                                   **dict(filters))):
            yield from page.experiments

    def run_config(self, run_id: str, *, project: str | None = None, source: str | None = None) -> RunConfiguration:
        """``GET /api/v2/stellar/runs/{run_id}/config`` (the local Portal's addition): the run's configuration.

        A run without one answers a :class:`RunConfiguration` whose ``available`` is False. TauGrid's
        Portal answers 404 (:class:`NotFoundError`, message ``route was not found``).
        """
        params = self._common(source)
        project = project if project is not None else self.project
        if project is not None:
            params.append(("project", project))
        return self._get(f"{API_PATH}/runs/{path_segment(run_id, 'run_id')}/config", params,
                         RunConfiguration.from_json)

    def checkpoints(self, run_id: str, *, project: str | None = None,
                    source: str | None = None) -> RunCheckpoints:
        """``GET /api/v2/stellar/runs/{run_id}/checkpoints`` (the local Portal's addition): the run's checkpoints
        (``.checkpoints``: step, uri, size_bytes, digest) and retries. TauGrid's Portal answers 404."""
        params = self._common(source)
        project = project if project is not None else self.project
        if project is not None:
            params.append(("project", project))
        return self._get(f"{API_PATH}/runs/{path_segment(run_id, 'run_id')}/checkpoints", params,
                         RunCheckpoints.from_json)

    def checkpoint(self, run_id: str, step: int, *, project: str | None = None,
                   source: str | None = None) -> Checkpoint:
        """The run's checkpoint nearest at or before ``step`` (not a deleted one); ``LookupError`` when none is."""
        return self.checkpoints(run_id, project=project, source=source).at(step)
    def artifacts(self, run_id: str, *, type: str | None = None, after: str | None = None, limit: int | None = None,
                  project: str | None = None, source: str | None = None) -> ArtifactPage:
        """``GET /api/v2/stellar/runs/{run_id}/artifacts`` (the local Portal's addition): one page of the run's
        artifacts (its history and event files, images, checkpoints); ``after`` is the previous page's
        ``next_after``. Each says whether its file is ``present``, ``gone`` or ``remote``."""
        params = [*self._common(source), *self._optional(project, limit=limit)]
        if type:
            params.append(("type", type))
        if after:
            params.append(("after", after))
        return self._get(f"{API_PATH}/runs/{path_segment(run_id, 'run_id')}/artifacts", params,
                         ArtifactPage.from_json)

    def iter_artifacts(self, run_id: str, *, type: str | None = None, source: str | None = None) -> Iterator[Artifact]:
        """Every artifact of the run, page by page."""
        after: str | None = None
        while True:
            page = self.artifacts(run_id, type=type, after=after, source=source)
            yield from page.artifacts
            if not page.next_after or page.next_after == after:
                return
            after = page.next_after

    def download_artifact(self, run_id: str, artifact_id: str, destination: str | os.PathLike[str], *,
                          source: str | None = None) -> int:
        """Stream one artifact's file to ``destination`` (never held whole in memory); returns the bytes written.
        A file that is gone, or not on the Portal's machine, is :class:`NotFoundError` saying so."""
        path = (f"{API_PATH}/runs/{path_segment(run_id, 'run_id')}/artifacts/"
                f"{path_segment(artifact_id, 'artifact_id')}")
        with self._http.stream("GET", path, params=self._common(source)) as response:
            if not response.is_success:
                response.read()
                raise error_from_response(response)
            written = 0
            with open(destination, "wb") as out:
                for block in response.iter_bytes():
                    out.write(block)
                    written += len(block)
        return written

    # -- a run's histograms, images and text (the local Portal's additions; TauGrid's Portal answers 404)

    def _media(self, run_id: str, route: str, params: list[tuple[str, str]], build: Callable[[Any], _T]) -> _T:
        return self._get(f"{API_PATH}/runs/{path_segment(run_id, 'run_id')}/{route}", params, build)

    def media(self, run_id: str, *, project: str | None = None, source: str | None = None) -> MediaTags:
        """``GET …/runs/{run_id}/media``: the run's histogram, image and text tags with counts and step ranges."""
        return self._media(run_id, "media", [*self._common(source), *self._optional(project)], MediaTags.from_json)

    def histograms(self, run_id: str, tag: str, *, step_min: int | None = None, step_max: int | None = None,
                   max_steps: int | None = None, keep: Iterable[int] = (), buckets: bool = True,
                   project: str | None = None, source: str | None = None) -> Histograms:
        """``GET …/runs/{run_id}/histograms``: a histogram tag over a step range, reduced to at most ``max_steps``
        steps (the Portal's default 500), never dropping a step of ``keep``; ``buckets=False`` reads summaries."""
        params = [*self._common(source), ("tag", tag),
                  *self._optional(project, step_min=step_min, step_max=step_max, max_steps=max_steps)]
        kept = ",".join(str(int(s)) for s in keep)
        if kept:
            params.append(("keep", kept))
        if not buckets:
            params.append(("buckets", "false"))
        return self._media(run_id, "histograms", params, Histograms.from_json)

    def histogram_at(self, run_id: str, tag: str, step: int, *, project: str | None = None,
                     source: str | None = None) -> Histograms:
        """``GET …/runs/{run_id}/histograms/at``: the histogram of ``tag`` at exactly ``step`` (NotFoundError
        when it has none there)."""
        params = [*self._common(source), ("tag", tag), ("step", str(int(step))), *self._optional(project)]
        return self._media(run_id, "histograms/at", params, Histograms.from_json)

    def images(self, run_id: str, tag: str, step: int, *, project: str | None = None,
               source: str | None = None) -> ImagesAt:
        """``GET …/runs/{run_id}/images``: every image of ``tag`` at the stored step nearest ``step``."""
        params = [*self._common(source), ("tag", tag), ("step", str(int(step))), *self._optional(project)]
        return self._media(run_id, "images", params, ImagesAt.from_json)

    def image_bytes(self, run_id: str, digest: str, *, thumbnail: bool = False, source: str | None = None) -> bytes:
        """The bytes of one image of the run by its digest (``sha256:<hex>`` or the hex), or its PNG thumbnail."""
        path = (f"{API_PATH}/runs/{path_segment(run_id, 'run_id')}/images/"
                f"{path_segment(digest.removeprefix('sha256:'), 'digest')}")
        params = [*self._common(source), *([("thumbnail", "1")] if thumbnail else [])]
        response = self._http.get(path, params=params)
        if not response.is_success:
            raise error_from_response(response)
        return response.content

    def text(self, run_id: str, tag: str, step: int, *, project: str | None = None,
             source: str | None = None) -> TextAt:
        """``GET …/runs/{run_id}/text``: the strings of ``tag`` at the stored step nearest ``step``."""
        params = [*self._common(source), ("tag", tag), ("step", str(int(step))), *self._optional(project)]
        return self._media(run_id, "text", params, TextAt.from_json)

    # -- the local Portal's page data (``/stellar/data/...``; TauGrid's Portal does not serve it)

    def point_details(
        self,
        run_id: str,
        metric: str,
        *,
        start_step: int | None = None,
        end_step: int | None = None,
        project: str | None = None,
        source: str | None = None,
    ) -> PointDetails:
        """``GET /stellar/data/runs/{run_id}/points``: where the metric's non-finite values sit, and wall times.

        A TauGrid Portal answers 404 (:class:`NotFoundError` with code ``NOT_FOUND``, message ``route was
        not found``): draw without them.
        """
        params = [*self._common(source), ("metric", metric),
                  *self._optional(project, start_step=start_step, end_step=end_step)]
        path = f"{PAGE_DATA_PATH}/runs/{path_segment(run_id, 'run_id')}/points"
        return self._get(path, params, PointDetails.from_json)

    def series_columns(
        self,
        run_id: str,
        metric: str,
        *,
        start_step: int | None = None,
        end_step: int | None = None,
        project: str | None = None,
        source: str | None = None,
    ) -> SeriesColumns:
        """``GET /stellar/data/export/{run_id}``: every stored point of the series (non-finite ones too), as
        numpy columns (``.to_pandas()`` with pandas). Read as it streams; one attempt, no retries."""
        params = [*self._common(source), ("metric", metric), ("format", "csv"),
                  *self._optional(project, start_step=start_step, end_step=end_step)]
        path = f"{PAGE_DATA_PATH}/export/{path_segment(run_id, 'run_id')}"
        try:
            with self._http.stream("GET", path, params=params) as response:
                if not response.is_success:
                    response.read()
                    raise error_from_response(response)
                return read_export_csv(response.iter_bytes(), run_id, metric, start_step, end_step)
        except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            raise PortalUnreachable(None, "UNREACHABLE", f"{type(exc).__name__}: {exc}", "unreachable", True,
                                    url=self.base_url + path.lstrip("/")) from exc

    def tails(
        self,
        run_id: str,
        since: Mapping[str, tuple[int | None, int | None] | int | None],
        *,
        catalog_since: str | None = None,
        max_points: int | None = None,
        project: str | None = None,
        source: str | None = None,
    ) -> Tails:
        """``GET /stellar/data/runs/{run_id}/tails``: several metrics' new points of one run in one request.

        ``since`` maps each metric to the step its new points start at (inclusive; ``None``: the whole range,
        M4-reduced to ``max_points``), or to ``(step, count)`` where ``count`` is the catalog count the caller
        holds: a metric whose count and latest step are unchanged has no points read. ``catalog_since`` is
        the ``cursor`` of an earlier answer: the run's metric names come only when they changed since.
        A TauGrid Portal answers 404 (``route was not found``): read the v2 catalog and series instead.
        """
        params = self._common(source)
        for metric, held in since.items():
            step, count = held if isinstance(held, tuple) else (held, None)
            params += [("metric", metric), ("since", "" if step is None else str(int(step))),
                       ("count", "" if count is None else str(int(count)))]
        params += self._optional(project, catalog_since=catalog_since, max_points=max_points)
        path = f"{PAGE_DATA_PATH}/runs/{path_segment(run_id, 'run_id')}/tails"
        return self._get(path, params, Tails.from_json)

    def experiments(self, *, project: str | None = None, source: str | None = None) -> ExperimentList:
        """``GET /stellar/data/experiments``: the served workspace's experiments with their run counts."""
        params = self._common(source)
        project = project if project is not None else self.project
        if project is not None:
            params.append(("project", project))
        return self._get(f"{PAGE_DATA_PATH}/experiments", params, ExperimentList.from_json)

    def run_table(
        self,
        *,
        project: str | None = None,
        experiment: str | None = None,
        group: str | None = None,
        run_ids: Iterable[str] = (),
        metrics: Iterable[str] = (),
        source: str | None = None,
    ) -> RunTable:
        """``GET /stellar/data/runs``: every run of the workspace (newest first, at most 5000) with its config
        fields and the ``metrics``' latest/min/max (default: the Portal picks a loss), in one request.

        ``experiment``, ``group`` and ``run_ids`` (at most 200) narrow it. A TauGrid Portal answers 404
        (:class:`NotFoundError`, message ``route was not found``).
        """
        params = self._common(source)
        project = project if project is not None else self.project
        for key, value in (("project", project), ("experiment", experiment), ("group", group)):
            if value is not None:
                params.append((key, value))
        params += [("run_id", r) for r in run_ids]
        params += [("metric", m) for m in metrics]
        return self._get(f"{PAGE_DATA_PATH}/runs", params, RunTable.from_json)

    def parameter_importance(self, metric: str, *, reduction: str = "final", goal: str | None = None,
                             experiment_ids: Iterable[str] = (), run_ids: Iterable[str] = (),
                             project: str | None = None, source: str | None = None) -> ParameterImportance:
        """``GET /api/v2/stellar/parameter-importance``: each hyperparameter's correlation with and random-forest
        importance for ``metric``'s final, best or latest value over the runs of ``experiment_ids`` and
        ``run_ids`` (neither: the workspace's), most important first (docs/comparing-runs.md)."""
        params = [*self._common(source), *self._optional(project), ("metric", metric), ("reduction", reduction)]
        if goal is not None:
            params.append(("goal", goal))
        params += [("experiment_id", e) for e in experiment_ids]
        params += [("run_id", r) for r in run_ids]
        return self._get(f"{API_PATH}/parameter-importance", params, ParameterImportance.from_json)

    # -- notes and tags (the local Portal's addition; its only writes)

    def notes(self, run_id: str, *, project: str | None = None, source: str | None = None) -> list[Note]:
        """``GET /api/v2/stellar/runs/{run_id}/notes``: the run's notes, oldest first."""
        params = [*self._common(source), *self._optional(project)]
        return list(self._get(f"{API_PATH}/runs/{path_segment(run_id, 'run_id')}/notes", params,
                              NoteList.from_json).notes)

    def add_note(self, run_id: str, text: str, *, author: str | None = None, idempotency_key: str | None = None,
                 project: str | None = None, source: str | None = None) -> Note:
        """``POST /api/v2/stellar/runs/{run_id}/notes``: add a note (``author`` default: the Portal's user).

        Sent with an idempotency key (a fresh one unless given), so a retry after a lost answer is the same note,
        never a second one; a key used before for another note is a :class:`ClientError` with code ``CONFLICT``.
        """
        body = {"text": text, "idempotency_key": idempotency_key or f"note-{uuid.uuid4().hex}"}
        if author is not None:
            body["author"] = author
        params = [*self._common(source), *self._optional(project)]
        return self._send("POST", f"{API_PATH}/runs/{path_segment(run_id, 'run_id')}/notes", params, body,
                          NoteWritten.from_json).note

    def run_tags(self, run_id: str, *, project: str | None = None, source: str | None = None) -> dict[str, str]:
        """The run's tags (those of :meth:`run`)."""
        params = [*self._common(source), *self._optional(project)]
        return dict(self._get(f"{API_PATH}/runs/{path_segment(run_id, 'run_id')}", params, Run.from_response).tags)

    def set_tag(self, run_id: str, key: str, value: str, *, project: str | None = None,
                source: str | None = None) -> dict[str, str]:
        """``PUT /api/v2/stellar/runs/{run_id}/tags/{key}``; returns the run's tags after."""
        path = f"{API_PATH}/runs/{path_segment(run_id, 'run_id')}/tags/{path_segment(key, 'tag key')}"
        params = [*self._common(source), *self._optional(project)]
        return dict(self._send("PUT", path, params, {"value": value}, RunTagsAnswer.from_json).tags)

    def delete_tag(self, run_id: str, key: str, *, project: str | None = None,
                   source: str | None = None) -> dict[str, str]:
        """``DELETE /api/v2/stellar/runs/{run_id}/tags/{key}`` (a tag the run lacks is fine); the tags after."""
        path = f"{API_PATH}/runs/{path_segment(run_id, 'run_id')}/tags/{path_segment(key, 'tag key')}"
        params = [*self._common(source), *self._optional(project)]
        return dict(self._send("DELETE", path, params, None, RunTagsAnswer.from_json).tags)

    def notifications(self, run_id: str, *, project: str | None = None,
                      source: str | None = None) -> list[Notification]:
        """``GET /stellar/data/runs/{run_id}/notifications`` (page data): the webhooks the run's wrap sent."""
        params = [*self._common(source), *self._optional(project)]
        return list(self._get(f"{PAGE_DATA_PATH}/runs/{path_segment(run_id, 'run_id')}/notifications", params,
                              NotificationList.from_json).notifications)

    def run_handle(self, run_id: str, *, project: str | None = None) -> RunHandle:
        """The run's notes and tags through this client: ``.note(text)``, ``.notes()``, ``.tags[key] = value``."""
        return RunHandle(lambda: contextlib.nullcontext(self), run_id,
                         project if project is not None else self.project)

    # -- links

    def stellar_url(self, run_id: str, project: str | None = None, *, base: str | None = None,
                    compare: Iterable[str] = ()) -> str:
        """TauGrid's Stellar link for a run under this client's base URL, workspace, project and source."""
        return stellar_url(
            run_id,
            project if project is not None else self.project,
            base=base if base is not None else self.base_url,
            workspace=self.workspace,
            compare=compare,
            source=self.source,
        )

    # -- transport

    def _common(self, source: str | None) -> list[tuple[str, str]]:
        params: list[tuple[str, str]] = []
        source = source if source is not None else self.source
        if source is not None:
            params.append(("source", source))
        if self.workspace is not None:
            params.append(("workspace", self.workspace))
        return params

    def _sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def _delay(self, attempt: int, response: httpx.Response | None) -> float:
        # No jitter: one notebook talks to one Portal, there is no herd to spread out.
        server_says = retry_after(response)
        if server_says is not None:
            return server_says
        return self.backoff * (2 ** (attempt - 1))

    def _get(self, path: str, params: list[tuple[str, str]], build: Callable[[Any], _T]) -> _T:
        return self._send("GET", path, params, None, build)

    def _send(self, method: str, path: str, params: list[tuple[str, str]], body: Any,
              build: Callable[[Any], _T]) -> _T:
        # Writes are retried like reads: a note carries an idempotency key, and a tag's PUT or DELETE is the
        # same whether it lands once or twice.
        headers = {"X-Tau-Token": self._token} if method != "GET" and self._token else None
        attempt = 0
        while True:
            attempt += 1
            response: httpx.Response | None = None
            try:
                response = self._http.request(method, path, params=params, json=body, headers=headers)
            except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
                request = exc.request if _has_request(exc) else None
                error: PortalError = PortalUnreachable(
                    None,
                    "UNREACHABLE",
                    f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__,
                    "unreachable",
                    True,
                    url=redact(request.url) if request is not None else self.base_url + path.lstrip("/"),
                )
                error.__cause__ = exc
            else:
                if response.is_success:
                    try:
                        data = response.json()
                    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                        raise InternalError(
                            response.status_code,
                            "INVALID_RESPONSE",
                            f"the answer is not JSON ({response.headers.get('content-type', 'no content type')}); "
                            "is this URL a TauGrid Portal?",
                            "internal",
                            False,
                            url=redact(response.request.url),
                            attempts=attempt,
                        ) from exc
                    try:
                        return build(data)
                    except (KeyError, TypeError, ValueError) as exc:
                        # A body that is JSON but not the v2 shape: say what is wrong instead of a bare KeyError.
                        raise InternalError(
                            response.status_code,
                            "INVALID_RESPONSE",
                            f"the answer is not TauGrid's v2 shape: {type(exc).__name__}: {exc}",
                            "internal",
                            False,
                            url=redact(response.request.url),
                            attempts=attempt,
                            body=data,
                        ) from exc
                error = error_from_response(response)
            error.attempts = attempt
            if not error.retryable or attempt > self.retries:
                raise error
            self._sleep(self._delay(attempt, response))


def _follow(read: Callable[[str | None], _T]) -> Iterator[_T]:
    """Pages from ``read(cursor)``, following ``next_cursor`` until the server omits it."""
    cursor: str | None = None
    seen: set[str] = set()
    while True:
        page = read(cursor)
        yield page
        next_cursor = page.next_cursor  # type: ignore[attr-defined]
        if not next_cursor:
            return
        if next_cursor in seen:
            # A server handing back a cursor twice would otherwise make this loop forever.
            raise ClientError(None, "CURSOR_LOOP", f"the server returned cursor {next_cursor!r} twice", "client",
                              False)
        seen.add(next_cursor)
        cursor = next_cursor


def _has_request(exc: httpx.RequestError) -> bool:
    try:
        exc.request  # noqa: B018 - the property raises when httpx had not built the request yet
    except RuntimeError:
        return False
    return True
