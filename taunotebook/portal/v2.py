"""TauGrid's canonical v2 Stellar reads over a local expstore: run, metric catalog, series, experiment runs.

Shapes, parameters, defaults, limits, check order and error codes follow TAUGRID-REFERENCE §3
(``portal/internal/expapi/v2.go``). Where TauGrid's local path has quirks that would lose data
(LTTB instead of M4; non-finite values that Go cannot encode) we keep the wire shape and say so
in the module's functions. Reads go through :class:`~tau_collector.expstore.StoreReader` only.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
import orjson
from starlette.requests import Request
from starlette.responses import Response

from tau_collector.expstore import Run, StoreReader
from tau_collector.expstore.m4 import m4_indices
from tau_collector.expstore.run_events import SOURCE_PROBLEM

from .auth import decode_path_id, parse_query, resolve_workspace, run_in_workspace
from .errors import RawJSON, V2Error, error_response, go_float, json_response, metadata

_MAX_PROBLEM_WARNINGS = 5  # a file of bad rows must not bury the metadata block

__all__ = [
    "API_BASE",
    "DEFAULT_LIMIT",
    "DEFAULT_MAX_POINTS",
    "MAX_LIMIT",
    "MAX_MAX_POINTS",
    "StellarV2",
]

API_BASE = "/api/v2/stellar"
DEFAULT_MAX_POINTS = 8000
MAX_MAX_POINTS = 12000
DEFAULT_LIMIT = 50
MAX_LIMIT = 200
SCAN_LIMIT = 1000  # runs considered per listing; more marks the page partial, as TauGrid's scan limit does
SOURCES = ("local", "kusto", "auto")
NOT_FOUND_MESSAGE = "requested experiment data was not found"
FAILURE_METRIC_TOKENS = ("collapse_bad_steps", "bad_steps", "nan_steps", "inf_steps", "oom", "failed", "failure",
                         "error_count", "errors")
MIN_STEP_TAGS = ("tau.success.min_step", "success.min_step", "expected_max_step", "max_step")
_TRAILING_DOT_ZERO = re.compile(r"\.0(?=[,\]])")
_INT = re.compile(r"[+-]?[0-9]+")
_INT64 = (-(2**63), 2**63 - 1)
_GO_DURATION = re.compile(r"([0-9]*\.?[0-9]*)(ns|us|µs|μs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


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


def _parse_int(raw: str, name: str, bits64: bool = True) -> int:
    # Go's strconv accepts ASCII digits with an optional sign only (no "_", no Unicode digits).
    if not _INT.fullmatch(raw):
        raise V2Error(400, "INVALID_ARGUMENT", f"{name} must be an integer")
    value = int(raw)
    if bits64 and not _INT64[0] <= value <= _INT64[1]:
        raise V2Error(400, "INVALID_ARGUMENT", f"{name} must be an integer")
    return value


def _optional_int64(q: Query, name: str) -> int | None:
    raw = q.get(name)
    return None if raw == "" else _parse_int(raw, name)


@dataclass(frozen=True, slots=True)
class SeriesParams:
    max_points: int
    start_step: int | None
    end_step: int | None
    step_interval: int  # 0 = none, as TauGrid's omitempty int


def series_params(q: Query) -> SeriesParams:
    """``max_points``, ``start_step``, ``end_step``, ``step_interval`` with TauGrid's messages, in its order."""
    max_points = DEFAULT_MAX_POINTS
    raw = q.get("max_points")
    if raw:
        max_points = _parse_int(raw, "max_points")
        if max_points < 1:
            raise V2Error(400, "INVALID_ARGUMENT", "max_points must be at least 1")
        if max_points > MAX_MAX_POINTS:
            raise V2Error(400, "INVALID_ARGUMENT", f"max_points must be at most {MAX_MAX_POINTS}")
    start = _optional_int64(q, "start_step")
    end = _optional_int64(q, "end_step")
    if start is not None and end is not None and start > end:
        raise V2Error(400, "INVALID_ARGUMENT", "start_step must be <= end_step")
    interval = 0
    raw = q.get("step_interval")
    if raw:
        interval = _parse_int(raw, "step_interval")
        if interval < 1:
            raise V2Error(400, "INVALID_ARGUMENT", "step_interval must be at least 1")
    return SeriesParams(max_points, start, end, interval)


