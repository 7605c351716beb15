"""Writing a run's histograms, images and text into the store, idempotently: images as artifacts, the rest as files.

Images are content-addressed bytes under ``artifacts/`` (:func:`.artifacts.store_artifacts_bytes`: the same
image logged twice is one file) registered in TauGrid's ``artifacts`` table as type ``image`` — ``name`` the
tag, ``step``, ``rank`` the image's place in its event, ``content_type``, ``digest``, ``size_bytes``; width and
height in ``tags``. Its ``artifact_id`` is derived from (run, ``image``, tag, step, rank), so a re-delivery
replaces the row. A delivery's images are written and synced together (:func:`.artifacts.store_artifacts_bytes`).
Histograms and text go to one Parquet file per kind and delivery, every tag in it in row groups of its own
(:mod:`..format.media_files`), published before its rows are inserted: one ``media_files`` row per tag, with
the row groups holding the tag in ``media_tag_groups`` (``INSERT OR IGNORE`` by a file id derived from the
delivery key and the tag, so a delivery made again adds nothing).
"""

from __future__ import annotations

import hashlib
import math
import os
import sqlite3
from collections import defaultdict

import numpy as np
import orjson

from tau_collector.expstore.format.media_files import delivery_file_path, histograms_file_bytes, texts_file_bytes
from tau_collector.expstore.store import ExpStore, utc_now_rfc3339
from tau_collector.expstore.write.artifacts import ARTIFACT_COLUMNS, record_artifacts_in, store_artifacts_bytes
from tau_collector.expstore.write.listing import refresh_runs
from tau_collector.expstore.write.writer import register_run
from tau_collector.reads.rows import ArtifactRow
from tau_collector.sinks.base import RunIdentity
from tau_collector.sources.media import HistogramRecord, ImageRecord, MediaRecord, image_content_type

__all__ = ["IMAGE_TYPE", "image_artifact_id", "image_rows_at", "image_steps_around", "image_tag_rows",
           "image_with_digest", "media_file_paths", "media_tag_rows", "write_media"]

IMAGE_TYPE = "image"


def image_artifact_id(run_id: str, tag: str, step: int, rank: int) -> str:
    key = orjson.dumps([run_id, IMAGE_TYPE, tag, step, rank])
    return "artifact-" + hashlib.sha256(key).hexdigest()[:32]


def _source(path: str, record: MediaRecord, base: str | None = None) -> str:
    """Where a value was read: its file, frame offset and tag (one value per tag in an event); ``base``: the
    file's name when the caller has it (a delivery's thousands of values come from one file)."""
    return f"{os.path.basename(path) if base is None else base}@{record.offset}#{record.name}"


def write_media(store: ExpStore, key: str, run_id: str, source: str, records: tuple[MediaRecord, ...] | list,
                identity: RunIdentity | None = None) -> int:
    """Store ``records`` read from ``source`` for ``run_id`` under delivery ``key``; returns the values written.

    With the run's ``identity`` the run is registered as points register it (:func:`.writer.register_run`:
    its row, experiment, group, tags, start at its earliest value, listings), so a run that logs only media is
    listed; a run already in another project/experiment/group keeps its row (its points decide where it is).
    """
    now = utc_now_rfc3339()
    latest: dict[tuple[str, int], ImageRecord] = {}  # a tag's step logged twice in the delivery: the later event's
    for record in records:
        if isinstance(record, ImageRecord):
            latest.pop((record.name, record.step), None)  # (re-inserted: the dict keeps write order)
            latest[(record.name, record.step)] = record
    images = [(record, rank, data) for record in latest.values() for rank, data in enumerate(record.images)]
    kept = store_artifacts_bytes(store, [data for _, _, data in images])
    base = os.path.basename(source)
    rows = [ArtifactRow(
        run_id=run_id, type=IMAGE_TYPE, uri=rel, name=record.name, step=record.step, digest=digest,
        size_bytes=size, content_type=image_content_type(data), created_at=now, rank=rank,
        caption=record.caption(rank),
        tags={"width": record.width, "height": record.height, "source": _source(source, record, base),
              "wall_time": record.wall_time},
        artifact_id=image_artifact_id(run_id, record.name, record.step, rank))
        for (record, rank, data), (digest, rel, size) in zip(images, kept, strict=True)]
    tables: dict[str, dict[str, list[MediaRecord]]] = defaultdict(lambda: defaultdict(list))
    for record in records:
        if not isinstance(record, ImageRecord):
            tables[record.kind][record.name].append(record)
    files, index, groups = [], [], []
    for kind, by_tag in tables.items():
        data, tag_rows = _delivery_file(kind, by_tag, source)
        rel = delivery_file_path(run_id, kind, _file_id([key, run_id, kind]))
        files.append((rel, data))
        for tag, count, low, high, (first, last) in tag_rows:
            file_id = _file_id([key, run_id, kind, tag])
            index.append((file_id, run_id, kind, tag, rel, count, low, high, now))
            groups.append((file_id, first, last))
    if files:
        store.publish_files(files)  # every file of the delivery synced at once, before a row names it
    if index or rows or (identity is not None and records):
        with store.write_transaction() as tx:
            if identity is not None and records:
                _register(tx, run_id, identity, min(r.wall_time for r in records), now)
            tx.executemany("INSERT OR IGNORE INTO media_files(file_id, run_id, kind, tag, path, row_count, step_min, "
                           "step_max, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", index)
            tx.executemany("INSERT OR IGNORE INTO media_tag_groups(file_id, group_first, group_last) "
                           "VALUES (?, ?, ?)", groups)
            # Last wins by write order: a step's images are those of its latest event, so images an earlier write
            # of the step had past this one's count (a restarted job logging fewer) go; the others are replaced.
            tx.executemany("DELETE FROM artifacts WHERE run_id = ? AND type = ? AND name = ? AND step = ? "
                           "AND COALESCE(rank, 0) >= ?",
                           [(run_id, IMAGE_TYPE, r.name, r.step, len(r.images)) for r in latest.values()])
            record_artifacts_in(tx, rows)
    return len(rows) + sum(len(g) for by_tag in tables.values() for g in by_tag.values())


