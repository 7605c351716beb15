"""The media store's layout: one file per kind and delivery with row groups of whole tags, a tag read from its own
row groups, the first layout (a file per tag) still read, a delivery's files synced together, and the
histogram summaries computed for a delivery at once equal to the per-histogram rule."""

from __future__ import annotations

import os
import sqlite3
import stat

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tau_collector.expstore import StoreReader
from tau_collector.expstore.format.histogram_summaries import histogram_summaries, histogram_summary
from tau_collector.expstore.format.media_files import (
    GROUP_ROWS,
    HISTOGRAM_SUMMARY_COLUMNS,
    TAG_GROUP_ROWS,
    encode_buckets,
    media_file_path,
    tag_row_groups,
)
from tau_collector.expstore.store import ExpStore
from tau_collector.expstore.write.artifacts import store_artifact_bytes, store_artifacts_bytes
from tau_collector.expstore.write.media import write_media
from tau_collector.sources.media import HistogramRecord, ImageRecord, TextRecord
from tau_collector.spool import durable
from tau_collector.spool.media_record import media_chunk_key

# --- summaries ------------------------------------------------------------------------------------------------------


def _random_histograms(seed: int, n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        k = int(rng.integers(0, 12))
        edges = np.sort(rng.normal(size=k + 1) * 10.0 ** rng.integers(-3, 4))
        if i % 3:
            counts = np.floor(rng.random(k) * 6)
        else:  # the edge cases: zeros, fractions, negatives, NaN, infinities, overflowing sums
            counts = rng.choice([0.0, 1.0, 2.5, 1e-300, -1.0, np.nan, np.inf, 1.7e308], size=k,
                                p=[.3, .2, .15, .05, .1, .07, .07, .06])
        buckets = np.column_stack([edges[:-1], edges[1:], counts]) if k else np.zeros((0, 3))
        if k and i % 7 == 0:
            buckets[0, 0] = -np.inf
        if k and i % 11 == 0:
            buckets[-1, 1] = np.nan
        out.append(buckets)
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_summaries_of_a_delivery_equal_the_rule_for_each_histogram_bit_for_bit(seed):
    histograms = _random_histograms(seed, 2000)
    with np.errstate(all="ignore"):
        expected = np.array([histogram_summary(b) for b in histograms], dtype=np.float64)
        got = histogram_summaries(histograms)
    assert got.shape == (2000, len(HISTOGRAM_SUMMARY_COLUMNS))
    same_bits = got.view(np.uint64) == expected.view(np.uint64)
    assert (same_bits | (np.isnan(got) & np.isnan(expected))).all()  # -0.0 and 0.0 told apart; NaN is NaN


def test_summaries_of_one_bucket_count_and_of_none():
    one = [np.array([[0.0, 1.0, 4.0]]), np.array([[2.0, 3.0, 0.0]])]
    assert np.array_equal(histogram_summaries(one), np.array([histogram_summary(b) for b in one]), equal_nan=True)
    assert histogram_summaries([]).shape == (0, len(HISTOGRAM_SUMMARY_COLUMNS))


def test_summaries_of_wide_and_mixed_bucket_counts_equal_the_rule_bit_for_bit():
    """Deliveries as writers give them: one bucket count throughout (every row regular, nothing set aside), and
    bucket counts of 1 to 80 mixed, with empty histograms, all-zero counts, -0.0 counts and infinite edges."""
    rng = np.random.default_rng(29)
    same = [np.column_stack([np.arange(46.0), np.arange(1.0, 47.0), np.floor(rng.random(46) * 9) + (i == 0)])
            for i in range(500)]
    mixed = []
    for i in range(1500):
        k = int(rng.integers(0, 81))
        edges = np.sort(rng.normal(size=k + 1) * 10.0 ** rng.integers(-3, 4))
        counts = np.floor(rng.random(k) * 4) * (rng.random(k) < 0.4)
        if i % 5 == 0:
            counts = np.where(counts > 0, counts, -0.0)
        buckets = np.column_stack([edges[:-1], edges[1:], counts]) if k else np.zeros((0, 3))
        if k and i % 9 == 0:
            buckets[0, 0], buckets[-1, 1] = -np.inf, np.inf
        mixed.append(buckets)
    for histograms in (same, mixed, mixed[:1] * 3):
        with np.errstate(all="ignore"):
            expected = np.array([histogram_summary(b) for b in histograms], dtype=np.float64)
            got = histogram_summaries(histograms)
        same_bits = got.view(np.uint64) == expected.view(np.uint64)
        assert (same_bits | (np.isnan(got) & np.isnan(expected))).all()


# --- row groups of whole tags ---------------------------------------------------------------------------------------


def test_row_groups_hold_whole_tags_and_a_long_tag_has_its_own():
    long = 3 * GROUP_ROWS + 1
    starts, spans = tag_row_groups([10, 20, TAG_GROUP_ROWS - 30, 5, long, 7])
    after = TAG_GROUP_ROWS + 5  # the long tag's first row
    assert starts == [0, TAG_GROUP_ROWS, after, after + GROUP_ROWS, after + 2 * GROUP_ROWS, after + 3 * GROUP_ROWS,
                      after + long]
    assert spans == [(0, 0), (0, 0), (0, 0), (1, 1), (2, 5), (6, 6)]
    assert tag_row_groups([]) == ([0], [])


def _histograms(tags: int, steps: range, key: int = 0) -> list[HistogramRecord]:
    return [HistogramRecord("", f"layer_{t:02d}", s, 100.0 + s,
                            np.array([[t, t + 1.0, s + 1.0], [t + 1.0, t + 2.0, key + 1.0]]), 1000 * t + s, 10 * s)
            for s in steps for t in range(tags)]


def test_a_delivery_is_one_file_per_kind_and_a_tag_is_read_from_its_row_groups_alone(tmp_path, monkeypatch):
    store = ExpStore(tmp_path / "store", create=True)
    records = [*_histograms(40, range(30)),
               *(TextRecord("", f"note_{t}", s, 1.0 + s, (f"{t}@{s}",), (), s, s) for s in range(5) for t in range(3))]
    write_media(store, "k", "r", "/logs/events", records)
    files = sorted(p.relative_to(store.root).as_posix() for p in (store.root / "media").rglob("*.parquet"))
    assert [f.split("/")[2] for f in files] == ["histograms", "text"]
    with sqlite3.connect(store.root / "index.sqlite") as conn:
        spans = dict(conn.execute("SELECT f.tag, g.group_last - g.group_first FROM media_files f JOIN "
                                  "media_tag_groups g USING (file_id) WHERE f.kind = 'histograms'").fetchall())
    assert len(spans) == 40 and set(spans.values()) == {0}
    histogram_file = pq.ParquetFile(store.root / files[0])
    assert histogram_file.metadata.num_row_groups == -(-40 * 30 // (TAG_GROUP_ROWS // 30 * 30))

    read = []
    real = pq.ParquetFile.read_row_groups

    def spy(self, groups, *args, **kwargs):
        read.append(list(groups))
        return real(self, groups, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", spy)
    reader = StoreReader(tmp_path / "store")
    series = reader.histograms("r", "layer_17", max_steps=100)
    assert series.steps.tolist() == list(range(30))
    assert [b.tolist() for b in series.buckets] == [[[17.0, 18.0, s + 1.0], [18.0, 19.0, 1.0]] for s in range(30)]
    assert all(len(groups) == 1 for groups in read) and len({g[0] for g in read}) == 1
    assert reader.text_at("r", "note_2", 3).text == ("2@3",)
    assert {t.tag: t.count for t in reader.media_tags("r")} == {f"layer_{t:02d}": 30 for t in range(40)} | {
        f"note_{t}": 5 for t in range(3)}


# --- the first layout ------------------------------------------------------------------------------------------------


def _first_layout_file(store: ExpStore, run_id: str, tag: str, file_id: str, records: list[HistogramRecord]) -> None:
    """A histogram file as the first layout wrote it (one tag, no ``tag`` column) and its index row, no group row."""
    summary = np.array([histogram_summary(r.buckets) for r in records])
    table = pa.table({"step": pa.array([r.step for r in records], pa.int64()),
                      "wall_time": pa.array([r.wall_time for r in records], pa.float64()),
                      "source": pa.array([f"events@{r.offset}#{tag}" for r in records], pa.string()),
                      **{c: pa.array(summary[:, i]) for i, c in enumerate(HISTOGRAM_SUMMARY_COLUMNS)},
                      "buckets": pa.array([encode_buckets(r.buckets) for r in records], pa.string())})
    rel = media_file_path(run_id, "histograms", tag, file_id)
    store.publish_file(rel, lambda tmp: pq.write_table(table, tmp))
    with store.write_transaction() as tx:
        tx.execute("INSERT INTO media_files(file_id, run_id, kind, tag, path, row_count, step_min, step_max, "
                   "created_at) VALUES (?, ?, 'histograms', ?, ?, ?, ?, ?, 'then')",
                   (file_id, run_id, tag, rel, len(records), records[0].step, records[-1].step))


def test_a_store_of_the_first_layout_is_read_and_a_new_delivery_adds_to_it(tmp_path):
    store = ExpStore(tmp_path / "store", create=True)
    old = [r for r in _histograms(2, range(10)) if r.tag == "layer_01"]
    _first_layout_file(store, "r", "layer_01", "media-old", old)
    reader = StoreReader(tmp_path / "store")
    series = reader.histograms("r", "layer_01")
    assert series.steps.tolist() == list(range(10))
    assert [b.tolist() for b in series.buckets] == [r.buckets.tolist() for r in old]
    assert np.array_equal(series.summary, np.array([histogram_summary(r.buckets) for r in old]), equal_nan=True)
    # A later delivery (the new layout) of steps 8..14 from other frames: the later value at a step wins.
    write_media(store, "new", "r", "/logs/events", [r for r in _histograms(2, range(8, 15), key=5)
                                                    if r.tag == "layer_01"])
    both = StoreReader(tmp_path / "store").histograms("r", "layer_01")
    assert both.steps.tolist() == list(range(15))
    assert [b[1, 2] for b in both.buckets] == [1.0] * 8 + [6.0] * 7
    assert {t.tag: t.count for t in StoreReader(tmp_path / "store").media_tags("r")} == {"layer_01": 15}


def test_a_first_layout_store_without_the_group_table_is_read(tmp_path):
    store = ExpStore(tmp_path / "store", create=True)
    old = _histograms(1, range(4))
    _first_layout_file(store, "r", "layer_00", "media-old", old)
    store.close()
    with sqlite3.connect(tmp_path / "store" / "index.sqlite") as conn:
        conn.execute("DROP TABLE media_tag_groups")
    reader = StoreReader(tmp_path / "store")  # read-only: nothing creates the table
    assert reader.histograms("r", "layer_00").steps.tolist() == [0, 1, 2, 3]
    assert reader.histogram_at("r", "layer_00", 2).buckets[0].tolist() == old[2].buckets.tolist()


# --- a delivery's files synced together --------------------------------------------------------------------------------


def test_a_deliverys_images_are_kept_as_one_at_a_time_would_keep_them(tmp_path):
    one = ExpStore(tmp_path / "one", create=True)
    many = ExpStore(tmp_path / "many", create=True)
    images = [bytes([i]) * (100 + i) for i in range(40)] + [b"\x01" * 101]  # one twice
    assert store_artifacts_bytes(many, images) == [store_artifact_bytes(one, data) for data in images]
    listing = sorted(p.relative_to(many.root).as_posix() for p in (many.root / "artifacts").rglob("*"))
    assert listing == sorted(p.relative_to(one.root).as_posix() for p in (one.root / "artifacts").rglob("*"))
    assert store_artifacts_bytes(many, images[:3]) == [store_artifact_bytes(one, data) for data in images[:3]]


def test_a_failed_sync_publishes_none_of_the_deliverys_files(tmp_path, monkeypatch):
    store = ExpStore(tmp_path / "store", create=True)
    calls = []
    real = durable.os.fsync

    def failing(fd):
        if stat.S_ISREG(os.fstat(fd).st_mode):  # the third image file's sync fails
            calls.append(fd)
            if len(calls) == 3:
                raise OSError(5, "Input/output error")
        return real(fd)

    monkeypatch.setattr(durable.os, "fsync", failing)
    record = ImageRecord("", "img", 1, 1.0, 2, 2, tuple(bytes([i]) * 50 for i in range(6)), 1, 1)
    with pytest.raises(OSError, match="Input/output"):
        write_media(store, "k", "r", "/logs/events", [record])
    assert [p for p in (store.root / "artifacts").rglob("*") if p.is_file()] == []
    assert StoreReader(tmp_path / "store").media_tags("r") == []



def test_an_imports_media_key_is_its_content():
    records = [*_histograms(2, range(3)), ImageRecord("", "img", 1, 1.0, 2, 2, (b"png-a", b"png-b"), 1, 1),
               TextRecord("", "t", 2, 2.0, ("a",), (), 2, 2)]
    key = media_chunk_key("r", "/logs/events", records)
    assert key == media_chunk_key("r", "/logs/events", list(records))
    changed_bucket = [HistogramRecord(*(getattr(records[0], f) for f in ("run", "tag", "step", "wall_time")),
                                      records[0].buckets + 1.0, records[0].record, records[0].offset), *records[1:]]
    changed_image = [*records[:-2], ImageRecord("", "img", 1, 1.0, 2, 2, (b"png-a", b"png-c"), 1, 1), records[-1]]
    others = {media_chunk_key("r", "/logs/events", changed_bucket), media_chunk_key("r", "/logs/events", changed_image),
              media_chunk_key("r2", "/logs/events", records), media_chunk_key("r", "/logs/events", records[:-1])}
    assert key not in others and len(others) == 4


def test_an_imports_media_key_is_the_same_digest_as_before():
    """The key names a delivery's files and index rows, so a re-run import (by this version or the one before)
    must find it again: the digest of (run, source), each histogram's float64 buckets and each image's bytes in
    record order, then every record's fields as JSON -- spelled out here independently of the code."""
    import hashlib

    import orjson

    records = [*_histograms(2, range(3)), ImageRecord("", "img", 1, 1.0, 2, 2, (b"png-a", b"png-b"), 1, 1),
               HistogramRecord("", "h32", 4, 4.0, np.asfortranarray(np.arange(6.0).reshape(2, 3)), 3, 3),
               TextRecord("", "t", 2, 2.0, ("a",), (), 2, 2)]
    expected = hashlib.sha256(orjson.dumps(["r", "/logs/events"]))
    described = []
    for r in records:
        common = [r.kind, r.run, r.tag, r.step, r.wall_time, r.record, r.offset]
        if isinstance(r, HistogramRecord):
            expected.update(np.asarray(r.buckets, dtype="<f8").tobytes(order="C"))
            described.append([*common, len(r.buckets)])
        elif isinstance(r, ImageRecord):
            expected.update(b"".join(r.images))
            described.append([*common, r.width, r.height, [len(i) for i in r.images], list(r.captions)])
        else:
            described.append([*common, list(r.text), list(r.shape)])
    expected.update(orjson.dumps(described))
    assert media_chunk_key("r", "/logs/events", records) == expected.hexdigest()


def test_a_tags_count_over_deliveries_that_follow_one_another_reads_no_file(tmp_path, monkeypatch):
    """A live run's tag is in one entry a delivery, each after the last: the tag list adds their rows up from the
    index (it is asked for every tag of the run at once); entries whose steps meet, or an entry holding more rows
    than its steps, are read to count each step once."""
    from tau_collector.expstore.read import media_reads

    store = ExpStore(tmp_path / "store", create=True)
    for n, steps in enumerate((range(0, 10), range(10, 25), range(25, 26))):
        write_media(store, f"delivery-{n}", "r", "/logs/events", _histograms(3, steps))
    read = media_reads._rows
    reads = []

    def counting(store, run_id, kind, tag, *rest):
        reads.append(tag)
        return read(store, run_id, kind, tag, *rest)

    monkeypatch.setattr(media_reads, "_rows", counting)
    counts = {(t.tag, t.count, t.step_min, t.step_max) for t in StoreReader(tmp_path / "store").media_tags("r")}
    assert counts == {(f"layer_{t:02d}", 26, 0, 25) for t in range(3)} and reads == []
    # Steps 20..29 again (another delivery of frames read again): layer_00's entries meet, it alone is read.
    write_media(store, "again", "r", "/logs/events", [r for r in _histograms(1, range(20, 30), key=3)])
    # Two values at step 40 in one delivery (a restart within it): the delivery keeps the last, one row a step, so
    # the index still counts it without a read.
    write_media(store, "restart", "r", "/logs/events", [r for r in _histograms(2, [40, 40]) if r.tag == "layer_01"])
    counts = {t.tag: t.count for t in StoreReader(tmp_path / "store").media_tags("r")}
    assert counts == {"layer_00": 30, "layer_01": 27, "layer_02": 26} and sorted(reads) == ["layer_00"]
