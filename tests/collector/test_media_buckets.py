"""Histogram buckets on the import's fast path: a ``HistogramProto`` read from its wire format as protobuf reads it,
buckets stored as binary float64 cells (the JSON cells of stores written before still read), and the import's
media gathered into larger deliveries whose file progress is recorded only once they are delivered."""

from __future__ import annotations

import os
import sqlite3
import stat
import struct
from dataclasses import replace

import numpy as np
import pyarrow.parquet as pq
import pytest

from tau_collector.collect import import_pass
from tau_collector.expstore import StoreReader
from tau_collector.expstore.format.histogram_summaries import histogram_summaries
from tau_collector.expstore.format.media_files import (
    HISTOGRAM_SUMMARY_COLUMNS,
    bucket_cells,
    decode_buckets,
    encode_buckets,
    histograms_file_bytes,
    tag_row_groups,
)
from tau_collector.expstore.format.parquet_encoder import Coded, Column, encode_parquet
from tau_collector.expstore.store import ExpStore
from tau_collector.expstore.write.media import write_media
from tau_collector.sinks.expstore import ExpstoreSink
from tau_collector.sources import data_compat
from tau_collector.sources.media import HistogramRecord
from tau_collector.sources.tensorboard_proto.event_pb2 import HistogramProto

# --- the wire reader ------------------------------------------------------------------------------------------------


class _Value:
    def __init__(self, histo: bytes) -> None:
        self.histo = histo


def _by_protobuf(data: bytes, max_values: int = 100_000) -> np.ndarray:
    """What histogram_buckets yields with the wire reader turned off (protobuf reads every message)."""
    real = data_compat._histogram_wire
    data_compat._histogram_wire = lambda _: None
    try:
        return data_compat.histogram_buckets(_Value(data), "histo", max_values)
    finally:
        data_compat._histogram_wire = real


def _double(field: int, value: float) -> bytes:
    return bytes([field << 3 | 1]) + struct.pack("<d", value)


def _packed(field: int, values: list[float]) -> bytes:
    body = struct.pack(f"<{len(values)}d", *values)
    length, out = len(body), bytearray()
    while length > 0x7F:
        out.append(length & 0x7F | 0x80)
        length >>= 7
    out.append(length)
    return bytes([field << 3 | 2]) + bytes(out) + body


def _messages() -> list[bytes]:
    rng = np.random.default_rng(3)
    limits = np.sort(rng.normal(size=40)).tolist()
    counts = np.floor(rng.random(40) * 5).tolist()
    counts[0] = counts[-1] = 0.0
    serialized = HistogramProto(min=-3.5, max=4.25, num=sum(counts), sum=1.5, sum_squares=9.0, bucket_limit=limits,
                                bucket=counts).SerializeToString()
    wide = HistogramProto(min=-1.0, max=1.0, bucket_limit=np.linspace(-1, 1, 3000).tolist(),
                          bucket=[1.0] * 3000).SerializeToString()  # a packed length of three varint bytes
    unpacked = b"".join([_double(1, -2.0), *(_double(6, v) for v in limits[:10]), *(_double(7, c) for c in counts[:10]),
                         _double(2, 2.0)])
    split = b"".join([_packed(6, limits[:5]), _double(6, limits[5]), _packed(6, limits[6:12]), _packed(7, counts[:6]),
                      _double(7, counts[6]), _packed(7, counts[7:12]), _double(1, -9.0), _double(1, -8.0)])
    reordered = b"".join([_packed(7, counts), _double(2, 7.0), _packed(6, limits), _double(5, 3.0), _double(1, -7.0)])
    no_edges = b"".join([_packed(6, limits), _packed(7, counts)])  # min and max 0.0 (proto3 leaves zeros out)
    return [serialized, wide, unpacked, split, reordered, no_edges, b"", _packed(7, [0.0, 0.0])]


