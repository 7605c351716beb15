"""checkpoint.json stays bounded over a job's life: closed, completely read files fold into one
complete-through entry per directory; nothing folded is read, lost or delivered twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from fixtures.collector import RecordingSink, row, write_chunk
from tau_collector.collect.loop import Collector, CollectorError, CollectorOptions
from tau_collector.spool.checkpoint_folding import COMPLETE_THROUGH_FILE_ID, COMPLETE_THROUGH_PREFIX
from tau_collector.spool.manifest import Manifest, SourceRange

KEEP = 4


def options(tmp_path: Path, sinks, **changes) -> CollectorOptions:
    base = dict(
        run="seed-1", project="demo", experiment="sweep", group="lr", out=str(tmp_path / "out"), sinks=sinks,
        history=[str(tmp_path / "hist" / "*.jsonl")], completion_file=str(tmp_path / "completion.json"),
        closed_after=0.0, keep_entries=KEEP,
    )
    base.update(changes)
    return CollectorOptions(**base)


def write_files(tmp_path: Path, first: int, count: int) -> None:
    for index in range(first, first + count):
        write_chunk(tmp_path / "hist", index, [row(3 * index + k, loss=1.0 / (index + 1)) for k in range(3)])


def checkpoint(tmp_path: Path) -> dict:
    return json.loads((tmp_path / "out" / "checkpoint.json").read_text())


def marks(doc: dict) -> dict:
    return {key: value for key, value in doc["sources"].items() if key.startswith(COMPLETE_THROUGH_PREFIX)}


def test_the_checkpoint_stays_bounded_after_many_files_and_every_row_is_delivered_once(tmp_path):
    sink = RecordingSink()
    sizes = []
    for first in range(0, 300, 30):
        write_files(tmp_path, first, 30)
        Collector(options(tmp_path, [sink])).run()
        sizes.append(len(checkpoint(tmp_path)["sources"]))
    assert max(sizes) <= 2 * KEEP + 1  # the newest files, and one entry for the folded ones
    assert sorted(e.step for e in sink.events()) == list(range(900))
    (mark,) = marks(checkpoint(tmp_path)).values()
    assert mark["file_id"] == COMPLETE_THROUGH_FILE_ID
    assert list(mark) == ["path", "file_id", "offset", "sequence", "chunk_digest", "lines", "updated_at"]
    folded = mark["offset"]
    last = mark["path"].removeprefix(COMPLETE_THROUGH_PREFIX)
    names = sorted(os.listdir(tmp_path / "hist"))
    assert names.index(os.path.basename(last)) + 1 == folded  # every file up to the mark, no other
    assert mark["lines"] == 3 * folded
    assert len(checkpoint(tmp_path)["sources"]) - 1 == 300 - folded


def test_folded_files_are_never_read_again_and_a_full_scan_does_not_stat_them(tmp_path, monkeypatch):
    write_files(tmp_path, 0, 40)
    sink = RecordingSink()
    Collector(options(tmp_path, [sink])).run()
    (mark,) = marks(checkpoint(tmp_path)).values()
    folded = {str(tmp_path / "hist" / name) for name in sorted(os.listdir(tmp_path / "hist"))[:mark["offset"]]}
    stats = []
    real_stat = os.stat
    monkeypatch.setattr(os, "stat", lambda p, *a, **k: stats.append(os.fspath(p)) or real_stat(p, *a, **k))
    collector = Collector(options(tmp_path, [sink]))
    collector._marks_checked = True  # a later full scan, not the first after a start
    collector.run()
    assert not folded & set(stats)
    assert len(sink.events()) == 120


def test_a_file_rewritten_behind_the_mark_is_an_error_naming_it(tmp_path):
    write_files(tmp_path, 0, 40)
    Collector(options(tmp_path, [RecordingSink()])).run()
    first = tmp_path / "hist" / sorted(os.listdir(tmp_path / "hist"))[0]
    with first.open("a") as handle:
        handle.write(row(10_000, loss=0.5) + "\n")
    os.utime(first, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    with pytest.raises(CollectorError, match=f"{first}.*written after the checkpoint recorded"):
        Collector(options(tmp_path, [RecordingSink()])).run()


def test_a_file_that_appears_behind_the_mark_is_an_error_naming_the_directory(tmp_path):
    write_files(tmp_path, 0, 40)
    Collector(options(tmp_path, [RecordingSink()])).run()
    late = tmp_path / "hist" / "chunk-000000-0000000000000.jsonl"  # sorts before every folded name
    late.write_text(row(10_000, loss=0.5) + "\n")
    stamp = os.stat(tmp_path / "hist" / "chunk-000000-1790000000000.jsonl").st_mtime_ns
    os.utime(late, ns=(stamp, stamp))  # copied with its old time: only the count can tell
    with pytest.raises(CollectorError, match=f"in {tmp_path / 'hist'} are named at or before"):
        Collector(options(tmp_path, [RecordingSink()])).run()


def test_a_restart_from_a_checkpoint_with_one_entry_per_file_still_works(tmp_path):
    write_files(tmp_path, 0, 50)
    sink = RecordingSink()
    Collector(options(tmp_path, [sink], closed_after=10**6)).run()  # nothing is old enough: TauGrid's shape
    assert len(checkpoint(tmp_path)["sources"]) == 50 and not marks(checkpoint(tmp_path))
    write_files(tmp_path, 50, 10)
    Collector(options(tmp_path, [sink])).run()
    assert len(checkpoint(tmp_path)["sources"]) <= 2 * KEEP + 1
    assert marks(checkpoint(tmp_path))
    assert sorted(e.step for e in sink.events()) == list(range(180))


def test_a_several_file_manifest_round_trips_and_advances_every_file():
    ranges = [SourceRange(f"/h/chunk-{i}.jsonl", f"1:{i}", 0, 30, 0, 1, "", "ab" * 32) for i in range(3)]
    head = ranges[0]
    manifest = Manifest(
        config_identity="c" * 64, kind="history", sequence=7, source_path=head.source_path,
        source_file_id=head.source_file_id, ndjson=b"x\n", event_count=1, start_offset=0, end_offset=30,
        start_lines=0, end_lines=1, prefix_sha256=head.prefix_sha256, more_sources=tuple(ranges[1:]),
    ).seal()
    again = Manifest.from_bytes(manifest.to_bytes(), "m.json")
    assert again.more_sources == tuple(ranges[1:])
    assert again.compute_manifest_digest() == manifest.manifest_digest


def test_an_acknowledged_pending_chunk_whose_files_were_folded_since_is_dropped_on_start(tmp_path):
    from tau_collector.projection.metric_event import new_metric_event
    from tau_collector.spool.checkpoint import Checkpoint, SourceCheckpoint
    from tau_collector.spool.manifest import Spool, replay

    event = new_metric_event(project="p", experiment_id="e", run_group_id="g", run_id="r", metric_name="loss",
                             step=0, wall_time=1_790_000_000_000_000_000, value=1.0,
                             exported_at=1_790_000_000_000_000_000, source="s")
    hist = str(tmp_path / "hist")
    manifest = Manifest(
        config_identity="c" * 64, kind="history", sequence=3, source_path=f"{hist}/chunk-1.jsonl",
        source_file_id="1:1", ndjson=event.to_ndjson(), event_count=1, start_offset=0, end_offset=30,
        start_lines=0, end_lines=1, prefix_sha256="ab" * 32,
        more_sources=(SourceRange(f"{hist}/chunk-2.jsonl", "1:2", 0, 30, 0, 1, "", "cd" * 32),),
    ).seal()
    spool = Spool(str(tmp_path / "out"))
    path = spool.write_pending(manifest)
    key = COMPLETE_THROUGH_PREFIX + f"{hist}/chunk-2.jsonl"
    checkpoint = Checkpoint("c" * 64, 4, {key: SourceCheckpoint(key, COMPLETE_THROUGH_FILE_ID, 2, "", 3,
                                                                manifest.chunk_digest, 2, "2026-01-01T00:00:00Z")})
    delivered = []
    replay(spool, checkpoint, "c" * 64, delivered.append)
    assert delivered == [] and not os.path.exists(path)


COLLECTOR = textwrap.dedent(
    """
    import dataclasses, json, os, sys
    from tau_collector.collect.loop import Collector, CollectorOptions
    from tau_collector.sources.read_limits import DEFAULT_LIMITS
    from tau_collector.sinks.base import Sink

    root, record, watch = sys.argv[1], sys.argv[2], sys.argv[3] == "watch"

    class FileSink(Sink):
        name = "file"

        def identity(self):
            return "file"

        def deliver(self, chunk):
            if chunk.kind != "history":
                return
            line = json.dumps({"digest": chunk.chunk_digest,
                               "events": [[e.metric_name, e.step] for e in chunk.decoded_events()]})
            with open(record, "a") as handle:
                handle.write(line + "\\n")
                handle.flush()
                os.fsync(handle.fileno())

    Collector(CollectorOptions(
        run="seed-1", project="demo", experiment="sweep", group="lr", out=os.path.join(root, "out"),
        sinks=[FileSink()], history=[os.path.join(root, "hist", "*.jsonl")],
        completion_file=os.path.join(root, "completion.json"), watch=watch, interval=0.2, cpu_budget=0,
        closed_after=0.0, keep_entries=4, limits=dataclasses.replace(DEFAULT_LIMITS, batch_records=7),
    )).run()
    """
)


def recorded(record: Path) -> list[dict]:
    if not record.exists():
        return []
    out = []
    for line in record.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            pass  # the line being written when the process was killed
    return out


def wait_for(proc: subprocess.Popen, condition, what: str) -> None:
    deadline = time.monotonic() + 120  # a hang guard only: the test waits on progress, not on time
    while not condition():
        if proc.poll() is not None:
            raise AssertionError(f"the collector exited ({proc.returncode}) before: {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"the collector never got to: {what}")
        time.sleep(0.01)


def test_kill_9_around_folds_loses_and_duplicates_nothing(tmp_path):
    record = tmp_path / "record.ndjson"
    script = tmp_path / "collector.py"
    script.write_text(COLLECTOR)
    written = 0
    for cycle in range(8):
        write_files(tmp_path, written, 30)
        written += 30
        before = len(recorded(record))
        marks_before = set(marks(checkpoint(tmp_path))) if (tmp_path / "out" / "checkpoint.json").exists() else set()
        proc = subprocess.Popen([sys.executable, str(script), str(tmp_path), str(record), "watch"])
        try:
            if cycle % 2:  # right after a fold reached the checkpoint
                def folded(known=frozenset(marks_before)):
                    try:
                        return set(marks(checkpoint(tmp_path))) - known
                    except (FileNotFoundError, json.JSONDecodeError):
                        return False
                wait_for(proc, folded, "a fold")
            else:  # in the middle of a drain, after a few chunks
                wait_for(proc, lambda wanted=before + 1 + cycle: len(recorded(record)) >= wanted, "a delivery")
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
    (tmp_path / "completion.json").write_text("")
    subprocess.run([sys.executable, str(script), str(tmp_path), str(record), "once"], check=True)
    chunks = {entry["digest"]: entry["events"] for entry in recorded(record)}  # a re-delivery is idempotent
    events = sorted((name, step) for events in chunks.values() for name, step in events)
    assert events == [("loss", step) for step in range(3 * written)]
    assert len(checkpoint(tmp_path)["sources"]) <= 2 * KEEP + 1


def test_a_catch_up_drain_over_many_closed_files_folds_as_it_goes(tmp_path):
    """A restarted sidecar reading a backlog of closed files in one drain holds no entry per file: the checkpoint,
    and what the collector keeps in memory per file, stay near ``2 * keep_entries`` entries all through the drain
    (issue 30: the first one-pass collector over 5,000 files held one of each per file until the drain ended)."""
    import dataclasses

    from tau_collector.sources.read_limits import DEFAULT_LIMITS

    write_files(tmp_path, 0, 200)
    sizes = []

    def seen(chunk) -> None:
        if chunk.kind == "history":  # the checkpoint as this chunk's commit left it (read at the next one)
            sizes.append(len(checkpoint(tmp_path)["sources"]) if (tmp_path / "out" / "checkpoint.json").exists()
                         else 0)

    sink = RecordingSink()
    collector = Collector(options(tmp_path, [sink], on_delivered=seen,
                                  limits=dataclasses.replace(DEFAULT_LIMITS, batch_records=7)))
    collector.run()
    assert len(sizes) >= 50  # many chunks in the one drain
    assert max(sizes) <= 2 * KEEP + 4  # files of the chunk being committed, the ready ones, one mark
    assert sorted(e.step for e in sink.events()) == list(range(600))
    assert len(checkpoint(tmp_path)["sources"]) <= 2 * KEEP + 1
    per_file = collector.per_file_entries()
    assert max(per_file.values()) <= 2 * KEEP + 1, per_file


def test_a_restart_lists_only_the_files_after_the_mark(tmp_path, monkeypatch):
    """A sidecar restarted on a job with many folded files holds none of them: the full listing the first drain
    makes (and every later one) returns only the files after the mark, whatever the number folded."""
    from tau_collector.sources.history import HistorySource

    listed = []
    real_inputs = HistorySource.inputs

    def inputs(self, changed=None):
        found = real_inputs(self, changed)
        listed.append(len(found))
        return found

    sink = RecordingSink()
    for first, files in ((0, 40), (40, 400)):
        write_files(tmp_path, first, files - first)
        Collector(options(tmp_path, [sink])).run()
        folded = next(iter(marks(checkpoint(tmp_path)).values()))["offset"]
        assert folded >= files - 2 * KEEP
        listed.clear()
        monkeypatch.setattr(HistorySource, "inputs", inputs)
        Collector(options(tmp_path, [sink])).run()
        monkeypatch.setattr(HistorySource, "inputs", real_inputs)
        assert listed and max(listed) <= 2 * KEEP, (files, listed)
    assert sorted(e.step for e in sink.events()) == list(range(1200))


def test_the_run_end_registers_every_file_a_batch_at_a_time_and_remembers_none(tmp_path, monkeypatch):
    """Once the run ended every input file is registered with its digest, folded ones too, as the listing goes:
    batches of KEEP_BATCH (not the job's whole list at once: 200,000 rows held at the end), nothing kept per file."""
    import tau_collector.collect.loop as loop
    from tau_collector.collect.delivery import Delivery

    write_files(tmp_path, 0, 40)
    Collector(options(tmp_path, [RecordingSink()])).run()  # most folded
    calls = []
    monkeypatch.setattr(Delivery, "keep_run_files",
                        lambda self, run_id, files, *, closed: calls.append((closed, [f.path for f in files])))
    monkeypatch.setattr(loop, "KEEP_BATCH", 8)
    write_files(tmp_path, 40, 5)
    (tmp_path / "completion.json").write_text("")
    collector = Collector(options(tmp_path, [RecordingSink()]))
    collector.run()
    at_end = [paths for closed, paths in calls if closed]
    assert len(at_end) == 6 and max(map(len, at_end)) == 8
    registered = [path for paths in at_end for path in paths]
    assert sorted(registered) == sorted(str(p) for p in (tmp_path / "hist").iterdir())
    assert len(collector._kept) <= 5
