"""The wait between a watching collector's drains: the CPU budget counts delivering appends and the rest of the
process (compaction, watcher), within its bounds."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from fixtures.collector import RecordingSink, options, row
from tau_collector.collect.loop import Collector
from tau_collector.collect.options import MAX_BUDGET_WAIT, NEW_FILES_MAX_WAIT, drain_wait
from tau_collector.spool.checkpoint import Checkpoint
from tau_collector.spool.durable import make_dirs


def test_background_cpu_lengthens_the_wait_within_its_bounds(tmp_path: Path) -> None:
    o = options(tmp_path, [RecordingSink()], cpu_budget=0.03)
    assert drain_wait(o, 0.015, 0.015) == pytest.approx(0.5)
    assert drain_wait(o, 0.015, 0.015, 0.009) == pytest.approx(0.8)  # a merge ran in the compaction thread
    assert drain_wait(o, 0.015, 0.015, 0.5) == MAX_BUDGET_WAIT
    # a drain of new files only: the shorter bound, with the background counted too
    assert drain_wait(o, 0.0, 0.003) == pytest.approx(0.1)
    assert drain_wait(o, 0.0, 0.003, 0.003) == pytest.approx(0.2)
    assert drain_wait(o, 0.0, 0.003, 0.5) == NEW_FILES_MAX_WAIT


def test_without_a_budget_only_the_batch_wait_counts(tmp_path: Path) -> None:
    o = options(tmp_path, [RecordingSink()], cpu_budget=0, batch_wait=0.25)
    assert drain_wait(o, 0.5, 0.5, 0.5) == 0.25
    assert drain_wait(options(tmp_path, [RecordingSink()], cpu_budget=0.03, batch_wait=2.0), 0.5, 0.5, 0.5) == 2.0


class _BusySink(RecordingSink):
    """Spends ``cpu`` seconds of CPU on each delivery, as a store write does."""

    def __init__(self, cpu: float) -> None:
        super().__init__()
        self.cpu = cpu

    def deliver(self, chunk) -> None:
        until = time.process_time() + self.cpu
        while time.process_time() < until:
            pass
        super().deliver(chunk)


def test_delivering_an_append_counts_as_cpu_spent_on_it(tmp_path: Path) -> None:
    sink = _BusySink(0.05)
    collector = Collector(options(tmp_path, [sink], cpu_budget=0.03))
    history = tmp_path / "hist" / "history.jsonl"
    history.parent.mkdir()
    history.write_text(row(0, loss=1.0) + "\n")
    make_dirs(str(tmp_path / "out"))
    checkpoint, _ = Checkpoint.load(collector.spool.checkpoint_path, collector.config_identity)

    appended_cpu, drain_cpu = collector._drain(checkpoint, final=False)  # a new file: not an append
    assert len(sink.chunks) == 1
    assert appended_cpu == 0.0 and drain_cpu >= 0.05

    with history.open("a") as handle:
        handle.write(row(1, loss=0.5) + "\n")
    appended_cpu, drain_cpu = collector._drain(checkpoint, final=False)
    assert len(sink.chunks) == 2
    assert appended_cpu >= 0.05  # the chunk's delivery, not only reading the appended row
    assert drain_cpu >= appended_cpu
