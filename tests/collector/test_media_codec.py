"""The media files' page codec: histograms and text are written with ZSTD pages (the metric files keep GZIP), read by
pyarrow and by compaction's numpy reader, and media files written before with GZIP pages still read and merge."""

from __future__ import annotations

import functools
import threading

import numpy as np
import pyarrow.parquet as pq
import pytest

from tau_collector.expstore import StoreReader
from tau_collector.expstore.format import media_files, parquet_encoder, parquet_reader
from tau_collector.expstore.format.media_files import MEDIA_CODEC, histograms_file_bytes, texts_file_bytes
from tau_collector.expstore.format.parquet_encoder import Column, ParquetStream, encode_parquet
from tau_collector.expstore.format.parquet_reader import MetricFileGroups
from tau_collector.expstore.maintain.media_compaction import MediaCompactionPolicy, compact_media
from tau_collector.expstore.store import ExpStore
from tau_collector.expstore.write import media as media_write
from tau_collector.expstore.write.media import write_media
from tau_collector.sinks.base import RunIdentity
from tau_collector.sources.media import HistogramRecord, TextRecord

RUN = "r"
TAGS = ("layer_00", "layer_01")
EDGES = np.linspace(-3.0, 3.0, 65)


def _buckets(tag: int, step: int, key: int) -> np.ndarray:
    """64 buckets whose counts differ by tag, step and delivery (a page of these is KiBs: it is compressed)."""
    counts = np.floor(np.exp(-np.linspace(-3.0, 3.0, 64) ** 2) * (100 + step + 7 * tag + 1000 * key))
    return np.stack([EDGES[:-1], EDGES[1:], counts], axis=1)


def _delivery(steps: range, key: int) -> list:
    return [*(HistogramRecord("", tag, s, 100.0 + s, _buckets(t, s, key), 1000 * t + s, 10_000 * key + 10 * s)
              for s in steps for t, tag in enumerate(TAGS)),
            *(TextRecord("", "notes", s, 100.0 + s, (f"step {s} of delivery {key}: " + "words " * 40,), (), s, s)
              for s in steps)]


def _codecs(path) -> set[str]:
    meta = pq.ParquetFile(path).metadata
    return {meta.row_group(g).column(c).compression
            for g in range(meta.num_row_groups) for c in range(meta.num_columns)}


def _reads(root) -> dict:
    reader = StoreReader(root)
    out = {}
    for tag in TAGS:
        h = reader.histograms(RUN, tag, max_steps=10_000)
        out[tag] = (h.steps.tolist(), h.wall_times.tolist(), h.summary.tolist(), [b.tolist() for b in h.buckets])
    out["text"] = [reader.text_at(RUN, "notes", s) for s in (0, 17, 31)]
    return out


def _gzip_deliveries(monkeypatch) -> None:
    """write_media writes its files as stores before the ZSTD pages did (GZIP), until monkeypatch.undo()."""
    monkeypatch.setattr(media_write, "histograms_file_bytes", functools.partial(histograms_file_bytes, codec="gzip"))
    monkeypatch.setattr(media_write, "texts_file_bytes", functools.partial(texts_file_bytes, codec="gzip"))


def test_media_files_are_written_with_zstd_pages_and_metric_files_keep_gzip(tmp_path):
    assert MEDIA_CODEC == "zstd"
    store = ExpStore(tmp_path / "store", create=True)
    write_media(store, "k0", RUN, "/logs/events", _delivery(range(8), 0), RunIdentity("p", "e", "g"))
    paths = [store.absolute(p) for (p,) in store.connection().execute("SELECT DISTINCT path FROM media_files")]
    assert len(paths) == 2  # histograms, text
    for path in paths:
        meta = pq.ParquetFile(path).metadata
        big = {meta.row_group(0).column(c).path_in_schema: meta.row_group(0).column(c).compression
               for c in range(meta.num_columns)}
        # the large chunks (buckets, text) are ZSTD; a chunk under 1 KiB (the tag's dictionary) stays uncompressed
        assert big.get("buckets", big.get("text")) == "ZSTD"
        assert _codecs(path) <= {"ZSTD", "UNCOMPRESSED"}
    h = StoreReader(store.root).histograms(RUN, "layer_01", max_steps=100)
    assert h.steps.tolist() == list(range(8))
    assert [b.tolist() for b in h.buckets] == [_buckets(1, s, 0).tolist() for s in range(8)]
    # The scalar metric files' codec is unchanged (TauGrid's layout): GZIP.
    n = 4096
    metric = encode_parquet([Column("step", "int64", True, np.arange(n, dtype=np.int64)),
                             Column("value", "double", True, np.sqrt(np.arange(n, dtype=np.float64)))], n)
    (tmp_path / "m.parquet").write_bytes(metric)
    assert _codecs(tmp_path / "m.parquet") == {"GZIP"}


