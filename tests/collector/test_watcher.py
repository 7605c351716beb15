"""The collector's change watcher: changed paths merged as they come, dotfiles ignored, a rescan without news."""

from __future__ import annotations

from tau_collector.collect.signal_stop import StopFlag
from tau_collector.collect.watcher import ChangeWatcher

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
