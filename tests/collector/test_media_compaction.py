"""Media compaction: a run's small histogram/text files merged into few, reads unchanged, crash-safe at every step."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow.parquet as pq

from tau_collector.expstore import StoreReader
from tau_collector.expstore.format.histogram_summaries import HISTOGRAM_SUMMARY_COLUMNS, histogram_summary
from tau_collector.expstore.format.media_files import decode_buckets, encode_buckets, media_file_path
from tau_collector.expstore.format.parquet_encoder import Column, encode_parquet
from tau_collector.expstore.maintain.leftovers import sweep_run
from tau_collector.expstore.maintain.media_compaction import MediaCompactionPolicy, compact_media
from tau_collector.expstore.store import ExpStore
from tau_collector.expstore.write.media import write_media
from tau_collector.sinks.base import RunIdentity
from tau_collector.sources.media import HistogramRecord, TextRecord

RUN = "r"
TAGS = ("layer_00", "layer_01", "layer_02")


def _histograms(steps: range, key: int, tags=TAGS) -> list[HistogramRecord]:
    return [HistogramRecord("", tag, s, 100.0 + s + key / 100,
                            np.array([[t, t + 1.0, s + 1.0], [t + 1.0, t + 2.0, key + 1.0]]), 1000 * t + s,
                            10_000 * key + 10 * s)
            for s in steps for t, tag in enumerate(tags)]


def _first_layout_file(store: ExpStore, tag: str, file_id: str, records: list[HistogramRecord]) -> None:
    """A file as the first layout wrote it (our encoder; one tag, no ``tag`` column) and its index row only."""
    summary = np.array([histogram_summary(r.buckets) for r in records])
    columns = [Column("step", "int64", True, np.array([r.step for r in records], dtype=np.int64), statistics=True),
               Column("wall_time", "double", True, np.array([r.wall_time for r in records])),
               Column("source", "string", True, [f"old@{r.offset}#{tag}" for r in records]),
               *(Column(c, "double", True, np.ascontiguousarray(summary[:, i]))
                 for i, c in enumerate(HISTOGRAM_SUMMARY_COLUMNS)),
               Column("buckets", "json", True, [encode_buckets(r.buckets) for r in records])]
    rel = media_file_path(RUN, "histograms", tag, file_id)
    store.publish_file(rel, lambda tmp: tmp.write_bytes(encode_parquet(columns, len(records))))
    with store.write_transaction() as tx:
        tx.execute("INSERT INTO media_files(file_id, run_id, kind, tag, path, row_count, step_min, step_max, "
                   "created_at) VALUES (?, ?, 'histograms', ?, ?, ?, ?, ?, 'then')",
                   (file_id, RUN, tag, rel, len(records), records[0].step, records[-1].step))


def _build(root) -> ExpStore:
    """Old-layout files of steps 0..9, then 24 deliveries (steps 8..103: overlapping the old ones), one delivered
    twice, a restarted job's steps 50..55 again with other values, and a text tag."""
    store = ExpStore(root, create=True)
    for tag in TAGS[:2]:
        _first_layout_file(store, tag, f"media-old-{tag}", [r for r in _histograms(range(10), 0) if r.tag == tag])
    identity = RunIdentity("p", "e", "g")
    for k in range(24):
        steps = range(8 + 4 * k, 12 + 4 * k)
        write_media(store, f"k{k}", RUN, "/logs/events",
                    [*_histograms(steps, 1), *(TextRecord("", "notes", s, 1.0 + s, (f"at {s}",), (), s, s)
                                               for s in steps)], identity)
    write_media(store, "k3", RUN, "/logs/events", _histograms(range(20, 24), 1))  # delivered again: nothing new
    write_media(store, "restart", RUN, "/logs/events.2", _histograms(range(50, 56), 7))
    return store


def _reads(root) -> dict:
    reader = StoreReader(root)
    out = {"tags": sorted((t.kind, t.tag, t.count, t.step_min, t.step_max) for t in reader.media_tags(RUN))}
    for tag in TAGS:
        h = reader.histograms(RUN, tag, max_steps=10_000)
        out[tag] = (h.steps.tolist(), h.wall_times.tolist(), h.summary.tolist(), [b.tolist() for b in h.buckets])
        small = reader.histograms(RUN, tag, max_steps=7, keep=(53,), buckets=False)
        out[tag + "/reduced"] = small.steps.tolist()
    out["text"] = [reader.text_at(RUN, "notes", s) for s in (0, 9, 50, 200)]
    return out


def _entries(store: ExpStore) -> dict[str, int]:
    rows = store.connection().execute("SELECT tag, COUNT(DISTINCT path) FROM media_files GROUP BY tag").fetchall()
    return dict(rows)


def _on_disk(root) -> set[str]:
    return {p.relative_to(root).as_posix() for p in (root / "media").rglob("*") if p.is_file()}


def _named(store: ExpStore) -> set[str]:
    return {p for (p,) in store.connection().execute("SELECT DISTINCT path FROM media_files")}


