"""The loss pane's points: what the browser holds of each (run, metric) mirrored in the kernel, and the binary
"points" messages that keep it so (resets, appends with last-wins, zoomed ranges, non-finite marks and wall times;
the contract in :mod:`taunotebook.pane`)."""

from __future__ import annotations

import time
from array import array
from collections.abc import Callable, Iterable
from typing import Any

from taunotebook.client import NotFoundError, PortalClient, PortalError, Series, Tail
from taunotebook.pane_held import Held, buffers, chunk
from taunotebook.pane_reads import ROUTE_NOT_FOUND

__all__ = ["MAX_POINTS", "PanePoints", "max_points"]

MAX_POINTS = 12000  # TauGrid's cap for one series read


def max_points(width: int) -> int:
    """The points of one reduced read for a pane ``width`` pixels wide."""
    # M4 at 4 points per pixel column is pixel-identical to the full series (DESIGN §7).
    return max(400, min(MAX_POINTS, 4 * max(1, int(width))))


class PanePoints:
    """The series the browser holds (``held``, keyed by (run, metric)) and the messages that change them.

    ``send_message`` sends one binary message (the poller's: it ends the thread when the pane is gone);
    ``project_of(run)`` names the project a read of ``run`` gives (the primary run's, None for compared runs)."""

    def __init__(self, client: PortalClient, source: str | None, send_message: Callable[[dict, list[bytes]], None],
                 project_of: Callable[[str], str | None]) -> None:
        self.client = client
        self.source = source
        self.send_message = send_message
        self.project_of = project_of
        self.held: dict[tuple[str, str], Held] = {}
        self.seq = 0
        self.extras_available = True  # the local Portal's page data (non-finite marks, wall times)
        self.requests = 0  # zoomed and page-data reads
        self._later: list[tuple] = []  # page-data reads due after this answer's points are sent

    def apply(self, run: str, tail: Tail, full: bool, resync: bool, width: int) -> bool:
        """One metric of an answer: a reset, or an append with last-wins; marks when their count moved."""
        key = (run, tail.name)
        if tail.summary is None:
            self.held.pop(key, None)
            return False
        got_new = False
        held = self.held.get(key)
        if full or held is None:
            held = self.held[key] = Held()
            held.reset(tail.steps, tail.values)
            held.width = width
            self.send("reset", run, tail.name, *chunk(held.steps, held.values))
            self._later.append((run, tail.name, held, tail.summary.non_finite_count, True))
            got_new = True
        else:
            if tail.changed and tail.steps:
                steps, values = chunk(tail.steps, tail.values)
                start = tail.since
                if start is not None and steps[0] == start and len(held.values) and values[0] == held.values[-1]:
                    steps, values = steps[1:], values[1:]  # the point we already have, unchanged
                if steps:
                    held.append(steps, values)
                    self.send("append", run, tail.name, steps, values)
                    got_new = True
            if resync:  # a page that may have missed what was sent: everything again, from what is held
                self.send("reset", run, tail.name, *chunk(held.steps, held.values))
                self._resend_extras(run, tail.name, held)
            self._later.append((run, tail.name, held, tail.summary.non_finite_count, False))
        held.count = tail.summary.count
        return got_new

    def apply_answer(self, run: str, tails: Iterable[Tail], asked: dict, resync: bool, width: int) -> bool:
        """One answer's metrics that were ``asked`` (a ``(None, None)`` since: a reset), then the page data they made
        due (a read per metric whose non-finite count moved): the first plot is drawn without waiting for the others'
        marks. True if new points came."""
        self._later = []
        got_new = False
        for tail in tails:
            if tail.name in asked:  # (a Portal answers what was asked; anything else is not drawn)
                got_new |= self.apply(run, tail, asked[tail.name] == (None, None), resync, width)
        for later in self._later:
            self._extras(*later)
        return got_new

    def forget(self, keep: Callable[[tuple[str, str]], bool]) -> None:
        """Stop mirroring the series ``keep`` says no to (metrics that left the view, runs no longer drawn)."""
        for key in [k for k in self.held if not keep(k)]:
            del self.held[key]

    def zoom(self, zoom: dict, shown: set[str], width: int, runs: Iterable[str], x_metric: str | None) -> None:
        """A browser's zoom: each drawn run's metric (and the x axis's metric) read for the window at full detail."""
        metric = zoom.get("metric")
        try:
            start, end = int(zoom["start_step"]), int(zoom["end_step"])
        except (KeyError, TypeError, ValueError):
            return
        if metric not in shown or end < start:
            return
        # On a metric axis the x metric is read for the same window too: the join is at full detail there.
        zoomed = [metric] if x_metric in (None, metric) else [metric, x_metric]
        for run in runs:
            for name in zoomed:
                held = self.held.get((run, name))
                if held is None:
                    continue
                series = self._series(run, name, start_step=start, end_step=end, max_points=max_points(width))
                steps, values = chunk(series.steps, series.values)
                held.splice(start, end, steps, values)
                self.send("range", run, name, steps, values, start_step=start, end_step=end)

    def send(self, op: str, run: str, metric: str, steps: array, values: array, **extra: Any) -> None:
        self.seq += 1
        header = {"type": "points", "seq": self.seq, "op": op, "run": run, "metric": metric, "n": len(steps),
                  "start_step": extra.get("start_step"), "end_step": extra.get("end_step"),
                  "sent_at": time.time() * 1000.0}
        self.send_message(header, buffers(steps, values))

    def _series(self, run: str, metric: str, **kw: Any) -> Series:
        self.requests += 1
        return self.client.series(run, metric, project=self.project_of(run), source=self.source, **kw)

    def _extras(self, run: str, metric: str, held: Held, non_finite_count: int, force: bool = False) -> None:
        """Non-finite marks and wall-time samples from the local Portal's page data (TauGrid's v2 has neither)."""
        if not self.extras_available or not (force or non_finite_count != held.non_finite_count):
            return
        held.non_finite_count = non_finite_count
        try:
            self.requests += 1
            details = self.client.point_details(run, metric, project=self.project_of(run), source=self.source)
        except PortalError as err:
            if err.retryable or (isinstance(err, NotFoundError) and err.message != ROUTE_NOT_FOUND):
                raise  # the Portal is away, or the run is: the pane says so and retries
            # A Portal without page data (TauGrid's answers 404 for the route, its boundary 403): counts only.
            self.extras_available = False
            return
        marks = details.non_finite
        held.marks = chunk([m.step for m in marks], [m.value for m in marks])
        held.walls = chunk(details.wall_time_steps, [float(w) for w in details.wall_times]) \
            if details.wall_time_steps else None
        self._resend_extras(run, metric, held)

    def _resend_extras(self, run: str, metric: str, held: Held) -> None:
        if held.marks is not None:
            self.send("nonfinite", run, metric, *held.marks)
        if held.walls is not None:
            self.send("walltime", run, metric, *held.walls)
