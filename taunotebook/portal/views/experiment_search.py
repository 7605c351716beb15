"""``GET /api/v2/stellar/experiments/search``: which experiments match, and each one's summary (``v2Experiment``).

By ``expstore.SearchExperiments`` (``portal/internal/expstore/experiment.go``): an experiment is listed
when the served workspace holds at least one of its runs; ``q`` is a case-insensitive substring of its
id, name, description or project, or of a tag key/value or metric name of its runs; ``project`` is
exact; each ``tag`` and ``metric_name`` needs some run that has it; ``since`` keeps experiments
updated since then or with a run started (else completed, else created) since then; ``start``/``end``
the same over a range; ``lifecycle`` keeps those with at least one run in that lifecycle state. The
summary counts every workspace run of the experiment. Our addition: ``config.<key>=<value>`` keeps
experiments with a run whose config matches every config filter.

A local store with run listings (``expstore/listing.py``) is searched in SQL: filters, order and the
scan limit in the query, the summaries read for the page's experiments only, so a search costs what
its answer holds, whatever the workspace's size. Text search (``q``) and config filters, and sources
without listings (Kusto, ``source=auto``, a store last written by TauGrid), classify every run as before.
The experiment shape is encoded by :mod:`..wire.experiment` (through :meth:`Experiment.to_json`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from starlette.responses import Response

from tau_collector.reads import ExperimentDetails, ExperimentReader, HasListings, ReadsExperimentTable, RunRow
from tau_collector.taugrid.gojson import dumps_fast

from ..context import Context
from ..errors import SECURITY_HEADERS, json_response, metadata
from ..params import ExperimentFilters, experiment_filters, include_param, limit_param
from ..run_configs import config_space, matches, read_configs
from ..wire.experiment import experiment_json
from .experiment_runs import SCAN_LIMIT
from .run import classify_run

__all__ = ["Experiment", "experiments_json", "read", "search_experiments"]


@dataclass(slots=True)
class Experiment:
    experiment_id: str
    project: str
    name: str
    description: str
    created_at: str
    updated_at: str
    runs: list[RunRow]
    lifecycle_counts: dict[str, int]
    indexed_latest: str | None = None  # from the run listing (then ``runs`` stays empty)
    details: ExperimentDetails | None = None  # the listing's counts, read for the page only

    @property
    def latest_run_at(self) -> str:
        if self.indexed_latest is not None:
            return self.indexed_latest
        return max((_run_time(r) for r in self.runs), default="")

    @property
    def sort_at(self) -> str:
        """TauGrid's ``v2ExperimentSortAt``: latest run, else updated, else created time."""
        for value in (self.latest_run_at, self.updated_at, self.created_at):
            if value.strip():
                return value
        return "0001-01-01T00:00:00Z"

    def to_json(self, config: dict | None = None) -> dict:
        """TauGrid's ``v2Experiment`` (:func:`..wire.experiment.experiment_json`), with ``config`` when given."""
        d = self.details
        if d is not None:
            run_count, groups, states, lifecycles = d.run_count, d.run_group_count, d.state_counts, d.lifecycle_counts
            names = d.metric_names
        else:
            run_count, groups, lifecycles = len(self.runs), len({r.run_group_id for r in self.runs}), \
                self.lifecycle_counts
            states = {}
            for run in self.runs:
                state = run.state.strip().lower()
                states[state] = states.get(state, 0) + 1
            names = sorted({n for r in self.runs for n in r.metric_names})
        return experiment_json(experiment_id=self.experiment_id, project=self.project, name=self.name,
                               description=self.description, created_at=self.created_at, updated_at=self.updated_at,
                               run_count=run_count, run_group_count=groups, state_counts=states,
                               lifecycle_counts=lifecycles, latest_run_at=self.latest_run_at, metric_names=names,
                               config=config)

    @property
    def run_ids(self) -> list[str]:
        if self.details is not None:
            return self.details.run_ids or []
        return [r.run_id for r in self.runs]


def _run_time(run: RunRow) -> str:
    # TauGrid's latestRunTimestamp: started, else completed, else created.
    for value in (run.started_at, run.completed_at, run.created_at):
        if value and value.strip():
            return value
    return ""


def _in_range(value: str | None, start: str, end: str) -> bool:
    return bool(value) and start <= value <= end  # type: ignore[operator]


def _matches_query(e: Experiment, needle: str) -> bool:
    texts = [e.experiment_id, e.name, e.description, e.project]
    texts += [t for r in e.runs for kv in r.tags.items() for t in kv]
    texts += [n for r in e.runs for n in r.metric_names]
    return any(needle in t.lower() for t in texts)


def _experiments(reader: ExperimentReader, workspace: str) -> list[Experiment]:
    """The experiments with a run in ``workspace``; a source without an experiments table names them by id."""
    by_id: dict[str, list[RunRow]] = {}
    for run in reader.runs(workspace):
        if run.experiment_id:
            by_id.setdefault(run.experiment_id, []).append(run)
    rows = {row.experiment_id: row for row in reader.experiments()} if isinstance(reader, ReadsExperimentTable) else {}
    out = []
    for experiment_id, runs in by_id.items():
        row = rows.get(experiment_id)
        if row is not None:
            out.append(Experiment(experiment_id, row.project, row.name or experiment_id, row.description or "",
                                  row.created_at, row.updated_at, runs, {}))
        else:
            times = sorted(r.created_at for r in runs)
            out.append(Experiment(experiment_id, runs[0].project, experiment_id, "", times[0], times[-1], runs, {}))
    return out


