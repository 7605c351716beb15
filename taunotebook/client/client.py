"""``PortalClient``: a sync client for TauGrid's v2 Stellar reads and the local Portal's page data.

The reads of TauGrid's v2 API and the transport (retries, errors) are here; a run's files (:mod:`.run_files`),
its media (:mod:`.media_reads`), the page data and parameter importance (:mod:`.page_reads`) and notes and tags
(:mod:`.annotations`) are mixins.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx

from .annotations import RunAnnotations
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
from .links import API_PATH, path_segment, portal_root, stellar_url
from .media_reads import MediaReads
from .models import Run, RunMetrics, RunPage, Series
from .page_reads import PageReads
from .run_files import RunFileReads

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


class PortalClient(RunFileReads, MediaReads, PageReads, RunAnnotations):
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
