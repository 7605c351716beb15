"""Media last-wins by write order (histograms, text, images), across media compaction; the sidecar compacting a
media-only job; a media compaction pass reading each file's footer once; stores written before all this."""

from __future__ import annotations

import hashlib

import numpy as np

from tau_collector.expstore import StoreReader
from tau_collector.expstore.format.histogram_summaries import HISTOGRAM_SUMMARY_COLUMNS, histogram_summary
from tau_collector.expstore.format.media_files import encode_buckets, media_file_path
from tau_collector.expstore.format.parquet_encoder import Column, encode_parquet
from tau_collector.expstore.maintain import media_compaction
from tau_collector.expstore.maintain.media_compaction import MediaCompactionPolicy, compact_media
from tau_collector.expstore.store import ExpStore
from tau_collector.expstore.write.media import write_media
from tau_collector.sinks.base import MediaChunk, RunIdentity
from tau_collector.sources.media import HistogramRecord, ImageRecord, TextRecord

RUN = "r"
PNG = b"\x89PNG\r\n\x1a\n"


def _hist(tag: str, step: int, value: float, offset: int = 0) -> HistogramRecord:
    return HistogramRecord("", tag, step, 1000.0 + step, np.array([[0.0, 1.0, value]]), offset, offset)


def _text(tag: str, step: int, value: str, offset: int = 0) -> TextRecord:
    return TextRecord("", tag, step, 1000.0 + step, (value,), (), offset, offset)


def _image(tag: str, step: int, names: list[str], offset: int = 0) -> ImageRecord:
    return ImageRecord("", tag, step, 1000.0 + step, 1, 1, tuple(PNG + n.encode() for n in names), offset, offset)


def _counts(reader: StoreReader, tag: str) -> dict[int, float]:
    h = reader.histograms(RUN, tag, max_steps=10_000)
    return {int(s): float(b[0][2]) for s, b in zip(h.steps, h.buckets, strict=True)}


def test_a_restart_that_re_sends_earlier_steps_wins_by_write_order_also_after_compaction(tmp_path):
    """A job wrote steps 6..10, restarted from a checkpoint and wrote 5..8 again: the later write shows at 6..8,
    though its first step is lower (the reader ordered a tag's files by their first step, then by write)."""
    store = ExpStore(tmp_path / "s", create=True)
    write_media(store, "a", RUN, "/logs/events.1", [*(_hist("h", s, 1.0) for s in range(6, 11)),
                                                     *(_text("t", s, "first") for s in range(6, 11))])
    write_media(store, "b", RUN, "/logs/events.2", [*(_hist("h", s, 2.0) for s in range(5, 9)),
                                                     *(_text("t", s, "second") for s in range(5, 9))])
    want = {5: 2.0, 6: 2.0, 7: 2.0, 8: 2.0, 9: 1.0, 10: 1.0}
    reader = StoreReader(store.root)
    assert _counts(reader, "h") == want
    assert [reader.text_at(RUN, "t", s).text for s in (5, 7, 9)] == [("second",), ("second",), ("first",)]
    assert compact_media(store, RUN, policy=MediaCompactionPolicy(min_entries=2)) == 2
    assert store.connection().execute("SELECT COUNT(*) FROM media_files").fetchone() == (2,)
    reader = StoreReader(store.root)
    assert _counts(reader, "h") == want
    assert [reader.text_at(RUN, "t", s).text for s in (5, 7, 9)] == [("second",), ("second",), ("first",)]


