"""Compaction in a child process (``python -m``); the environment a store's child processes start with.

Since issue 30 the sidecar merges in a thread of its own process instead (:mod:`.compaction_thread`: a child
was a second interpreter in the sidecar container's memory); :class:`CompactionProcess` remains for a writer
that wants merges out of its process altogether, and :func:`child_environment` serves the clustering child.

After each delivery the writer hands :class:`CompactionProcess` the runs it wrote. One indexed count per
run says whether more than ``policy.min_files`` delivered files have piled up since the last merge; if
so, no child is running and none started in the last ``min_interval`` seconds, one is started::

    python -m tau_collector.expstore.maintain.compaction_process --store DIR --run ID [--run ID ...]

It merges those runs' small files, a bounded merge at a time, until fewer than two are left
(:func:`.compaction.compact_all`), and exits. One child at a time per writer; a child still running
when the next delivery asks is left alone and looked at again on the delivery after it.

A child costs an interpreter (and pyarrow's import, for another writer's files: ~0.5 s of CPU) before it
merges anything: at most one every five minutes keeps that near 0.2 % of a core however fast chunks
arrive, while a live run's files still pile up by minutes, not hours. A child stopped halfway leaves
the store consistent: each merge is one transaction, and readers see the old files or the new one. A
failing child says why on stderr and exits 1; compaction is an optimisation, and the next delivery's
request tries again.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Sequence

from tau_collector.expstore.maintain.compaction import CompactionPolicy, compact_all, new_file_count
from tau_collector.expstore.store import ExpStore, StoreError

__all__ = ["CompactionProcess", "child_environment", "main"]

log = logging.getLogger("tau_collector.compaction")


class CompactionProcess:
    """Starts and watches compaction children for one store."""

    def __init__(self, store: ExpStore, policy: CompactionPolicy, *, min_interval: float = 300.0) -> None:
        self.store = store
        self.policy = policy
        self.min_interval = min_interval
        self._child: subprocess.Popen | None = None
        self._started = -math.inf

    @property
    def running(self) -> bool:
        return self._child is not None and self._child.poll() is None

    def request(self, run_ids: Sequence[str]) -> bool:
        """Start a child for those of ``run_ids`` that are due, unless one is running; True if started."""
        if self._child is not None:
            code = self._child.poll()
            if code is None:
                return False
            self._finished(code)
        if time.monotonic() - self._started < self.min_interval:
            return False
        due = [run_id for run_id in run_ids if new_file_count(self.store, run_id) > self.policy.min_files]
        if not due:
            return False
        self._child = subprocess.Popen(self.command(due), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                       env=child_environment())
        self._started = time.monotonic()
        return True

    def command(self, run_ids: Sequence[str]) -> list[str]:
        p = self.policy
        command = [sys.executable, "-m", __name__, "--store", str(self.store.root),
                   "--small-file-bytes", str(p.small_file_bytes), "--max-merge-rows", str(p.max_merge_rows),
                   "--grace-seconds", str(p.grace_seconds)]
        for run_id in run_ids:
            command += ["--run", run_id]
        return command

    def close(self, timeout: float = 300.0) -> None:
        """Wait for a running child (up to ``timeout`` seconds; past that it is left to finish alone)."""
        if self._child is None:
            return
        try:
            self._finished(self._child.wait(timeout))
        except subprocess.TimeoutExpired:
            log.warning(f"store compaction (pid {self._child.pid}) still running after {timeout:.0f} s; "
                        "leaving it to finish")
            self._child = None

    def _finished(self, code: int) -> None:
        if code != 0:
            log.warning(f"store compaction exited with status {code}; the store is unchanged by it, and the "
                        "next delivery tries again")
        self._child = None


def child_environment() -> dict[str, str]:
    """The child imports this package from where the parent did, whatever its ``PYTHONPATH``."""
    import tau_collector

    env = dict(os.environ)
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(tau_collector.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH", "")) if p)
    return env


def main(argv: Sequence[str] | None = None) -> int:
    from tau_collector.collect.process_memory import bound_process_memory, pandas_kept_out

    parser = argparse.ArgumentParser(prog="python -m " + __name__, description="merge runs' small metric files")
    parser.add_argument("--store", required=True)
    parser.add_argument("--run", action="append", required=True)
    default = CompactionPolicy()
    parser.add_argument("--small-file-bytes", type=int, default=default.small_file_bytes)
    parser.add_argument("--max-merge-rows", type=int, default=default.max_merge_rows)
    parser.add_argument("--grace-seconds", type=float, default=default.grace_seconds)
    args = parser.parse_args(argv)
    bound_process_memory()
    policy = CompactionPolicy(small_file_bytes=args.small_file_bytes, max_merge_rows=args.max_merge_rows,
                              grace_seconds=args.grace_seconds)
    try:
        store = ExpStore(args.store, writable=True)
        with pandas_kept_out():
            for run_id in args.run:
                compact_all(store, run_id, policy=policy)  # pyarrow only for files of another writer
    except (StoreError, OSError, sqlite3.Error) as exc:
        sys.stderr.write(f"tau-collector compaction of {args.store}: {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
