"""Live wide runs clustered by metric as they grow: each metric in its range's base file and a few delta files.

A wide live run (thousands of metrics logged every step) arrives as files that each hold every metric for a
step or two; a cold read of one metric would open them all. The sidecar's maintenance thread
(:mod:`.compaction_thread`) keeps such a run in a fixed layout instead (issue 30 §5):

* **ranges**: the run's metric names cut into consecutive ranges of about ``range_metrics`` metrics, fixed when
  the run is first clustered (from ``metric_summaries``) and afterwards read off the index: a range starts at the
  first metric of its base file;
* **a base file per range** (``clustered-<hex>``): every row of the range's metrics merged so far;
* **tiered delta files** (``clustered-delta-<hex>``, at most ``max_deltas``, one by default): the rows clustered
  since, of every range, each sorted by metric; older deltas are larger.

A read of one metric opens its range's base and the deltas (the index's metric ranges skip the other bases),
plus the few delivered files not clustered yet. A clustering step (:func:`cluster_live`) merges the oldest
unclustered files (up to ``batch_files``) with the newest deltas no larger than ``delta_ratio`` times what it
merges so far (:func:`_joining_deltas`: as a binary counter carries) into one new delta -- with all of them when
more than ``max_deltas`` would be left. Only a step that merges every delta (a *full* step) folds into their bases
the ranges whose share of the deltas has reached ``merge_fraction`` of their base (the largest shares first, as
many as ``fold_rows`` -- or ``fold_factor`` times the step's new rows -- allow): a range's rows leave the deltas
only when all of them are rewritten. So an ingest costs what it takes in plus the small deltas it carries into
(a row is rewritten about once per delta size class), not the whole delta as when the run had one delta
rewritten every step (whose share of the run grew with it); a base is rewritten each time it has grown by a
quarter (a row ~5 times in all); a full step is as large as the deltas, about once every ``max_deltas`` ingests
of the largest size class. A read costs the base and at most ``max_deltas`` deltas.

Memory does not grow with the files: a step is one streaming merge. Its inputs are read a row group at a time
(:class:`..format.parquet_reader.MetricFileGroups`; a row group of our files holds whole metrics), in windows of
consecutive metric names holding at most ``window_rows`` rows by the summaries' counts; each window's rows are
sorted with :func:`.compaction.merged_columns` (registration order breaks ties, as in every merge) and written
by :class:`..format.parquet_encoder.ParquetStream` into the file they belong to, a row group at a time. What a
step holds is a window, a row group per input and a row group per output; the files it writes are as large as
the run makes them. Levels files are summarized window by window (:func:`..format.levels.levels_of_records`).

Last-wins: the replacements are registered after every file of the run, so a step moves rows past the files
registered after its inputs; it takes only inputs whose rows no such file could tie with (the index's step and
metric ranges: a step re-sent after a restart), adding the files that would (:func:`_safe_inputs`), or waits.
One transaction swaps the files, as compaction's does; what a killed step published is swept by the next
(:mod:`.leftovers`). A file of another Parquet writer (:class:`.compaction.ForeignFileError`: no pyarrow here)
is left where it is, as compaction leaves it, and the step is made without it.
"""

from __future__ import annotations

import bisect
import hashlib
import uuid
from dataclasses import dataclass

import numpy as np

from tau_collector.expstore.format import schema
from tau_collector.expstore.format.levels import (
    WRITTEN_FROM,
    dedupe_file_rows,
    levels_bytes,
    levels_of_records,
    levels_path,
    needs_levels,
    summarize,
)
from tau_collector.expstore.format.metric_files import METRIC_GROUP_ROWS, metric_file_path, metric_row_groups
from tau_collector.expstore.format.parquet_encoder import ParquetStream
from tau_collector.expstore.format.parquet_reader import CodedTexts, ForeignParquetError, MetricFileGroups, NumberColumn
from tau_collector.expstore.maintain.compaction import CLUSTERED_PREFIX, ForeignFileError, merged_columns
from tau_collector.expstore.maintain.leftovers import sweep_run
from tau_collector.expstore.maintain.metric_clusters import Written, clustering_listing, run_steps, swap_files
from tau_collector.expstore.store import ExpStore, StoreError

