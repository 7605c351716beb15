"""Model test: whatever the writes, compactions, clusterings and kills, the store reads as a plain last-wins model.

In the style of Vector's file-source model tests: hypothesis draws a random experiment -- chunks written
through :class:`MetricWriter` with re-sent and overlapping steps and files of very different sizes (so a
large file falls between small ones in write order), compactions with random policies, clusterings by
metric (whole runs, and the sidecar's incremental clustering of live runs), and the same run in a child
process killed with SIGKILL at a random point of its work -- and after every action each series read through
:class:`StoreReader` (full, ranged, unreduced and reduced from the series levels) and each summary equals the
model's.

The model is the store's documented rule over the rows in write order: per (metric, step) the row with the
latest wall time wins, and among equal wall times the one written last (a missing wall time is older than
any). The summaries are TauGrid's fold over every row written: counts, step range and finite min/max of all
rows, and the latest finite row by (step, wall time, write order).
"""

from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fixtures.killed_child import run_killed_at as _run_killed_at
from tau_collector.expstore import (
    CompactionPolicy,
    ExpStore,
    MetricWriter,
    RunColumns,
    StoreReader,
    cluster_live,
    cluster_run,
    compact_all,
    compact_run,
    open_store,
)
from tau_collector.expstore.maintain.live_clusters import LivePolicy

RUN = "r"
METRICS = ("a", "b", "wide")
INT64_MIN = -(2**63)
NAN, INF = float("nan"), float("inf")


# -- the model -------------------------------------------------------------------------------


@dataclass
class Row:
    metric: str
    step: int
    wall: int | None  # µs; None: the row has no wall time
    value: float
    seq: tuple[int, int]  # (chunk, arrival in chunk): write order


