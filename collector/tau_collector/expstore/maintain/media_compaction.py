"""Media compaction: merge a run's many small histogram and text files into few large ones, whole tags per row group.

Each delivery writes one media file per kind holding a few steps of every tag (:mod:`..write.media`), so a long
run's tag is spread over hundreds of files and a full-range read of it opened every one. A tag is due once it
has ``min_entries`` entries (``media_files`` rows) under ``small_tag_rows`` rows; its small entries -- and any
other entry of the tag whose steps meet theirs, so no remaining entry shares a step with the merged one -- are
merged into one entry of a new file: the tag's rows sorted by step, one row a step (the last in write order, the
rule :mod:`..read.media_reads` applies, so a read shows the same), in row groups of its own. Write order is the
order of the entries' ``rowid``; the merged entry takes the ``rowid`` of the newest entry it merged, so an entry
delivered while the merge ran (re-sending one of its steps) still comes after it. Due tags are packed into files
of up to ``max_merge_rows`` rows, merges of the same deliveries together; a tag with more small rows than that is
merged in parts, oldest first. A pass reads each file's footer once (:class:`_Footers`), not once per tag entry,
and decodes a row group shared by several tags once while it fits the merge's row budget.
Columns are copied through as stored (text columns as their encoded bytes,
:class:`..format.parquet_encoder.PlainTexts`: the bucket column is never decoded or re-encoded), read by
:mod:`..format.parquet_reader` and written by :class:`..format.parquet_encoder.ParquetStream` a tag at a time --
numpy only, so the sidecar's compaction thread runs it; a file of another Parquet writer is left where it is.

Crash-safe as scalar compaction: the new file is published (temporary name, fsync, rename), then one
transaction registers its entries and deletes the merged ones (a reader lists either set); the merged files no
entry names any more are then removed (a reader that listed one just before lists again: :mod:`..read.media_reads`).
A process killed between these steps leaves a readable store: a temporary file, a published file no entry names,
or a retired file, each removed by the leftovers sweep (:mod:`.leftovers`) once old enough.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import orjson

from tau_collector.expstore.format.media_files import (
    GROUP_ROWS,
    MEDIA_CODEC,
    bucket_cells,
    decode_buckets,
    delivery_file_path,
)
from tau_collector.expstore.format.parquet_encoder import Coded, Column, ParquetStream, PlainTexts
from tau_collector.expstore.format.parquet_reader import CodedTexts, ForeignParquetError, MetricFileGroups
from tau_collector.expstore.store import ExpStore, StoreError, utc_now_rfc3339

__all__ = ["COMPACTED_MEDIA_PREFIX", "MediaCompactionPolicy", "compact_media", "compact_media_quietly",
           "media_compaction_due", "media_policy"]

COMPACTED_MEDIA_PREFIX = "media-compacted-"
_KINDS = ("histograms", "text")
_INT64, _DOUBLE = 2, 5
_CONVERTED_JSON = 19


@dataclass(frozen=True, slots=True)
class MediaCompactionPolicy:
    min_entries: int = 8  # a tag is merged once it has this many small entries
    small_tag_rows: int = 4096  # an entry of fewer rows is small (a merged entry of more is never merged again)
    # Rows of one merge (one file); a tag's rows are held in memory at once (64-bucket JSON: ~2 kB a row).
    max_merge_rows: int = 16_384


def media_policy(merge_rows: int) -> MediaCompactionPolicy:
    """The media policy of a compaction whose merges hold at most ``merge_rows`` rows of a tag
    (``CompactionPolicy.media_merge_rows``): entries of that many rows are never merged again (a merge holds ~2x)."""
    return MediaCompactionPolicy(small_tag_rows=min(merge_rows, MediaCompactionPolicy().small_tag_rows),
                                 max_merge_rows=merge_rows)


def media_compaction_due(store: ExpStore, run_id: str, policy: MediaCompactionPolicy) -> bool:
    """Whether a tag of ``run_id`` has ``min_entries`` small entries (what :func:`compact_media` merges): one query
    over the run's entries (a few a tag once compacted), for the sidecar to decide after a delivery."""
    try:
        row = store.connection().execute(
            "SELECT 1 FROM media_files WHERE run_id = ? AND row_count < ? GROUP BY kind, tag HAVING COUNT(*) >= ? "
            "LIMIT 1", (run_id, policy.small_tag_rows, policy.min_entries)).fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return False
        raise
    return row is not None


@dataclass(slots=True)
class _Entry:
    rowid: int
    file_id: str
    path: str
    tag: str
    rows: int
    low: int
    high: int
    groups: tuple[int, int] | None