__all__ = ["DELTA_PREFIX", "LivePolicy", "cluster_live", "live_clustering_due"]

DELTA_PREFIX = CLUSTERED_PREFIX + "delta-"
# Least rows of a row group of the files written here: a cold read of one metric decodes its group, and these
# files are read a metric at a time (a delivery's 4,096 made the group cost more than opening the file).
GROUP_ROWS = 1024
# Row groups of a file written here: about this many, plus a short one at the end of each merge window (a larger
# file has larger groups, up to ``MOST_GROUP_ROWS``). A cold read parses the whole footer and scans every group's
# statistics, so its cost grows with the groups of the files it opens; decoding one larger group costs less.
FILE_GROUPS = 64
MOST_GROUP_ROWS = 32_768


@dataclass(frozen=True, slots=True)
class LivePolicy:
    """When the sidecar clusters a live run (:func:`cluster_live`), and how much one step may do."""

    wide_metrics: int = 1000  # a run with fewer metrics is left to compaction: its files hold few metrics each
    range_metrics: int = 256  # metrics of a range (its base file), when the run's ranges are first cut
    # An ingest is due once the run has ``ingest_files`` unclustered files, or ``file_rows`` rows in two or more.
    ingest_files: int = 8
    file_rows: int = 32_768
    batch_files: int = 8  # unclustered files one step takes, oldest first (each holds a row group in memory)
    merge_fraction: float = 0.25  # a range's base takes in its share of the deltas once it is this part of it
    # Rows of bases one step folds (rewrites): at least ``fold_rows``, and ``fold_factor`` times the rows it takes
    # in -- a run's bases take in what it delivers at the rate ``merge_fraction`` asks (each row then rewritten
    # about 1 + 1 / merge_fraction times in all), and a step's work stays in proportion to its delivery.
    fold_rows: int = 16_384
    fold_factor: int = 4
    # The deltas: an ingest merges its files with the newest deltas no larger than ``delta_ratio`` times what it
    # merges so far (:func:`_joining_deltas`), and with all of them when there would be more than ``max_deltas``.
    delta_ratio: float = 1.0
    # One by default: a cold read costs about one read of the metric alone per file it opens, so a second delta
    # puts the read at ~3x the metric alone by itself (issue 30 §5); with row groups sized to the file the one
    # delta's CPU stayed 0.83-1.67 % of a core over an hour of a 10,000-metric run (bench/README). A run living
    # far longer than that is where more deltas pay: the one delta's rewrite grows with the run.
    max_deltas: int = 1
    window_rows: int = 16_384  # rows one window of the streaming merge holds (by the summaries' counts)
    max_steps: int = 4  # steps of one pass: a step more only while unclustered files are due (a backlog)
    leftover_grace_seconds: float = 3600.0


def live_clustering_due(store: ExpStore, run_id: str, policy: LivePolicy) -> bool:
    """Whether :func:`cluster_live` has an ingest to make on ``run_id``: a wide run with ``ingest_files``
    unclustered files, or ``file_rows`` rows in two or more (two indexed counts)."""
    conn = store.connection()
    (metrics,) = conn.execute("SELECT COUNT(*) FROM metric_summaries WHERE run_id = ?", (run_id,)).fetchone()
    if metrics < policy.wide_metrics:
        return False
    files, rows = conn.execute(
        "SELECT COUNT(*), SUM(row_count) FROM metric_files WHERE run_id = ? AND format = ? AND file_id NOT LIKE ?",
        (run_id, schema.METRIC_FILE_FORMAT, CLUSTERED_PREFIX + "%")).fetchone()
    return _ingest_due(files, rows or 0, policy)


def _ingest_due(files: int, rows: int, policy: LivePolicy) -> bool:
    return files >= policy.ingest_files or (files > 1 and rows >= policy.file_rows)


