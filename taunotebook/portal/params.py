"""Query parameters of the Portal's routes, read and checked as TauGrid's v2 handlers do.

Go's ``url.Values.Get`` (first value, trimmed by the handlers), ``strconv`` integers (ASCII digits,
int64 range), and the listing's filters with TauGrid's messages (TAUGRID-REFERENCE §3.2, §3.3).
Every failure is ``400 INVALID_ARGUMENT`` naming the parameter; nothing here sizes an allocation.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qsl

import numpy as np
from starlette.types import Scope

from .errors import V2Error

__all__ = [
    "CONFIG_FILTERS_LIMIT",
    "DEFAULT_LIMIT",
    "DEFAULT_MAX_POINTS",
    "ExperimentFilters",
    "MAX_LIMIT",
    "MAX_MAX_POINTS",
    "Query",
    "RunFilters",
    "SeriesParams",
    "bounded_int_param",
    "config_filters",
    "experiment_filters",
    "include_param",
    "limit_param",
    "optional_int64",
    "parse_int",
    "parse_query",
    "run_filters",
    "series_params",
    "step_range",
]

DEFAULT_MAX_POINTS = 8000
MAX_MAX_POINTS = 12000
DEFAULT_LIMIT = 50
MAX_LIMIT = 200
_INT = re.compile(r"[+-]?[0-9]+")
_INT64 = (-(2**63), 2**63 - 1)
_GO_DURATION = re.compile(r"([0-9]*\.?[0-9]*)(ns|us|µs|μs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_query(scope: Scope) -> list[tuple[str, str]]:
    """The query as Go reads it: ``&``-separated, blanks kept, undecodable bytes replaced."""
    return list(_parse_query(scope.get("query_string", b"")))


@functools.lru_cache(maxsize=1024)
def _parse_query(raw: bytes) -> tuple[tuple[str, str], ...]:
    # Live panes repeat the same few queries many times a second.
    return tuple(parse_qsl(raw.decode("latin-1"), keep_blank_values=True, separator="&", encoding="utf-8",
                           errors="replace"))


class Query:
    """Query parameters read the way Go's ``url.Values.Get`` does: the first value, or empty."""

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        self.pairs = pairs
        self.first: dict[str, str] = {}
        for key, value in pairs:
            self.first.setdefault(key, value)

    def get(self, key: str) -> str:
        return self.first.get(key, "").strip()

    def all(self, key: str) -> list[str]:
        return [v for k, v in self.pairs if k == key]


def parse_int(raw: str, name: str, bits64: bool = True) -> int:
    # Go's strconv accepts ASCII digits with an optional sign only (no "_", no Unicode digits).
    if not _INT.fullmatch(raw):
        raise V2Error(400, "INVALID_ARGUMENT", f"{name} must be an integer")
    value = int(raw)
    if bits64 and not _INT64[0] <= value <= _INT64[1]:
        raise V2Error(400, "INVALID_ARGUMENT", f"{name} must be an integer")
    return value


def optional_int64(q: Query, name: str) -> int | None:
    raw = q.get(name)
    return None if raw == "" else parse_int(raw, name)


@dataclass(frozen=True, slots=True)
class SeriesParams:
    max_points: int
    start_step: int | None
    end_step: int | None
    step_interval: int  # 0 = none, as TauGrid's omitempty int


def step_range(q: Query) -> tuple[int | None, int | None]:
    """``start_step`` and ``end_step``: int64 each, ``start <= end`` when both are given."""
    start = optional_int64(q, "start_step")
    end = optional_int64(q, "end_step")
    if start is not None and end is not None and start > end:
        raise V2Error(400, "INVALID_ARGUMENT", "start_step must be <= end_step")
    return start, end


def bounded_int_param(q: Query, name: str, default: int, lo: int, hi: int) -> int:
    """An integer parameter that is ``default`` when absent and otherwise must lie in ``lo..hi``: 400 naming
    ``name`` and its bounds otherwise."""
    raw = q.get(name)
    if not raw:
        return default
    value = parse_int(raw, name)
    if not lo <= value <= hi:
        raise V2Error(400, "INVALID_ARGUMENT", f"{name} must be an integer between {lo} and {hi}")
    return value


def limit_param(q: Query, *, default: int = DEFAULT_LIMIT, maximum: int = MAX_LIMIT) -> int:
    """A page size (``limit``): the listing's default 50, 1..200, TauGrid's message; another route's bounds by
    ``default`` and ``maximum`` (a run's artifacts: 200, 1..1000)."""
    return bounded_int_param(q, "limit", default, 1, maximum)


