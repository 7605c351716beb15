"""Run a ``tau-collector`` command and stop it at its Nth durability point (a test harness, run as a script).

    python crash_points.py MODE N LOG -- collect --run ... (tau-collector's own arguments)
    python crash_points.py sweep TOTAL LOG -- collect --out {work}/out ...
    python crash_points.py sweep N1,N2,... LOG -- collect --out {work}/out ...

A durability point is the instant just before, or just after, each operation that makes something
durable or visible: ``os.fsync``/``os.fdatasync`` and a filesystem's ``syncfs`` (so "before" is right
after the write it syncs), ``os.rename``/``os.replace``/``os.link``/``os.unlink`` (pathlib's renames and
unlinks go through them) and every SQLite ``COMMIT`` (where ``synchronous`` decides what is on disk). They are
numbered 1, 2, ... in the order the process meets them. At point N:

- ``exit``: append the point to LOG and ``os._exit(137)``, what ``kill -9`` leaves (no cleanup, no
  flush of Python buffers);
- ``pause``: append the point to LOG and block until the test kills the process, so a test can kill
  on observed progress rather than after a guessed sleep;
- ``count`` (N ignored): run to the end and append the number of points met to LOG;
- ``trace`` (N ignored): run to the end, appending every point to LOG (to read the order).

``sweep`` does, for each N in 1..TOTAL (or each N listed), an ``exit`` at N and then a restart without stops, each in a
process forked from this one (``{work}`` in the arguments becomes ``LOG``'s directory ``/stop-NNN``):
the interpreter and the collector are imported once, not twice per point. The stop's point is
appended to ``stop-NNN/point``, the restart's exit code and standard output to ``stop-NNN/restart``.

Operations inside SQLite (its own writes and syncs) are not seen one by one; the COMMIT around them is.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import sys
import threading

_lock = threading.Lock()
_seen = 0


def _install(mode: str, stop_at: int, log: str) -> None:
    def point(when: str, name: str, arg: object) -> None:
        global _seen
        with _lock:
            _seen += 1
            if mode == "trace":
                with open(log, "a") as handle:
                    handle.write(f"{_seen} {when} {name} {arg}\n")
            if mode in ("count", "trace") or _seen != stop_at:
                return
            with open(log, "a") as handle:
                handle.write(f"{_seen} {when} {name} {arg}\n")
            if mode == "exit":
                os._exit(137)
        while True:  # pause: the test kills us
            signal.pause()

    def wrap(name: str):
        real = getattr(os, name)

        def op(*args, **kwargs):
            point("before", name, args[0] if args else "")
            result = real(*args, **kwargs)
            point("after", name, args[0] if args else "")
            return result

        setattr(os, name, op)

    for name in ("fsync", "fdatasync", "rename", "replace", "link", "unlink"):
        wrap(name)

    from tau_collector.spool.durable import FilesystemSync  # a delivery of many files syncs their filesystem

    real_syncfs = FilesystemSync.sync

    def syncfs(self):
        point("before", "syncfs", self.directory)
        real_syncfs(self)
        point("after", "syncfs", self.directory)

    FilesystemSync.sync = syncfs

    class Connection(sqlite3.Connection):
        def execute(self, sql, *args, **kwargs):
            if not sql.lstrip().upper().startswith("COMMIT"):
                return super().execute(sql, *args, **kwargs)
            point("before", "COMMIT", "")
            result = super().execute(sql, *args, **kwargs)
            point("after", "COMMIT", "")
            return result

    real_connect = sqlite3.connect

    def connect(*args, **kwargs):
        kwargs.setdefault("factory", Connection)
        return real_connect(*args, **kwargs)

    sqlite3.connect = connect


def _run(argv: list[str]) -> int:
    from tau_collector.cli import main as collector_main

    try:
        return collector_main(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1


def _forked(target) -> int:
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = target()
        finally:
            sys.stdout.flush()
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def _sweep(points: list[int], log: str, template: list[str]) -> int:
    import tau_collector.cli  # noqa: F401 - imported once, before the forks

    for n in points:
        work = os.path.join(os.path.dirname(log), f"stop-{n:03d}")
        os.makedirs(work)
        argv = [a.replace("{work}", work) for a in template]

        def stop(n=n, work=work, argv=argv) -> int:
            _install("exit", n, os.path.join(work, "point"))
            return _run(argv)

        def restart(work=work, argv=argv) -> int:
            out = os.open(os.path.join(work, "stdout"), os.O_WRONLY | os.O_CREAT, 0o644)
            os.dup2(out, 1)
            return _run(argv)

        stopped = _forked(stop)
        restarted = _forked(restart)
        with open(os.path.join(work, "restart"), "w") as handle:
            handle.write(f"{stopped} {restarted}\n")
    return 0


def main() -> int:
    mode, which, log = sys.argv[1], sys.argv[2], sys.argv[3]
    argv = sys.argv[sys.argv.index("--") + 1:]
    if mode == "sweep":
        points = [int(p) for p in which.split(",")] if "," in which else list(range(1, int(which) + 1))
        return _sweep(points, log, argv)
    n = int(which)
    _install(mode, n, log)
    code = _run(argv)
    if mode in ("count", "trace"):
        with open(log, "a") as handle:
            handle.write(f"{_seen}\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