def _points_json(steps: np.ndarray, values: np.ndarray) -> RawJSON:
    """The points array, encoded in bulk: a 12000-point response must not cost Python work per value.

    orjson writes the same shortest digits as Go; only its ``1.0`` (Go: ``1``) and its exponent
    forms (Go switches to them at other magnitudes) need rewriting.
    """
    if steps.size == 0:
        return RawJSON("[]")
    text = orjson.dumps(values.tolist()).decode()
    texts = _TRAILING_DOT_ZERO.sub("", text)[1:-1].split(",")
    if "e" in text or "null" in text:
        for i in [i for i, t in enumerate(texts) if "e" in t or t == "null"]:
            texts[i] = go_float(float(values[i]))  # raises on a non-finite value rather than writing null
    step_texts = orjson.dumps(steps.tolist()).decode()[1:-1].split(",")
    body = '},{"step":'.join(map(',"value":'.join, zip(step_texts, texts, strict=True)))
    return RawJSON('[{"step":' + body + "}]")


def classify_run(run: Run, summaries: list) -> tuple[str, bool, list[str]]:
    """(lifecycle_state, successful, success_reasons) by TauGrid's ``ClassifyRun`` rules."""
    state = run.state.strip().lower()
    if state in ("pending", "running"):
        return state, False, [f"run is {state}"]
    if state == "failed":
        return "failed", False, ["run state is failed"]
    if state not in ("succeeded", "completed"):
        if not (run.completed_at or "").strip():
            return "pending", False, ["run has not reached a terminal state"]
        return "incomplete", False, ["run state is not recognized as succeeded"]
    reasons = []
    steps = [s.max_step for s in summaries if s.max_step is not None]
    max_step = max(steps) if steps else None
    min_step = None
    for key in MIN_STEP_TAGS:
        raw = run.tags.get(key, "").strip()
        if _INT.fullmatch(raw):
            min_step = int(raw)
            break
    if min_step is not None and (max_step is None or max_step < min_step):
        got = "none" if max_step is None else str(max_step)
        reasons.append(f"max step {got} is below required step {min_step}")
    for s in summaries:
        if s.non_finite_count > 0:
            reasons.append(f"{s.metric_name} has {s.non_finite_count} non-finite values")
        name = s.metric_name.lower()
        if (any(t in name for t in FAILURE_METRIC_TOKENS) and s.finite_count > 0 and s.max_value is not None
                and s.max_value > 0):
            reasons.append(f"{s.metric_name} indicates failure with max value {_go_g6(s.max_value)}")
    if reasons:
        return "incomplete", False, reasons
    return "succeeded", True, ["run state succeeded and success gates passed"]


def _go_g6(value: float) -> str:
    # strconv.FormatFloat(v, 'g', 6, 64): like %g, but Go writes exponents with at least two digits too.
    return f"{value:.6g}"


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


@dataclass(slots=True)
class RunFilters:
    target: str
    query: str
    project: str
    group: str
    state: str
    lifecycle: str
    tags: dict[str, str]
    metric_names: list[str]
    since: str
    start: str
    end: str

    def hash(self, source: str, workspace: str) -> str:
        """Binds a cursor to the query it was issued for."""
        payload = json.dumps([source, workspace, self.target, self.query, self.project, self.group, self.state,
                              self.lifecycle, sorted(self.tags.items()), self.metric_names, self.since,
                              self.start, self.end], ensure_ascii=True)
        return hashlib.sha256(payload.encode()).hexdigest()


