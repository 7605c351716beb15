"""A sync Python client for TauGrid's v2 Stellar reads, against the local Portal or TauGrid's real Portal."""

from __future__ import annotations

import email.utils
import http
import json
import math
import os
import time
from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar
from urllib.parse import parse_qsl, quote, quote_plus, urlsplit, urlunsplit

import httpx

__all__ = [
    "ENV_TOKEN",
    "ENV_URL",
    "AuthorizationError",
    "Availability",
    "ClientError",
    "DependencyError",
    "Freshness",
    "InternalError",
    "Metadata",
    "MetricSummary",
    "NotFoundError",
    "PortalClient",
    "PortalError",
    "PortalUnreachable",
    "Provenance",
    "Run",
    "RunMetrics",
    "RunPage",
    "Series",
    "stellar_url",
]

ENV_URL = "TAU_PORTAL_URL"
ENV_TOKEN = "TAU_PORTAL_TOKEN"

_API = "/api/v2/stellar"
_T = TypeVar("_T")
# A server asking for a very long pause (or a hostile one) must not hang a notebook cell for hours.
_MAX_RETRY_AFTER_SECONDS = 60.0


# --------------------------------------------------------------------------------------------- errors


class PortalError(Exception):
    """An error answer from the Portal, carrying TauGrid's envelope fields.

    ``status`` is the HTTP status (``None`` when the Portal was never reached); ``code``, ``message``,
    ``classification`` and ``retryable`` come from ``{"error": {...}}`` when the server sent TauGrid's
    envelope, and are derived from the status otherwise. ``attempts`` counts the requests made.
    """

    def __init__(
        self,
        status: int | None,
        code: str,
        message: str,
        classification: str,
        retryable: bool,
        *,
        method: str = "GET",
        url: str = "",
        attempts: int = 1,
        body: Any = None,
    ) -> None:
        self.status = status
        self.code = code
        self.message = message
        self.classification = classification
        self.retryable = retryable
        self.method = method
        self.url = url
        self.attempts = attempts
        self.body = body
        super().__init__(self._describe())

    def _describe(self) -> str:
        where = f" ({self.method} {self.url})" if self.url else ""
        status = f"{self.status} " if self.status is not None else ""
        tries = f"; gave up after {self.attempts} attempts" if self.attempts > 1 else ""
        hint = _HINTS.get(type(self), "")
        return f"{status}{self.code}: {self.message}{where}{tries}{hint}"

    def __str__(self) -> str:
        # attempts is filled in after construction by the retry loop; describe the final state.
        return self._describe()

    def __reduce__(self):
        # Exceptions cross process boundaries (multiprocessing, ipyparallel); rebuild with every field.
        kw = {"method": self.method, "url": self.url, "attempts": self.attempts, "body": self.body}
        args = (self.status, self.code, self.message, self.classification, self.retryable)
        return _rebuild_error, (type(self), args, kw)


def _rebuild_error(cls: type[PortalError], args: tuple, kw: dict[str, Any]) -> PortalError:
    return cls(*args, **kw)


class AuthorizationError(PortalError):
    """401/403: no token, a wrong token, or a workspace this caller may not read."""


class NotFoundError(PortalError):
    """404: the run, experiment or route does not exist in this workspace."""


class ClientError(PortalError):
    """Any other 4xx: the request itself is wrong (bad parameter, cursor, path id); retrying will not help."""


class DependencyError(PortalError):
    """502/503/504: a source behind the Portal (Kusto, the store) failed or is unavailable; usually retryable."""


class InternalError(PortalError):
    """Any other 5xx."""


class PortalUnreachable(PortalError):
    """No HTTP answer at all: connection refused, DNS failure, timeout, connection dropped."""


_HINTS: dict[type, str] = {
    AuthorizationError: f" — pass token= or set {ENV_TOKEN} (the token printed by `taunotebook portal`)",
    PortalUnreachable: f" — is the Portal running at this address? (base_url= or {ENV_URL})",
}

_BY_CLASSIFICATION: dict[str, type[PortalError]] = {
    "authorization": AuthorizationError,
    "not_found": NotFoundError,
    "client": ClientError,
    "dependency": DependencyError,
    "internal": InternalError,
}


