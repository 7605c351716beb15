"""The collector's stop request is safe to make from a signal handler (it takes no lock)."""

from __future__ import annotations

import os
import signal
import threading

from tau_collector.collector import Collector
from tau_collector.sinks.expstore import ExpstoreSink
from tau_collector.stop_flag import StopFlag

from ..polling import DEADLINE
from .test_collect import options


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