def run_filters(q: Query) -> RunFilters:
    """The run-listing filters with TauGrid's validation (all 400 ``INVALID_ARGUMENT``)."""
    if q.get("limit"):
        _parse_int(q.get("limit"), "limit")
    since, window, start, end = q.get("since"), q.get("window"), q.get("start"), q.get("end")
    if since and (window or start or end):
        raise V2Error(400, "INVALID_ARGUMENT", "since cannot be combined with window/start/end")
    now = datetime.now(UTC)
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
    _optional_int64(q, "min_step")
    for name in ("metric_filter", "min_step"):
        if any(v.strip() for v in q.all(name)):
            # TauGrid's success gates; not implemented locally, and silently ignoring them would mislead.
            raise V2Error(400, "INVALID_ARGUMENT", f"{name} is not supported by the local Portal")
    tags: dict[str, str] = {}
    for tag in q.all("tag"):
        key, sep, value = tag.partition("=")
        if not sep or not key.strip():
            raise V2Error(400, "INVALID_ARGUMENT", "tag filters must be key=value")
        tags[key.strip()] = value.strip()
    names = q.all("metric_name") or q.all("metric")
    if since:
        since = normalize_since(since, now)
    return RunFilters(
        target=q.get("target"), query=q.get("q"), project=q.get("project"), group=q.get("group"),
        state=q.get("state").lower(), lifecycle=normalize_lifecycle(q.get("lifecycle")), tags=tags,
        metric_names=[n.strip() for n in names if n.strip()], since=since, start=start, end=end,
    )