def _file_id(parts: list[str]) -> str:
    return "media-" + hashlib.sha256(orjson.dumps(parts)).hexdigest()[:32]


def _delivery_file(kind: str, by_tag: dict[str, list[MediaRecord]],
                   source: str) -> tuple[bytes, list[tuple[str, int, int, int, tuple[int, int]]]]:
    """The Parquet bytes of one kind's records of a delivery (tag after tag, by step within a tag) and, for each
    tag, (tag, rows, first step, last step, its first and last row group)."""
    tags = sorted(by_tag)
    # One row a step: of a tag's values at one step in the delivery (a restarted job within one file), the last
    # read -- the reader's rule, applied before the rows are counted in the index.
    ordered = [sorted({r.step: r for r in by_tag[tag]}.values(), key=lambda r: r.step) for tag in tags]
    flat = [r for group in ordered for r in group]
    counts = [len(group) for group in ordered]
    step = np.fromiter((r.step for r in flat), dtype=np.int64, count=len(flat))
    wall = np.fromiter((r.wall_time for r in flat), dtype=np.float64, count=len(flat))
    base = os.path.basename(source)
    sources = [_source(source, r, base) for r in flat]
    if kind == HistogramRecord.kind:
        data, spans = histograms_file_bytes(tags, counts, step, wall, sources,
                                            [r.buckets for r in flat])  # type: ignore[union-attr]
    else:
        data, spans = texts_file_bytes(tags, counts, step, wall, sources, [r.shape for r in flat],  # type: ignore[union-attr]
                                       [r.text for r in flat])  # type: ignore[union-attr]
    return data, [(tag, count, int(group[0].step), int(group[-1].step), span)
                  for tag, count, group, span in zip(tags, counts, ordered, spans, strict=True)]


def _register(tx, run_id: str, identity: RunIdentity, first_wall: float, now: str) -> None:
    first_ns = round(first_wall * 1e6) * 1000 if math.isfinite(first_wall) and first_wall > 0 else None
    if register_run(tx, run_id, identity.project, identity.experiment_id, identity.run_group_id, first_ns,
                    now) is not None:
        return
    if identity.tags:
        tx.executemany("INSERT INTO tags(scope_type, scope_id, key, value) VALUES ('run', ?, ?, ?) "
                       "ON CONFLICT(scope_type, scope_id, key) DO UPDATE SET value = excluded.value",
                       [(run_id, k, v) for k, v in sorted(identity.tags)])
    refresh_runs(tx, [run_id])


# -- the index's answers, for the read layer (which runs no SQL of its own) -----------------------------------


def _without_table(exc: sqlite3.OperationalError) -> bool:
    """A store written before media were kept (or by TauGrid) has no ``media_files``: it has no media."""
    return "no such table" in str(exc)