def test_a_delivery_made_while_a_compaction_merges_still_wins_after_the_swap(tmp_path, monkeypatch):
    """The merged entry takes the place of the newest entry it merged: a delivery registered after the
    compaction listed the entries (re-sending a merged step) comes after it, not before (a new rowid)."""
    store = ExpStore(tmp_path / "s", create=True)
    for k in range(3):
        write_media(store, f"k{k}", RUN, "/logs/events", [_hist("h", s, 1.0) for s in range(3 * k, 3 * k + 3)])
    tag_rows = media_compaction._tag_rows
    landed = []

    def then_deliver(*args):
        if not landed:
            landed.append(1)
            write_media(ExpStore(store.root, writable=True), "late", RUN, "/logs/events.2",
                        [_hist("h", -1, 9.0), _hist("h", 4, 9.0)])
        return tag_rows(*args)

    monkeypatch.setattr(media_compaction, "_tag_rows", then_deliver)
    assert compact_media(store, RUN, policy=MediaCompactionPolicy(min_entries=3)) == 1
    assert landed
    assert _counts(StoreReader(store.root), "h") == {-1: 9.0, **{s: 1.0 for s in range(9)}, 4: 9.0}


def test_a_step_s_images_are_those_of_its_latest_write(tmp_path):
    """Three images at step 5, then a restarted job logs one: the step shows the one (not it and the old
    second and third); within one delivery, the later event of a step wins the same way."""
    store = ExpStore(tmp_path / "s", create=True)
    write_media(store, "a", RUN, "/logs/events.1", [_image("i", 5, ["a", "b", "c"]), _image("i", 6, ["x"])])
    write_media(store, "b", RUN, "/logs/events.2", [_image("i", 5, ["d"])])
    reader = StoreReader(store.root)
    assert [r.digest for r in reader.images_near(RUN, "i", 5).images] == _digests("d")
    assert {t.tag: t.count for t in reader.media_tags(RUN)} == {"i": 2}
    write_media(store, "c", RUN, "/logs/events.2", [_image("i", 7, ["e", "f"]), _image("i", 7, ["g"], offset=9)])
    assert [r.digest for r in StoreReader(store.root).images_near(RUN, "i", 7).images] == _digests("g")
    write_media(store, "b", RUN, "/logs/events.2", [_image("i", 5, ["d"])])  # delivered again: the same
    assert len(StoreReader(store.root).images_near(RUN, "i", 5).images) == 1


def _digests(*names: str) -> list[str]:
    return ["sha256:" + hashlib.sha256(PNG + n.encode()).hexdigest() for n in names]