def cluster_live(store: ExpStore, run_id: str, policy: LivePolicy | None = None) -> int:
    """One bounded pass of clustering a live wide run (the module doc); returns how many steps it made."""
    policy = policy or LivePolicy()
    conn = store.connection()
    counts = conn.execute("SELECT metric_name, count FROM metric_summaries WHERE run_id = ? ORDER BY metric_name",
                          (run_id,)).fetchall()
    if len(counts) < policy.wide_metrics:
        return 0
    sweep_run(store, run_id, grace_seconds=policy.leftover_grace_seconds)
    names = [name for name, _ in counts]
    foreign: set[str] = set()
    steps = 0
    while steps < policy.max_steps:
        listing = clustering_listing(conn, run_id)
        unclustered = [f for f in listing if not f[1].startswith(CLUSTERED_PREFIX) and f[1] not in foreign]
        bases = [f for f in listing if f[1].startswith(CLUSTERED_PREFIX) and not f[1].startswith(DELTA_PREFIX)
                 and f[1] not in foreign]
        deltas = [f for f in listing if f[1].startswith(DELTA_PREFIX) and f[1] not in foreign]
        ingest = _ingest_due(len(unclustered), sum(f[5] or 0 for f in unclustered), policy)
        if steps and not ingest:
            break  # a second step only for files still to take (a backlog)
        batch = unclustered[:policy.batch_files] if ingest else []
        joined = _joining_deltas(deltas, sum(f[5] or 0 for f in batch), policy) if ingest else deltas
        cuts = _cuts(bases, counts, policy)
        budget = max(policy.fold_rows, policy.fold_factor * sum(f[5] or 0 for f in batch))
        # a range's rows leave the deltas only when every delta is merged: bases are folded by full steps only
        full = len(joined) == len(deltas)
        chosen = _due_ranges(store, cuts, names, bases, deltas, budget, policy) if full else set()
        if not ingest and not (bases and chosen):
            break
        moved = _safe_inputs(listing, batch, joined, [f for f in bases if _range_of(cuts, f[8]) in chosen], policy,
                             foreign)
        if not moved:
            break
        chosen |= {_range_of(cuts, f[8]) for f in moved if f in bases}  # a base moved keeps its range
        try:
            if not _step(store, run_id, moved, cuts, chosen, counts, policy):
                break
        except ForeignFileError as exc:  # another writer's file: left where it is, as compaction leaves it
            if exc.file_id in foreign:
                raise
            foreign.add(exc.file_id)
            continue  # the step again without it
        steps += 1
    return steps


def _joining_deltas(deltas: list[tuple], rows: int, policy: LivePolicy) -> list[tuple]:
    """The deltas an ingest of ``rows`` rows merges into its new delta: the newest ones, for as long as each is at
    most ``delta_ratio`` times the rows merged so far (the deltas' sizes then grow geometrically with their age, as
    a binary counter's digits, and a row is rewritten about once per size class); all of them when the deltas left
    would be more than ``max_deltas`` with the new one (a read opens every delta)."""
    joined = 0
    for f in reversed(deltas):
        if (f[5] or 0) > policy.delta_ratio * rows:
            break
        rows += f[5] or 0
        joined += 1
    if len(deltas) - joined + 1 > policy.max_deltas:
        return list(deltas)
    return deltas[len(deltas) - joined:]


