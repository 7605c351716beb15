"""The collector's change watcher: changed paths merged as they come, dotfiles ignored, a rescan without news,
the collector's own writes ignored, the completion file looked for rather than its directory watched."""

from __future__ import annotations

import os

from fixtures.collector import options
from tau_collector.collect.loop import Collector
from tau_collector.collect.signal_stop import StopFlag
from tau_collector.collect.watcher import ChangeWatcher
from tau_collector.sinks.expstore import ExpstoreSink

from ..polling import DEADLINE, wait_until


def test_changes_made_while_the_collector_drains_are_one_set_of_paths_not_a_backlog(tmp_path):
    watcher = ChangeWatcher([str(tmp_path)])
    try:
        history, other = tmp_path / "history.jsonl", tmp_path / "other.jsonl"
        for index in range(300):  # a job appending while the collector is busy elsewhere
            with open(history if index % 3 else other, "a") as handle:
                handle.write(f'{{"_step": {index}}}\n')
        # What is kept is the changed paths, whatever the number of notifications.
        wait_until(lambda: watcher._changed == {str(history), str(other)}, "both files reported")
        assert watcher.wait(DEADLINE, StopFlag()) == {str(history), str(other)}
    finally:
        watcher.close()


def test_a_dotfile_is_not_news_its_rename_is(tmp_path):
    watcher = ChangeWatcher([str(tmp_path)])
    try:
        hidden = tmp_path / ".chunk-1.jsonl.tmp"
        hidden.write_text('{"_step": 1}\n')
        assert watcher.wait(0.5, StopFlag()) is None  # the interval passes without news: rescan everything
        hidden.rename(tmp_path / "chunk-1.jsonl")
        assert watcher.wait(DEADLINE, StopFlag()) == {str(tmp_path / "chunk-1.jsonl")}
    finally:
        watcher.close()


def test_a_stop_ends_the_wait(tmp_path):
    watcher = ChangeWatcher([str(tmp_path)])
    stop = StopFlag()
    stop.set()
    try:
        (tmp_path / "chunk-1.jsonl").write_text("")
        assert watcher.wait(DEADLINE, stop) is None  # a stop wins over news: the collector ends
    finally:
        watcher.close()


def test_the_collectors_own_writes_are_not_news(tmp_path):
    own = tmp_path / "store"
    own.mkdir()
    watcher = ChangeWatcher([str(tmp_path)], ignore=[str(own)])
    try:
        (own / "index.sqlite-wal").write_text("x")  # a drain's own index, spool and files ...
        (own / "metrics").mkdir()
        (own / "metrics" / "metrics-1.parquet").write_text("x")
        (tmp_path / "chunk-1.jsonl").write_text('{"_step": 1}\n')  # ... and the job's new file
        assert watcher.wait(DEADLINE, StopFlag()) == {str(tmp_path / "chunk-1.jsonl")}
        (own / "metrics" / "metrics-2.parquet").write_text("x")
        assert watcher.wait(0.5, StopFlag()) is None  # nothing but its own writes: no news, the interval passes
    finally:
        watcher.close()


def test_a_file_looked_for_is_news_when_it_appears_its_directory_unwatched(tmp_path):
    (tmp_path / "hist").mkdir()
    completion = tmp_path / "completion.json"
    watcher = ChangeWatcher([str(tmp_path / "hist")], files=[str(completion)])
    try:
        (tmp_path / "job-output.log").write_text("x")  # beside the completion file: not watched
        assert watcher.wait(0.5, StopFlag()) is None
        completion.write_text("")
        assert watcher.wait(DEADLINE, StopFlag()) == {str(completion)}
    finally:
        watcher.close()


def test_the_spool_and_store_are_ignored_unless_a_source_reads_there(tmp_path):
    store = str(tmp_path / "store")
    (tmp_path / "hist").mkdir()
    apart = Collector(options(tmp_path, [ExpstoreSink(store)]))
    assert apart._own_directories() == [str(tmp_path / "out"), store]
    assert apart._watch_roots() == [str(tmp_path / "hist")]  # not the completion file's directory
    inside = Collector(options(tmp_path, [ExpstoreSink(store)], history=[str(tmp_path / "out" / "h" / "*.jsonl")]))
    assert inside._own_directories() == [store]  # history under --out: its changes must wake the collector
    below = Collector(options(tmp_path, [ExpstoreSink(store)], history=[os.path.join(store, "*.jsonl")]))
    assert below._own_directories() == [str(tmp_path / "out")]