def test_gzip_media_files_written_before_read_and_merge_with_zstd_ones(tmp_path, monkeypatch):
    root = tmp_path / "store"
    store = ExpStore(root, create=True)
    identity = RunIdentity("p", "e", "g")
    _gzip_deliveries(monkeypatch)
    for k in range(4):  # steps 0..15 in GZIP files
        write_media(store, f"old{k}", RUN, "/logs/events", _delivery(range(4 * k, 4 * k + 4), k), identity)
    monkeypatch.undo()
    for k in range(4, 8):  # steps 14..29 in ZSTD files: steps 14, 15 again, later values
        write_media(store, f"new{k}", RUN, "/logs/events", _delivery(range(4 * k - 2, 4 * k + 2), k), identity)
    paths = {p: _codecs(store.absolute(p)) for (p,) in store.connection().execute(
        "SELECT DISTINCT path FROM media_files WHERE kind = 'histograms'")}
    assert sorted("GZIP" in c for c in paths.values()) == [False] * 4 + [True] * 4
    before = _reads(root)
    assert before["layer_00"][0] == list(range(30))
    assert before["layer_00"][3][15] == _buckets(0, 15, 4).tolist()  # the ZSTD file's later value wins
    assert before["layer_01"][3][3] == _buckets(1, 3, 0).tolist()  # a GZIP file's value
    # compaction's numpy reader reads both codecs, the same columns pyarrow reads
    for path in paths:
        groups = MetricFileGroups(store.absolute(path), plain=frozenset({"buckets"}), any_columns=True)
        rows, columns = groups.read(list(range(len(groups))))
        table = pq.read_table(store.absolute(path), columns=["step", "buckets"])
        assert columns["step"].values.tolist() == table["step"].to_pylist()
        assert rows == table.num_rows > 0
        assert _cells(columns["buckets"]) == table["buckets"].to_pylist()

    assert compact_media(store, RUN, policy=MediaCompactionPolicy(min_entries=4)) == 2  # histograms, text
    merged = [p for (p,) in store.connection().execute("SELECT DISTINCT path FROM media_files")]
    assert len(merged) == 2 and all("ZSTD" in _codecs(store.absolute(p)) for p in merged)
    assert all("GZIP" not in _codecs(store.absolute(p)) for p in merged)
    assert _reads(root) == before


def _cells(texts) -> list[bytes]:
    """Each PLAIN cell of a binary column without its 4-byte length."""
    data = texts.data.tobytes()
    return [data[a + 4:b] for a, b in zip(texts.bounds[:-1].tolist(), texts.bounds[1:].tolist(), strict=True)]


def _bucket_page(path) -> tuple[int, int]:
    """(offset, compressed size) of the ``buckets`` chunk of the file's first row group."""
    meta = pq.ParquetFile(path).metadata
    column = next(meta.row_group(0).column(c) for c in range(meta.num_columns)
                  if meta.row_group(0).column(c).path_in_schema == "buckets")
    return column.data_page_offset, column.total_compressed_size


def test_a_damaged_zstd_page_is_a_clear_error_naming_the_file_and_column(tmp_path):
    steps = np.arange(40, dtype=np.int64)
    data, _ = histograms_file_bytes(["t"], [40], steps, steps.astype(np.float64), ["s"] * 40,
                                    [_buckets(0, int(s), 0) for s in steps])
    path = tmp_path / "h.parquet"
    path.write_bytes(data)
    offset, size = _bucket_page(path)
    assert size > 200
    damaged = bytearray(data)
    damaged[offset + size // 2] ^= 0x5A  # inside the frame: its content checksum no longer matches, at least
    path.write_bytes(bytes(damaged))
    groups = MetricFileGroups(path, any_columns=True)
    with pytest.raises(ValueError, match=r"h\.parquet buckets page at byte \d+ of the chunk: (damaged ZSTD page|ZSTD "
                                         r"page of)"):
        groups.read([0])
    # A page cut short, or of another size than its header says: an error too, not fewer or more bytes.
    frame = parquet_encoder._zstd(bytes(range(256)) * 20)  # a page's body as the encoder compresses it
    assert parquet_reader._unzstd(frame, 5120, "f.parquet buckets") == bytes(range(256)) * 20
    with pytest.raises(ValueError, match="cut short, its header says 5120"):
        parquet_reader._unzstd(frame[:-10], 5120, "f.parquet buckets")
    with pytest.raises(ValueError, match="ZSTD page of 5120 bytes, its header says 5119"):
        parquet_reader._unzstd(frame, 5119, "f.parquet buckets")
    with pytest.raises(ValueError, match="damaged ZSTD page"):
        parquet_reader._unzstd(b"not a zstd frame at all", 23, "f.parquet buckets")


def test_threads_writing_at_once_write_what_one_thread_writes(tmp_path):
    """One compressor a thread, reused across pages: files written by four threads at once equal those written
    one after another."""
    def file_bytes(key: int) -> bytes:
        steps = np.arange(300, dtype=np.int64)
        return histograms_file_bytes(TAGS, [150, 150], steps, steps.astype(np.float64), ["s"] * 300,
                                     [_buckets(key % 3, int(s), key) for s in steps])[0]

    expected = [file_bytes(k) for k in range(12)]
    got: dict[int, bytes] = {}

    def work(first: int) -> None:
        for k in range(first, 12, 4):
            got[k] = file_bytes(k)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [got[k] for k in range(12)] == expected
    assert all(_codecs_of(data, tmp_path) >= {"ZSTD"} for data in expected[:2])


def _codecs_of(data: bytes, tmp_path) -> set[str]:
    path = tmp_path / "one.parquet"
    path.write_bytes(data)
    return _codecs(path)


def test_an_unknown_codec_is_refused_by_name():
    with pytest.raises(ValueError, match=r"codec 'snappy': not one of \['gzip', 'zstd'\]"):
        ParquetStream(None, [Column("step", "int64", True, np.zeros(1, dtype=np.int64))], codec="snappy")
    assert media_files.MEDIA_CODEC in ("gzip", "zstd")
