"""``GET /stellar/data/runs/{run_id}/tails``: several metrics' new points of one run in one answer.

A live pane polls this once per round instead of the v2 catalog plus one ``/series`` per metric: the
run's state, the catalog entries of the metrics it names (never the whole catalog), and for each of
them the finite points from a given step on (or the whole range, M4-reduced, for a metric it has not
drawn yet). A metric whose catalog ``count`` and ``latest_step`` are what the client says it holds
gets no points read at all; of the run's summaries only the named metrics' rows are read
(:meth:`~tau_collector.expstore.StoreReader.metric_summaries_named`), and its names once per change.
The full list of metric names comes only when it changed since the client's ``catalog_since``
cursor, so a run of thousands of metrics costs a poll what its visible metrics cost. Parameters and
the answer are in ``docs/api.md``; it is encoded by :mod:`..wire.tails` (each tail starting with the metric's
v2 catalog entry, :mod:`..wire.metric`).
"""

from __future__ import annotations

import hashlib

import numpy as np
from starlette.responses import Response

from tau_collector.reads import ExperimentReader, ReadsNamedSummaries
from tau_collector.taugrid.gojson import encode_string

from ..context import Context
from ..errors import RawJSON, V2Error, json_response, metadata_json
from ..params import DEFAULT_MAX_POINTS, MAX_MAX_POINTS, Query, parse_int
from ..wire.tails import MAX_TAIL_METRICS, missing_tail_json, tail_json, tails_json
from .run import classify_run

__all__ = ["MAX_TAIL_METRICS", "read"]

_NO_POINTS = np.empty(0, np.int64)


# The cursor of the last name set seen per run: a store reader hands out the same tuple of names until the
# store changes, so a poll of a 10,000-metric run hashes its names once per change, not once per poll.
_cursors: dict[tuple[int, str], tuple[tuple[str, ...], str]] = {}


def _catalog(reader: ExperimentReader, run_id: str, wanted: list[str]) -> tuple[tuple[str, ...], dict, str]:
    """(every metric name of the run, by name; the summaries of ``wanted`` it has; the cursor of the names)."""
    if isinstance(reader, ReadsNamedSummaries):  # the local store: only the named rows, not the whole catalog
        names, by_name = reader.metric_summaries_named(run_id, wanted)
    else:
        rows = reader.metric_summaries(run_id)
        names = tuple(s.metric_name for s in rows)
        want = set(wanted)
        by_name = {s.metric_name: s for s in rows if s.metric_name in want}
    key = (id(reader), run_id)
    held = _cursors.get(key)
    if held is not None and held[0] is names:
        return names, by_name, held[1]
    cursor = hashlib.blake2b("\n".join(names).encode(), digest_size=8).hexdigest()
    if len(_cursors) >= 1024:
        _cursors.clear()
    _cursors[key] = (names, cursor)
    return names, by_name, cursor


# The names array as sent, per run, for the cursor it was made for: a 10,000-name list through the generic
# encoder cost a pane's first answer ~0.1-0.25 s; one string join of Go-encoded names costs a tenth of that.
_names: dict[tuple[int, str], tuple[str, RawJSON]] = {}


def _names_json(reader: ExperimentReader, run_id: str, names: tuple[str, ...], cursor: str) -> RawJSON:
    key = (id(reader), run_id)
    held = _names.get(key)
    if held is not None and held[0] == cursor:
        return held[1]
    encoded = RawJSON("[" + ",".join(map(encode_string, names)) + "]")
    if len(_names) >= 64:  # a few wide runs' lists, not every run's
        _names.clear()
    _names[key] = (cursor, encoded)
    return encoded


def _parallel(q: Query, name: str, n: int) -> list[int | None]:
    """The ``name`` values paired with the ``metric`` values by position; blank (or absent) is None."""
    raw = q.all(name)
    if len(raw) > n:
        raise V2Error(400, "INVALID_ARGUMENT", f"{name} is given {len(raw)} times for {n} metric parameters")
    out: list[int | None] = []
    for i, text in enumerate(raw):
        text = text.strip()
        out.append(None if text == "" else parse_int(text, f"{name}[{i}]"))
    return out + [None] * (n - len(out))


def read(ctx: Context) -> Response:
    q, run_id = ctx.query, ctx.run_id
    source, workspace = ctx.source_and_workspace()
    metrics = [m.strip() for m in q.all("metric")]
    if len(metrics) > MAX_TAIL_METRICS:
        raise V2Error(400, "INVALID_ARGUMENT", f"at most {MAX_TAIL_METRICS} metric parameters per request, "
                                               f"got {len(metrics)}")
    if any(not m for m in metrics):
        raise V2Error(400, "INVALID_ARGUMENT", "metric must not be empty")
    if len(set(metrics)) != len(metrics):
        raise V2Error(400, "INVALID_ARGUMENT", "each metric may be named once")
    since = _parallel(q, "since", len(metrics))
    counts = _parallel(q, "count", len(metrics))
    max_points = DEFAULT_MAX_POINTS
    if q.get("max_points"):
        max_points = parse_int(q.get("max_points"), "max_points")
        if not 1 <= max_points <= MAX_MAX_POINTS:
            raise V2Error(400, "INVALID_ARGUMENT", f"max_points must be between 1 and {MAX_MAX_POINTS}")
    found = ctx.exact_run(source, workspace)
    reader, run = found.reader, found.run
    names, by_name, cursor = _catalog(reader, run.run_id, metrics)
    # A live run's lifecycle needs no summaries; a finished one's success gates read them all (once: it no
    # longer changes).
    live = run.state.strip().lower() in ("pending", "running")
    lifecycle = classify_run(run, [] if live else reader.metric_summaries(run.run_id))[0]
    partial = False
    items = []
    for name, start, count in zip(metrics, since, counts, strict=True):
        s = by_name.get(name)
        if s is None:
            items.append(missing_tail_json(name, start))
            continue
        # Unchanged since the client's read: no points to read (the common case of a quiet metric).
        unchanged = count is not None and count == s.count and start is not None and start == s.latest_step
        if unchanged:
            items.append(tail_json(s, start, False, 0, _NO_POINTS, _NO_POINTS))
        else:
            series = reader.series(run.run_id, name, start, None, max_points, finite_only=True)
            partial = partial or series.partial
            items.append(tail_json(s, start, True, series.source_points, series.step, series.value))
    names_json = _names_json(reader, run.run_id, names, cursor) if q.get("catalog_since") != cursor else None
    return json_response(tails_json(metadata_json(source, [found.served], partial, found.warnings), run_id, run,
                                    lifecycle, cursor, len(names), names_json, items))