@pytest.mark.parametrize("index", range(8))
def test_the_wire_reader_yields_what_protobuf_yields(index):
    data = _messages()[index]
    assert data_compat._histogram_wire(data) is not None
    expected = _by_protobuf(data)
    got = data_compat.histogram_buckets(_Value(data), "histo", 100_000)
    assert got.dtype == np.float64 and np.array_equal(got, expected, equal_nan=True)


@pytest.mark.parametrize("data", [
    _double(1, 1.0) + b"\x40\x01",  # field 8 (a varint): not a HistogramProto field this reader knows
    _packed(6, [1.0, 2.0])[:-3],  # a packed field running past the end
    b"\x32\x05" + b"\x00" * 5,  # a packed field of no whole double
    _double(1, 1.0)[:5],  # a double cut short
])
def test_a_message_the_wire_reader_does_not_take_goes_to_protobuf(data):
    assert data_compat._histogram_wire(data) is None
    try:
        expected = _by_protobuf(data)
    except ValueError as exc:
        with pytest.raises(ValueError, match=str(exc).split("(")[0].strip()):
            data_compat.histogram_buckets(_Value(data), "histo", 100_000)
    else:
        assert np.array_equal(data_compat.histogram_buckets(_Value(data), "histo", 100_000), expected, equal_nan=True)


def test_the_bucket_limit_holds_on_the_wire_reader():
    data = HistogramProto(min=0.0, max=1.0, bucket_limit=[0.5] * 40, bucket=[1.0] * 40).SerializeToString()
    assert data_compat._histogram_wire(data) is not None
    with pytest.raises(ValueError, match="holds 40 buckets, over the limit of 33"):
        data_compat.histogram_buckets(_Value(data), "histo", 100)


# --- binary cells ---------------------------------------------------------------------------------------------------


def _buckets() -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    out = [rng.normal(size=(k, 3)) for k in (1, 7, 0, 64)]
    out.append(np.array([[-np.inf, 0.0, 2.0], [0.0, np.inf, np.nan], [5e-324, 1.7976931348623157e308, -0.0]]))
    return out


def test_binary_cells_round_trip_bit_for_bit_through_a_parquet_reader(tmp_path):
    buckets = _buckets()
    n = len(buckets)
    data, spans = histograms_file_bytes(["t"], [n], np.arange(n), np.arange(n, dtype=np.float64),
                                        [f"e@{i}#t" for i in range(n)], buckets)
    (tmp_path / "h.parquet").write_bytes(data)
    table = pq.read_table(tmp_path / "h.parquet")
    assert str(table.schema.field("buckets").type) == "binary" and spans == [(0, 0)]
    for cell, expected in zip(table.column("buckets").to_pylist(), buckets, strict=True):
        assert isinstance(cell, bytes) and decode_buckets(cell).tobytes() == np.asarray(expected, "<f8").tobytes()
    cells = bucket_cells(buckets)
    assert np.diff(cells.bounds).tolist() == [4 + 24 * len(b) for b in buckets]


def _cells_one_by_one(buckets) -> bytes:
    return b"".join(struct.pack("<I", 24 * len(b)) + np.ascontiguousarray(b, dtype="<f8").tobytes() for b in buckets)


@pytest.mark.parametrize("case", ["one_count", "mixed", "float32", "strided", "empty", "none"])
def test_cells_are_each_histogram_as_its_own_bytes(case):
    """The delivery's cells joined by numpy are, byte for byte, each histogram's float64 rows after its length:
    one bucket count (a reshape), mixed counts, float32 and non-contiguous arrays, empty histograms."""
    rng = np.random.default_rng(7)
    buckets = {
        "one_count": [rng.normal(size=(46, 3)) for _ in range(50)] + [np.full((46, 3), np.inf)],
        "mixed": _buckets() + [rng.normal(size=(int(k), 3)) for k in rng.integers(0, 70, size=40)],
        "float32": [rng.normal(size=(5, 3)).astype(np.float32), rng.normal(size=(2, 3))],
        "strided": [rng.normal(size=(8, 3))[::2], np.asfortranarray(rng.normal(size=(4, 3)))],
        "empty": [np.zeros((0, 3))] * 3,
        "none": [],
    }[case]
    cells = bucket_cells(buckets)
    assert cells.data.tobytes() == _cells_one_by_one(buckets)
    assert np.diff(cells.bounds).tolist() == [4 + 24 * len(b) for b in buckets] and cells.bounds[0] == 0