def _cuts(bases: list[tuple], counts: list[tuple[str, int]], policy: LivePolicy) -> list[str]:
    """The first metric of each range: its base's first metric; before any base, the summaries' names cut every
    ``range_metrics`` (evenly)."""
    if bases:
        return sorted({f[8] for f in bases})
    ranges = max(1, -(-len(counts) // max(1, policy.range_metrics)))
    every = -(-len(counts) // ranges)
    return [counts[i][0] for i in range(0, len(counts), every)]


def _range_of(cuts: list[str], name: str) -> int:
    """The range holding ``name``: the last one starting at or before it (the first also holds the names before)."""
    return max(0, bisect.bisect_right(cuts, name) - 1)


def _due_ranges(store: ExpStore, cuts: list[str], names: list[str], bases: list[tuple], deltas: list[tuple],
                budget: int, policy: LivePolicy) -> set[int]:
    """The ranges whose base takes in the delta's rows of it this step: every range before the run has bases;
    else those whose share of the delta (by the delta's row groups' statistics, spread over the run's ``names``,
    sorted) is ``merge_fraction`` of their
    base's rows, the largest shares first, as many as ``budget`` rows of bases allow (one at least)."""
    if not bases:
        return set(range(len(cuts)))
    base_rows = [0] * len(cuts)
    for f in bases:
        base_rows[_range_of(cuts, f[8])] += f[5] or 0
    share = [0.0] * len(cuts)
    for f in deltas:
        try:
            groups = MetricFileGroups(store.absolute(f[2]))
        except (OSError, ForeignParquetError):
            continue
        for i in range(len(groups)):
            # a group's rows spread over the ranges its names span, by how many of the run's metrics each holds
            low, high = groups.metric_bounds(i) or (f[8], f[9])
            spans = []
            for r in range(_range_of(cuts, low), _range_of(cuts, high) + 1):
                first = bisect.bisect_left(names, max(low, cuts[r]) if r else low)
                last = bisect.bisect_right(names, high) if r + 1 == len(cuts) else min(
                    bisect.bisect_right(names, high), bisect.bisect_left(names, cuts[r + 1]))
                spans.append((r, max(0, last - first)))
            total = sum(n for _, n in spans) or 1
            for r, n in spans:
                share[r] += groups.rows(i) * n / total
    # Each range's threshold a little apart (x1 to x1.875): the ranges of a run logging every metric every step
    # grow alike, and would otherwise all come due in the same step.
    due = sorted((share[r] / max(1, base_rows[r]), r) for r in range(len(cuts))
                 if share[r] and share[r] >= policy.merge_fraction * (1 + (r % 8) / 8) * base_rows[r])
    chosen: set[int] = set()
    for _, r in due[::-1]:
        if chosen and budget < base_rows[r]:
            break
        chosen.add(r)
        budget -= base_rows[r]
    return chosen


def _ties(f: tuple, x: tuple) -> bool:
    """Whether files ``f`` and ``x`` may hold a row of the same metric and step (by their recorded ranges)."""
    low, high = run_steps(f)
    x_low, x_high = run_steps(x)
    return x_low <= high and x_high >= low and x[8] <= f[9] and x[9] >= f[8]


def _safe_inputs(listing: list[tuple], batch: list[tuple], deltas: list[tuple], bases: list[tuple],
                 policy: LivePolicy, foreign: set[str]) -> list[tuple] | None:
    """The files a step merges (registration order), such that no file registered after one of them and left
    where it is could hold a row tying with it (the reader breaks a tie of (metric, step, wall time) by
    registration order, and the replacements go after every file): ``batch``, ``deltas`` and ``bases`` with the
    files that would tie added (up to ``batch_files`` more), else the longest safe prefix of ``batch``; None when
    nothing is left to do."""
    wanted = {f[1] for f in (*batch, *deltas, *bases)}
    limit = len(wanted) + policy.batch_files
    while True:
        added = set()
        later: list[tuple] = []
        for f in reversed(listing):
            if f[1] in wanted:
                added |= {x[1] for x in later if _ties(f, x)}
            else:
                later.append(f)
        if not added:
            return [f for f in listing if f[1] in wanted] if batch or bases else None  # a lone delta: no step
        wanted |= added
        if len(wanted) > limit or added & foreign:
            break
    if not batch:
        return None
    return _safe_inputs(listing, batch[:-1], deltas, bases, policy, foreign) if len(batch) > 1 else None


class _Input:
    """One file of a step, read a row group at a time in metric order."""

    def __init__(self, store: ExpStore, f: tuple) -> None:
        self.file = f
        try:
            self.groups = MetricFileGroups(store.absolute(f[2]))
        except ForeignParquetError as exc:
            raise ForeignFileError(f[1], str(exc)) from None
        self.next = 0
        self.held: list[dict] = []  # row groups read, less the rows already taken

    def take(self, below: str | None) -> list[dict]:
        """Its rows of metrics before ``below`` (None: all that are left), as :func:`.compaction.read_parts`'s."""
        groups = self.groups
        while self.next < len(groups):
            bounds = groups.metric_bounds(self.next)
            if below is not None and bounds is not None and bounds[0] >= below:
                break
            try:
                self.held.append(groups.read([self.next])[1])
            except ForeignParquetError as exc:
                raise ForeignFileError(self.file[1], str(exc)) from None
            self.next += 1
        taken, kept = [], []
        for part in self.held:
            names = part["metric_name"]
            n = len(names.codes)
            if below is None:
                count = n
            else:
                inside = np.array([v < below for v in names.values] + [False])[names.codes]
                count = int(inside.sum())
                if not inside[:count].all():
                    raise ForeignFileError(self.file[1], f"{self.file[2]}: rows not sorted by metric name")
            if count == n:
                taken.append(part)
            else:
                if count:
                    taken.append(_rows_between(part, 0, count))
                kept.append(_rows_between(part, count, n))
        self.held = kept
        return taken


def _rows_between(part: dict, start: int, stop: int) -> dict:
    """Rows ``start:stop`` of a file's columns (:func:`.compaction.read_parts`'s); a coded column of many values
    (a row group's metric names) keeps only the values these rows use, so what a window's rows carry (and every
    merge of them remaps) is its own names, not all the group's."""
    out: dict = {}
    for name, column in part.items():
        if isinstance(column, NumberColumn):
            out[name] = NumberColumn(column.values[start:stop],
                                     None if column.valid is None else column.valid[start:stop])
        elif isinstance(column, CodedTexts):
            codes, values = column.codes[start:stop], column.values
            if len(values) > 64:
                used, codes = np.unique(codes, return_inverse=True)
                null = used < 0  # a null (-1) sorts first: its rows stay -1
                values = [values[c] for c in used[~null].tolist()]
                codes = codes.astype(np.int64) - int(null.any())
            out[name] = CodedTexts(values, codes)
        else:
            out[name] = column.rows_between(start, stop)
    return out


class _Output:
    """A file a step writes, a row group at a time, with its levels summarized as it goes."""

    def __init__(self, store: ExpStore, run_id: str, project: str, group: str, experiment: str, prefix: str,
                 levels: bool, rows: int) -> None:
        self.store = store
        # least rows of a group: the file's expected ``rows`` over FILE_GROUPS (what is pending is written as
        # groups once it holds that many, or a delivery's group)
        self.least = min(MOST_GROUP_ROWS, max(GROUP_ROWS, rows // FILE_GROUPS))
        self.file_id = prefix + uuid.uuid4().hex
        self.relative = metric_file_path(project, experiment, group, run_id, self.file_id)
        self.tmp = store.temporary_path(self.relative)
        self._file = open(self.tmp, "wb")  # closed by close() or discard()
        self._digest = hashlib.sha256()
        self.stream: ParquetStream | None = None
        self.pending: list[dict] = []
        self.pending_rows = 0
        self.rows = 0
        self.names: list[str] = []
        self.min_step: int | None = None
        self.max_step: int | None = None
        self.levels = levels
        self._every: list[np.ndarray] = []
        self._finest: list[np.ndarray] = []

    def write(self, data: bytes) -> None:  # the stream's sink
        self._digest.update(data)
        self._file.write(data)

    def add(self, parts: list[dict], files: list[tuple]) -> None:
        self.pending += parts
        self.pending_rows += sum(len(p["value"].values) for p in parts)
        if self.pending_rows >= max(METRIC_GROUP_ROWS, self.least):
            self.flush(files)

    def flush(self, files: list[tuple]) -> None:
        """Write what is pending (whole metrics) as row groups."""
        if not self.pending_rows:
            self.pending = []
            return
        rows, columns, names, metric, step, step_valid, wall, wall_valid, value = merged_columns(self.pending, files)
        self.pending, self.pending_rows = [], 0
        if self.stream is None:
            self.stream = ParquetStream(self, columns)
        starts = metric_row_groups([0, *(np.flatnonzero(metric[1:] != metric[:-1]) + 1).tolist()], rows,
                                   least=self.least)
        for start, stop in zip(starts, [*starts[1:], rows], strict=True):
            self.stream.write_group(columns, start, stop)
        s = step if step_valid is None else step[step_valid]
        if s.size:
            low, high = int(s.min()), int(s.max())
            self.min_step = low if self.min_step is None else min(self.min_step, low)
            self.max_step = high if self.max_step is None else max(self.max_step, high)
        # ``names`` holds every name of the row groups read, those of rows taken by other windows too
        used, metric = np.unique(metric, return_inverse=True)
        if self.levels and step_valid is None:
            m, s, w, v = dedupe_file_rows(metric.astype(np.int64), step, wall, wall_valid, value, in_file_order=True)
            m = m + len(self.names)
            self._every.append(summarize(m, s, w, v, None))
            self._finest.append(summarize(m, s, w, v, WRITTEN_FROM))
        else:
            self.levels = False  # rows a reader skips (no step): it computes the levels from what it keeps
        self.names += [names[i] for i in used.tolist()]
        self.rows += rows

    def close(self, files: list[tuple], published: list) -> Written | None:
        """Publish the file (and its levels); None when it holds no row."""
        self.flush(files)
        if self.stream is None:
            self.discard()
            return None
        self.stream.close()
        self._file.close()
        published.append(self.store.publish_temporary(self.tmp, self.relative))
        if self.levels and needs_levels(self.rows, len(self.names)):
            every, finest = np.concatenate(self._every), np.concatenate(self._finest)
            span = 0 if self.min_step is None else self.max_step - self.min_step + 1
            data = levels_bytes(self.file_id, self.rows, self.names, levels_of_records(every, finest, span))
            published.append(self.store.publish_file(levels_path(self.relative), lambda p: p.write_bytes(data)))
        return Written(self.file_id, self.relative, self.rows, self.min_step, self.max_step,
                        self._digest.hexdigest(), self.names[0], self.names[-1])

    def discard(self) -> None:
        self._file.close()
        self.tmp.unlink(missing_ok=True)


def _windows(counts: list[tuple[str, int]], cuts: list[str], rows: int) -> list[str]:
    """Where the merge's windows end (each window: the names before its end, after the last's): at every range's
    start, and wherever the summaries' counts reach ``rows`` since the last end."""
    ends: list[str] = []
    held = 0
    starts = set(cuts[1:])
    for name, count in counts:
        if name in starts or (held and held + count > rows):
            ends.append(name)
            held = 0
        held += count
    return sorted(set(ends) | starts)


def _step(store: ExpStore, run_id: str, files: list[tuple], cuts: list[str], chosen: set[int],
          counts: list[tuple[str, int]], policy: LivePolicy) -> bool:
    """Merge ``files`` (registration order) into a new delta and new bases for the ``chosen`` ranges, streaming,
    and swap them in; False when a concurrent change came first."""
    project, group = files[-1][3] or "", files[-1][4] or ""
    experiment = store.connection().execute("SELECT experiment_id FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    experiment = experiment[0] if experiment and experiment[0] else ""
    in_range, range_rows = [0] * len(cuts), [0] * len(cuts)
    for name, count in counts:
        in_range[_range_of(cuts, name)] += 1
        range_rows[_range_of(cuts, name)] += count
    outputs: dict[int | None, _Output] = {}
    published: list = []
    delta_rows = sum(f[5] or 0 for f in files)  # at most: the folded ranges' rows go to their bases

    def output(r: int | None) -> _Output:
        if r not in outputs:
            levels = r is not None and needs_levels(range_rows[r], in_range[r])
            outputs[r] = _Output(store, run_id, project, group, experiment,
                                 DELTA_PREFIX if r is None else CLUSTERED_PREFIX, levels,
                                 delta_rows if r is None else range_rows[r])
        return outputs[r]

    try:
        inputs = [_Input(store, f) for f in files]
        ends = _windows(counts, cuts, policy.window_rows)
        taken, at_range = 0, None
        for start, end in zip([None, *ends], [*ends, None], strict=True):
            parts = [p for i in inputs for p in i.take(end)]
            if not parts:
                continue
            taken += sum(len(p["value"].values) for p in parts)
            r = _range_of(cuts, start) if start is not None else 0
            if at_range is not None and r != at_range:
                outputs[at_range].flush(files)  # a base's range is done: its last rows written, not held
            at_range = r if r in chosen else None
            output(at_range).add(parts, files)
        expected = sum(i.groups.rows(g) for i in inputs for g in range(len(i.groups)))
        if taken != expected:
            raise StoreError(f"clustering {run_id}: the merge took {taken} of its files' {expected} rows")
        # the bases first: the swap points a metric's latest row at the first written file whose range holds it
        order = sorted(outputs, key=lambda r: (r is None, r or 0))
        written = [w for w in (outputs.pop(r).close(files, published) for r in order) if w is not None]
        if not swap_files(store, run_id, files, written, project, group, fresh=True):
            for path in published:
                path.unlink(missing_ok=True)
            return False
    except BaseException:
        for out in outputs.values():
            out.discard()
        for path in published:
            path.unlink(missing_ok=True)
        raise
    return True