def _classify_status(status: int) -> tuple[str, bool]:
    """TauGrid's status → (classification, retryable) rule, used when the body carries no envelope."""
    if status in (401, 403):
        return "authorization", False
    if status == 404:
        return "not_found", False
    if status in (502, 503, 504):
        return "dependency", True
    if status >= 500:
        return "internal", True
    # 429 is not a TauGrid v2 code, but a gateway in front of the real Portal may throttle; waiting helps.
    return "client", status == 429


def _status_code_name(status: int) -> str:
    try:
        return http.HTTPStatus(status).name
    except ValueError:
        return f"HTTP_{status}"


def _error_from_response(response: httpx.Response) -> PortalError:
    """Turn any non-2xx answer into a typed error, whether or not it is TauGrid's v2 envelope."""
    status = response.status_code
    classification, retryable = _classify_status(status)
    code = _status_code_name(status)
    message = response.reason_phrase or code
    body: Any
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        body = response.text
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        # TauGrid's v2 envelope: {"error": {"code", "message", "classification", "retryable"}}.
        env = body["error"]
        code = str(env.get("code") or code)
        message = str(env.get("message") or message)
        classification = str(env.get("classification") or classification)
        if isinstance(env.get("retryable"), bool):
            retryable = env["retryable"]
    elif isinstance(body, dict) and "error" in body:
        # The Portal boundary's {"error": "..."}, or the deprecated API's {"error", "code", "detail", "status"}.
        if isinstance(body.get("code"), str) and body["code"]:
            code = body["code"]
        parts = [str(body["error"])]
        if body.get("detail"):
            parts.append(str(body["detail"]))
        message = ": ".join(p for p in parts if p)
    elif isinstance(body, dict) and "reason" in body:
        # The Portal boundary's workspace gate: {"reason", "scope", "state"}.
        context = ", ".join(f"{k}={body[k]}" for k in ("scope", "state") if body.get(k))
        message = str(body["reason"]) + (f" ({context})" if context else "")
    elif isinstance(body, str) and body.strip():
        # Proxies answer with plain text or HTML; the first line is usually the useful part.
        message = body.strip().splitlines()[0][:200]
    if 300 <= status < 400:
        location = response.headers.get("location", "")
        message = f"redirected to {location or '?'}; the Portal URL may be wrong or need a sign-in"
    cls = _BY_CLASSIFICATION.get(classification)
    if cls is None:
        # An unknown classification from a newer server: fall back on the status, never lose the error.
        cls = _BY_CLASSIFICATION[_classify_status(status)[0]]
    request = response.request
    return cls(
        status,
        code,
        message,
        classification,
        retryable,
        method=request.method,
        url=_redact(request.url),
        body=body,
    )


def _redact(url: httpx.URL) -> str:
    # Error messages end up in notebooks and logs; a ?token= copied into the base URL must not.
    return str(url.copy_remove_param("token"))


def _retry_after(response: httpx.Response | None) -> float | None:
    if response is None:
        return None
    value = response.headers.get("retry-after")
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    if math.isnan(seconds):
        return None
    return min(max(seconds, 0.0), _MAX_RETRY_AFTER_SECONDS)


# ------------------------------------------------------------------------------------------ results


def _rest(data: Mapping[str, Any], known: Sequence[str]) -> dict[str, Any]:
    """Fields the server sent that this client does not model; kept so nothing the Portal adds is lost."""
    return {k: v for k, v in data.items() if k not in known}


def _obj(data: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise TypeError(f"{what}: expected a JSON object, got {type(data).__name__}")
    return data


def _strs(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value or ())


def _time(d: Mapping[str, Any], key: str, extra: dict[str, Any]) -> datetime | None:
    """An RFC 3339 field as a datetime; a form this Python cannot parse stays, as sent, in ``extra``."""
    value = d.get(key)
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value))
    except ValueError:
        # A timestamp quirk of a newer server must not make a whole read fail.
        extra[key] = value
        return None


def _opt_int(data: Mapping[str, Any], key: str) -> int | None:
    return None if data.get(key) is None else int(data[key])


def _float(value: Any) -> float:
    # Go cannot encode NaN/Inf in JSON: a server may send null or a string for a non-finite value.
    if value is None:
        return math.nan
    return float(value)