def test_old_and_new_layout_files_merge_into_one_a_tag_and_read_the_same(tmp_path):
    root = tmp_path / "store"
    store = _build(root)
    before = _reads(root)
    assert before["layer_00"][0] == list(range(104))
    assert before["layer_00"][3][8][1][2] == 2.0 and before["layer_00"][3][50][1][2] == 8.0  # later values win
    assert _entries(store)["layer_00"] == 26
    stored = {}  # (tag, step) -> bucket text, of the delivery files (one tag's first-layout files aside)
    for path in (p for p in _on_disk(root) if "/histograms/" in p and p.count("/") == 3):
        for r in pq.read_table(root / path, columns=["tag", "step", "buckets"]).to_pylist():
            stored[(r["tag"], r["step"])] = r["buckets"]

    assert compact_media(store, RUN, policy=MediaCompactionPolicy(min_entries=4)) == 2  # histograms, text
    assert _reads(root) == before
    assert set(_entries(store).values()) == {1}  # one file a tag
    assert _on_disk(root) == _named(store)  # the merged files are gone
    # The bucket column is copied through as stored (binary cells: the same bytes, not re-encoded); the JSON text
    # of a store written before the binary cells becomes binary cells of the same numbers.
    merged = pq.read_table(root / next(iter(p for p in _named(store) if "/histograms/" in p)),
                           columns=["tag", "step", "buckets"]).to_pylist()
    texts = {(r["tag"], r["step"]): r["buckets"] for r in merged}
    assert texts[("layer_02", 40)] == stored[("layer_02", 40)] and texts[("layer_00", 8)] == stored[("layer_00", 8)]
    assert isinstance(texts[("layer_00", 5)], bytes) and (
        decode_buckets(texts[("layer_00", 5)]).tolist() == _histograms([5], 0)[0].buckets.tolist())
    # Nothing is due now; a new small delivery is not merged until enough pile up again.
    assert compact_media(store, RUN, policy=MediaCompactionPolicy(min_entries=4)) == 0
    write_media(store, "late", RUN, "/logs/events", _histograms(range(200, 202), 1))
    assert compact_media(store, RUN, policy=MediaCompactionPolicy(min_entries=4)) == 0
    assert _reads(root)["layer_00"][0][-2:] == [200, 201]


def test_a_read_of_a_file_swapped_out_under_it_lists_again(tmp_path, monkeypatch):
    from tau_collector.expstore.read import media_reads

    root = tmp_path / "store"
    _build(root)
    before = _reads(root)
    listing = media_reads.media_file_paths
    calls = []

    def then_compact(*args):
        found = listing(*args)
        if not calls:
            calls.append(1)
            compact_media(ExpStore(root, writable=True), RUN, policy=MediaCompactionPolicy(min_entries=4))
        return found

    monkeypatch.setattr(media_reads, "media_file_paths", then_compact)
    assert StoreReader(root).histograms(RUN, "layer_01", max_steps=10_000).steps.tolist() == before["layer_01"][0]
    assert calls


_CHILD = textwrap.dedent("""
    import os, signal, sys
    from tau_collector.expstore.store import ExpStore
    from tau_collector.expstore.maintain import media_compaction as mc
    from tau_collector.expstore.format import parquet_encoder

    def die(*a, **k):
        os.kill(os.getpid(), signal.SIGKILL)

    at = sys.argv[2]
    store = ExpStore(sys.argv[1], writable=True)
    if at == "writing":  # in the middle of the new file's bytes
        parquet_encoder.ParquetStream.close = die
    elif at == "published":  # the new file renamed into place, not registered
        store.write_transaction = die
    elif at == "committed":  # registered, the merged files not yet removed
        mc._remove_unnamed = die
    mc.compact_media(store, "r", policy=mc.MediaCompactionPolicy(min_entries=4))
""")


def test_kill_9_at_each_step_leaves_a_readable_store_and_the_sweep_takes_the_leftovers(tmp_path):
    for at in ("writing", "published", "committed"):
        root = tmp_path / at
        store = _build(root)
        before = _reads(root)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        child = subprocess.run([sys.executable, "-c", _CHILD, str(root), at], env=env, capture_output=True,
                               timeout=300)
        assert child.returncode == -signal.SIGKILL, child.stderr.decode()
        store = ExpStore(root, writable=True)
        assert _reads(root) == before, at
        left = _on_disk(root) - _named(store)
        assert left, at  # a temporary file, a published file no row names, or the retired files
        sweep_run(store, RUN, grace_seconds=0.0)
        assert _on_disk(root) == _named(store), at
        assert _reads(root) == before, at
        compact_media(store, RUN, policy=MediaCompactionPolicy(min_entries=4))
        assert set(_entries(store).values()) == {1}, at
        assert _reads(root) == before, at


def test_the_sidecar_s_compaction_merges_media_in_small_steps(tmp_path):
    # The sidecar's process holds a media merge's rows: its policy bounds them (SIDECAR_MEDIA_MERGE_ROWS).
    from tau_collector.expstore.maintain.compaction import CompactionPolicy, compact_all
    from tau_collector.sinks.expstore import SIDECAR_MEDIA_MERGE_ROWS

    root = tmp_path / "store"
    store = _build(root)
    before = _reads(root)
    compact_all(store, RUN, policy=CompactionPolicy(media_merge_rows=20))
    entries = _entries(store)
    assert 1 < entries["layer_00"] < 26  # merged, in steps of about 20 rows, not into one entry
    assert _reads(root) == before
    compact_all(store, RUN, policy=CompactionPolicy())
    assert _entries(store)["layer_00"] < entries["layer_00"]
    assert _reads(root) == before
    assert 0 < SIDECAR_MEDIA_MERGE_ROWS < CompactionPolicy().media_merge_rows
