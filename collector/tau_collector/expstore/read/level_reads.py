"""The store reader's long-series path: a reduced series from the series levels of its files.

For a request over more than :data:`LEVELS_MIN_POINTS` points (after dedupe) the reader does not
merge the series: each file wholly inside the range gives its level records (its levels file,
:mod:`..format.levels`, or -- for a file without one, e.g. written before levels existed or compacted --
levels computed once from that file's rows and cached), a file cut by the range's ends gives its
points in range, and :mod:`.level_series` reduces the lot. Memory and work follow the answer's
resolution and the size of a file, not the length of the series.

Files whose steps overlap (a step written twice, e.g. by a run resumed from a checkpoint) are merged
together by the reader's last-wins rule and enter as points; the others still come from their
levels. A short range, a ``step_interval``, or a range too narrow for the coarsest level is merged
point by point as before (``None`` from :meth:`LevelReads.series`).
"""

from __future__ import annotations

import numpy as np

from tau_collector.expstore.format import levels as lv
from tau_collector.expstore.read.file_slices import FileSlices
from tau_collector.expstore.read.level_series import choose_base, columns, reduce_records, snapped_edges
from tau_collector.expstore.read.series_merge import merge  # the reader's own merge: one last-wins rule
from tau_collector.expstore.write.summaries import summary_count
from tau_collector.reads.blocking import may_block

__all__ = ["LEVELS_MIN_POINTS", "LevelReads"]

LEVELS_MIN_POINTS = 1 << 20  # below this a range is merged point by point (the exact, cached path)


class _Levels:
    """A file's levels: from its levels file (members read when first asked) or computed in memory."""

    __slots__ = ("bases", "index", "members", "path", "stats")

    def __init__(self, index: dict[str, int], stats: np.ndarray, path=None, members: dict | None = None,
                 bases: tuple[int, ...] = ()) -> None:
        self.index, self.stats, self.path, self.members = index, stats, path, members or {}
        self.bases = tuple(sorted(self.members)) if members else bases

    @property
    def nbytes(self) -> int:
        return int(self.stats.nbytes + sum(m.nbytes for m in self.members.values())) + 64 * len(self.index)


def _metric_slice(records: np.ndarray, metric: int) -> np.ndarray:
    m = records["metric"]
    return records[np.searchsorted(m, metric, side="left"):np.searchsorted(m, metric, side="right")]