@dataclass(frozen=True, slots=True)
class Provenance:
    requested_source: str
    served_sources: tuple[str, ...]
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> Provenance:
        d = _obj(data or {}, "metadata.provenance")
        return cls(
            requested_source=str(d.get("requested_source", "")),
            served_sources=_strs(d.get("served_sources")),
            extra=_rest(d, ("requested_source", "served_sources")),
        )


@dataclass(frozen=True, slots=True)
class Freshness:
    state: str
    as_of: datetime | None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> Freshness:
        d = _obj(data or {}, "metadata.freshness")
        extra = _rest(d, ("state", "as_of"))
        return cls(state=str(d.get("state", "")), as_of=_time(d, "as_of", extra), extra=extra)


@dataclass(frozen=True, slots=True)
class Availability:
    state: str
    reasons: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> Availability:
        d = _obj(data or {}, "metadata.availability")
        return cls(state=str(d.get("state", "")), reasons=_strs(d.get("reasons")), extra=_rest(d, ("state", "reasons")))


@dataclass(frozen=True, slots=True)
class Metadata:
    """TauGrid's per-response ``metadata`` block: when, from which source, how fresh, how complete."""

    generated_at: datetime | None
    provenance: Provenance
    freshness: Freshness
    availability: Availability
    partial: bool = False
    warnings: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    _KEYS = ("generated_at", "provenance", "freshness", "availability", "partial", "warnings")

    @classmethod
    def from_json(cls, data: Any) -> Metadata:
        d = _obj(data or {}, "metadata")
        extra = _rest(d, cls._KEYS)
        return cls(
            generated_at=_time(d, "generated_at", extra),
            provenance=Provenance.from_json(d.get("provenance")),
            freshness=Freshness.from_json(d.get("freshness")),
            availability=Availability.from_json(d.get("availability")),
            partial=bool(d.get("partial", False)),
            warnings=_strs(d.get("warnings")),
            extra=extra,
        )


_RUN_KEYS = (
    "run_id",
    "experiment_id",
    "project",
    "run_group_id",
    "parent_run_id",
    "state",
    "lifecycle_state",
    "successful",
    "success_reasons",
    "owner",
    "created_at",
    "started_at",
    "completed_at",
    "config_hash",
    "code_sha",
    "image_digest",
    "result_uri",
    "tags",
    "metric_names",
    "source",
)


@dataclass(frozen=True, slots=True)
class Run:
    """One run as TauGrid's ``run`` object. Timestamps stay the server's RFC 3339 strings.

    ``metadata`` is set for :meth:`PortalClient.run` and ``None`` for the runs inside a :class:`RunPage`
    (the page carries it); ``response_extra`` keeps unknown top-level fields of the single-run answer.
    """

    run_id: str
    project: str = ""
    run_group_id: str = ""
    state: str = ""
    lifecycle_state: str = ""
    successful: bool = False
    success_reasons: tuple[str, ...] = ()
    created_at: str = ""
    source: str = ""
    tags: dict[str, str] = field(default_factory=dict)
    metric_names: tuple[str, ...] = ()
    experiment_id: str | None = None
    parent_run_id: str | None = None
    owner: str | None = None
    started_at: str | None = None
    completed_at: str | None = None
    config_hash: str | None = None
    code_sha: str | None = None
    image_digest: str | None = None
    result_uri: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    metadata: Metadata | None = None
    response_extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any, metadata: Metadata | None = None, response_extra: Mapping[str, Any] = ()) -> Run:
        d = _obj(data, "run")
        if "run_id" not in d:
            raise TypeError("run: the object has no run_id")
        opt = {k: (None if d.get(k) is None else str(d[k])) for k in _OPTIONAL_RUN_KEYS}
        return cls(
            run_id=str(d["run_id"]),
            project=str(d.get("project", "")),
            run_group_id=str(d.get("run_group_id", "")),
            state=str(d.get("state", "")),
            lifecycle_state=str(d.get("lifecycle_state", "")),
            successful=bool(d.get("successful", False)),
            success_reasons=_strs(d.get("success_reasons")),
            created_at=str(d.get("created_at", "")),
            source=str(d.get("source", "")),
            tags={str(k): v for k, v in (d.get("tags") or {}).items()},
            metric_names=_strs(d.get("metric_names")),
            extra=_rest(d, _RUN_KEYS),
            metadata=metadata,
            response_extra=dict(response_extra),
            **opt,
        )