def series_params(q: Query) -> SeriesParams:
    """``max_points``, ``start_step``, ``end_step``, ``step_interval`` with TauGrid's messages, in its order."""
    max_points = DEFAULT_MAX_POINTS
    raw = q.get("max_points")
    if raw:
        max_points = parse_int(raw, "max_points")
        if max_points < 1:
            raise V2Error(400, "INVALID_ARGUMENT", "max_points must be at least 1")
        if max_points > MAX_MAX_POINTS:
            raise V2Error(400, "INVALID_ARGUMENT", f"max_points must be at most {MAX_MAX_POINTS}")
    start, end = step_range(q)
    interval = 0
    raw = q.get("step_interval")
    if raw:
        interval = parse_int(raw, "step_interval")
        if interval < 1:
            raise V2Error(400, "INVALID_ARGUMENT", "step_interval must be at least 1")
    return SeriesParams(max_points, start, end, interval)


def normalize_lifecycle(value: str) -> str:
    value = value.strip().lower()
    return "succeeded" if value in ("success", "successful") else value


def _go_duration_seconds(text: str) -> float | None:
    """Seconds of a Go duration string (``90m``, ``1h30m``, ``-2h``), or None when it is not one."""
    sign = 1.0
    if text[:1] in "+-" and text:
        sign = -1.0 if text[0] == "-" else 1.0
        text = text[1:]
    if text == "0":
        return 0.0
    if not text:
        return None
    total, pos = 0.0, 0
    while pos < len(text):
        m = _GO_DURATION.match(text, pos)
        if m is None or m.group(1) in ("", "."):
            return None
        total += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    return sign * total


def _parse_rfc3339(text: str) -> datetime | None:
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})", text):
        return None
    try:
        return datetime.fromisoformat(text.upper().replace("Z", "+00:00")).astimezone(UTC)
    except (ValueError, OverflowError):  # e.g. month 13, or year 1 shifted before year 1 by its offset
        return None


def _fmt(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def normalize_since(value: str, now: datetime) -> str:
    """``since`` as RFC3339 seconds: RFC3339, a Go duration, or ``<N>d`` before now."""
    bad = V2Error(400, "INVALID_ARGUMENT", "since must be RFC3339, Go duration, or Nd")
    if value.endswith("d"):
        try:
            days = float(value[:-1])
        except ValueError:
            raise bad from None
        if not np.isfinite(days) or abs(days) > 36500:
            raise bad  # beyond a century either way the datetime arithmetic would overflow; no run is there
        return _fmt(now - timedelta(days=days))
    seconds = _go_duration_seconds(value)
    if seconds is not None:
        if abs(seconds) > 36500 * 86400:
            raise bad
        return _fmt(now - timedelta(seconds=seconds))
    parsed = _parse_rfc3339(value)
    if parsed is None:
        raise bad
    return _fmt(parsed)


CONFIG_PREFIX = "config."
CONFIG_FILTERS_LIMIT = 32
INCLUDES = ("config",)


def config_filters(q: Query) -> dict[str, tuple[str, ...]]:
    """``config.<key>=<value>`` filters (our addition): key -> the values it may have.

    Different keys must all match; one key given several times matches any of its values.
    """
    out: dict[str, list[str]] = {}
    count = 0
    for key, value in q.pairs:
        if not key.startswith(CONFIG_PREFIX):
            continue
        name = key[len(CONFIG_PREFIX):].strip()
        if not name:
            raise V2Error(400, "INVALID_ARGUMENT", "config filters must be config.<key>=<value>")
        count += 1
        if count > CONFIG_FILTERS_LIMIT:
            raise V2Error(400, "INVALID_ARGUMENT", f"at most {CONFIG_FILTERS_LIMIT} config filters may be given")
        out.setdefault(name, []).append(value.strip())
    return {k: tuple(dict.fromkeys(v)) for k, v in sorted(out.items())}


def include_param(q: Query) -> frozenset[str]:
    """``include`` (our addition; comma-separated or repeated): what a listing adds to each item."""
    names = set()
    for raw in q.all("include"):
        for part in raw.split(","):
            part = part.strip().lower()
            if not part:
                continue
            if part not in INCLUDES:
                raise V2Error(400, "INVALID_ARGUMENT", f"include must be one of: {', '.join(INCLUDES)}")
            names.add(part)
    return frozenset(names)


def _time_filters(q: Query, now: datetime) -> tuple[str, str, str]:
    """(since, start, end) from ``since`` | ``window`` | ``start``+``end``, with TauGrid's messages."""
    since, window, start, end = q.get("since"), q.get("window"), q.get("start"), q.get("end")
    if since and (window or start or end):
        raise V2Error(400, "INVALID_ARGUMENT", "since cannot be combined with window/start/end")
    if window:
        if start or end:
            raise V2Error(400, "INVALID_ARGUMENT", "window cannot be combined with start/end")
        seconds = _go_duration_seconds(window)
        if seconds is None or seconds <= 0 or seconds > 30 * 86400:
            raise V2Error(400, "INVALID_ARGUMENT", "window must be a positive duration no greater than 30d")
        start, end = _fmt(now - timedelta(seconds=seconds)), _fmt(now)
    elif start or end:
        if not (start and end):
            raise V2Error(400, "INVALID_ARGUMENT", "start and end must be provided together")
        s, e = _parse_rfc3339(start), _parse_rfc3339(end)
        if s is None:
            raise V2Error(400, "INVALID_ARGUMENT", "start must be RFC3339")
        if e is None:
            raise V2Error(400, "INVALID_ARGUMENT", "end must be RFC3339")
        if not e > s or e - s > timedelta(days=30):
            raise V2Error(400, "INVALID_ARGUMENT", "range must be positive and no greater than 30d")
        start, end = _fmt(s), _fmt(e)
    return since, start, end


def _tag_filters(q: Query) -> dict[str, str]:
    tags: dict[str, str] = {}
    for tag in q.all("tag"):
        key, sep, value = tag.partition("=")
        if not sep or not key.strip():
            raise V2Error(400, "INVALID_ARGUMENT", "tag filters must be key=value")
        tags[key.strip()] = value.strip()
    return tags


def _reject_success_gates(q: Query, *names: str) -> None:
    for name in names:
        if any(v.strip() for v in q.all(name)):
            # TauGrid's success gates; not implemented locally, and silently ignoring them would mislead.
            raise V2Error(400, "INVALID_ARGUMENT", f"{name} is not supported by the local Portal")


def _metric_names(q: Query) -> list[str]:
    names = q.all("metric_name") or q.all("metric")
    return [n.strip() for n in names if n.strip()]


def _hash(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, ensure_ascii=True).encode()).hexdigest()