def search_experiments(reader: ExperimentReader, workspace: str, f: ExperimentFilters,
                       lifecycle_of: Callable[[RunRow], str], scan_limit: int) -> tuple[list[Experiment], bool]:
    """(the matching experiments, newest first, at most ``scan_limit``; whether there were more)."""
    if not f.query and not f.config and _has_listings(reader):
        rows = reader.search_experiments(
            workspace, project=f.project, tags=f.tags, metric_names=f.metric_names, since=f.since, start=f.start,
            end=f.end, lifecycle=f.lifecycle, limit=scan_limit + 1)
        listed = [Experiment(r.experiment_id, r.project, r.name, r.description, r.created_at, r.updated_at, [], {},
                             indexed_latest=r.latest_run_at) for r in rows]
        return listed[:scan_limit], len(listed) > scan_limit
    found = _experiments(reader, workspace)
    if f.project:
        found = [e for e in found if e.project == f.project]
    if f.query:
        needle = f.query.lower()
        found = [e for e in found if _matches_query(e, needle)]
    for key, value in f.tags.items():
        found = [e for e in found if any(r.tags.get(key) == value for r in e.runs)]
    for name in f.metric_names:
        found = [e for e in found if any(name in r.metric_names for r in e.runs)]
    if f.since:
        found = [e for e in found if e.updated_at >= f.since or any(_run_time(r) >= f.since for r in e.runs)]
    if f.start:
        found = [e for e in found if _in_range(e.updated_at, f.start, f.end) or any(
            _in_range(r.created_at, f.start, f.end) or _in_range(r.started_at, f.start, f.end)
            or _in_range(r.completed_at, f.start, f.end) for r in e.runs)]
    if f.config:
        configs = read_configs(reader, [r.run_id for e in found for r in e.runs])
        found = [e for e in found if any(matches(configs.get(r.run_id), f.config) for r in e.runs)]
    for e in found:
        for run in e.runs:
            state = lifecycle_of(run)
            e.lifecycle_counts[state] = e.lifecycle_counts.get(state, 0) + 1
    if f.lifecycle:
        found = [e for e in found if e.lifecycle_counts.get(f.lifecycle, 0) > 0]
    found.sort(key=lambda e: e.experiment_id)
    found.sort(key=lambda e: e.sort_at, reverse=True)
    return found[:scan_limit], len(found) > scan_limit


def _has_listings(reader: ExperimentReader) -> bool:
    return isinstance(reader, HasListings) and reader.has_listings()


def experiments_json(reader: ExperimentReader, page: list[Experiment], include_config: bool,
                     workspace: str = "") -> tuple[list[dict], list[str]]:
    """The page's experiments as TauGrid's ``v2Experiment``; with ``include_config``, each one's config space
    (every config key of its runs with the distinct values), and warnings for what that cut."""
    listed = [e for e in page if e.indexed_latest is not None and e.details is None]
    if listed and isinstance(reader, HasListings):  # only a listing's search leaves details to read
        details = reader.experiment_details(
            workspace, [e.experiment_id for e in listed], with_run_ids=include_config)
        for e in listed:
            e.details = details[e.experiment_id]
    warnings: list[str] = []
    if not include_config:
        return [e.to_json() for e in page], warnings
    configs = read_configs(reader, [r for e in page for r in e.run_ids])
    bodies = []
    for e in page:
        space, cut = config_space(configs[r] for r in e.run_ids if r in configs)
        bodies.append(e.to_json(space))
        warnings += [f"experiment {e.experiment_id}: {c}" for c in cut]
    return bodies, warnings


def read(ctx: Context) -> Response:
    """TauGrid's ``/experiments/search``, with our ``config.<key>=<value>`` filters and ``include=config``."""
    q = ctx.query
    source, workspace = ctx.source_and_workspace()
    filters = experiment_filters(q)
    limit = limit_param(q)
    include = include_param(q)
    filter_hash = filters.hash(source, workspace)
    cursor = ctx.cursors.decode(q.get("cursor"), filter_hash)
    reader, served, warnings = ctx.sources.reader(source)

    def lifecycle_of(run: RunRow) -> str:
        return classify_run(run, reader.metric_summaries(run.run_id))[0]

    found, truncated = search_experiments(reader, workspace, filters, lifecycle_of, SCAN_LIMIT)
    if cursor is not None:
        sort_at, item_id = cursor
        found = [e for e in found if e.sort_at < sort_at or (e.sort_at == sort_at and e.experiment_id > item_id)]
    next_cursor = None
    if len(found) > limit:
        found = found[:limit]
        next_cursor = ctx.cursors.encode(filter_hash, found[-1].sort_at, found[-1].experiment_id)
    bodies, cut = experiments_json(reader, found, "config" in include, workspace)
    body: dict = {"metadata": metadata(source, [served], truncated, warnings + cut), "experiments": bodies}
    if next_cursor:
        body["next_cursor"] = next_cursor
    if "config" in include:  # config values hold floats: the Go encoder spells them
        return json_response(body)
    # Ids, names, counts and times only: orjson writes Go's bytes for them (gojson.dumps_fast).
    return Response(dumps_fast(body), media_type="application/json", headers=SECURITY_HEADERS)