_OPTIONAL_RUN_KEYS = frozenset(
    (
        "experiment_id",
        "parent_run_id",
        "owner",
        "started_at",
        "completed_at",
        "config_hash",
        "code_sha",
        "image_digest",
        "result_uri",
    )
)

_SUMMARY_KEYS = (
    "name",
    "count",
    "finite_count",
    "non_finite_count",
    "min_step",
    "max_step",
    "latest_step",
    "latest_wall_time",
    "latest_value",
    "min_value",
    "max_value",
    "updated_at",
)


@dataclass(frozen=True, slots=True)
class MetricSummary:
    """One metric of a run: counts, step range and (only when finite_count > 0) values.

    ``latest_wall_time`` is microseconds since the epoch, as TauGrid sends it.
    """

    name: str
    count: int = 0
    finite_count: int = 0
    non_finite_count: int = 0
    min_step: int | None = None
    max_step: int | None = None
    latest_step: int | None = None
    latest_wall_time: int | None = None
    latest_value: float | None = None
    min_value: float | None = None
    max_value: float | None = None
    updated_at: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> MetricSummary:
        d = _obj(data, "metrics[]")

        def opt_float(key: str) -> float | None:
            return None if key not in d else _float(d[key])

        return cls(
            name=str(d.get("name", "")),
            count=int(d.get("count") or 0),
            finite_count=int(d.get("finite_count") or 0),
            non_finite_count=int(d.get("non_finite_count") or 0),
            min_step=_opt_int(d, "min_step"),
            max_step=_opt_int(d, "max_step"),
            latest_step=_opt_int(d, "latest_step"),
            latest_wall_time=_opt_int(d, "latest_wall_time"),
            latest_value=opt_float("latest_value"),
            min_value=opt_float("min_value"),
            max_value=opt_float("max_value"),
            updated_at=None if d.get("updated_at") is None else str(d["updated_at"]),
            extra=_rest(d, _SUMMARY_KEYS),
        )


@dataclass(frozen=True, slots=True)
class RunMetrics:
    """The name-sorted metric summaries of one run."""

    metadata: Metadata
    run_id: str
    metrics: tuple[MetricSummary, ...]
    extra: dict[str, Any] = field(default_factory=dict)

    def __iter__(self) -> Iterator[MetricSummary]:
        return iter(self.metrics)

    def __len__(self) -> int:
        return len(self.metrics)

    def __getitem__(self, name: str) -> MetricSummary:
        for m in self.metrics:
            if m.name == name:
                return m
        raise KeyError(f"run {self.run_id!r} has no metric {name!r}; it has {[m.name for m in self.metrics]}")

    def names(self) -> list[str]:
        return [m.name for m in self.metrics]

    @classmethod
    def from_json(cls, data: Any) -> RunMetrics:
        d = _obj(data, "metrics response")
        return cls(
            metadata=Metadata.from_json(d.get("metadata")),
            run_id=str(d.get("run_id", "")),
            metrics=tuple(MetricSummary.from_json(m) for m in d.get("metrics") or ()),
            extra=_rest(d, ("metadata", "run_id", "metrics")),
        )


_SERIES_KEYS = (
    "metadata",
    "target",
    "run_id",
    "metric",
    "start_step",
    "end_step",
    "step_interval",
    "max_points",
    "source_points",
    "returned_points",
    "points",
)


