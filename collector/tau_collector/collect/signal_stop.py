"""Stopping on a signal safely: a stop flag a handler can set without a lock, and background threads that leave
SIGTERM/SIGINT to the main thread."""

from __future__ import annotations

import signal
import time

__all__ = ["StopFlag", "leave_stop_signals_to_main_thread"]

STOP_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT})


def leave_stop_signals_to_main_thread() -> None:
    """Called first in a background thread: the kernel then delivers SIGTERM/SIGINT to the main thread.

    Python runs a handler in the main thread only, and only once that thread is interrupted. A signal the kernel
    hands to another thread leaves a main thread that is blocked in ``read`` or ``waitpid`` blocked, and the
    handler never runs (a filter reading an open pipe, a wrapper waiting for its trainer).
    """
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)


class StopFlag:
    """``threading.Event``'s ``set``/``is_set``/``wait`` without its lock.

    Python runs a signal handler in the main thread between two bytecodes, possibly while that thread is
    inside ``Event.wait`` and holds the event's (non-reentrant) lock; ``Event.set`` from the handler then
    waits for that lock forever. Seen: a collector whose wrapper was killed got SIGTERM while waiting for
    file changes and never ended. This flag's ``set`` is one assignment; ``wait`` sleeps in slices of at most
    ``SLICE`` seconds (a stop is seen that much later at most).
    """

    SLICE = 0.05

    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        self._set = True

    def is_set(self) -> bool:
        return self._set

    def wait(self, timeout: float | None = None) -> bool:
        """Until the flag is set or ``timeout`` seconds passed; returns whether it is set."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._set:
            remaining = self.SLICE if deadline is None else min(self.SLICE, deadline - time.monotonic())
            if remaining <= 0:
                break
            time.sleep(remaining)
        return self._set
