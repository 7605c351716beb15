"""A collector whose sinks all keep points spools column records: the same store, a record checked on start."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fixtures.collector import RecordingSink, options, row, write_chunk
from fixtures.tb_writers import write_tensorboardx
from tau_collector.collect.loop import Collector, CollectorError
from tau_collector.expstore.read.reader import StoreReader
from tau_collector.expstore.store import ExpStore
from tau_collector.sinks.base import SinkError
from tau_collector.sinks.expstore import ExpstoreSink
from tau_collector.spool.manifest import SpoolError

from .spooled import spooled


class FailingOnce(ExpstoreSink):
    """The expstore, refusing its first history delivery (what a crash between spool and delivery leaves)."""

    def __init__(self, store: Path) -> None:
        super().__init__(store)
        self.failed = False

    def deliver(self, chunk):
        if chunk.kind == "history" and not self.failed:
            self.failed = True
            raise SinkError("store said no", retryable=False)
        super().deliver(chunk)


def _history(tmp_path: Path) -> None:
    write_chunk(tmp_path / "hist", 0, [row(s, loss=1 / (s + 1), acc=s / 10) for s in range(10)])
    write_chunk(tmp_path / "hist", 1, [row(10, loss=0.05, acc=float("nan")), row(11, loss=0.04, acc=1.0)])


def _stored(store: Path) -> dict:
    reader = StoreReader(ExpStore(store))
    out = {}
    for summary in reader.metric_summaries("seed-1"):
        rows = reader.rows("seed-1", summary.metric_name)
        out[summary.metric_name] = (summary.count, rows.step.tolist(), [repr(v) for v in np.asarray(rows.value).tolist()],  # NaN too
                                    np.asarray(rows.wall_time).tolist())
    return out


@pytest.mark.parametrize("source", ["history", "tfevents"])
def test_column_records_and_taugrids_manifests_make_the_same_store(tmp_path, source):
    if source == "history":
        _history(tmp_path)
        extra = {}
    else:
        write_tensorboardx(tmp_path / "tb", [("train/loss", s, 1 / (s + 1), 1_790_000_000 + s) for s in range(50)]
                           + [("eval/acc", s, s / 50, 1_790_000_000.5 + s) for s in range(0, 50, 5)])
        extra = {"history": [], "tfevents": [str(tmp_path / "tb")]}
    stores = {}
    for spool_format in ("columns", "manifest"):
        store = tmp_path / f"store-{spool_format}"
        result = Collector(options(tmp_path, [ExpstoreSink(store)], out=str(tmp_path / f"out-{spool_format}"),
                                   spool_format=spool_format, **extra)).run()
        assert result.chunks >= 1 and result.events >= 12
        out = tmp_path / f"out-{spool_format}"
        assert spooled(out) == []
        stores[spool_format] = (_stored(store), result.events, result.non_finite)
        checkpoint = json.loads((out / "checkpoint.json").read_text())
        for entry in checkpoint["sources"].values():  # TauGrid's checkpoint shape either way
            assert list(entry) == ["path", "file_id", "offset", "prefix_sha256", "sequence", "chunk_digest", "lines",
                                   "updated_at"]
    assert stores["columns"] == stores["manifest"]
    assert stores["columns"][0]  # something was stored


def test_a_column_record_left_by_a_failed_delivery_is_delivered_again_from_the_record(tmp_path):
    _history(tmp_path)
    store = tmp_path / "store"
    with pytest.raises(CollectorError, match="store said no"):
        Collector(options(tmp_path, [FailingOnce(store)])).run()
    (record,) = (tmp_path / "out" / "columns").iterdir()
    assert record.name.startswith(f"{1:020d}-") and record.name.endswith(".columns")
    assert not (tmp_path / "out" / "checkpoint.json").exists()
    # The record holds the points: the history may even be gone, the replay needs only the record.
    for path in (tmp_path / "hist").iterdir():
        path.rename(tmp_path / path.name)
    with pytest.raises(CollectorError, match="disappeared|no history"):
        Collector(options(tmp_path, [ExpstoreSink(store)])).run()
    summaries = {s.metric_name: s.count for s in StoreReader(ExpStore(store)).metric_summaries("seed-1")}
    assert summaries["loss"] == 12 and summaries["acc"] == 12  # 11 finite + the NaN kept beside them
    assert spooled(tmp_path / "out") == []
    for name in ("chunk-000000-1790000000000.jsonl", "chunk-000001-1790000000001.jsonl"):
        (tmp_path / name).rename(tmp_path / "hist" / name)
    Collector(options(tmp_path, [ExpstoreSink(store)])).run()  # nothing new: nothing stored twice
    summaries = {s.metric_name: s.count for s in StoreReader(ExpStore(store)).metric_summaries("seed-1")}
    assert summaries["loss"] == 12


def _left_record(tmp_path: Path) -> Path:
    _history(tmp_path)
    with pytest.raises(CollectorError):
        Collector(options(tmp_path, [FailingOnce(tmp_path / "store")])).run()
    (record,) = (tmp_path / "out" / "columns").iterdir()
    return record


@pytest.mark.parametrize("damage, message", [
    (lambda raw: raw[:-3], "bytes of columns after the header"),
    (lambda raw: raw[:40], "runs past the end of the file"),
    (lambda raw: b"garbage" + raw, "does not start with tau-collector.column_chunk.v1"),
    (lambda raw: raw[:-1] + bytes([raw[-1] ^ 1]), "does not match its name"),
])
def test_a_damaged_column_record_is_refused_naming_the_file(tmp_path, damage, message):
    record = _left_record(tmp_path)
    record.write_bytes(damage(record.read_bytes()))
    with pytest.raises(SpoolError, match=message) as caught:
        Collector(options(tmp_path, [ExpstoreSink(tmp_path / "store")])).run()
    assert str(record) in str(caught.value)
    assert record.exists()  # refused, not removed: nothing it holds is lost


def test_a_column_record_of_another_configuration_is_refused(tmp_path):
    _left_record(tmp_path)
    with pytest.raises(SpoolError, match="different collector configuration"):
        Collector(options(tmp_path, [ExpstoreSink(tmp_path / "store")], project="other")).run()


def test_stray_files_in_the_column_spool_are_fatal_and_interrupted_temp_files_are_removed(tmp_path):
    _history(tmp_path)
    columns = tmp_path / "out" / "columns"
    columns.mkdir(parents=True)
    (columns / ".00000000000000000001-x.columns.tmp-123").write_bytes(b"half")
    Collector(options(tmp_path, [ExpstoreSink(tmp_path / "store")])).run()
    assert spooled(tmp_path / "out") == []
    (columns / "notes.txt").write_text("hello")
    with pytest.raises(SpoolError, match="unexpected file in column spool"):
        Collector(options(tmp_path, [ExpstoreSink(tmp_path / "store")])).run()


def test_an_acknowledged_column_record_is_removed_on_start_without_delivering_it_again(tmp_path, monkeypatch):
    from tau_collector.spool import durable
    _history(tmp_path)
    store = tmp_path / "store"
    real = durable.remove_durable
    # A crash after the checkpoint was written, before the record was removed.
    monkeypatch.setattr("tau_collector.collect.loop.remove_durable",
                        lambda path: None if path.endswith(".columns") else real(path))
    Collector(options(tmp_path, [ExpstoreSink(store)])).run()
    (record,) = (tmp_path / "out" / "columns").iterdir()
    monkeypatch.undo()
    Collector(options(tmp_path, [ExpstoreSink(store)])).run()
    assert not record.exists()
    assert {s.metric_name: s.count for s in StoreReader(ExpStore(store)).metric_summaries("seed-1")}["loss"] == 12


def test_auto_spools_taugrids_manifest_when_a_sink_sends_events(tmp_path):
    _history(tmp_path)
    Collector(options(tmp_path, [ExpstoreSink(tmp_path / "store"), RecordingSink()])).run()
    assert not (tmp_path / "out" / "columns").exists()
    with pytest.raises(CollectorError, match="--spool-format columns needs sinks that keep points"):
        Collector(options(tmp_path, [RecordingSink()], spool_format="columns"))
    with pytest.raises(CollectorError, match="--spool-format must be one of"):
        Collector(options(tmp_path, [RecordingSink()], spool_format="ndjson"))