@dataclass(frozen=True, slots=True)
class Series:
    """One metric of one run as two compact columns: ``steps`` (int64) and ``values`` (float64).

    ``partial`` is true when the server returned fewer points than the series holds (reduced or thinned).
    ``point_extra`` keeps, per point, any field besides step/value (empty when the server sends none).
    """

    metadata: Metadata
    target: str
    run_id: str
    metric: str
    max_points: int
    source_points: int
    returned_points: int
    steps: array
    values: array
    start_step: int | None = None
    end_step: int | None = None
    step_interval: int | None = None
    point_extra: tuple[dict[str, Any], ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def partial(self) -> bool:
        return self.metadata.partial

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self) -> Iterator[tuple[int, float]]:
        return zip(self.steps, self.values, strict=True)

    @classmethod
    def from_json(cls, data: Any) -> Series:
        d = _obj(data, "series response")
        steps = array("q")
        values = array("d")
        point_extra: list[dict[str, Any]] = []
        for p in d.get("points") or ():
            p = _obj(p, "points[]")
            steps.append(int(p["step"]))
            values.append(_float(p.get("value")))
            point_extra.append({k: v for k, v in p.items() if k not in ("step", "value")})
        if not any(point_extra):
            point_extra = []

        return cls(
            metadata=Metadata.from_json(d.get("metadata")),
            target=str(d.get("target", "")),
            run_id=str(d.get("run_id", "")),
            metric=str(d.get("metric", "")),
            max_points=int(d.get("max_points") or 0),
            source_points=int(d.get("source_points") or 0),
            returned_points=int(d.get("returned_points") if d.get("returned_points") is not None else len(steps)),
            steps=steps,
            values=values,
            start_step=_opt_int(d, "start_step"),
            end_step=_opt_int(d, "end_step"),
            step_interval=_opt_int(d, "step_interval"),
            point_extra=tuple(point_extra),
            extra=_rest(d, _SERIES_KEYS),
        )


@dataclass(frozen=True, slots=True)
class RunPage:
    """One page of an experiment's runs, newest first; ``next_cursor`` is ``None`` on the last page."""

    metadata: Metadata
    target: str
    runs: tuple[Run, ...]
    next_cursor: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __iter__(self) -> Iterator[Run]:
        return iter(self.runs)

    def __len__(self) -> int:
        return len(self.runs)

    @classmethod
    def from_json(cls, data: Any) -> RunPage:
        d = _obj(data, "runs response")
        return cls(
            metadata=Metadata.from_json(d.get("metadata")),
            target=str(d.get("target", "")),
            runs=tuple(Run.from_json(r) for r in d.get("runs") or ()),
            next_cursor=d.get("next_cursor") or None,
            extra=_rest(d, ("metadata", "target", "runs", "next_cursor")),
        )


# ------------------------------------------------------------------------------------------- links


def stellar_url(
    run_id: str, project: str | None = None, *, base: str | None = None, workspace: str | None = None
) -> str:
    """TauGrid's "Open in Experiments" link: ``/stellar?target=<run_id>[&project=<p>]`` under ``base``.

    Mirrors TauGrid's ``links.ExperimentProjectPath``: ids are trimmed and query-escaped (``+`` for a
    space); with a workspace the query is re-encoded with keys sorted, as Go's ``url.Values.Encode``
    does. ``base`` defaults to ``TAU_PORTAL_URL``; with neither, the link is the bare path. An empty
    run id gives ``""`` so callers omit the link rather than show a dead one.
    """
    run_id = (run_id or "").strip()
    if not run_id:
        return ""
    query = [("target", run_id)]
    if project and project.strip():
        query.append(("project", project.strip()))
    if workspace and workspace.strip():
        query.append(("workspace", workspace.strip()))
        query.sort()
    path = "/stellar?" + "&".join(f"{_go_query_escape(k)}={_go_query_escape(v)}" for k, v in query)
    if base is None:
        base = os.environ.get(ENV_URL) or ""
    if not base:
        return path
    # A base URL copied from `taunotebook portal` may carry ?token=; _portal_root drops it so the link never leaks it.
    return _portal_root(base)[0] + path


def _portal_root(url: str) -> tuple[str, str | None]:
    """(the Portal's root URL without a trailing slash, the ``?token=`` it carried) for any URL a user may paste.

    `taunotebook portal` prints a page URL (``<root>/stellar?token=…``) and an API base (``<root>/api/v2/stellar``);
    both are TauGrid's own paths under the Portal root, so either one names the same Portal.
    """
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    for suffix in (_API, "/stellar"):
        if path.endswith(suffix):
            path = path[: -len(suffix)]
            break
    token = dict(parse_qsl(parts.query)).get("token") or None
    return urlunsplit((parts.scheme, parts.netloc, path, "", "")), token


def _go_query_escape(s: str) -> str:
    # Go's url.QueryEscape keeps only A-Z a-z 0-9 - _ . ~ and writes space as '+', exactly quote_plus(safe="").
    return quote_plus(s, safe="")


# ------------------------------------------------------------------------------------------ client


