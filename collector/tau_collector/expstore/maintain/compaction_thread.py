"""Compaction in a thread of the writer's own process, without pyarrow: the sidecar's way (issue 30).

After each delivery (of points or of media) the writer hands :class:`CompactionThread` the runs it wrote. One
indexed count per run says whether more than ``policy.min_files`` delivered files have piled up since the last
merge, and one query whether a histogram or text tag has enough small entries to merge
(:func:`.media_compaction.media_compaction_due`: a job that logs only media is compacted too); if so, no
compaction is running and none started in the last ``min_interval`` seconds, a thread merges those runs' small
files, a bounded merge at a time (:func:`.compaction.compact_all`, then the media), and ends.

Why a thread and not a child process: the sidecar's memory budget (80 MB) counts its whole process tree.
A child with pyarrow was ~118 MB on its own; a child with numpy alone is ~35 MB before it merges anything,
beside a collector of ~55 MB. In the collector's process a merge costs only its rows (at most
``policy.max_merge_rows``, a few MB), read by :mod:`..format.parquet_reader` and written by
:mod:`..format.parquet_encoder`, both numpy, which the collector has loaded already; and no interpreter
starts (a child cost ~0.5 s of CPU before it merged anything). A file of another Parquet writer is left
where it is (``pyarrow_fallback=False``) for ``tau-collector store compact`` to merge, out of the sidecar.

A merge is one transaction, as in a child: the process killed in the middle leaves readers the old files
or the new one, and what it published but did not register is swept by the next writer or compaction
(:mod:`.leftovers`). A failure is logged and the next delivery's request tries again.

The same thread clusters live wide runs by metric after compacting them (:func:`.live_clusters.cluster_live`,
issue 30 §5): one bounded pass per run and request, with the same reader and encoder, so a cold read of one
metric of a 10,000-metric run opens its range's base and the run's delta (or tiered deltas), not every file an hour
of appends made.
"""

from __future__ import annotations

import logging
import math
import sqlite3
import threading
import time
from collections.abc import Sequence

from tau_collector.expstore.maintain.compaction import CompactionPolicy, compact_all, new_file_count
from tau_collector.expstore.maintain.live_clusters import LivePolicy, cluster_live, live_clustering_due
from tau_collector.expstore.maintain.media_compaction import media_compaction_due, media_policy
from tau_collector.expstore.store import ExpStore, StoreError

__all__ = ["CompactionThread"]

log = logging.getLogger("tau_collector.compaction")


class CompactionThread:
    """Starts and watches one compaction thread at a time for one store."""

    def __init__(self, store: ExpStore, policy: CompactionPolicy, *, min_interval: float = 60.0,
                 clustering: LivePolicy | None = None) -> None:
        self.store = store
        self.policy = policy
        self.clustering = clustering or LivePolicy(leftover_grace_seconds=policy.leftover_grace_seconds)
        self.min_interval = min_interval
        self._thread: threading.Thread | None = None
        self._started = -math.inf

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def request(self, run_ids: Sequence[str]) -> bool:
        """Start a thread for those of ``run_ids`` that are due, unless one is running; True if started."""
        if self.running or time.monotonic() - self._started < self.min_interval:
            return False
        media = media_policy(self.policy.media_merge_rows)
        due = [run_id for run_id in run_ids if new_file_count(self.store, run_id) > self.policy.min_files
               or media_compaction_due(self.store, run_id, media)
               or live_clustering_due(self.store, run_id, self.clustering)]
        if not due:
            return False
        self._thread = threading.Thread(target=self._compact, args=(due,), name="tau-compaction", daemon=True)
        self._started = time.monotonic()
        self._thread.start()
        return True

    def _compact(self, run_ids: list[str]) -> None:
        try:
            for run_id in run_ids:
                compact_all(self.store, run_id, policy=self.policy, pyarrow_fallback=False)
                cluster_live(self.store, run_id, self.clustering)
        except (StoreError, OSError, sqlite3.Error, ValueError) as exc:
            log.warning(f"store compaction of {self.store.root} stopped: {exc}; the next delivery tries again")
        finally:
            self.store.close()  # this thread's connection

    def close(self, timeout: float = 300.0) -> None:
        """Wait for a running merge (up to ``timeout`` seconds; past that it is left to the process's end)."""
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.warning(f"store compaction still running after {timeout:.0f} s; leaving it")
            self._thread = None
