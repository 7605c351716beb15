"""The collector reads and projects a file's next batch while it commits the current one: the same chunks,
in the same order, as reading one batch at a time; an error while reading ahead is the collector's error."""

from __future__ import annotations

import dataclasses
import json

import pytest

from fixtures.collector import RecordingSink, options, row
from tau_collector.collect.loop import Collector, CollectorError
from tau_collector.collect.read_ahead import ReadAhead
from tau_collector.sources.history import HistorySource
from tau_collector.sources.read_limits import DEFAULT_LIMITS


def test_read_ahead_returns_the_value_and_raises_the_error():
    assert ReadAhead(lambda: 42).result() == 42

    def fail():
        raise ValueError("bad batch")

    ahead = ReadAhead(fail)
    ahead.wait()
    with pytest.raises(ValueError, match="bad batch"):
        ahead.result()


def _backlog(tmp_path, rows: int):
    history = tmp_path / "hist"
    history.mkdir()
    (history / "h.jsonl").write_text("".join(row(s, loss=1.0 / (s + 1), acc=s / 3) + "\n" for s in range(rows)))


def test_a_many_batch_backlog_is_every_batch_once_in_order(tmp_path):
    _backlog(tmp_path, 1000)
    sink = RecordingSink()
    limits = dataclasses.replace(DEFAULT_LIMITS, batch_records=37)
    result = Collector(options(tmp_path, [sink], limits=limits)).run()
    assert result.chunks == len(sink.chunks) == -(-1000 // 37)
    assert [c.sequence for c in sink.chunks] == list(range(1, result.chunks + 1))
    assert [(e.step, e.metric_name) for e in sink.events()] == [
        (s, name) for s in range(1000) for name in ("acc", "loss")]
    checkpoint = json.loads((tmp_path / "out" / "checkpoint.json").read_text())
    (source,) = checkpoint["sources"].values()
    assert (source["lines"], source["sequence"]) == (1000, result.chunks)


def test_an_error_reading_ahead_stops_the_collector_after_the_chunk_before_it(tmp_path, monkeypatch):
    _backlog(tmp_path, 100)
    calls = []
    read = HistorySource.read

    def failing_read(self, source_input, start, **kw):
        calls.append(start.records)
        if len(calls) == 3:
            raise OSError(5, "Input/output error")
        return read(self, source_input, start, **kw)

    monkeypatch.setattr(HistorySource, "read", failing_read)
    sink = RecordingSink()
    limits = dataclasses.replace(DEFAULT_LIMITS, batch_records=10)
    with pytest.raises((CollectorError, OSError)):
        Collector(options(tmp_path, [sink], limits=limits)).run()
    # The two batches read before the failure were committed, in order; nothing after.
    assert [c.sequence for c in sink.chunks] == [1, 2]
    checkpoint = json.loads((tmp_path / "out" / "checkpoint.json").read_text())
    (source,) = checkpoint["sources"].values()
    assert source["lines"] == 20