class LevelReads:
    """Reduced series from levels, over the :class:`~.file_slices.FileSlices` (file lists, slices, caches) of one
    :class:`~.reader.StoreReader`."""

    def __init__(self, files: FileSlices, *, min_points: int = LEVELS_MIN_POINTS) -> None:
        self.files = files
        self.min_points = min_points

    def series(self, run_id: str, metric: str, start: int | None, end: int | None, max_points: int, *,
               finite_only: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, int] | None:
        """(step, wall, value, points in range) of the M4 answer, or None: merge the points instead."""
        if self._at_most(run_id, metric, max(max_points, self.min_points)):
            return None
        found = self._whole_or_cut(run_id, metric, start, end, max(max_points, self.min_points))
        if found is None:
            return None
        parts, total = found
        count = int(total["count_finite"] if finite_only else total["count"])
        if count <= max(max_points, self.min_points):
            return None
        head, tail = ("first_finite", "last_finite") if finite_only else ("first", "last")
        first_step, last_step = int(total[f"{head}_step"]), int(total[f"{tail}_step"])
        if max_points == 1:
            return (np.array([last_step]), np.array([total[f"{tail}_wall"]]), np.array([total[f"{tail}_value"]]),
                    count)
        base = choose_base(lv.BASES, first_step, last_step, max_points)
        if base is None:
            return None
        merged = self._level_records(run_id, metric, parts, base, finite_only)
        edges = snapped_edges(first_step, last_step, max_points, base)
        step, wall, value = reduce_records(merged, edges, max_points, finite_only=finite_only)
        return step, wall, value, count

    def non_finite(self, run_id: str, metric: str, start: int | None, end: int | None, limit: int | None
                   ) -> tuple[int, np.ndarray, np.ndarray, np.ndarray] | None:
        """(non-finite points in range, step/wall/value of the first ``limit``), or None: merge instead.

        The count comes from the levels; the points from the files that hold any, in step order, until
        ``limit`` are found.
        """
        if limit is None or self._at_most(run_id, metric, self.min_points):
            return None
        parts = self._parts(run_id, metric, start, end, self.min_points)
        if parts is None:
            return None
        stats = _cat([p[0] for p in parts])
        if int(stats["count"].sum()) <= self.min_points:
            return None
        bad = stats["count"] - stats["count_finite"]
        found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        wanted = limit
        for (_, source), n in zip(parts, bad.tolist(), strict=True):
            if wanted <= 0:
                break
            if n == 0:
                continue
            if not _is_points(source):
                row = source[2]
                points = self.files.slice(row[0], row[1], metric, row[4])
                source = (points.step, points.wall_time, points.value)
            at = np.flatnonzero(~np.isfinite(source[2]))[:wanted]
            found.append(tuple(a[at] for a in source[:3]))
            wanted -= at.size
        if not found:
            return int(bad.sum()), np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float64)
        return (int(bad.sum()), *(np.concatenate([f[i] for f in found]) for i in range(3)))

    def _at_most(self, run_id: str, metric: str, points: int) -> bool:
        """Whether the run's summary of ``metric`` counts at most ``points`` observations (every one, before
        dedupe: no range of it holds more), so no range needs the levels. Asked before any levels file is
        opened: each file of a wide run lists thousands of metrics, and reading every file's levels to learn
        that a short series is short cost a cold read of a 10,000-metric run ~0.4 s and ~100 MB."""

        count = self.files.index.get(("summary_count", run_id, metric),
                                     lambda: summary_count(self.files.store.connection(), run_id, metric))
        return count is not None and count <= points

    def _whole_or_cut(self, run_id: str, metric: str, start: int | None, end: int | None, at_least: int
                      ) -> tuple | None:
        """(:meth:`_parts`, their combined stats record); kept while the file list holds and every file
        lies wholly inside the range (so a repeated read skips the per-file work)."""
        ids = self.files.files(run_id).ids
        key = ("level-parts", run_id, metric, start, end, at_least, ids)
        cached = self.files.cache.get(key)
        if cached is not None:
            return cached
        parts = self._parts(run_id, metric, start, end, at_least)
        if parts is None:
            return None
        found = (parts, lv.combine(_as_one_metric(_cat([p[0] for p in parts])), None)[0])
        if all(not _is_points(source) for _, source in parts):
            self.files.cache.put(key, found, 1024 + 64 * len(parts))
        return found

    def _parts(self, run_id: str, metric: str, start: int | None, end: int | None, at_least: int) -> list | None:
        """Per file holding ``metric`` in range, in step order: (its stats record for the range, and either
        (levels, metric index) for a file wholly inside or (step, wall, value) of its points in range).
        None when no file holds it, files overlap in steps, or the range holds at most ``at_least`` points."""
        files = self.files.files(run_id).overlapping(start, end)
        # The index's row counts bound the points in range (every metric's rows count): a range that cannot
        # hold more than ``at_least`` is merged from its points without opening a levels file, as before.
        if all(row[4] is not None for row in files) and sum(row[4] for row in files) <= at_least:
            return None
        pieces = []  # (first step, last step, levels, metric index, file row)
        for row in files:
            levels, idx = self._levels(row, metric)
            if levels is None:
                continue
            stat = levels.stats[np.searchsorted(levels.stats["metric"], idx)]
            pieces.append((int(stat["first_step"]), int(stat["last_step"]), levels, idx, row))
        if not pieces:
            return None
        pieces.sort(key=lambda p: p[0])
        lo_step = -(2**63) if start is None else start
        hi_step = 2**63 - 1 if end is None else end
        parts: list = []  # per piece: its stats record (None: not yet) and either its levels or its points in range
        points_in_range = 0
        for cluster in _clusters(pieces):
            first, last, levels, idx, row = cluster[0]
            if len(cluster) == 1 and lo_step <= first and last <= hi_step:
                stat = levels.stats[levels.stats["metric"] == idx]
                parts.append((stat, (levels, idx, row)))
                points_in_range += int(stat["count"][0])
                continue
            if len(cluster) == 1:
                points, key = self.files.slice(row[0], row[1], metric, row[4]), row[0]
            else:  # files overlapping in steps: merged (last wins between them), the rest still from levels
                points, key = self._merged_cluster(files, cluster, metric)
            a = int(np.searchsorted(points.step, lo_step, side="left"))
            b = int(np.searchsorted(points.step, hi_step, side="right"))
            if b <= a:
                continue
            parts.append((None, (points.step[a:b], points.wall_time[a:b], points.value[a:b], (key, a, b))))
            points_in_range += b - a
        if not parts or points_in_range <= at_least:
            return None  # a short range: merging its points is cheap and exact
        return [(self._cut_records(metric, source, None)[0] if stat is None else stat, source)
                for stat, source in parts]

    def _merged_cluster(self, files: list[tuple], cluster: list[tuple], metric: str) -> tuple:
        """The merged points of files whose steps overlap, by the reader's last-wins rule (kept)."""
        ids = tuple(p[4][0] for p in cluster)
        key = ("level-cluster", metric, ids)
        merged = self.files.cache.get(key)
        if merged is None:
            may_block()
            in_cluster = set(ids)
            # Rank = registration order among the run's files, as the reader's merge of the full list has it.
            slices = [(rank, self.files.slice(row[0], row[1], metric, row[4]))
                      for rank, row in enumerate(files) if row[0] in in_cluster]
            merged = merge([(rank, sl) for rank, sl in slices if sl.step.size])
            self.files.cache.put(key, merged, merged.nbytes)
        return merged, ids

    def _cut_records(self, metric: str, source: tuple, base: int | None) -> np.ndarray:
        """Records of a file's points in range (kept: a zoomed pane repeats its range)."""
        key = ("level-cut", metric, source[3], base)
        cached = self.files.cache.get(key)
        if cached is None:
            may_block(source[0].size)  # summarizing a cut costs its points
            cached = lv.summarize(np.zeros(source[0].size, np.int64), *source[:3], base)
            self.files.cache.put(key, cached, cached.nbytes)
        return cached

    def _level_records(self, run_id: str, metric: str, parts: list, base: int, finite_only: bool
                       ) -> dict[str, np.ndarray]:
        """The range's records at ``base`` in step order, as columns (with ``finite_only``, those holding a
        finite point). Kept when every file lies wholly inside the range: a repeated full-range read then
        only groups them into columns."""
        whole = all(not _is_points(source) for _, source in parts)
        key = ("level-records", run_id, metric, base, finite_only,
               tuple(id(source[0]) for _, source in parts)) if whole else None
        if key is not None:
            cached = self.files.cache.get(key)
            if cached is not None:
                return cached[1]
        may_block(sum(int(stat["count"].sum()) for stat, _ in parts) // base)  # about the records to group
        records = [self._cut_records(metric, source, base) if _is_points(source)
                   else self._records(source[0], source[1], base, metric, source[2]) for _, source in parts]
        merged = _merge_shared_buckets(_cat(records))
        if finite_only:
            merged = merged[merged["count_finite"] > 0]
        merged = columns(merged)
        if key is not None:
            # The levels objects in the key are kept alive with the value, so their ids cannot be reused.
            self.files.cache.put(key, ([source[0] for _, source in parts], merged),
                                   sum(c.nbytes for c in merged.values()))
        return merged

    # -- a file's levels ---------------------------------------------------------------------------

    def _levels(self, row: tuple, metric: str) -> tuple[_Levels | None, int]:
        """The levels of ``metric`` in the file ``row`` and its index there; None when the file lacks it."""
        file_id, path, _, _, row_count = row
        cache = self.files.cache
        key = ("levels", file_id)
        found = cache.get(key)
        if found is None:
            may_block()
            read = lv.read_levels(self.files.store.absolute(lv.levels_path(path)), file_id, row_count)
            found = _Levels(read.index, read.stats, path=read.path, bases=read.bases) if read is not None else False
            cache.put(key, found, found.nbytes if found else 64)
        if found is not False:
            idx = found.index.get(metric)
            return (found, idx) if idx is not None else (None, -1)
        # No levels file (written before levels, or a compacted file): computed from the file's rows once.
        key = ("levels-of-rows", file_id, metric)
        computed = cache.get(key)
        if computed is None:
            points = self.files.slice(file_id, path, metric, row_count)
            if points.step.size == 0:
                computed = _Levels({}, np.zeros(0, lv.RECORD))
            else:
                built = lv.file_levels(np.zeros(points.step.size, np.int64), points.step, points.wall_time,
                                       points.value)
                computed = _Levels({metric: 0}, built.pop("all"), members={int(k[1:]): v for k, v in built.items()})
            cache.put(key, computed, computed.nbytes)
        return (computed, 0) if metric in computed.index else (None, -1)

    def _records(self, levels: _Levels, idx: int, base: int, metric: str, row: tuple) -> np.ndarray:
        """The metric's records at ``base``: stored, combined from the coarsest stored finer level, or -- finer
        than the file stores (levels are written from ``lv.WRITTEN_FROM`` steps) -- summarized from its points."""
        if base in levels.bases:
            return _metric_slice(self._member(levels, base), idx)
        finer = [b for b in levels.bases if b < base and base % b == 0]
        if not finer:
            points = self.files.slice(row[0], row[1], metric, row[4])
            return self._cut_records(metric, (points.step, points.wall_time, points.value, (row[0], "all")), base)
        return lv.combine(_metric_slice(self._member(levels, finer[-1]), idx), base // finer[-1])

    def _member(self, levels: _Levels, base: int) -> np.ndarray:
        if base in levels.members:
            return levels.members[base]
        key = ("level", str(levels.path), base)
        cached = self.files.cache.get(key)
        if cached is None:
            may_block()
            with np.load(levels.path, allow_pickle=False) as npz:
                cached = npz[f"b{base}"]
            if cached.dtype != lv.RECORD:
                raise ValueError(f"levels file {levels.path}: member b{base} is not a level")
            self.files.cache.put(key, cached, cached.nbytes)
        return cached


def _clusters(pieces: list[tuple]) -> list[list[tuple]]:
    """Pieces (sorted by first step) grouped where their step ranges overlap."""
    out: list[list[tuple]] = []
    reach = None
    for piece in pieces:
        if reach is not None and piece[0] <= reach:
            out[-1].append(piece)
            reach = max(reach, piece[1])
        else:
            out.append([piece])
            reach = piece[1]
    return out


def _cat(records: list[np.ndarray]) -> np.ndarray:
    """Concatenated record arrays (np.concatenate spends ~75 µs per array promoting the fields of structs)."""
    return np.frombuffer(b"".join(r.tobytes() for r in records), dtype=lv.RECORD)


def _is_points(source: tuple) -> bool:
    # (step, wall, value) of a file cut by the range; else (levels, metric index, file row)
    return isinstance(source[0], np.ndarray)


def _merge_shared_buckets(records: np.ndarray) -> np.ndarray:
    """Records of consecutive pieces in step order, where a bucket cut by a file boundary appears in both."""
    bucket = records["bucket"]
    shared = np.flatnonzero(bucket[1:] == bucket[:-1])
    if shared.size == 0:
        return records
    involved = np.zeros(records.size, dtype=bool)
    involved[shared] = involved[shared + 1] = True
    out = np.concatenate([records[~involved], lv.combine(_as_one_metric(records[involved]), 1)])
    return out[np.argsort(out["bucket"], kind="stable")]


def _as_one_metric(records: np.ndarray) -> np.ndarray:
    records = records.copy()
    records["metric"] = 0
    return records
