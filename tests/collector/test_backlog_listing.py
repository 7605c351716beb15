"""A backlog of closed files no collector read is listed a bounded slice at a time, read in TauGrid's order
(sorted paths), every row once, and a file read before that lies past a slice's end is not taken for vanished."""

from __future__ import annotations

import json
from pathlib import Path

import tau_collector.collect.loop as loop
from fixtures.collector import RecordingSink, row, write_chunk
from fixtures.collector import options as collector_options
from tau_collector.collect.loop import Collector, CollectorOptions
from tau_collector.sources.history import HistorySource
from tau_collector.sources.history_listing import list_history

KEEP = 4


def options(tmp_path: Path, sinks, **changes) -> CollectorOptions:
    return collector_options(tmp_path, sinks, **{"closed_after": 0.0, "keep_entries": KEEP, **changes})


def write_files(directory: Path, first: int, count: int) -> None:
    for index in range(first, first + count):
        write_chunk(directory, index, [row(3 * index + k, loss=1.0 / (index + 1)) for k in range(3)])


def test_a_limited_listing_takes_the_first_new_files_and_the_known_ones_before_the_last(tmp_path):
    for index in range(20):
        (tmp_path / f"f{index:02d}.jsonl").write_text("{}\n")
    (tmp_path / "other.txt").write_text("")
    path = {index: str(tmp_path / f"f{index:02d}.jsonl") for index in range(20)}
    known = {path[3], path[12], path[18]}
    pattern = str(tmp_path / "*.jsonl")

    listing = list_history([pattern], read=known.__contains__, limit=5)
    assert listing.paths == [path[i] for i in (0, 1, 2, 3, 4, 5)]  # 5 new ones, and the known one among them
    assert listing.cut_after == path[5]
    # The first new ones whatever the directory's order: a limit of 1 keeps the smallest.
    assert list_history([pattern], read=known.__contains__, limit=1) == type(listing)([path[0]], path[0])
    # Nothing left out: no cut, and the known ones after the last new one come too.
    whole = list_history([pattern], read=known.__contains__, limit=17)
    assert whole.paths == [path[i] for i in range(20)] and whole.cut_after is None
    assert list_history([pattern]).paths == whole.paths
    # Two patterns matching the same files count each file once.
    twice = list_history([pattern, str(tmp_path / "f1*.jsonl")], read=known.__contains__, limit=16)
    assert twice.paths == whole.paths[:18] and twice.cut_after == path[17]  # 17 new ones, 16 taken
    # Covered files are left out before they count.
    skipped = list_history([pattern], skip=lambda p: p <= path[9], read=known.__contains__, limit=2)
    assert skipped.paths == [path[10], path[11]] and skipped.cut_after == path[11]


def test_a_fresh_collector_reads_a_backlog_a_slice_at_a_time_in_order_and_once(tmp_path, monkeypatch):
    write_files(tmp_path / "hist", 0, 120)
    monkeypatch.setattr(loop, "LISTING_LIMIT", 8)
    listed: list[int] = []
    real_inputs = HistorySource.inputs

    def inputs(self, changed=None):
        found = real_inputs(self, changed)
        listed.append(len(found))
        return found

    monkeypatch.setattr(HistorySource, "inputs", inputs)
    sink = RecordingSink()
    collector = Collector(options(tmp_path, [sink]))
    collector.run()  # one pass: it goes on until a listing takes every file left
    assert len(listed) >= 120 // 8
    assert max(listed) <= 8 + 2 * KEEP  # the slice and the files read before it, never the backlog
    assert [e.step for e in sink.events()] == list(range(360))  # TauGrid's order, every row once
    assert max(collector.per_file_entries().values()) <= 2 * KEEP + 8
    doc = json.loads((tmp_path / "out" / "checkpoint.json").read_text())
    assert len(doc["sources"]) <= 2 * KEEP + 1
    # A restart reads nothing again.
    again = RecordingSink()
    Collector(options(tmp_path, [again])).run()
    assert again.events() == []


def test_a_file_read_before_past_the_slice_is_read_after_the_files_before_it_never_called_vanished(tmp_path,
                                                                                                  monkeypatch):
    monkeypatch.setattr(loop, "LISTING_LIMIT", 4)
    late = tmp_path / "hist" / "b" / "history.jsonl"
    late.parent.mkdir(parents=True)
    late.write_text(row(1000, loss=1.0) + "\n")
    pattern = [str(tmp_path / "hist" / "*" / "*.jsonl")]
    sink = RecordingSink()
    Collector(options(tmp_path, [sink], history=pattern)).run()
    assert [e.step for e in sink.events()] == [1000]
    # Many new files sort before the one read before (directory a < b), and that one grew meanwhile.
    write_files(tmp_path / "hist" / "a", 0, 30)
    with late.open("a") as handle:
        handle.write(row(1001, loss=0.5) + "\n")
    sink = RecordingSink()
    Collector(options(tmp_path, [sink], history=pattern)).run()
    # Its new row comes after every new file before it, as a whole listing would have read them.
    assert [e.step for e in sink.events()] == [*range(90), 1001]