def compact_media_quietly(store: ExpStore, run_id: str, *, policy: MediaCompactionPolicy | None = None) -> int:
    """:func:`compact_media` where a failure must not fail what asked for it (an import, a delivery): a busy index,
    a file gone meanwhile leave the run's media as they are, for the next compaction."""
    try:
        return compact_media(store, run_id, policy=policy)
    except (StoreError, OSError, sqlite3.Error, ForeignParquetError):
        return 0


def compact_media(store: ExpStore, run_id: str, *, policy: MediaCompactionPolicy | None = None) -> int:
    """Merge ``run_id``'s due media tags (see the module doc); returns how many files were written."""
    policy = policy or MediaCompactionPolicy()
    written = 0
    for kind in _KINDS:
        plan = list(_merges(_entries(store, run_id, kind), policy))
        # Merges of the same deliveries together (each delivery's file holds every tag): a file's footer is read
        # once in the pass and dropped after its last entry is read, so the pass holds the footers of the files
        # its current merges read, not of all the run's; the groups decoded last are reused by the next tags.
        plan.sort(key=lambda chosen: (chosen[0].rowid, chosen[0].tag))
        footers = _Footers(store, [e for chosen in plan for e in chosen], policy.max_merge_rows)
        batch: list[list[_Entry]] = []
        rows = 0
        for chosen in plan:
            count = sum(e.rows for e in chosen)
            if batch and (rows + count > policy.max_merge_rows or any(c[0].tag == chosen[0].tag for c in batch)):
                written += _merge(store, run_id, kind, batch, footers)
                batch, rows = [], 0
            batch.append(chosen)
            rows += count
        if batch:
            written += _merge(store, run_id, kind, batch, footers)
    return written


class _Footers:
    """What one pass reads of each file: its parsed footer (:class:`MetricFileGroups`), read at its first entry and
    kept until its last entry of the pass is read, then dropped; and the row groups it decoded that a later entry
    of the pass reads again (a delivery's group holds the rows of several tags, up to 256 rows), kept until that
    last read while their rows fit ``budget_rows`` (past it a group is decoded again when read again)."""

    def __init__(self, store: ExpStore, entries: list[_Entry], budget_rows: int) -> None:
        self.store = store
        self.uses: dict[str, int] = defaultdict(int)  # entries of the pass still to read, by file
        self.group_uses: dict[tuple[str, tuple[int, int] | None], int] = defaultdict(int)  # ... by row groups
        for e in entries:
            self.uses[e.path] += 1
            self.group_uses[(e.path, e.groups)] += 1
        self.held: dict[str, MetricFileGroups] = {}
        self.decoded: dict[tuple[str, tuple[int, int] | None], tuple[int, dict]] = {}
        self.decoded_rows = 0
        self.budget_rows = budget_rows
        self.reads = 0  # footers read (a test counts them)
        self.decodes = 0  # row group ranges decoded

    def read(self, entry: _Entry) -> tuple[MetricFileGroups, int, dict]:
        """(the file's groups, rows, columns) of the row groups holding ``entry``'s tag (the columns a new dict)."""
        path, key = entry.path, (entry.path, entry.groups)
        groups = self.held.get(path)
        if groups is None:
            groups = MetricFileGroups(self.store.absolute(path), any_columns=True)
            groups.plain = frozenset(n for n in groups.names if n != "tag" and groups.types[n] not in (_INT64, _DOUBLE))
            self.reads += 1
            self.held[path] = groups
        found = self.decoded.get(key)
        if found is None:
            indices = range(len(groups)) if entry.groups is None else range(entry.groups[0], entry.groups[1] + 1)
            found = groups.read(list(indices))
            self.decodes += 1
            if self.group_uses[key] > 1 and self.decoded_rows + found[0] <= self.budget_rows:
                self.decoded[key] = found
                self.decoded_rows += found[0]
        self.group_uses[key] -= 1
        if self.group_uses[key] <= 0 and key in self.decoded:
            self.decoded_rows -= self.decoded.pop(key)[0]
        self.uses[path] -= 1
        if self.uses[path] <= 0:  # the pass reads the file no more
            self.held.pop(path, None)
        return groups, found[0], dict(found[1])


def _entries(store: ExpStore, run_id: str, kind: str) -> list[_Entry]:
    try:
        rows = store.connection().execute(
            "SELECT f.rowid, f.file_id, f.path, f.tag, f.row_count, f.step_min, f.step_max, g.group_first, "
            "g.group_last FROM media_files f LEFT JOIN media_tag_groups g ON g.file_id = f.file_id "
            "WHERE f.run_id = ? AND f.kind = ? ORDER BY f.rowid", (run_id, kind)).fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return []
        raise
    return [_Entry(r[0], r[1], r[2], r[3], int(r[4]), int(r[5]), int(r[6]),
                   None if r[7] is None else (int(r[7]), int(r[8]))) for r in rows]