@dataclass
class Model:
    rows: list[Row] = field(default_factory=list)
    chunks: int = 0

    def add(self, chunk: list[tuple[str, int, int | None, float]]) -> None:
        self.rows += [Row(m, s, w, v, (self.chunks, i)) for i, (m, s, w, v) in enumerate(chunk)]
        self.chunks += 1

    def series(self, metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(step, wall, value) of the metric: per step the latest wall time, then the last written."""
        best: dict[int, Row] = {}
        for r in self.rows:
            if r.metric != metric:
                continue
            held = best.get(r.step)
            if held is None or (_wall(r), r.seq) > (_wall(held), held.seq):
                best[r.step] = r
        steps = sorted(best)
        return (np.array(steps, dtype=np.int64), np.array([_wall(best[s]) for s in steps], dtype=np.int64),
                np.array([best[s].value for s in steps], dtype=np.float64))

    def summary(self, metric: str) -> tuple:
        mine = [r for r in self.rows if r.metric == metric]
        finite = [r for r in mine if math.isfinite(r.value)]
        latest = max(finite, key=lambda r: (r.step, _wall(r), r.seq), default=None)
        return (len(mine), len(finite), len(mine) - len(finite), min(r.step for r in mine),
                max(r.step for r in mine),
                None if latest is None else latest.step,
                None if latest is None else latest.wall,
                None if latest is None else latest.value,
                min((r.value for r in finite), default=None), max((r.value for r in finite), default=None))

    def metrics(self) -> list[str]:
        return sorted({r.metric for r in self.rows})


def _wall(r: Row) -> int:
    return INT64_MIN if r.wall is None else r.wall


# -- the store ---------------------------------------------------------------------------------


def columns_of(chunk: list[tuple[str, int, int | None, float]]) -> RunColumns:
    names = sorted({m for m, *_ in chunk})
    code = {n: i for i, n in enumerate(names)}
    valid = np.array([w is not None for _, _, w, _ in chunk], dtype=bool)
    return RunColumns(
        project="p", experiment_id="e", run_group_id="g", run_id=RUN, names=names,
        metric=np.array([code[m] for m, *_ in chunk], dtype=np.int32),
        step=np.array([s for _, s, _, _ in chunk], dtype=np.int64),
        wall_time=np.array([0 if w is None else w for _, _, w, _ in chunk], dtype=np.int64),
        value=np.array([v for *_, v in chunk], dtype=np.float64), tags=["{}"] * len(chunk), tag_sets=[{}],
        source="history", wall_valid=None if valid.all() else valid, first_wall_ns=0,
    )


def write(writer: MetricWriter, key: str, chunk) -> None:
    writer.write_columns(key, [columns_of(chunk)], request_hash="h")


def summary_of(s) -> tuple:
    return (s.count, s.finite_count, s.non_finite_count, s.min_step, s.max_step, s.latest_step, s.latest_wall_time,
            s.latest_value, s.min_value, s.max_value)


def same(got, want) -> bool:
    return np.array_equal(np.asarray(got), np.asarray(want), equal_nan=True)


def check(model: Model, reader: StoreReader, query) -> None:
    """Every read of every metric equals the model (``query`` draws the ranges and budgets)."""
    assert reader.metric_names(RUN) == model.metrics()
    for metric in model.metrics():
        step, wall, value = model.series(metric)
        rows = reader.rows(RUN, metric)
        assert same(rows.step, step) and same(rows.wall_time, wall) and same(rows.value, value), (
            metric, list(zip(rows.step.tolist(), rows.value.tolist(), strict=True)), list(zip(step.tolist(), value.tolist(), strict=True)))
        got = summary_of(reader.metric_summary(RUN, metric))
        assert _same_summary(got, model.summary(metric)), (metric, got, model.summary(metric))
        count, _ = reader.non_finite(RUN, metric)
        assert count == int((~np.isfinite(value)).sum())
        # A range, read point by point.
        start = query.draw(st.one_of(st.none(), st.integers(-5, 1100)), label="start")
        end = query.draw(st.one_of(st.none(), st.integers(-5, 1100)), label="end")
        keep = np.ones(step.size, dtype=bool)
        if start is not None:
            keep &= step >= start
        if end is not None:
            keep &= step <= end
        ranged = reader.rows(RUN, metric, start, end)
        assert same(ranged.step, step[keep]) and same(ranged.value, value[keep])
        # Reduced: from the series levels (the reader's threshold is 0 here) or merged; either way every point
        # it answers is the model's point at that step, and the ends and extremes are kept.
        max_points = query.draw(st.integers(1, 12), label="max_points")
        finite_only = query.draw(st.booleans(), label="finite_only")
        s, w, v = step[keep], wall[keep], value[keep]
        if finite_only:
            fin = np.isfinite(v)
            s, w, v = s[fin], w[fin], v[fin]
        reduced = reader.series(RUN, metric, start, end, max_points, finite_only=finite_only)
        assert reduced.source_points == s.size, (reduced.source_points, s.size)
        at = np.searchsorted(s, reduced.step)
        assert (at < s.size).all() and same(s[np.minimum(at, max(s.size - 1, 0))], reduced.step), "a step not in the model"
        assert same(v[at], reduced.value) and same(w[at], reduced.wall_time), (
            metric, list(zip(reduced.step.tolist(), reduced.value.tolist(), strict=True)),
            list(zip(s[at].tolist(), v[at].tolist(), strict=True)))
        if s.size and max_points > 1:
            assert int(reduced.step[-1]) == int(s[-1])
            if s.size <= max_points:
                assert same(reduced.step, s)


def _same_summary(got: tuple, want: tuple) -> bool:
    return all(same(a, b) if isinstance(a, float) or isinstance(b, float) else a == b
               for a, b in zip(got, want, strict=True))


def readers(store: ExpStore) -> list[StoreReader]:
    fresh = StoreReader(ExpStore(store.root))
    fresh.levels.min_points = 0  # every range long enough for a level is reduced from the levels
    return [fresh]


# -- the experiment ----------------------------------------------------------------------------

values = st.one_of(st.floats(-100, 100, allow_nan=False, width=32), st.sampled_from([0.0, 1.0, NAN, INF, -INF]))
walls = st.one_of(st.integers(1, 2), st.just(None))  # few wall times: ties decided by write order


@st.composite
def chunks(draw):
    """A delivery: a few rows around a few anchors (re-sending and overlapping earlier steps), or a large file
    (hundreds of rows of one metric with distinct values: many times a small file's bytes)."""
    if draw(st.integers(0, 4)) == 0:
        first = draw(st.integers(0, 12)) * 50
        n = draw(st.integers(150, 400))
        rows = [("wide", first + i, draw(walls), draw(values)) for i in range(n)]
        resent = draw(st.lists(st.tuples(st.sampled_from(METRICS), st.integers(0, 12).map(lambda k: k * 50),
                                         walls, values), max_size=4))
        return rows + list(resent)
    n = draw(st.integers(1, 12))
    return [(draw(st.sampled_from(METRICS)), draw(st.integers(0, 12)) * 50 + draw(st.integers(0, 2)), draw(walls),
             draw(values)) for _ in range(n)]


policies = st.builds(
    lambda small, rows: CompactionPolicy(min_files=1, small_file_bytes=small, max_merge_rows=rows, grace_seconds=0),
    st.sampled_from([2_500, 4_000, 12_000, 1 << 20]), st.integers(1, 300))

# The sidecar's incremental clustering, scaled down: every run is "wide", ranges of one or two metrics, tiny
# ingests, merge windows and row groups' worth of rows.
live_policies = st.builds(
    lambda rows, ingest, ranges, batch, fraction, merges, window, steps, ratio, deltas: LivePolicy(
        wide_metrics=1, range_metrics=ranges, file_rows=rows, ingest_files=ingest, batch_files=batch,
        merge_fraction=fraction, fold_rows=merges, window_rows=window, max_steps=steps, delta_ratio=ratio,
        max_deltas=deltas),
    st.integers(1, 600), st.integers(1, 4), st.integers(1, 3), st.integers(1, 4), st.sampled_from([0.0, 0.25, 2.0]),
    st.integers(1, 400), st.integers(1, 300), st.integers(1, 3),
    # tiered deltas: none joined (a new delta each ingest), some, all; one delta at most up to several
    st.sampled_from([0.0, 1.0, 8.0]), st.integers(1, 4))

_resend = st.tuples(st.just("resend"), st.integers(0, 1000), st.booleans(), st.lists(values, min_size=1, max_size=12))
actions = st.one_of(
    *[st.tuples(st.just("write"), chunks())] * 3,
    # Through a writer compacting in process after each delivery, which merges the columns it kept of the files
    # it wrote instead of reading them back (format/written_parts.py); its policy is the first such action's.
    *[st.tuples(st.just("write_compacting"), policies, chunks())] * 2,
    # An earlier chunk's rows sent again under a new key, same steps and wall times, new values; in a large file
    # (padded with a wide metric) or a small one.
    *[_resend] * 3,
    st.tuples(st.just("replay"), st.integers(0, 1000)),
    *[st.tuples(st.just("compact_all"), policies)] * 2,
    st.tuples(st.just("compact_run"), policies, st.booleans()),
    st.tuples(st.just("cluster"), st.integers(50, 2000)),
    *[st.tuples(st.just("cluster_live"), live_policies)] * 2,
    st.tuples(st.just("killed"), st.sampled_from(["compact_all", "cluster", "cluster_live", "write"]),
              st.integers(0, 14), policies, chunks()),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(steps=st.lists(actions, min_size=1, max_size=14), query=st.data())
def test_the_store_reads_as_the_last_wins_model(steps, query):
    run_experiment(steps, query)


class _Unranged:
    """``query`` of a fixed experiment: whole series, 12 points, non-finite points kept."""

    def draw(self, strategy, label: str):
        return {"start": None, "end": None, "max_points": 12, "finite_only": False}[label]


def test_live_clustering_waits_for_a_step_resent_after_the_files_it_would_move():
    """A step re-sent (same wall time) in a file after the oldest: those files' rows may not move past it, and
    clustering the ones that may, then merging ranges, keeps every read the model's."""
    live = LivePolicy(wide_metrics=1, range_metrics=1, file_rows=5, ingest_files=1, merge_fraction=0.0)
    run_experiment([("write", [("a", 5, 1, 1.0), ("b", 5, 1, 1.5)]), ("write", [("a", 6, 1, 2.0)]),
                    ("resend", 0, False, [3.0, 3.5]), ("cluster_live", live), ("write", [("a", 7, 1, 4.0)]),
                    ("cluster_live", live), ("cluster_live", live), ("compact_all", CompactionPolicy(
                        min_files=1, grace_seconds=0)), ("cluster_live", live)], _Unranged())


def test_a_step_resent_in_a_large_file_between_small_ones_still_wins_after_compaction():
    """What the model found (shrunk): step 5 in a small file, sent again (same wall time) in a large one, a
    small file after; compaction merged the two small files past the large one, and the first value won."""
    policy = CompactionPolicy(min_files=1, small_file_bytes=2500, max_merge_rows=100, grace_seconds=0)
    run_experiment([("write", [("a", 5, 1, 1.0)]), ("resend", 0, True, [2.0]), ("write", [("a", 7, 1, 3.0)]),
                    ("compact_all", policy)], _Unranged())


def run_experiment(steps, query) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(Path(tmp) / "s", create=True)
        writer = MetricWriter(store)
        compacting = None
        model = Model()
        written: list[tuple[str, list]] = []
        kept = StoreReader(store)  # a reader that lives through every change (its caches extended and dropped)
        kept.levels.min_points = 0
        for action in steps:
            kind = action[0]
            if kind == "write":
                key = f"k{len(written)}"
                write(writer, key, action[1])
                written.append((key, action[1]))
                model.add(action[1])
            elif kind == "write_compacting":
                compacting = compacting or MetricWriter(store, compaction=action[1])
                key = f"k{len(written)}"
                write(compacting, key, action[2])
                written.append((key, action[2]))
                model.add(action[2])
            elif kind == "resend" and written:
                _, at, large, new_values = action
                earlier = written[at % len(written)][1]
                chunk = [(m, s, w, new_values[i % len(new_values)]) for i, (m, s, w, _) in enumerate(earlier)]
                if large:
                    chunk += [("wide", 5000 + i, 1, float(np.sin(i * 7.1 + at))) for i in range(400)]
                key = f"k{len(written)}"
                write(writer, key, chunk)
                written.append((key, chunk))
                model.add(chunk)
            elif kind == "replay" and written:  # the spool delivering a recorded chunk again: nothing changes
                key, chunk = written[action[1] % len(written)]
                assert writer.write_columns(key, [columns_of(chunk)], request_hash="h").reused
            elif kind == "compact_all" and model.rows:
                compact_all(store, RUN, policy=action[1])
            elif kind == "compact_run" and model.rows:
                compact_run(store, RUN, policy=action[1], force=action[2])
            elif kind == "cluster" and model.rows:
                cluster_run(store, RUN, max_rows=action[1])
            elif kind == "cluster_live" and model.rows:
                cluster_live(store, RUN, action[1])
            elif kind == "killed":
                _, work, kill_at, policy, chunk = action
                key = f"k{len(written)}"
                if work == "write":
                    _run_killed_at(store.root, kill_at, lambda s, key=key, chunk=chunk: write(MetricWriter(s), key, chunk))
                    if writer.recorded(key):  # committed before the kill: it counts
                        written.append((key, chunk))
                        model.add(chunk)
                elif not model.rows:
                    continue
                elif work == "compact_all":
                    _run_killed_at(store.root, kill_at, lambda s, policy=policy: compact_all(s, RUN, policy=policy))
                elif work == "cluster_live":
                    _run_killed_at(store.root, kill_at, lambda s: cluster_live(s, RUN, LivePolicy(
                        wide_metrics=1, range_metrics=1, file_rows=300, ingest_files=1, window_rows=2)))
                else:
                    _run_killed_at(store.root, kill_at, lambda s: cluster_run(s, RUN, max_rows=1000))
            if model.rows:
                for reader in [kept, *readers(store)]:
                    check(model, reader, query)
