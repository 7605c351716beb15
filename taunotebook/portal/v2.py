"""TauGrid's canonical v2 Stellar reads (run, metrics, series, experiment runs and search) and our run config.

Shapes, parameters, defaults, limits, check order and error codes follow TAUGRID-REFERENCE §3
(``portal/internal/expapi/v2.go``). Where TauGrid's local path has quirks that would lose data
(LTTB instead of M4; non-finite values that Go cannot encode) we keep the wire shape and say so
in the module's functions. Handlers hold no SQL: they read through a source's
:class:`~tau_collector.reads.ExperimentReader`; ids are read by :mod:`.identity`, parameters by :mod:`.params`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
from dataclasses import dataclass

import numpy as np
import orjson
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from tau_collector.reads import SOURCE_PROBLEM, ExperimentReader, RunRow
from tau_collector.reads.lifecycle import classify
from tau_collector.taugrid.gojson import dumps_fast, encode_string, marshal
from tau_collector.taugrid.ids import is_valid_id

from .answer_cache import AnswerCache
from .auth import resolve_workspace, run_in_workspace
from .errors import SECURITY_HEADERS, RawJSON, V2Error, go_float, json_response, metadata, metadata_json, rfc3339_now
from .experiment_search import experiments_json, search_experiments
from .identity import decode_path_id, miss, raw_segments
from .params import (
    Query,
    RunFilters,
    SeriesParams,
    experiment_filters,
    include_param,
    limit_param,
    parse_query,
    run_filters,
    series_params,
)
from .run_configs import fields_json, matches, read_configs, reads_configs
from .serving import serve
from .sources import Sources, served_by, served_sources

__all__ = ["API_BASE", "Found", "StellarV2", "classify_run", "require_get"]

API_BASE = "/api/v2/stellar"
SCAN_LIMIT = 1000  # runs considered per listing; more marks the page partial, as TauGrid's scan limit does
_MAX_PROBLEM_WARNINGS = 5  # a file of bad rows must not bury the metadata block


def _catalog_json(summaries) -> tuple[int, RawJSON]:
    """The ``metrics`` array of ``/runs/{id}/metrics``, encoded, and how many metrics it holds: one f-string a
    metric (no dict, no generic encoder), the keys in TauGrid's order and omitted as Go's omitempty does."""
    parts = []
    for s in sorted(summaries, key=lambda s: s.metric_name):
        text = (f'{{"name":{encode_string(s.metric_name)},"count":{s.count},"finite_count":{s.finite_count},'
                f'"non_finite_count":{s.non_finite_count}')
        if s.min_step is not None:
            text += f',"min_step":{s.min_step}'
        if s.max_step is not None:
            text += f',"max_step":{s.max_step}'
        if s.latest_step is not None:
            text += f',"latest_step":{s.latest_step}'
        if s.latest_wall_time is not None:
            text += f',"latest_wall_time":{s.latest_wall_time}'
        if s.finite_count > 0:
            # Values only with a finite observation; a NULL column still reads as 0 in Go.
            text += (f',"latest_value":{go_float(float(s.latest_value or 0.0))}'
                     f',"min_value":{go_float(float(s.min_value or 0.0))}'
                     f',"max_value":{go_float(float(s.max_value or 0.0))}')
        if s.updated_at:
            text += f',"updated_at":{encode_string(s.updated_at)}'
        parts.append(text + "}")
    return len(parts), RawJSON("[" + ",".join(parts) + "]")


def _points_json(steps: np.ndarray, values: np.ndarray) -> RawJSON:
    """The points array, encoded in bulk: a 12000-point response must not cost Python work per value.

    orjson writes the same shortest digits as Go; only its ``1.0`` (Go: ``1``) and its exponent
    forms (Go switches to them at other magnitudes) need rewriting.
    """
    n = int(steps.size)
    if n == 0:
        return RawJSON("[]")
    text = orjson.dumps(values, option=orjson.OPT_SERIALIZE_NUMPY).decode()
    texts = text[1:-1].split(",")
    if "e" in text or "null" in text:
        for i in [i for i, t in enumerate(texts) if "e" in t or t == "null"]:
            texts[i] = go_float(float(values[i]))  # raises on a non-finite value rather than writing null
    with np.errstate(invalid="ignore"):
        whole = np.flatnonzero(values == np.trunc(values))
    for i in whole.tolist():
        if texts[i].endswith(".0"):
            texts[i] = texts[i][:-2]
    # Four parts per point, placed by slice assignment and joined once: no Python work per point.
    parts = [',"value":'] * (4 * n)
    parts[0::4] = ['},{"step":'] * n
    parts[1::4] = orjson.dumps(steps, option=orjson.OPT_SERIALIZE_NUMPY).decode()[1:-1].split(",")
    parts[3::4] = texts
    parts[0] = '[{"step":'
    return RawJSON("".join(parts) + "}]")


def require_get(method: str) -> None:
    """TauGrid's reads are GET only (405 ``METHOD_NOT_ALLOWED``, checked after the path id)."""
    if method != "GET":
        raise V2Error(405, "METHOD_NOT_ALLOWED", "method not allowed")


