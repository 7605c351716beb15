"""One poll's read of a run for the loss pane: the visible metrics' catalog entries and new points, in one
request to the local Portal's tails route (``/stellar/data/runs/{run}/tails``), else, against a Portal
without it (TauGrid's), the same answer from its v2 reads: the run, its whole catalog and one series read
per metric that moved.
"""

from __future__ import annotations

import dataclasses
from array import array

from taunotebook.client import NotFoundError, PortalClient, Tail, Tails

__all__ = ["MAX_TAIL_METRICS", "ROUTE_NOT_FOUND", "TailReader"]

MAX_TAIL_METRICS = 256  # the Portal's cap on metrics per tails request
ROUTE_NOT_FOUND = "route was not found"  # TauGrid's message for a path it does not serve
STATUS_MESSAGE_TAG = "tau.status.message"


class TailReader:
    """Reads :class:`~taunotebook.client.Tails` for the poller; counts its requests."""

    def __init__(self, client: PortalClient, source: str | None) -> None:
        self.client = client
        self.source = source
        self.tails_available = True  # until the Portal says it has no such route
        self.requests = 0

    def read(self, run: str, since: dict[str, tuple[int | None, int | None]], *, catalog_since: str | None,
             max_points: int, project: str | None) -> Tails:
        """``since`` maps each metric to (the first step wanted or None for a reduced full range, the catalog
        count held or None)."""
        if self.tails_available:
            self.requests += 1
            try:
                return self.client.tails(run, since, catalog_since=catalog_since, max_points=max_points,
                                         project=project, source=self.source)
            except NotFoundError as err:
                if err.message != ROUTE_NOT_FOUND:
                    raise
                self.tails_available = False  # TauGrid's Portal: its v2 reads, one per series
        return self._read_v2(run, since, max_points, project)

    def _read_v2(self, run: str, since: dict, max_points: int, project: str | None) -> Tails:
        info = self.client.run(run, source=self.source)
        catalog = self.client.metrics(run, source=self.source)
        self.requests += 2
        by_name = {m.name: m for m in catalog}
        tails = []
        for name, (start, count) in since.items():
            m = by_name.get(name)
            if m is None:
                tails.append(Tail(name, None, start, False, 0, array("q"), array("d")))
                continue
            if start is not None and count == m.count and start == m.latest_step:
                tails.append(Tail(name, m, start, False, 0, array("q"), array("d")))
                continue
            self.requests += 1
            series = self.client.series(run, name, start_step=start, max_points=max_points, project=project,
                                        source=self.source)
            tails.append(Tail(name, m, start, True, series.source_points, series.steps, series.values))
        warnings = tuple(info.metadata.warnings if info.metadata else ()) + tuple(catalog.metadata.warnings)
        names = tuple(m.name for m in catalog)
        return Tails(metadata=dataclasses.replace(catalog.metadata, warnings=warnings), run_id=run,
                     state=info.state, lifecycle_state=info.lifecycle_state, project=info.project,
                     status_message=info.tags.get(STATUS_MESSAGE_TAG, ""), cursor="", total=len(names),
                     names=names, metrics=tuple(tails))