def _merges(entries: list[_Entry], policy: MediaCompactionPolicy):
    """Each due tag's entries to merge, in write order (``rowid``, the reader's order): its oldest small entries up
    to ``max_merge_rows`` rows, and every entry of the tag whose step range meets theirs."""
    by_tag: dict[str, list[_Entry]] = defaultdict(list)
    for entry in entries:
        by_tag[entry.tag].append(entry)
    for tag in sorted(by_tag):
        mine = by_tag[tag]
        small = [e for e in mine if e.rows < policy.small_tag_rows]
        while len(small) >= policy.min_entries:
            chosen, rows = [], 0
            for e in small:
                if len(chosen) >= 2 and rows + e.rows > policy.max_merge_rows:
                    break
                chosen.append(e)
                rows += e.rows
            low, high = min(e.low for e in chosen), max(e.high for e in chosen)
            grown = True
            while grown:  # entries whose steps meet the merged range join it (their ties are resolved in it)
                grown = False
                for e in mine:
                    if e not in chosen and e.low <= high and e.high >= low:
                        chosen.append(e)
                        low, high = min(low, e.low), max(high, e.high)
                        grown = True
            chosen.sort(key=lambda e: e.rowid)
            yield chosen
            taken = {e.file_id for e in chosen}
            small = [e for e in small if e.file_id not in taken]
            mine = [e for e in mine if e.file_id not in taken]


def _read_entry(footers: _Footers, entry: _Entry) -> tuple[int, dict]:
    """The entry's rows (only its tag's), columns as :class:`MetricFileGroups` returns them, text columns plain."""
    groups, rows, columns = footers.read(entry)
    tags = columns.pop("tag", None)
    if isinstance(tags, CodedTexts):  # a delivery's file: its groups may hold other tags' rows too
        keep = np.flatnonzero(tags.codes == (tags.values.index(entry.tag) if entry.tag in tags.values else -2))
        if len(keep) != rows:
            columns = {name: _take(col, keep) for name, col in columns.items()}
            rows = len(keep)
    layout = _layout(groups)
    if any(c[0] == "buckets" and c[1] in ("string", "json") for c in layout):  # JSON text: a store written
        # before the binary cells; made binary so old and new entries of a tag merge into one column kind
        columns["buckets"] = bucket_cells([decode_buckets(text) for text in columns["buckets"].rows()])
        layout = tuple(("buckets", "binary", c[2]) if c[0] == "buckets" else c for c in layout)
    return rows, {"_layout": layout, **columns}


def _layout(groups: MetricFileGroups) -> tuple[tuple[str, str, bool], ...]:
    """(name, encoder kind, required) of the file's columns other than ``tag``."""
    out = []
    for name in groups.names:
        if name == "tag":
            continue
        ptype = groups.types[name]
        converted = groups.converted.get(name)
        kind = ("int64" if ptype == _INT64 else "double" if ptype == _DOUBLE
                else "json" if converted == _CONVERTED_JSON else "binary" if converted is None else "string")
        out.append((name, kind, not groups.optional[name]))
    return tuple(out)


def _take(column, rows: np.ndarray):
    if isinstance(column, PlainTexts):
        return column.take(rows)
    if isinstance(column, CodedTexts):
        return CodedTexts(column.values, column.codes[rows])
    return type(column)(column.values[rows], None if column.valid is None else column.valid[rows])


def _concat(parts: list):
    first = parts[0]
    if isinstance(first, PlainTexts):
        data = np.concatenate([p.data for p in parts])
        sizes = np.concatenate([np.diff(p.bounds) for p in parts])
        bounds = np.zeros(len(sizes) + 1, dtype=np.int64)
        np.cumsum(sizes, out=bounds[1:])
        return PlainTexts(data, bounds)
    values = np.concatenate([p.values for p in parts])
    if all(p.valid is None for p in parts):
        return type(first)(values, None)
    return type(first)(values, np.concatenate([np.ones(len(p.values), dtype=bool) if p.valid is None else p.valid
                                               for p in parts]))


def _tag_rows(footers: _Footers, entries: list[_Entry]) -> tuple[tuple, int, dict]:
    """The tag's merged rows: (layout, rows, columns), sorted by step, the last row a step in write order
    (``entries`` in write order, each file's rows of a step in the order they were read)."""
    parts = [_read_entry(footers, e) for e in entries]
    layouts = {p[1]["_layout"] for p in parts}
    if len(layouts) != 1:
        raise ForeignParquetError(f"media files {[e.path for e in entries]} have different columns")
    layout = layouts.pop()
    columns = {name: _concat([p[1][name] for p in parts]) for name, _, _ in layout}
    steps = columns["step"].values.astype(np.int64, copy=False)
    order = np.argsort(steps, kind="stable")
    ordered = steps[order]
    last = np.ones(len(order), dtype=bool)
    last[:-1] = ordered[1:] != ordered[:-1]
    keep = order[last]
    if len(keep) == len(steps) and np.array_equal(keep, np.arange(len(steps))):
        return layout, len(keep), columns  # already by step, one row a step: no copy
    return layout, len(keep), {name: _take(col, keep) for name, col in columns.items()}