class StellarV2:
    """The v2 handlers for one store and one workspace; :meth:`endpoint` is the Starlette endpoint."""

    def __init__(self, reader: StoreReader, *, workspace: str = "default", default_source: str = "local",
                 kusto_configured: bool = False, cursor_key: bytes | None = None) -> None:
        if default_source not in SOURCES:
            raise ValueError(f"default_source must be one of {', '.join(SOURCES)}, not {default_source!r}")
        self.reader = reader
        self.workspace = workspace
        self.default_source = default_source
        self.kusto_configured = kusto_configured
        # Per process unless given: a cursor from another server (or an edited one) fails its signature.
        self._cursor_key = cursor_key or secrets.token_bytes(32)

    # -- routing --------------------------------------------------------------------------

    def endpoint(self, request: Request) -> Response:
        try:
            return self.dispatch(request.scope["path"], request.method, Query(parse_query(request.scope)))
        except V2Error as err:
            return error_response(err.status, err.code, err.message)

    def dispatch(self, path: str, method: str, q: Query) -> Response:
        rest = path[len(API_BASE) + 1:] if path.startswith(API_BASE + "/") else None
        if rest is not None and rest.startswith("runs/"):
            parts = rest[len("runs/"):].split("/")
            if len(parts) > 2:
                raise V2Error(404, "NOT_FOUND", "route was not found")
            run_id = decode_path_id(parts[0])  # TauGrid checks the id before the method here
            self._require_get(method)
            if len(parts) == 1:
                return self.run_detail(q, run_id)
            if parts[1] == "metrics":
                return self.metric_catalog(q, run_id)
            if parts[1] == "series":
                return self.series(q, run_id)
        elif rest is not None and rest.startswith("experiments/"):
            parts = rest[len("experiments/"):].split("/")
            if len(parts) == 2 and parts[1] == "runs":
                self._require_get(method)
                return self.run_list(q, decode_path_id(parts[0]))
        raise V2Error(404, "NOT_FOUND", "route was not found")

    @staticmethod
    def _require_get(method: str) -> None:
        if method != "GET":
            raise V2Error(405, "METHOD_NOT_ALLOWED", "method not allowed")

    # -- common checks --------------------------------------------------------------------

    def _source_and_workspace(self, q: Query) -> tuple[str, str]:
        source = q.get("source").lower()
        if source and source not in SOURCES:
            raise V2Error(400, "INVALID_SOURCE", "source must be local, kusto, or auto")
        return source or self.default_source, resolve_workspace(self.workspace, q.get("workspace"))

    def _require_readable(self, source: str) -> list[str]:
        """Warnings for reading ``source`` here; a Kusto read is a dependency failure (503)."""
        if source == "kusto":
            if not self.kusto_configured:
                raise V2Error(503, "SOURCE_UNAVAILABLE",
                              "Kusto source is not configured for this Portal; use source=local")
            raise V2Error(503, "SOURCE_UNAVAILABLE",
                          "Kusto reads are not available in the local Portal yet; use source=local")
        if source == "auto" and self.kusto_configured:
            return ["source=auto skipped Kusto because it is not available in the local Portal"]
        return []

    def _exact_run(self, q: Query, source: str, workspace: str, run_id: str) -> tuple[Run, list[str]]:
        warnings = self._require_readable(source)
        project = q.get("project")
        target = q.get("target")
        run = self.reader.run(run_id, project or None)
        # Another workspace's run is answered exactly like a missing one: no hint that it exists.
        if (run is None or not run_in_workspace(run, workspace)
                or (target and target not in (run.run_id, run.experiment_id, run.run_group_id))):
            raise V2Error(404, "NOT_FOUND", NOT_FOUND_MESSAGE)
        # What the collector could not read (a corrupt event file, bad rows) makes the run's data
        # degraded: say so on every read of it, in words.
        problems = [f"collector: {e.message}" for e in self.reader.run_events(run.run_id, type=SOURCE_PROBLEM)]
        if len(problems) > _MAX_PROBLEM_WARNINGS:
            hidden = len(problems) - _MAX_PROBLEM_WARNINGS
            problems = [*problems[:_MAX_PROBLEM_WARNINGS], f"collector: {hidden} more source problems"]
        return run, warnings + problems

    # -- reads ----------------------------------------------------------------------------

    def _run_json(self, run: Run, summaries: list | None = None) -> dict:
        if summaries is None:
            summaries = self.reader.metric_summaries(run.run_id)
        lifecycle, successful, reasons = classify_run(run, summaries)
        out: dict = {"run_id": run.run_id}
        if run.experiment_id:
            out["experiment_id"] = run.experiment_id
        out.update(project=run.project, run_group_id=run.run_group_id)
        if run.parent_run_id:
            out["parent_run_id"] = run.parent_run_id
        out.update(state=run.state, lifecycle_state=lifecycle, successful=successful)
        if reasons:
            out["success_reasons"] = reasons
        if run.owner:
            out["owner"] = run.owner
        out["created_at"] = run.created_at
        for key in ("started_at", "completed_at", "config_hash", "code_sha", "image_digest", "result_uri"):
            value = getattr(run, key)
            if value:
                out[key] = value
        out.update(tags=dict(sorted(run.tags.items())), metric_names=sorted(run.metric_names), source="local")
        return out

    def run_detail(self, q: Query, run_id: str) -> Response:
        source, workspace = self._source_and_workspace(q)
        run, warnings = self._exact_run(q, source, workspace, run_id)
        return json_response({"metadata": metadata(source, ["local"], False, warnings), "run": self._run_json(run)})

    def metric_catalog(self, q: Query, run_id: str) -> Response:
        source, workspace = self._source_and_workspace(q)
        run, warnings = self._exact_run(q, source, workspace, run_id)
        metrics = []
        for s in sorted(self.reader.metric_summaries(run.run_id), key=lambda s: s.metric_name):
            item: dict = {"name": s.metric_name, "count": s.count, "finite_count": s.finite_count,
                          "non_finite_count": s.non_finite_count}
            for key in ("min_step", "max_step", "latest_step", "latest_wall_time"):
                if getattr(s, key) is not None:
                    item[key] = getattr(s, key)
            if s.finite_count > 0:
                # Values only with a finite observation; a NULL column still reads as 0 in Go.
                for key in ("latest_value", "min_value", "max_value"):
                    item[key] = float(getattr(s, key) or 0.0)
            if s.updated_at:
                item["updated_at"] = s.updated_at
            metrics.append(item)
        meta = metadata(source, ["local"], False, warnings)
        if not metrics:
            meta["availability"] = {"state": "unavailable",
                                    "reasons": ["no indexed scalar metrics are available for this run"]}
        return json_response({"metadata": meta, "run_id": run_id, "metrics": metrics})

    def series(self, q: Query, run_id: str) -> Response:
        source, workspace = self._source_and_workspace(q)
        target, metric = q.get("target"), q.get("metric")
        if not target or not metric:
            raise V2Error(400, "EXACT_SERIES_REQUIRED", "target and metric query parameters are required")
        query_run = q.get("run_id")
        if query_run and query_run != run_id:
            raise V2Error(400, "RUN_MISMATCH", "run_id query parameter must match the run path")
        run, warnings = self._exact_run(q, source, workspace, run_id)
        params = series_params(q)
        if target != run.run_id:
            # TauGrid's local path loads one run for an experiment/group target and says so.
            matching = [r for r in self.reader.runs(workspace, project=q.get("project") or None)
                        if target in (r.experiment_id, r.run_group_id)]
            if len(matching) > 1:
                warnings = [*warnings, f"runs truncated to 1 of {len(matching)} matching runs"]
        steps, values, source_points, partial = self._points(run.run_id, metric, params)
        body: dict = {
            "metadata": metadata(source, ["local"], partial, warnings),
            "target": target, "run_id": run_id, "metric": metric,
        }
        if params.start_step is not None:
            body["start_step"] = params.start_step
        if params.end_step is not None:
            body["end_step"] = params.end_step
        if params.step_interval:
            body["step_interval"] = params.step_interval
        body.update(max_points=params.max_points, source_points=source_points, returned_points=int(steps.size),
                    points=_points_json(steps, values))
        return json_response(body)

    def _points(self, run_id: str, metric: str, p: SeriesParams) -> tuple[np.ndarray, np.ndarray, int, bool]:
        """(steps, values, source_points, partial) of the finite points in range, M4-reduced.

        JSON has no NaN/Inf and TauGrid's encoder would fail on them, so non-finite observations
        are left out before counting (they stay visible in the metric catalog's counts).
        """
        summary = next((s for s in self.reader.metric_summaries(run_id) if s.metric_name == metric), None)
        if summary is None:
            return np.empty(0, np.int64), np.empty(0, np.float64), 0, False
        interval = p.step_interval if p.step_interval > 1 else None
        if summary.non_finite_count == 0:
            series = self.reader.series(run_id, metric, p.start_step, p.end_step, p.max_points,
                                        step_interval=interval)
            return series.step, series.value, series.source_points, series.partial
        rows = self.reader.rows(run_id, metric, p.start_step, p.end_step)
        finite = np.isfinite(rows.value)
        step, value = rows.step[finite], rows.value[finite]
        source_points = int(step.size)
        if interval is not None and step.size:
            keep = (step - step[0]) % interval == 0
            keep[-1] = True
            step, value = step[keep], value[keep]
        idx = m4_indices(step, value, p.max_points) if step.size else np.empty(0, np.int64)
        return step[idx], value[idx], source_points, int(idx.size) < source_points

    def run_list(self, q: Query, target: str) -> Response:
        source, workspace = self._source_and_workspace(q)
        filters = run_filters(q)
        if filters.target and filters.target != target:
            raise V2Error(400, "TARGET_MISMATCH", "target query parameter must match the experiment path")
        filters.target = target
        raw_limit = q.get("limit")
        limit = DEFAULT_LIMIT
        if raw_limit:
            limit = _parse_int(raw_limit, "limit")
            if not 1 <= limit <= MAX_LIMIT:
                raise V2Error(400, "INVALID_ARGUMENT", f"limit must be an integer between 1 and {MAX_LIMIT}")
        filter_hash = filters.hash(source, workspace)
        cursor = self._decode_cursor(q.get("cursor"), filter_hash)
        warnings = self._require_readable(source)
        runs, truncated = self._search_runs(workspace, filters)
        if cursor is not None:
            sort_at, item_id = cursor
            runs = [r for r in runs if r.created_at < sort_at
                    or (r.created_at == sort_at and _cursor_id(r) > item_id)]
        next_cursor = None
        if len(runs) > limit:
            runs = runs[:limit]
            last = runs[-1]
            next_cursor = self._encode_cursor(filter_hash, last.created_at, _cursor_id(last))
        served = ["local"] if runs else ([] if source == "auto" else [source])
        body: dict = {"metadata": metadata(source, served, truncated, warnings), "target": target,
                      "runs": [self._run_json(r) for r in runs]}
        if next_cursor:
            body["next_cursor"] = next_cursor
        return json_response(body)

    def _search_runs(self, workspace: str, f: RunFilters) -> tuple[list[Run], bool]:
        runs = [r for r in self.reader.runs(workspace, project=f.project or None, run_group_id=f.group or None)
                if r.experiment_id == f.target]
        if f.state:
            runs = [r for r in runs if r.state.strip().lower() == f.state]
        if f.since:
            runs = [r for r in runs if r.created_at >= f.since]
        if f.start:
            runs = [r for r in runs if f.start <= r.created_at < f.end]
        for key, value in f.tags.items():
            runs = [r for r in runs if r.tags.get(key) == value]
        for name in f.metric_names:
            runs = [r for r in runs if name in r.metric_names]
        if f.query:
            needle = f.query.lower()
            runs = [r for r in runs if _matches_query(r, needle)]
        if f.lifecycle:
            runs = [r for r in runs
                    if classify_run(r, self.reader.metric_summaries(r.run_id))[0] == f.lifecycle]
        runs.sort(key=_cursor_id)
        runs.sort(key=lambda r: r.created_at, reverse=True)
        return runs[:SCAN_LIMIT], len(runs) > SCAN_LIMIT

    # -- cursors --------------------------------------------------------------------------

    def _encode_cursor(self, filter_hash: str, sort_at: str, item_id: str) -> str:
        body = json.dumps({"v": 1, "f": filter_hash, "t": sort_at, "i": item_id}, separators=(",", ":")).encode()
        mac = hmac.new(self._cursor_key, body, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(body + mac).decode().rstrip("=")

    def _decode_cursor(self, raw: str, filter_hash: str) -> tuple[str, str] | None:
        if not raw:
            return None
        try:
            if not re.fullmatch(r"[A-Za-z0-9_-]+", raw):
                raise ValueError
            token = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4))
        except ValueError:
            raise V2Error(400, "INVALID_CURSOR", "cursor is malformed") from None
        if len(token) <= 32:
            raise V2Error(400, "INVALID_CURSOR", "cursor is malformed")
        body, signature = token[:-32], token[-32:]
        if not hmac.compare_digest(signature, hmac.new(self._cursor_key, body, hashlib.sha256).digest()):
            raise V2Error(400, "INVALID_CURSOR", "cursor signature is invalid")
        try:
            payload = json.loads(body)
            ok = (payload.get("v") == 1 and payload.get("f") == filter_hash
                  and isinstance(payload.get("t"), str) and payload["t"]
                  and isinstance(payload.get("i"), str) and payload["i"])
        except (ValueError, AttributeError):
            ok = False
        if not ok:
            raise V2Error(400, "INVALID_CURSOR", "cursor does not match this query")
        return payload["t"], payload["i"]


def _cursor_id(run: Run) -> str:
    return run.project.strip() + "\x00" + run.run_id.strip()


def _matches_query(run: Run, needle: str) -> bool:
    fields = [run.run_id, run.project, run.run_group_id, run.owner or "", run.result_uri or "",
              *run.tags.keys(), *run.tags.values(), *run.metric_names]
    return any(needle in f.lower() for f in fields)
