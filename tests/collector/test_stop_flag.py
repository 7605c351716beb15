"""Stopping on a signal: the collector's stop request is safe to make from a signal handler (it takes no lock),
and background threads leave SIGTERM/SIGINT to the main thread."""

from __future__ import annotations

import os
import signal
import threading

from fixtures.collector import options
from tau_collector.collect.loop import Collector
from tau_collector.collect.signal_stop import StopFlag
from tau_collector.job.history_writer import HistoryWriter
from tau_collector.job.system_sampler import SystemSampler
from tau_collector.sinks.expstore import ExpstoreSink

from ..polling import DEADLINE, wait_until


def test_a_stop_set_by_a_signal_handler_ends_a_wait_in_progress():
    flag = StopFlag()
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: flag.set())
    try:
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGUSR1)).start()
        assert flag.wait(DEADLINE) is True
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert StopFlag().wait(0.01) is False  # a wait with nothing set ends at its timeout


def test_the_collectors_stop_holds_no_lock_a_handler_could_wait_for(tmp_path):
    # threading.Event.set takes the lock Event.wait holds: from a handler that interrupted the wait, the
    # main thread waited for itself forever (a collector never ended after its wrapper was killed).
    collector = Collector(options(tmp_path, [ExpstoreSink(tmp_path / "store")]))
    assert isinstance(collector._stop, StopFlag)
    assert not hasattr(collector._stop, "_cond")
    collector.stop()
    assert collector._stop.wait(0) is True


def blocked_signals(thread: threading.Thread) -> set[int]:
    """The signals ``thread`` blocks, as the kernel sees them (its SigBlk mask)."""
    with open(f"/proc/self/task/{thread.native_id}/status") as status:
        mask = int(next(line for line in status if line.startswith("SigBlk:")).split()[1], 16)
    return {number for number in range(1, 65) if mask >> (number - 1) & 1}


def test_background_threads_leave_sigterm_and_sigint_to_the_main_thread(tmp_path):
    # A stop signal the kernel hands to a background thread leaves a main thread blocked in read()/waitpid()
    # blocked: the filter's and the wrapper's threads block both, so the main thread always gets them.
    writer = HistoryWriter(tmp_path / "history")
    sampler = SystemSampler(str(tmp_path / "system"), os.getpid(), 3600).start()
    try:
        for thread in (writer._timer, sampler._thread, sampler._writer._timer):
            # the thread blocks them as its first step
            wait_until(lambda thread=thread: {signal.SIGTERM, signal.SIGINT} <= blocked_signals(thread),
                       f"{thread.name} to block SIGTERM and SIGINT")
        assert not {signal.SIGTERM, signal.SIGINT} & blocked_signals(threading.main_thread())
    finally:
        sampler.stop()
        writer.close()
