"""Which runs a pane compares: its ``compare=`` entries resolved through the Portal, and their configs.

An entry of ``compare=`` is, in this order of precedence:

1. **a run id** — the run (``GET /api/v2/stellar/runs/{id}`` finds it), even when an experiment or a
   run group has the same id;
2. **an experiment id** — every run of the experiment (TauGrid's v2 listing
   ``/experiments/{id}/runs``, which TauGrid's Portal serves too), oldest first;
3. **a run group id** — every run of the group (the local Portal's ``/stellar/data/runs?group=``;
   against TauGrid's Portal, the group's runs within the pane's own run's experiment).

The pane's own run comes first and is never repeated; at most :data:`MAX_COMPARE_RUNS` runs are
compared (the newest of a larger experiment or group are dropped, and the pane says so). The legend
names runs by what differs between their configs (``js/shared/differing.js``); the configs come from
the local Portal's page data in one request (none against TauGrid's Portal: runs keep their ids).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from taunotebook.client import ClientError, NotFoundError, PortalClient

__all__ = ["MAX_COMPARE_RUNS", "Resolved", "resolve_compare", "run_configs"]

MAX_COMPARE_RUNS = 50
ROUTE_NOT_FOUND = "route was not found"  # TauGrid's message for a path it does not serve (no page data)


@dataclass
class Resolved:
    """The runs to draw (the pane's own first), what the pane should say about the entries, and whether
    an entry named an experiment or a group (whose runs can grow while a sweep runs)."""

    run_ids: list[str]
    notes: list[str] = field(default_factory=list)
    grows: bool = False


def _is_run(client: PortalClient, entry: str) -> bool:
    try:
        client.run(entry)
    except NotFoundError:
        return False
    except ClientError as err:
        if err.code == "INVALID_ARGUMENT":  # an id breaking TauGrid's ID rule that names no run
            return False
        raise
    return True


def _drawn(newest_first: list[Any]) -> tuple[list[str], bool]:
    """The newest :data:`MAX_COMPARE_RUNS` of a listing, oldest first (ties by id); whether more were left out."""
    kept = sorted(newest_first[:MAX_COMPARE_RUNS], key=lambda r: (str(r.created_at or ""), r.run_id))
    return [r.run_id for r in kept], len(newest_first) > MAX_COMPARE_RUNS


def _experiment_runs(client: PortalClient, experiment: str, **filters: str) -> tuple[list[str], bool]:
    try:
        runs = list(islice(client.iter_experiment_runs(experiment, limit=200, **filters), MAX_COMPARE_RUNS + 1))
    except (NotFoundError, ClientError):
        return [], False
    return _drawn(runs)


def _group_runs(client: PortalClient, entry: str, primary: str) -> tuple[list[str], bool]:
    try:
        table = client.run_table(group=entry, metrics=())
    except ClientError:
        return [], False
    except NotFoundError as err:
        if err.message != ROUTE_NOT_FOUND:
            return [], False
        # TauGrid's Portal: no page data; a group is looked for within the pane's run's experiment.
        experiment = client.run(primary).experiment_id
        return _experiment_runs(client, experiment, group=entry) if experiment else ([], False)
    run_ids, more = _drawn(list(table.runs))
    return run_ids, more or table.run_count > len(table.runs)


def resolve_compare(client: PortalClient, run_id: str, entries: Iterable[str]) -> Resolved:
    """The pane's run, then the runs each ``compare=`` entry names (see the module's rule), each once."""
    out = Resolved([run_id])
    for entry in entries:
        entry = entry.strip()
        if not entry or entry == run_id:
            continue
        if _is_run(client, entry):
            found, more, kind = [entry], False, "run"
        else:
            found, more = _experiment_runs(client, entry)
            kind = "experiment"
            if not found:
                found, more = _group_runs(client, entry, run_id)
                kind = "group"
            out.grows = True
        if not found:
            out.notes.append(f"compare: {entry!r} names no run, experiment or run group")
            continue
        if more:
            out.notes.append(f"compare: {kind} {entry!r} has more than {MAX_COMPARE_RUNS} runs; "
                             f"its {MAX_COMPARE_RUNS} newest are drawn")
        for rid in found:
            if rid not in out.run_ids:
                out.run_ids.append(rid)
    if len(out.run_ids) > MAX_COMPARE_RUNS + 1:
        out.notes.append(f"compare: {len(out.run_ids) - 1} runs named; the first {MAX_COMPARE_RUNS} are drawn")
        del out.run_ids[MAX_COMPARE_RUNS + 1:]
    return out


def run_configs(client: PortalClient, run_ids: list[str]) -> dict[str, dict | None]:
    """Each run's config fields (None without one), from the page data in one request; {} without page data."""
    if len(run_ids) < 2:
        return {}  # a run alone is named by its id
    try:
        table = client.run_table(run_ids=run_ids, project="", metrics=())  # compared runs may be in other projects
    except NotFoundError:
        return {}
    return {row.run_id: row.config for row in table.runs}