def _merge(store: ExpStore, run_id: str, kind: str, batch: list[list[_Entry]], footers: _Footers) -> int:
    """Write one file of the batch's tags, then swap it in for their entries; 1 if written, 0 if the batch is left
    (a file of another writer, columns that differ, a concurrent compaction took an entry first)."""
    ids = sorted(e.file_id for chosen in batch for e in chosen)
    file_id = COMPACTED_MEDIA_PREFIX + hashlib.sha256(orjson.dumps([run_id, kind, ids])).hexdigest()[:32]
    rel = delivery_file_path(run_id, kind, file_id)
    # tag, rows, low, high, first group, last group, place in write order (the newest merged entry's rowid)
    made: list[tuple[str, int, int, int, int, int, int]] = []
    groups_written = [0]

    def write(tmp) -> None:
        stream = None
        with open(tmp, "wb") as sink:
            for chosen in batch:
                layout, rows, columns = _tag_rows(footers, chosen)
                if rows == 0:
                    continue
                tag = chosen[0].tag
                cols = [Column("tag", "string", True, Coded([tag], np.zeros(rows, dtype=np.int64))),
                        *(_column(name, kind_, required, columns[name]) for name, kind_, required in layout)]
                if stream is None:
                    stream = ParquetStream(sink, cols, codec=MEDIA_CODEC)
                first = groups_written[0]
                for start in range(0, rows, GROUP_ROWS):
                    stream.write_group(cols, start, min(rows, start + GROUP_ROWS))
                    groups_written[0] += 1
                steps = columns["step"].values
                made.append((tag, rows, int(steps[0]), int(steps[-1]), first, groups_written[0] - 1,
                             max(e.rowid for e in chosen)))
            if stream is None:
                raise _Nothing
            stream.close()
            sink.flush()
            os.fsync(sink.fileno())

    try:
        store.publish_file(rel, write)
    except (ForeignParquetError, _Nothing):
        return 0
    now = utc_now_rfc3339()
    merged = [e for chosen in batch for e in chosen]
    try:
        with store.write_transaction() as tx:
            gone = 0
            for e in merged:
                gone += tx.execute("DELETE FROM media_files WHERE file_id = ? AND path = ?",
                                   (e.file_id, e.path)).rowcount
            if gone != len(merged):
                raise _Lost
            tx.executemany("DELETE FROM media_tag_groups WHERE file_id = ?", [(e.file_id,) for e in merged])
            # The merged entry takes the place (rowid) of the newest entry it merged, freed just above: an entry
            # delivered while this merge ran comes after it, as it came after what it merged (last wins by write
            # order), which a new rowid would have reversed.
            tx.executemany("INSERT INTO media_files(rowid, file_id, run_id, kind, tag, path, row_count, step_min, "
                           "step_max, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           [(place, _entry_id(file_id, tag), run_id, kind, tag, rel, rows, low, high, now)
                            for tag, rows, low, high, _, _, place in made])
            tx.executemany("INSERT INTO media_tag_groups(file_id, group_first, group_last) VALUES (?, ?, ?)",
                           [(_entry_id(file_id, tag), first, last) for tag, _, _, _, first, last, _ in made])
    except _Lost:
        store.absolute(rel).unlink(missing_ok=True)
        return 0
    _remove_unnamed(store, run_id, kind, {e.path for e in merged})
    return 1


def _entry_id(file_id: str, tag: str) -> str:
    return "media-" + hashlib.sha256(orjson.dumps([file_id, tag])).hexdigest()[:32]


def _column(name: str, kind: str, required: bool, column) -> Column:
    if isinstance(column, PlainTexts):
        return Column(name, kind, required, column)
    return Column(name, kind, required, column.values, column.valid, statistics=name == "step")


def _remove_unnamed(store: ExpStore, run_id: str, kind: str, paths: set[str]) -> None:
    """Unlink those of ``paths`` no ``media_files`` row names any more (the sweep takes any a crash leaves)."""
    named = {p for (p,) in store.connection().execute(
        "SELECT DISTINCT path FROM media_files WHERE run_id = ? AND kind = ?", (run_id, kind))}
    for path in sorted(paths - named):
        store.absolute(path).unlink(missing_ok=True)


class _Lost(StoreError):
    """A concurrent compaction merged an entry first: this merge is dropped."""


class _Nothing(Exception):
    """The batch held no rows."""