def test_cells_of_arrays_numpy_cannot_join_are_still_each_arrays_bytes():
    odd = [np.arange(6.0).reshape(2, 3), np.arange(4.0)]  # no [k, 3] shape in common: taken one at a time
    cells = bucket_cells(odd)
    assert cells.data.tobytes() == b"".join(struct.pack("<I", a.nbytes) + a.tobytes() for a in odd)
    assert cells.bounds.tolist() == [0, 52, 88]


def test_a_cell_of_no_whole_rows_is_refused():
    with pytest.raises(ValueError, match="holds 25 bytes, not whole"):
        decode_buckets(b"\x00" * 25)


def _json_delivery_file(store: ExpStore, run_id: str, records: list[HistogramRecord]) -> None:
    """A delivery file as the store wrote it before binary cells (the delivery layout, JSON ``buckets`` text),
    with its index rows."""
    tags = sorted({r.tag for r in records})
    ordered = [r for tag in tags for r in sorted(records, key=lambda r: r.step) if r.tag == tag]
    counts = [sum(1 for r in records if r.tag == tag) for tag in tags]
    starts, spans = tag_row_groups(counts)
    summary = histogram_summaries([r.buckets for r in ordered])
    codes = np.repeat(np.arange(len(tags)), counts)
    columns = [Column("tag", "string", True, Coded(tags, codes)),
               Column("step", "int64", True, np.array([r.step for r in ordered]), statistics=True),
               Column("wall_time", "double", True, np.array([r.wall_time for r in ordered])),
               Column("source", "string", True, [f"events@{r.offset}#{r.tag}" for r in ordered]),
               *(Column(c, "double", True, np.ascontiguousarray(summary[:, i]))
                 for i, c in enumerate(HISTOGRAM_SUMMARY_COLUMNS)),
               Column("buckets", "json", True, [encode_buckets(r.buckets) for r in ordered])]
    rel = f"media/run={run_id}/histograms/media-json.parquet"
    store.publish_files([(rel, encode_parquet(columns, len(ordered), starts))])
    with store.write_transaction() as tx:
        for tag, count, (first, last) in zip(tags, counts, spans, strict=True):
            steps = [r.step for r in records if r.tag == tag]
            tx.execute("INSERT INTO media_files(file_id, run_id, kind, tag, path, row_count, step_min, step_max, "
                       "created_at) VALUES (?, ?, 'histograms', ?, ?, ?, ?, ?, 'then')",
                       (f"media-json-{tag}", run_id, tag, rel, count, min(steps), max(steps)))
            tx.execute("INSERT INTO media_tag_groups(file_id, group_first, group_last) VALUES (?, ?, ?)",
                       (f"media-json-{tag}", first, last))


def _records(tags: int, steps: range, offset: int = 0) -> list[HistogramRecord]:
    return [HistogramRecord("", f"w{t}", s, 10.0 + s, np.array([[-np.inf, 0.5 * t, s + 1.0], [0.5 * t, 2.0, 3.0]]),
                            s, offset + 100 * s + t) for s in steps for t in range(tags)]


def test_a_delivery_file_of_json_cells_reads_beside_binary_ones(tmp_path):
    store = ExpStore(tmp_path / "store", create=True)
    old, new = _records(3, range(0, 6)), _records(3, range(6, 9), offset=10_000)
    _json_delivery_file(store, "r", old)
    write_media(store, "k", "r", "/logs/events", new)
    reader = StoreReader(tmp_path / "store")
    series = reader.histograms("r", "w1")
    assert series.steps.tolist() == list(range(9))
    assert [b.tolist() for b in series.buckets] == [r.buckets.tolist() for r in old + new if r.tag == "w1"]
    assert np.array_equal(series.summary, histogram_summaries([r.buckets for r in old + new if r.tag == "w1"]),
                          equal_nan=True)
    assert reader.histogram_at("r", "w2", 3).buckets[0].tolist() == old[3 * 3 + 2].buckets.tolist()


