"""The Portal as several worker processes accepting on one socket (``taunotebook portal --workers N``).

One Python process answers about a thousand live-pane polls a second with a core to itself; on a busy
machine, or for more panes, more processes answer more. No heavy imports here: the command's ``--help``
stays fast.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from collections.abc import Callable

__all__ = ["MAX_WORKERS", "serve_workers"]

log = logging.getLogger("taunotebook.portal")

MAX_WORKERS = 16
_RESTARTS = 5  # a worker that keeps dying is a bug to report, not to loop on


def serve_workers(make_server: Callable[[], Callable[[], None]], workers: int,
                  on_started: Callable[[], None] = lambda: None) -> int:
    """Run ``workers`` processes, each ``make_server()()`` (its own app, store reader and SQLite connections),
    all accepting on the listening socket the caller bound before: the kernel hands each new connection
    to one of them. Returns when they have all stopped (SIGINT/SIGTERM to this process stops them).

    Forked, so nothing is pickled and the socket is inherited; the parent holds no threads and no open
    store (build the app in ``make_server``, not before). The store is read-only here and SQLite's WAL lets
    any number of processes read while the collector writes, so the workers share it safely; each keeps
    its own read cache. A worker that dies is started again (at most a few times), and said so in the log.
    ``on_started`` runs once the workers are forked and this process stops them on a signal (the command
    prints its URLs there, so whoever waits for them can also stop the Portal).
    """
    if workers == 1 or not hasattr(os, "fork"):
        run = make_server()
        on_started()
        run()
        return 0
    children: dict[int, int] = {}
    stopping = False

    def start(slot: int) -> None:
        pid = os.fork()
        if pid == 0:  # the worker: its own app, then uvicorn until told to stop
            code = 0
            try:
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                make_server()()
            except BaseException:  # a worker must never return into the parent's code
                log.exception("Portal worker %d failed", slot)
                code = 1
            finally:
                os._exit(code)
        children[pid] = slot

    def stop(signum, _frame) -> None:
        nonlocal stopping
        stopping = True
        for pid in list(children):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    restarts = 0
    try:
        for slot in range(workers):
            if not stopping:
                start(slot)
        on_started()
        while children:
            try:
                pid, status = os.wait()
            except ChildProcessError:
                break
            slot = children.pop(pid, None)
            if slot is None or stopping:
                continue
            code = os.waitstatus_to_exitcode(status)
            if restarts >= _RESTARTS:
                log.error("Portal worker %d exited (%s) and has been restarted %d times: stopping", slot, code,
                          restarts)
                stop(signal.SIGTERM, None)
                continue
            restarts += 1
            log.warning("Portal worker %d exited (%s): starting it again", slot, code)
            start(slot)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    return 0 if stopping or restarts < _RESTARTS else 1
