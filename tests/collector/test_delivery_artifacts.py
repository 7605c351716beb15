"""A run's artifacts reach a sink one way (``Sink.put_artifacts``) from the collector's two callers, each with its
own rules: the files the run is read from back off and retry as a chunk does; its checkpoints are tried once."""

from __future__ import annotations

import hashlib
import sqlite3

import pytest

from tau_collector.collect.delivery import Delivery, DeliveryError
from tau_collector.expstore import StoreReader
from tau_collector.reads.rows import ArtifactRow
from tau_collector.sinks.base import RunFile, Sink, SinkError
from tau_collector.sinks.expstore import ExpstoreSink


class Waits:
    """A stop flag that records the back-off delays instead of sleeping them."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def wait(self, delay: float) -> bool:
        self.delays.append(delay)
        return False


class ArtifactSink(Sink):
    name = "artifacts"
    keeps_artifacts = True

    def __init__(self, failures: int = 0, retryable: bool = True) -> None:
        self.failures, self.retryable = failures, retryable
        self.calls: list[list[ArtifactRow]] = []

    def identity(self) -> str:
        return "memory"

    def deliver(self, chunk) -> None:
        pass

    def put_artifacts(self, rows: list[ArtifactRow]) -> None:
        self.calls.append(rows)
        if self.failures:
            self.failures -= 1
            raise SinkError("database is locked", retryable=self.retryable)


class MetricsOnly(ArtifactSink):
    name = "metrics-only"
    keeps_artifacts = False


def delivery(*sinks: Sink, retry: bool = True) -> tuple[Delivery, Waits, list[str]]:
    waits, logged = Waits(), []
    return Delivery(list(sinks), retry=retry, backoff=0.5, stop=waits, log=logged.append), waits, logged


@pytest.fixture
def files(tmp_path) -> list[RunFile]:
    (tmp_path / "history.jsonl").write_bytes(b'{"_step": 0, "loss": 1}\n')
    return [RunFile(str(tmp_path / "history.jsonl"), "history.jsonl", "metrics-jsonl"),
            RunFile(str(tmp_path / "deleted.jsonl"), "deleted.jsonl", "metrics-jsonl")]


def test_the_files_a_run_is_read_from_back_off_and_retry_then_arrive_with_digest_and_size(files):
    sink, quiet = ArtifactSink(failures=3), MetricsOnly()
    d, waits, logged = delivery(quiet, sink)
    d.keep_run_files("r", files, closed=True)
    assert waits.delays == [0.5, 1.0, 2.0] and len(sink.calls) == 4 and quiet.calls == []
    assert logged[0] == ("delivery to artifacts failed (database is locked); the registration stays spooled, "
                         "retrying in 0.5s")
    (row,) = sink.calls[-1]  # the deleted file could not be hashed: it was registered when first read
    data = open(files[0].path, "rb").read()
    assert (row.run_id, row.type, row.name, row.uri) == ("r", "metrics-jsonl", "history.jsonl", files[0].path)
    assert (row.digest, row.size_bytes) == ("sha256:" + hashlib.sha256(data).hexdigest(), len(data))
    d.keep_run_files("r", files, closed=False)
    assert [(r.digest, r.size_bytes) for r in sink.calls[-1]] == [(None, None), (None, None)]


@pytest.mark.parametrize(("retry", "retryable"), [(False, True), (True, False)])
def test_the_files_not_registered_say_which_and_where(files, retry, retryable):
    sink = ArtifactSink(failures=1, retryable=retryable)
    d, waits, _ = delivery(sink, retry=retry)
    with pytest.raises(DeliveryError) as caught:
        d.keep_run_files("r", files, closed=False)
    assert str(caught.value) == "deliver 2 files of run r to artifacts: database is locked"
    assert waits.delays == [] and len(sink.calls) == 1


def test_checkpoints_are_tried_once_and_a_failure_says_how_many(tmp_path):
    sink, quiet = ArtifactSink(failures=1), MetricsOnly()
    d, waits, _ = delivery(quiet, sink, retry=True)
    rows = [ArtifactRow(run_id="r", type="checkpoint", uri="/ckpt/1", name="step-1", created_at="now")]
    with pytest.raises(DeliveryError) as caught:
        d.put_artifacts(rows)
    assert str(caught.value) == "register 1 artifact(s) in artifacts: database is locked"
    assert waits.delays == [] and len(sink.calls) == 1 and quiet.calls == []
    d.put_artifacts(rows)
    assert sink.calls[-1] == rows


def test_both_reach_the_store_through_put_artifacts_and_a_locked_index_is_retryable_in_words(tmp_path, files):
    sink = ExpstoreSink(tmp_path / "store")
    d, _, _ = delivery(sink)
    d.keep_run_files("r", files[:1], closed=True)
    d.put_artifacts([ArtifactRow(run_id="r", type="checkpoint", uri="/ckpt/1", name="step-1", created_at="now")])
    assert sorted(r.type for r in StoreReader(tmp_path / "store").artifacts("r")) == ["checkpoint", "metrics-jsonl"]
    locker = sqlite3.connect(tmp_path / "store" / "index.sqlite", timeout=0)
    locker.execute("BEGIN IMMEDIATE")
    try:
        sink.store.connection().execute("PRAGMA busy_timeout = 0")
        with pytest.raises(SinkError) as caught:
            sink.put_artifacts([ArtifactRow(run_id="r", type="checkpoint", uri="/ckpt/2", name="step-2",
                                            created_at="now")])
    finally:
        locker.rollback()
        sink.close()
    assert caught.value.retryable
    assert str(caught.value).startswith(f"expstore {(tmp_path / 'store').absolute()}: artifacts: database is locked")