def _points(reader: ExperimentReader, run_id: str, metric: str,
            p: SeriesParams) -> tuple[np.ndarray, np.ndarray, int, bool]:
    """(steps, values, source_points, partial) of the finite points in range, thinned and M4-reduced.

    JSON has no NaN/Inf and TauGrid's encoder would fail on them, so non-finite observations are
    left out before counting (they stay visible in the metric catalog's counts and the page data).
    """
    if reader.metric_summary(run_id, metric) is None:
        return np.empty(0, np.int64), np.empty(0, np.float64), 0, False
    series = reader.series(run_id, metric, p.start_step, p.end_step, p.max_points,
                           step_interval=p.step_interval or None, finite_only=True)
    return series.step, series.value, series.source_points, series.partial


def _truncation_warning(reader: ExperimentReader, workspace: str, target: str) -> str | None:
    """TauGrid's local series path (``expcockpit.BuildSeries``) loads at most one run of its target and warns
    ``runs truncated to 1 of N matching runs`` when the workspace holds two or more of them.

    As TauGrid's ``Store.Status``: a run group of that id wins over a run, a run over an experiment; a run
    target never truncates; ``project`` does not narrow. One difference: TauGrid's N counts the target's
    runs in every workspace, ours only the served workspace's (another workspace's runs stay invisible).
    """
    runs = reader.runs(workspace)
    grouped = [r for r in runs if r.run_group_id == target]
    if grouped:
        matching = grouped
    elif any(r.run_id == target for r in runs):
        return None
    else:
        matching = [r for r in runs if r.experiment_id == target]
    return f"runs truncated to 1 of {len(matching)} matching runs" if len(matching) > 1 else None


def _has_non_finite(reader: ExperimentReader, run_id: str, metric: str, p: SeriesParams) -> bool:
    """Whether NaN/±Inf rows lie in range: TauGrid counts them as matched points (we leave them out of ``points``)."""
    if reader.metric_summary(run_id, metric) is None:
        return False
    count, _ = reader.non_finite(run_id, metric, p.start_step, p.end_step, limit=0)
    return count > 0


def classify_run(run: RunRow, summaries: list) -> tuple[str, bool, list[str]]:
    """(lifecycle_state, successful, success_reasons) by TauGrid's ``ClassifyRun`` (``reads.lifecycle``)."""
    return classify(run.state, run.completed_at, run.tags, summaries)


@dataclass(frozen=True, slots=True)
class Found:
    """The run a request names, the reader that holds it, the source it was served from, and warnings."""

    run: RunRow
    reader: ExperimentReader
    served: str
    warnings: list[str]