@dataclass(slots=True)
class ExperimentFilters:
    """``/experiments/search``'s filters: TauGrid's (no group, state or target) and our config filters."""

    query: str
    project: str
    lifecycle: str
    tags: dict[str, str]
    metric_names: list[str]
    since: str
    start: str
    end: str
    config: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def hash(self, source: str, workspace: str) -> str:
        """Binds a cursor to the query it was issued for."""
        return _hash("experiments", source, workspace, self.query, self.project, self.lifecycle,
                     sorted(self.tags.items()), self.metric_names, self.since, self.start, self.end,
                     sorted(self.config.items()))


@dataclass(slots=True)
class RunFilters(ExperimentFilters):
    """The run listing's filters: the search's and ``target``, ``group``, ``state``."""

    target: str = ""
    group: str = ""
    state: str = ""

    def hash(self, source: str, workspace: str) -> str:
        return _hash(source, workspace, self.target, self.query, self.project, self.group, self.state,
                     self.lifecycle, sorted(self.tags.items()), self.metric_names, self.since, self.start,
                     self.end, sorted(self.config.items()))


def _shared_filters(q: Query, gates: tuple[str, ...]) -> dict:
    """The filters both listings take, checked in TauGrid's order; ``gates``: success gates refused here."""
    if q.get("limit"):
        parse_int(q.get("limit"), "limit")
    now = datetime.now(UTC)
    since, start, end = _time_filters(q, now)
    if "min_step" in gates:
        optional_int64(q, "min_step")
    _reject_success_gates(q, *gates)
    tags = _tag_filters(q)
    if since:
        since = normalize_since(since, now)
    return dict(query=q.get("q"), project=q.get("project"), lifecycle=normalize_lifecycle(q.get("lifecycle")),
                tags=tags, metric_names=_metric_names(q), since=since, start=start, end=end,
                config=config_filters(q))


def run_filters(q: Query) -> RunFilters:
    """The run-listing filters with TauGrid's validation (all 400 ``INVALID_ARGUMENT``)."""
    return RunFilters(target=q.get("target"), group=q.get("group"), state=q.get("state").lower(),
                      **_shared_filters(q, ("metric_filter", "min_step")))


def experiment_filters(q: Query) -> ExperimentFilters:
    """The experiment-search filters with TauGrid's validation (all 400 ``INVALID_ARGUMENT``)."""
    return ExperimentFilters(**_shared_filters(q, ("metric_filter",)))