def _path_id(value: str, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{what} must be a non-empty string, got {value!r}")
    segment = quote(value, safe="")
    # httpx normalises dot segments out of URLs; escape them so the server sees (and rejects) the id itself.
    if segment in (".", ".."):
        segment = segment.replace(".", "%2E")
    return segment


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    return str(value)


class PortalClient:
    """A sync client for TauGrid's v2 Stellar reads; use it as a context manager.

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
        root, url_token = _portal_root(base_url)
        # The URL's own token is more specific than an environment left over from another Portal.
        token = token or url_token or os.environ.get(ENV_TOKEN) or None
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}")
        self.base_url = root + "/"
        self.source = source
        self.workspace = workspace
        self.project = project
        self.retries = retries
        self.backoff = backoff
        headers = {"Accept": "application/json", "User-Agent": "taunotebook-portal-client"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
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
        return self._get(f"{_API}/runs/{_path_id(run_id, 'run_id')}", self._common(source), _run_response)

    def metrics(self, run_id: str, *, source: str | None = None) -> RunMetrics:
        """``GET /api/v2/stellar/runs/{run_id}/metrics``."""
        path = f"{_API}/runs/{_path_id(run_id, 'run_id')}/metrics"
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
        for key, value in (
            ("start_step", start_step),
            ("end_step", end_step),
            ("step_interval", step_interval),
            ("max_points", max_points),
            ("project", project if project is not None else self.project),
        ):
            if value is not None:
                params.append((key, _query_value(value)))
        return self._get(f"{_API}/runs/{_path_id(run_id, 'run_id')}/series", params, Series.from_json)

    def experiment_runs(
        self,
        experiment_id: str,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        source: str | None = None,
        **filters: Any,
    ) -> RunPage:
        """``GET /api/v2/stellar/experiments/{experiment_id}/runs``: one page, newest first.

        ``filters`` are TauGrid's listing filters (``q``, ``project``, ``group``, ``state``, ``lifecycle``,
        ``tag``, ``metric_name``, ``since``); a list value is sent as a repeated parameter.
        """
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
        path = f"{_API}/experiments/{_path_id(experiment_id, 'experiment_id')}/runs"
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
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            page = self.experiment_runs(experiment_id, limit=limit, cursor=cursor, source=source, **dict(filters))
            yield page
            if not page.next_cursor:
                return
            if page.next_cursor in seen:
                # A server handing back a cursor twice would otherwise make this loop forever.
                raise ClientError(
                    None, "CURSOR_LOOP", f"the server returned cursor {page.next_cursor!r} twice", "client", False
                )
            seen.add(page.next_cursor)
            cursor = page.next_cursor

    # -- links

    def stellar_url(self, run_id: str, project: str | None = None, *, base: str | None = None) -> str:
        """TauGrid's Stellar link for a run under this client's base URL, workspace and project."""
        return stellar_url(
            run_id,
            project if project is not None else self.project,
            base=base if base is not None else self.base_url,
            workspace=self.workspace,
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
        server_says = _retry_after(response)
        if server_says is not None:
            return server_says
        return self.backoff * (2 ** (attempt - 1))

    def _get(self, path: str, params: list[tuple[str, str]], build: Callable[[Any], _T]) -> _T:
        attempt = 0
        while True:
            attempt += 1
            response: httpx.Response | None = None
            try:
                response = self._http.get(path, params=params)
            except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
                request = exc.request if _has_request(exc) else None
                error: PortalError = PortalUnreachable(
                    None,
                    "UNREACHABLE",
                    f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__,
                    "unreachable",
                    True,
                    url=_redact(request.url) if request is not None else self.base_url + path.lstrip("/"),
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
                            url=_redact(response.request.url),
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
                            url=_redact(response.request.url),
                            attempts=attempt,
                            body=data,
                        ) from exc
                error = _error_from_response(response)
            error.attempts = attempt
            if not error.retryable or attempt > self.retries:
                raise error
            self._sleep(self._delay(attempt, response))


def _run_response(data: Any) -> Run:
    d = _obj(data, "run response")
    return Run.from_json(
        d.get("run"), metadata=Metadata.from_json(d.get("metadata")), response_extra=_rest(d, ("metadata", "run"))
    )


def _has_request(exc: httpx.RequestError) -> bool:
    try:
        exc.request  # noqa: B018 - the property raises when httpx had not built the request yet
    except RuntimeError:
        return False
    return True