def test_the_sidecar_compacts_a_job_that_logs_only_media(tmp_path):
    """No scalar ever arrives: media deliveries alone ask the compaction thread, which merges the due tags."""
    from tau_collector.sinks.expstore import ExpstoreSink

    sink = ExpstoreSink(tmp_path / "s", source_id="job", background_compaction=True)
    identity = RunIdentity("p", "e", "g")
    for k in range(10):
        sink.deliver_media(MediaChunk(f"k{k}", RUN, "/logs/events", tuple(
            [_hist(tag, s, float(k)) for tag in ("h0", "h1") for s in range(2 * k, 2 * k + 2)]), identity))
    sink.writer.close()  # waits for the thread the deliveries started
    entries = dict(sink.store.connection().execute("SELECT tag, COUNT(*) FROM media_files GROUP BY tag").fetchall())
    # due at the 8th delivery (the sidecar's min_entries): merged while the last ones arrived, never 10 a tag
    assert entries.keys() == {"h0", "h1"} and max(entries.values()) <= 3, entries
    assert sink.store.connection().execute("SELECT COUNT(*) FROM media_files WHERE path LIKE ?",
                                           ("%media-compacted-%",)).fetchone()[0] == 2
    assert _counts(StoreReader(sink.store.root), "h1") == {s: float(s // 2) for s in range(20)}


def test_a_compaction_pass_reads_each_file_s_footer_once(tmp_path, monkeypatch):
    store = ExpStore(tmp_path / "s", create=True)
    tags = [f"layer_{i:02d}" for i in range(12)]
    for k in range(6):
        write_media(store, f"k{k}", RUN, "/logs/events", [_hist(t, s, float(k)) for t in tags for s in (k, k + 1)])
    before = {t: _counts(StoreReader(store.root), t) for t in tags}
    opened = []
    groups = media_compaction.MetricFileGroups

    decoded = []

    class Counting(groups):
        def __init__(self, path, **kwargs):
            opened.append(str(path))
            super().__init__(path, **kwargs)

        def read(self, indices):
            decoded.append((str(self.path), tuple(indices)))
            return super().read(indices)

    monkeypatch.setattr(media_compaction, "MetricFileGroups", Counting)
    assert compact_media(store, RUN, policy=MediaCompactionPolicy(min_entries=6)) == 1
    assert len(opened) == len(set(opened)) == 6  # not 6 x 12: once a file, not once a tag entry
    # each file's one row group (12 tags' rows) decoded once, not once for each of its 12 tags
    assert len(decoded) == len(set(decoded)) == 6
    assert {t: _counts(StoreReader(store.root), t) for t in tags} == before


def _first_layout(store: ExpStore, tag: str, file_id: str, steps: list[int], value: float) -> None:
    """A file of the first layout (one tag, no ``tag`` column, JSON buckets) and its index row, as written then."""
    buckets = [np.array([[0.0, 1.0, value]]) for _ in steps]
    summary = np.array([histogram_summary(b) for b in buckets])
    columns = [Column("step", "int64", True, np.array(steps, dtype=np.int64), statistics=True),
               Column("wall_time", "double", True, np.array([1000.0 + s for s in steps])),
               Column("source", "string", True, [f"old@{s}#{tag}" for s in steps]),
               *(Column(c, "double", True, np.ascontiguousarray(summary[:, i]))
                 for i, c in enumerate(HISTOGRAM_SUMMARY_COLUMNS)),
               Column("buckets", "json", True, [encode_buckets(b) for b in buckets])]
    rel = media_file_path(RUN, "histograms", tag, file_id)
    store.publish_file(rel, lambda tmp: tmp.write_bytes(encode_parquet(columns, len(steps))))
    with store.write_transaction() as tx:
        tx.execute("INSERT INTO media_files(file_id, run_id, kind, tag, path, row_count, step_min, step_max, "
                   "created_at) VALUES (?, ?, 'histograms', ?, ?, ?, ?, ?, 'then')",
                   (file_id, RUN, tag, rel, len(steps), steps[0], steps[-1]))


def test_a_store_written_before_reads_the_same_and_compacts(tmp_path):
    """Files of the first layout (JSON buckets), then delivery files, then an entry a compaction before this
    change made (a new rowid, after a later delivery whose steps it does not share): read in write order, the
    same; opened read-only; merged by today's compaction into one entry with the same reads."""
    store = ExpStore(tmp_path / "s", create=True)
    _first_layout(store, "h", "media-old-1", [0, 1, 2], 1.0)
    _first_layout(store, "h", "media-old-2", [2, 3], 2.0)  # a later write of step 2
    write_media(store, "k1", RUN, "/logs/events", [_hist("h", s, 3.0) for s in (3, 4)])
    write_media(store, "k2", RUN, "/logs/events", [_hist("h", s, 4.0) for s in (8, 9)])
    _first_layout(store, "h", "media-compacted-then", [5, 6, 7], 5.0)  # registered last, steps 5..7 only
    want = {0: 1.0, 1: 1.0, 2: 2.0, 3: 3.0, 4: 3.0, 5: 5.0, 6: 5.0, 7: 5.0, 8: 4.0, 9: 4.0}
    assert _counts(StoreReader(store.root), "h") == want
    assert _counts(StoreReader(ExpStore(store.root)), "h") == want  # read-only
    assert compact_media(store, RUN, policy=MediaCompactionPolicy(min_entries=2)) == 1
    assert store.connection().execute("SELECT COUNT(*) FROM media_files").fetchone() == (1,)
    assert _counts(StoreReader(store.root), "h") == want