def media_file_paths(store: ExpStore, run_id: str, kind: str, tag: str, low: int,
                     high: int) -> list[tuple[str, tuple[int, int] | None]]:
    """The files of one tag whose step range meets ``[low, high]``, in write order (``rowid``: a delivery's
    entry is inserted after every earlier one, a compacted entry takes the place of the newest it merged), each
    with the first and last of its row groups that hold the tag (None: a file of the first layout, the tag's
    alone)."""
    sql = ("SELECT f.path, g.group_first, g.group_last FROM media_files f LEFT JOIN media_tag_groups g "
           "ON g.file_id = f.file_id WHERE f.run_id = ? AND f.kind = ? AND f.tag = ? AND f.step_max >= ? "
           "AND f.step_min <= ? ORDER BY f.rowid")
    params = (run_id, kind, tag, low, high)
    try:
        rows = store.connection().execute(sql, params).fetchall()
    except sqlite3.OperationalError as exc:
        if not _without_table(exc):
            raise
        # A store of the first layout opened read-only (not migrated): its files are each one tag's.
        first_layout = sql.replace("g.group_first, g.group_last", "NULL, NULL").replace(
            " LEFT JOIN media_tag_groups g ON g.file_id = f.file_id", "")
        try:
            rows = store.connection().execute(first_layout, params).fetchall()
        except sqlite3.OperationalError as again:
            if _without_table(again):
                return []
            raise
    return [(path, None if first is None else (int(first), int(last))) for path, first, last in rows]


def media_tag_rows(store: ExpStore, run_id: str) -> list[tuple[str, str, int, int, int, bool]]:
    """(kind, tag, rows, step_min, step_max, shared) of each histogram and text tag of the run: ``rows`` summed over
    its entries (``media_files`` rows), ``shared`` when the step ranges of two of its entries meet -- a chunk
    delivered again, frames read again, a restart -- so that only then a step may be stored twice. A live run's
    entries follow one another (each delivery's steps after the last's): their rows add up without a read."""
    try:
        entries = store.connection().execute(
            "SELECT kind, tag, row_count, step_min, step_max FROM media_files WHERE run_id = ? "
            "ORDER BY kind, tag, step_min", (run_id,)).fetchall()
    except sqlite3.OperationalError as exc:
        if _without_table(exc):
            return []
        raise
    out: list[tuple[str, str, int, int, int, bool]] = []
    for kind, tag, rows, low, high in entries:
        rows, low, high = int(rows), int(low), int(high)
        crowded = rows > high - low + 1  # more rows than steps in its range: a step in it twice
        if out and out[-1][:2] == (kind, tag):  # sorted by first step: it meets an earlier one if it starts by its end
            _, _, total, first, end, shared = out[-1]
            out[-1] = (kind, tag, total + rows, first, max(end, high), shared or crowded or low <= end)
        else:
            out.append((kind, tag, rows, low, high, crowded))
    return out


def image_tag_rows(store: ExpStore, run_id: str) -> list[tuple[str, int, int, int]]:
    """(tag, images, step_min, step_max) of each image tag of the run."""
    return store.connection().execute(
        "SELECT name, COUNT(*), MIN(step), MAX(step) FROM artifacts WHERE run_id = ? AND type = ? GROUP BY name",
        (run_id, IMAGE_TYPE)).fetchall()


def image_steps_around(store: ExpStore, run_id: str, tag: str, step: int) -> list[int]:
    """The tag's last stored step at or before ``step`` and its first after it (those that exist)."""
    conn = store.connection()
    found = []
    for sql in ("SELECT step FROM artifacts WHERE run_id = ? AND type = ? AND name = ? AND step <= ? "
                "ORDER BY step DESC LIMIT 1",
                "SELECT step FROM artifacts WHERE run_id = ? AND type = ? AND name = ? AND step > ? "
                "ORDER BY step LIMIT 1"):
        row = conn.execute(sql, (run_id, IMAGE_TYPE, tag, step)).fetchone()
        if row is not None:
            found.append(int(row[0]))
    return found


def image_with_digest(store: ExpStore, run_id: str, digest: str) -> ArtifactRow | None:
    """One image row of the run whose bytes have ``digest`` (``sha256:<hex>``); None when the run holds none."""
    row = store.connection().execute(
        f"SELECT {', '.join(ARTIFACT_COLUMNS)} FROM artifacts WHERE run_id = ? AND type = ? AND digest = ? "
        "ORDER BY artifact_id LIMIT 1", (run_id, IMAGE_TYPE, digest)).fetchone()
    return None if row is None else ArtifactRow.from_row(dict(zip(ARTIFACT_COLUMNS, row, strict=True)))


def image_rows_at(store: ExpStore, run_id: str, tag: str, step: int, limit: int) -> list[ArtifactRow]:
    """The first ``limit`` images of ``tag`` at ``step``, in their event's order (``rank``)."""
    rows = store.connection().execute(
        f"SELECT {', '.join(ARTIFACT_COLUMNS)} FROM artifacts WHERE run_id = ? AND type = ? AND name = ? AND step = ? "
        "ORDER BY COALESCE(rank, 0), artifact_id LIMIT ?", (run_id, IMAGE_TYPE, tag, step, limit)).fetchall()
    return [ArtifactRow.from_row(dict(zip(ARTIFACT_COLUMNS, r, strict=True))) for r in rows]