# --- the import's deliveries ----------------------------------------------------------------------------------------


def _event_file(logdir, steps: int) -> None:
    from tensorboardX import SummaryWriter

    writer = SummaryWriter(str(logdir / "run"), flush_secs=3600)
    limits = np.linspace(-1.0, 1.0, 16).tolist()
    for step in range(steps):
        writer.add_scalar("loss", 1.0 / (step + 1), step, walltime=1000.0 + step)
        for t in range(4):
            counts = [float((step + t + i) % 5) for i in range(16)]
            writer.add_histogram_raw(f"h{t}", min=-1.0, max=1.0, num=sum(counts), sum=0.0, sum_squares=1.0,
                                     bucket_limits=limits, bucket_counts=counts, global_step=step,
                                     walltime=1000.0 + step)
    writer.close()


def _import(logdir, store, batch_bytes: int):
    from tau_collector.sources.read_limits import IMPORT_LIMITS
    from taunotebook.importer import import_paths

    return import_paths([str(logdir)], store, clustering="off", limits=replace(IMPORT_LIMITS, batch_bytes=batch_bytes))


def test_the_imports_media_are_gathered_over_batches_and_a_failed_delivery_leaves_its_batches_unrecorded(
        tmp_path, monkeypatch):
    _event_file(tmp_path / "logs", 300)
    monkeypatch.setattr(import_pass, "MEDIA_DELIVERY_BYTES", 40_000)
    delivered, failed = [], []
    real = ExpstoreSink.deliver_media

    def failing_third(self, chunk):
        if len(delivered) == 2 and not failed:  # the third fails, once: what comes after it is delivered
            failed.extend(r.offset for r in chunk.records)
            raise OSError(5, "Input/output error")
        delivered.append([r.offset for r in chunk.records])
        return real(self, chunk)

    monkeypatch.setattr(ExpstoreSink, "deliver_media", failing_third)
    with pytest.raises(OSError, match="Input/output"):
        _import(tmp_path / "logs", tmp_path / "store", batch_bytes=8_000)
    assert failed and all(len(offsets) > 4 * 8_000 // 1_000 for offsets in delivered)  # several batches' each
    with sqlite3.connect(tmp_path / "store" / "index.sqlite") as conn:
        recorded = [int(k.rsplit("-", 1)[1]) for (k,) in conn.execute(
            "SELECT key FROM idempotency_keys WHERE key LIKE 'import-file-%'")]
    # Progress is recorded up to the delivered media, never past a frame whose delivery failed (nor after it).
    assert recorded and max(recorded) <= min(failed)

    monkeypatch.setattr(ExpstoreSink, "deliver_media", real)
    _import(tmp_path / "logs", tmp_path / "store", batch_bytes=8_000)  # resumes where progress was recorded
    reader = StoreReader(tmp_path / "store")
    assert {t.tag: t.count for t in reader.media_tags("run")} == {f"h{t}": 300 for t in range(4)}
    with sqlite3.connect(tmp_path / "store" / "index.sqlite") as conn:
        (batches,) = conn.execute("SELECT COUNT(*) FROM idempotency_keys WHERE key LIKE 'import-file-%'").fetchone()
    files = list((tmp_path / "store" / "media").rglob("*.parquet"))
    assert batches > 30 and len(files) <= batches // 3  # a delivery's file spans several batches

    # What the wire reader read equals what protobuf reads, through the whole import.
    monkeypatch.setattr(data_compat, "_histogram_wire", lambda _: None)
    _import(tmp_path / "logs", tmp_path / "by_protobuf", batch_bytes=8_000)
    other = StoreReader(tmp_path / "by_protobuf")
    for tag in ("h0", "h3"):
        ours, theirs = reader.histograms("run", tag, max_steps=1000), other.histograms("run", tag, max_steps=1000)
        assert ours.steps.tolist() == theirs.steps.tolist() == list(range(300))
        assert all(a.tobytes() == b.tobytes() for a, b in zip(ours.buckets, theirs.buckets, strict=True))
        assert np.array_equal(ours.summary, theirs.summary, equal_nan=True)


# --- a delivery's many files: their filesystem synced once -----------------------------------------------------------


def test_many_files_are_published_with_one_filesystem_sync_and_a_failed_one_publishes_none(tmp_path, monkeypatch):
    from tau_collector.spool import durable

    if durable.FilesystemSync.open(tmp_path) is None:
        pytest.skip("no syncfs(2) here: each file is synced (the path every other test takes)")
    store = ExpStore(tmp_path / "store", create=True)
    store.whole_filesystem_syncs = True  # as the import's store (a sidecar's never syncs the whole filesystem)
    calls, fsyncs = [], []
    real_sync, real_fsync = durable.FilesystemSync.sync, durable.os.fsync
    monkeypatch.setattr(durable.FilesystemSync, "sync", lambda self: (calls.append(1), real_sync(self)))
    monkeypatch.setattr(durable.os, "fsync", lambda fd: (fsyncs.append(stat.S_ISREG(os.fstat(fd).st_mode)),
                                                         real_fsync(fd)))
    store.publish_files([(f"many/{i % 3}/.keep", b"") for i in range(3)])  # the folders (their parents synced)
    fsyncs.clear()
    files = [(f"many/{i % 3}/f{i}", bytes([i]) * 10) for i in range(durable.SYNCFS_FROM)]
    store.publish_files(files)
    assert len(calls) == 2 and not fsyncs  # the bytes, then the renames: no sync per file or directory
    assert all((store.root / rel).read_bytes() == data for rel, data in files)

    def failing(self):
        raise OSError(5, "syncfs: Input/output error")

    monkeypatch.setattr(durable.FilesystemSync, "sync", failing)
    with pytest.raises(OSError, match="Input/output"):
        store.publish_files([(f"more/f{i}", b"x") for i in range(durable.SYNCFS_FROM)])
    assert not (store.root / "more").exists() or not any((store.root / "more").iterdir())
    store.publish_files([("few/a", b"a")])  # fewer files: synced one by one
    assert True in fsyncs


def test_a_sidecar_s_store_syncs_each_file_even_of_a_large_delivery(tmp_path, monkeypatch):
    # A filesystem-wide sync from the sidecar would flush the training job's own writes (checkpoints) too.
    from tau_collector.spool import durable

    store = ExpStore(tmp_path / "store", create=True)
    assert store.whole_filesystem_syncs is False
    calls, fsyncs = [], []
    monkeypatch.setattr(durable.FilesystemSync, "sync", lambda self: calls.append(1))
    real_fsync = durable.os.fsync
    monkeypatch.setattr(durable.os, "fsync", lambda fd: (fsyncs.append(stat.S_ISREG(os.fstat(fd).st_mode)),
                                                         real_fsync(fd)))
    files = [(f"many/f{i}", bytes([i]) * 10) for i in range(durable.SYNCFS_FROM * 2)]
    store.publish_files(files)
    assert not calls and fsyncs.count(True) == len(files)
    assert all((store.root / rel).read_bytes() == data for rel, data in files)


def test_the_import_s_store_may_sync_its_whole_filesystem(tmp_path):
    from tau_collector.collect.import_pass import StoreImport

    importer = StoreImport(tmp_path / "store", project="p", experiment=None, group=None, clustering="off")
    try:
        assert importer.sink.store.whole_filesystem_syncs is True
    finally:
        importer.close()