class StellarV2:
    """The v2 handlers for one Portal (its sources and workspace); the instance is their ASGI app."""

    def __init__(self, sources: Sources, *, workspace: str = "default", cursor_key: bytes | None = None) -> None:
        self.sources = sources
        self.workspace = workspace
        # Per process unless given: a cursor from another server (or an edited one) fails its signature.
        self._cursor_key = cursor_key or secrets.token_bytes(32)
        self._answers = AnswerCache()

    # -- routing --------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI app for everything under ``/api/v2/stellar/``; a run listing always runs in a thread."""
        parts = raw_segments(scope, API_BASE)
        method, q = scope["method"], Query(parse_query(scope))

        def handle() -> Response:
            with self.sources.pinned():
                return self.dispatch(parts, method, q)

        await serve(scope, receive, send, handle, inline=not (parts and parts[0] == b"experiments"))

    def dispatch(self, parts: list[bytes] | None, method: str, q: Query) -> Response:
        """Route the still-escaped segments after ``/api/v2/stellar/``; each id is decoded exactly once."""
        if parts and parts[0] == b"runs" and 2 <= len(parts) <= 3:
            run_id = decode_path_id(parts[1])  # TauGrid checks the id before the method here
            require_get(method)
            if len(parts) == 2:
                return self.run_detail(q, run_id)
            if parts[2] == b"metrics":
                return self.metric_catalog(q, run_id)
            if parts[2] == b"series":
                return self.series(q, run_id)
            if parts[2] == b"config":
                return self.run_config(q, run_id)
        elif parts == [b"experiments", b"search"]:
            require_get(method)
            return self.experiment_search(q)
        elif parts and parts[0] == b"experiments" and len(parts) == 3 and parts[2] == b"runs":
            require_get(method)
            return self.run_list(q, decode_path_id(parts[1]))
        raise V2Error(404, "NOT_FOUND", "route was not found")

    # -- common checks (the page-data routes make them too) -------------------------------

    def source_and_workspace(self, q: Query) -> tuple[str, str]:
        """TauGrid's first checks: ``400 INVALID_SOURCE``, then ``403 WORKSPACE_FORBIDDEN``."""
        return self.sources.name(q.get("source")), resolve_workspace(self.workspace, q.get("workspace"))

    def exact_run(self, q: Query, source: str, workspace: str, run_id: str) -> Found:
        """The run the path names, in this workspace, matching ``project`` and ``target`` when given."""
        reader, served, warnings = self.sources.reader(source)
        project, target = q.get("project"), q.get("target")
        run = reader.run(run_id, project or None)
        # Another workspace's run is answered exactly like a missing one: no hint that it exists.
        if run is None or not run_in_workspace(run, workspace):
            raise miss(("run_id", run_id), ("project", project))
        if target and target not in (run.run_id, run.experiment_id, run.run_group_id):
            raise miss(("target", target))
        served = served_by(reader, run.run_id, served)  # source=auto: the source that holds the run
        # What the collector could not read (a corrupt event file, bad rows) makes the run's data
        # degraded: say so on every read of it, in words.
        problems = [f"collector: {e.message}" for e in reader.run_events(run.run_id, type=SOURCE_PROBLEM)]
        if len(problems) > _MAX_PROBLEM_WARNINGS:
            hidden = len(problems) - _MAX_PROBLEM_WARNINGS
            problems = [*problems[:_MAX_PROBLEM_WARNINGS], f"collector: {hidden} more source problems"]
        return Found(run, reader, served, warnings + problems)

    def known_ids(self, reader: ExperimentReader, workspace: str, *named: tuple[str, str, str]) -> None:
        """``(kind, id, run attribute)`` filters that break the ID rule must name something stored, else 400."""
        runs = None
        for kind, value, attr in named:
            if not value or is_valid_id(value):
                continue
            runs = reader.runs(workspace) if runs is None else runs
            if not any(getattr(r, attr) == value for r in runs):
                raise miss((kind, value))

    # -- reads ----------------------------------------------------------------------------

    def _run_json(self, reader: ExperimentReader, run: RunRow, served: str) -> dict:
        summaries = reader.metric_summaries(run.run_id)
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
        out.update(tags=dict(sorted(run.tags.items())), metric_names=sorted(run.metric_names), source=served)
        return out

    def _run_encoded(self, reader: ExperimentReader, run: RunRow, served: str) -> RawJSON:
        """:meth:`_run_json`, encoded once per change of the index: a run of 10,000 metrics lists 10,000 names
        and classifies its run over 10,000 summaries (~30 ms), which a page asks on every visit."""
        build = lambda: RawJSON(marshal(self._run_json(reader, run, served), escape_html=False).decode())  # noqa: E731
        derived = getattr(reader, "derived", None)
        return derived(("v2 run", run.run_id, served), build) if derived is not None else build()

    def run_detail(self, q: Query, run_id: str) -> Response:
        source, workspace = self.source_and_workspace(q)
        found = self.exact_run(q, source, workspace, run_id)
        return json_response({"metadata": metadata_json(source, [found.served], False, found.warnings),
                              "run": self._run_encoded(found.reader, found.run, found.served)})

    def metric_catalog(self, q: Query, run_id: str) -> Response:
        source, workspace = self.source_and_workspace(q)
        found = self.exact_run(q, source, workspace, run_id)
        reader, stored_id = found.reader, found.run.run_id
        # The encoded catalog is built once per change of the index (a run of 10,000 metrics costs its
        # encoding once, not on every request); a reader without ``derived`` (Kusto) builds it each time.
        derived = getattr(reader, "derived", None)
        build = lambda: _catalog_json(reader.metric_summaries(stored_id))  # noqa: E731
        count, metrics = derived(("v2 metric catalog", stored_id), build) if derived is not None else build()
        meta = metadata(source, [found.served], False, found.warnings)
        if not count:
            meta["availability"] = {"state": "unavailable",
                                    "reasons": ["no indexed scalar metrics are available for this run"]}
        return json_response({"metadata": meta, "run_id": run_id, "metrics": metrics})

    def series(self, q: Query, run_id: str) -> Response:
        source, workspace = self.source_and_workspace(q)
        # Many panes polling one run ask the same tail: a local store's answer is kept while its index and
        # the second its metadata names are unchanged (:mod:`.answer_cache`).
        generation = getattr(self.sources.local, "generation", None) if source == "local" else None
        if generation is None:
            return self._series(q, run_id, source, workspace)
        epoch, key = (generation(), rfc3339_now()), (run_id, tuple(q.pairs))
        hit = self._answers.get(epoch, key)
        if hit is not None:
            return hit
        return self._answers.put(epoch, key, self._series(q, run_id, source, workspace))

    def _series(self, q: Query, run_id: str, source: str, workspace: str) -> Response:
        target, metric = q.get("target"), q.get("metric")
        if not target or not metric:
            raise V2Error(400, "EXACT_SERIES_REQUIRED", "target and metric query parameters are required")
        query_run = q.get("run_id")
        if query_run and query_run != run_id:
            raise V2Error(400, "RUN_MISMATCH", "run_id query parameter must match the run path")
        found = self.exact_run(q, source, workspace, run_id)
        run, reader, warnings = found.run, found.reader, found.warnings
        params = series_params(q)
        if target != run.run_id:
            truncated = _truncation_warning(reader, workspace, target)
            if truncated:
                warnings = [*warnings, truncated]
        steps, values, source_points, partial = _points(reader, run.run_id, metric, params)
        if source_points == 0 and not _has_non_finite(reader, run.run_id, metric, params):
            warnings = [*warnings, "no scalar metric points matched the series query"]
        body: dict = {
            "metadata": metadata_json(source, [found.served], partial, warnings),
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

    def run_config(self, q: Query, run_id: str) -> Response:
        """Our addition: the run's configuration (normalized values and flattened fields) and its hash."""
        source, workspace = self.source_and_workspace(q)
        found = self.exact_run(q, source, workspace, run_id)
        config = read_configs(found.reader, [found.run.run_id]).get(found.run.run_id)
        meta = metadata(source, [found.served], False, found.warnings)
        body: dict = {"metadata": meta, "run_id": run_id}
        if config is None:
            if not reads_configs(found.reader):
                reason = f"the {found.served} source carries no run configurations"
            elif found.run.config_hash:
                reason = f"config_hash {found.run.config_hash} names no stored configuration"
            else:
                reason = "no configuration is stored for this run"
            meta["availability"] = {"state": "unavailable", "reasons": [*found.warnings, reason]}
            if found.run.config_hash:
                body["config_hash"] = found.run.config_hash
            body.update(config={}, fields={})
            return json_response(body)
        body.update(config_hash=config.config_hash, format=config.format, uri=config.uri, config=config.values,
                    fields=fields_json(config.fields))
        return json_response(body)

    def experiment_search(self, q: Query) -> Response:
        """TauGrid's ``/experiments/search``, with our ``config.<key>=<value>`` filters and ``include=config``."""
        source, workspace = self.source_and_workspace(q)
        filters = experiment_filters(q)
        limit = limit_param(q)
        include = include_param(q)
        filter_hash = filters.hash(source, workspace)
        cursor = self._decode_cursor(q.get("cursor"), filter_hash)
        reader, served, warnings = self.sources.reader(source)

        def lifecycle_of(run: RunRow) -> str:
            return classify_run(run, reader.metric_summaries(run.run_id))[0]

        found, truncated = search_experiments(reader, workspace, filters, lifecycle_of, SCAN_LIMIT)
        if cursor is not None:
            sort_at, item_id = cursor
            found = [e for e in found if e.sort_at < sort_at or (e.sort_at == sort_at and e.experiment_id > item_id)]
        next_cursor = None
        if len(found) > limit:
            found = found[:limit]
            next_cursor = self._encode_cursor(filter_hash, found[-1].sort_at, found[-1].experiment_id)
        bodies, cut = experiments_json(reader, found, "config" in include, workspace)
        body: dict = {"metadata": metadata(source, [served], truncated, warnings + cut), "experiments": bodies}
        if next_cursor:
            body["next_cursor"] = next_cursor
        if "config" in include:  # config values hold floats: the Go encoder spells them
            return json_response(body)
        # Ids, names, counts and times only: orjson writes Go's bytes for them (gojson.dumps_fast).
        return Response(dumps_fast(body), media_type="application/json", headers=SECURITY_HEADERS)

    def run_list(self, q: Query, target: str) -> Response:
        source, workspace = self.source_and_workspace(q)
        filters = run_filters(q)
        include = include_param(q)
        if filters.target and filters.target != target:
            raise V2Error(400, "TARGET_MISMATCH", "target query parameter must match the experiment path")
        filters.target = target
        limit = limit_param(q)
        filter_hash = filters.hash(source, workspace)
        cursor = self._decode_cursor(q.get("cursor"), filter_hash)
        reader, served, warnings = self.sources.reader(source)
        self.known_ids(reader, workspace, ("experiment_id", target, "experiment_id"),
                       ("project", filters.project, "project"), ("group", filters.group, "run_group_id"))
        runs, truncated = self._search_runs(reader, workspace, filters)
        if cursor is not None:
            sort_at, item_id = cursor
            runs = [r for r in runs if r.created_at < sort_at
                    or (r.created_at == sort_at and _cursor_id(r) > item_id)]
        next_cursor = None
        if len(runs) > limit:
            runs = runs[:limit]
            last = runs[-1]
            next_cursor = self._encode_cursor(filter_hash, last.created_at, _cursor_id(last))
        body: dict = {"metadata": metadata(source, served_sources(reader, served, [r.run_id for r in runs]),
                                           truncated, warnings), "target": target,
                      # Each run encoded once per index change, unless its config is added to it below.
                      "runs": [(self._run_json if "config" in include else self._run_encoded)(
                          reader, r, served_by(reader, r.run_id, served)) for r in runs]}
        if next_cursor:
            body["next_cursor"] = next_cursor
        if "config" in include:
            # Our addition: each run's flattened config fields, null for a run without a config.
            configs = read_configs(reader, [r.run_id for r in runs])
            for item, run in zip(body["runs"], runs, strict=True):
                config = configs.get(run.run_id)
                item["config"] = fields_json(config.fields) if config is not None else None
        return json_response(body)

    def _search_runs(self, reader: ExperimentReader, workspace: str, f: RunFilters) -> tuple[list[RunRow], bool]:
        runs = [r for r in reader.runs(workspace, project=f.project or None, experiment_id=f.target,
                                       run_group_id=f.group or None)
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
        if f.config:
            configs = read_configs(reader, [r.run_id for r in runs])
            runs = [r for r in runs if matches(configs.get(r.run_id), f.config)]
        if f.lifecycle:
            runs = [r for r in runs
                    if classify_run(r, reader.metric_summaries(r.run_id))[0] == f.lifecycle]
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


def _cursor_id(run: RunRow) -> str:
    return run.project.strip() + "\x00" + run.run_id.strip()


def _matches_query(run: RunRow, needle: str) -> bool:
    fields = [run.run_id, run.project, run.run_group_id, run.owner or "", run.result_uri or "",
              *run.tags.keys(), *run.tags.values(), *run.metric_names]
    return any(needle in f.lower() for f in fields)
