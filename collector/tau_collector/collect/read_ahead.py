"""Reading and projecting a file's next batch while the current chunk is spooled and delivered.

A one-pass ``collect`` of a backlog spends much of each chunk waiting: the pending manifest's fsyncs,
the store's. Nothing of the next batch depends on that chunk being acknowledged (its start offset and
prefix hash are known once the current batch is read), and reading and projecting keep nothing
durable, so the collector starts them in a thread while it commits the current chunk, in TauGrid's
order as before. A crash loses only work that was never acknowledged; an error in the thread is
raised where the collector takes the result, as if it had read the batch itself.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["ReadAhead"]

T = TypeVar("T")


class ReadAhead(Generic[T]):
    """``work()`` running in a daemon thread; :meth:`result` waits for it and returns or raises its outcome."""

    def __init__(self, work: Callable[[], T]) -> None:
        self._work = work
        self._value: T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="tau-collector-read-ahead", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._work()
        except BaseException as exc:  # handed to the caller of result()
            self._error = exc

    def result(self) -> T:
        self._thread.join()
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        return self._value  # type: ignore[return-value]

    def wait(self) -> None:
        """Let the work finish, its outcome unused (the collector is giving up on this input)."""
        self._thread.join()
