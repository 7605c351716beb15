"""A stop request that a signal handler can make safely: set without a lock, waited on by polling."""

from __future__ import annotations

import time

__all__ = ["StopFlag"]


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
