"""The loss pane's kernel-side thread: it polls the Portal, mirrors what the browser holds and sends it the
points as binary chunks (the message contract is in :mod:`taunotebook.pane`). Polls come every
:data:`MIN_INTERVAL` while points keep arriving, back off to :data:`IDLE_INTERVAL` on a quiet run and to
:data:`FAIL_INTERVAL` while the Portal fails; the status says which, in words.
"""

from __future__ import annotations

import math
import sys
import threading
import time
import weakref
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from taunotebook.client import (
    AuthorizationError,
    NotFoundError,
    PortalClient,
    PortalError,
    PortalUnreachable,
    Series,
    stellar_link,
)
from taunotebook.compare_runs import resolve_compare, run_configs

if TYPE_CHECKING:
    from taunotebook.pane import LossPane

__all__ = ["DEFAULT_WIDTH", "Poller", "TERMINAL_STATES", "buffers", "loss_first", "stellar_page_href"]

TERMINAL_STATES = frozenset({"succeeded", "completed", "failed", "cancelled", "canceled", "incomplete"})
MIN_INTERVAL = 0.2  # seconds between polls while points keep arriving
IDLE_INTERVAL = 2.0  # the slowest poll of a quiet, healthy run
FAIL_INTERVAL = 10.0  # the slowest retry while the Portal fails
RESYNC_SECONDS = 2.0
RESOLVE_SECONDS = 10.0  # how often an experiment or group in compare= is listed again (a sweep adds runs)
MAX_POINTS = 12000  # TauGrid's cap for one series read
ROUTE_NOT_FOUND = "route was not found"  # TauGrid's message for a path it does not serve
DEFAULT_WIDTH = 800


def loss_first(names: Iterable[str]) -> list[str]:
    """``loss`` itself, then other ``…loss`` metrics, then the rest; alphabetical within each; no ``tau/`` markers."""

    def rank(name: str) -> tuple[int, str]:
        leaf = name.rsplit("/", 1)[-1].lower()
        return (0 if leaf == "loss" else 1 if "loss" in leaf else 2, name)

    return sorted((n for n in names if not n.startswith("tau/")), key=rank)


def _max_points(width: int) -> int:
    # M4 at 4 points per pixel column is pixel-identical to the full series (DESIGN §7).
    return max(400, min(MAX_POINTS, 4 * max(1, int(width))))


@dataclass
class _Held:
    """What the browser holds for one series, so Python can resend it and answer tails with last-wins."""

    steps: array = field(default_factory=lambda: array("q"))
    values: array = field(default_factory=lambda: array("d"))
    count: int = -1  # the catalog count at the last read; -1 before the first
    non_finite_count: int = 0
    last_step: int | None = None
    width: int = 0  # the pane width the last full-range read was sized for

    def reset(self, steps: Iterable[int], values: Iterable[float]) -> None:
        self.steps = array("q", steps)
        self.values = array("d", values)
        self.last_step = self.steps[-1] if self.steps else None

    def append(self, steps: array, values: array) -> None:
        if not steps:
            return
        first = steps[0]
        cut = len(self.steps)
        while cut and self.steps[cut - 1] >= first:
            cut -= 1
        del self.steps[cut:]
        del self.values[cut:]
        self.steps.extend(steps)
        self.values.extend(values)
        self.last_step = self.steps[-1]

    def splice(self, start: int, end: int, steps: array, values: array) -> None:
        keep_lo = [i for i, s in enumerate(self.steps) if s < start]
        keep_hi = [i for i, s in enumerate(self.steps) if s > end]
        self.steps = array("q", [self.steps[i] for i in keep_lo]) + steps + array("q", [self.steps[i] for i in keep_hi])
        self.values = (array("d", [self.values[i] for i in keep_lo]) + values
                       + array("d", [self.values[i] for i in keep_hi]))


def _chunk(steps: Iterable[int], values: Iterable[float]) -> tuple[array, array]:
    s, v = array("q", steps), array("d", values)
    if s.itemsize != 8 or v.itemsize != 8:  # pragma: no cover - every CPython platform we run on
        raise RuntimeError("int64/float64 arrays are required for the pane's binary chunks")
    return s, v


def buffers(steps: array, values: array) -> list[bytes]:
    if sys.byteorder != "little":  # pragma: no cover - the browser reads little-endian typed arrays
        steps, values = array("q", steps), array("d", values)
        steps.byteswap()
        values.byteswap()
    return [steps.tobytes(), values.tobytes()]


class Poller:
    """The background thread's job: read the Portal, mirror what the browser holds, send chunks.

    It keeps only a weak reference to the widget, so a pane that is garbage collected stops its thread.
    """

    def __init__(self, pane: LossPane, client: PortalClient, owns_client: bool) -> None:
        self._pane = weakref.ref(pane)
        self.client = client
        self.owns_client = owns_client
        self.source = pane.source or None  # named on every read, whatever the client's own default
        self.run_id = pane.run_id
        self.project = pane.project or None
        self.runs = [pane.run_id]  # then the runs compare= resolves to, on the first poll
        self.compare_entries = [c for c in pane.compare if c != pane.run_id]
        self.resolved_at: float | None = None
        self.compare_grows = False
        self.compare_notes: list[str] = []
        self.fixed_metrics = list(pane._requested_metrics) if pane._requested_metrics else None
        self.stop_event = threading.Event()
        self.wake = threading.Event()
        self.lock = threading.Lock()
        self.held: dict[tuple[str, str], _Held] = {}
        self.width = DEFAULT_WIDTH
        self.resync_needed = True  # reduced full-range reads for every series before the next tail
        self.hello = False
        self.last_resync = 0.0
        self.zooms: list[dict] = []
        self.seq = 0
        self.interval = MIN_INTERVAL
        self.failures = 0
        self.terminal_polls = 0
        self.extras_available = True
        self.parked = False  # the local Portal's page data (non-finite marks, wall times)
        self.thread = threading.Thread(target=self._main, name=f"tau-loss-pane-{pane.run_id}", daemon=True)

    # -- called from the kernel's main thread

    def start(self) -> None:
        self.thread.start()

    def stop(self, join: bool = True) -> None:
        self.stop_event.set()
        self.wake.set()
        if join and self.thread.ident is not None and threading.current_thread() is not self.thread:
            self.thread.join(timeout=15)
        elif self.thread.ident is None and self.owns_client:
            self.client.close()  # never started: the thread would have closed it

    def on_message(self, content: dict) -> None:
        kind = content.get("type") if isinstance(content, dict) else None
        with self.lock:
            if kind == "hello":
                width = content.get("width")
                if isinstance(width, int | float) and width > 0:
                    self.width = int(width)
                self.hello = True
                self.resync_needed = True
            elif kind == "zoom":
                self.zooms.append(content)
            elif kind == "unzoom":
                self.resync_needed = True
            else:
                return
        self.wake.set()

    # -- the thread

    def _main(self) -> None:
        try:
            relist_only = False
            while not self.stop_event.is_set():
                pane = self._pane()
                if pane is None:
                    return
                if relist_only:
                    relist_only = not self._grew(pane)
                if not relist_only:
                    try:
                        got_new = self._poll(pane)
                    except PortalError as err:
                        self._failed(pane, err)
                    except Exception as err:  # the pane must say what broke, never die silently
                        self._failed(pane, err)
                    else:
                        self.failures = 0
                        self.parked = self._drained(pane, got_new)
                        if self.parked:
                            self._status(pane, "ok", self._done_message(pane))
                        self.interval = MIN_INTERVAL if got_new else min(IDLE_INTERVAL, self.interval * 1.5)
                del pane
                # Parked (terminal and drained): no more polling; only a page's hello, a zoom or close() wakes
                # the thread again, and, when compare= names an experiment or group, a timer to list it again
                # (a sweep's next trial joins the plot and polling resumes).
                timeout = (RESOLVE_SECONDS if self.compare_grows else None) if self.parked else self.interval
                woke = self.wake.wait(timeout)
                self.wake.clear()
                relist_only = self.parked and not woke
        finally:
            self.parked = False
            if self.owns_client:
                self.client.close()

    def _drained(self, pane: LossPane, got_new: bool) -> bool:
        states = [pane.runs.get(r, {}).get("state", "") for r in self.runs]
        if not all(s in TERMINAL_STATES for s in states) or got_new or self.resync_needed or self.zooms:
            self.terminal_polls = 0
            return False
        # One more quiet poll after the terminal state: the last chunks may land just after the status marker.
        self.terminal_polls += 1
        return self.terminal_polls >= 2

    def _done_message(self, pane: LossPane) -> str:
        total = sum(len(h.steps) for h in self.held.values())
        notes = "".join(f" — {note}" for note in self.compare_notes)
        return f"run {pane.state or 'finished'}: all points loaded ({total} drawn); polling stopped{notes}"

    def _failed(self, pane: LossPane, err: Exception) -> None:
        self.failures += 1
        self.interval = min(FAIL_INTERVAL, 0.5 * 2 ** (self.failures - 1))
        wait = f"retrying in {self.interval:.0f} s…" if self.interval >= 1 else "retrying…"
        if isinstance(err, PortalUnreachable):
            kind, text = "unreachable", f"Portal unreachable at {self.client.base_url} ({wait})"
        elif isinstance(err, AuthorizationError):
            kind = "unauthorized"
            text = (f"the Portal refused access ({err.status} {err.code}): pass token= or set TAU_PORTAL_TOKEN "
                    f"to the token `taunotebook portal` printed ({wait})")
        elif isinstance(err, NotFoundError):
            kind = "not_found"
            text = (f"run {self.run_id!r} was not found in the Portal (404) — not indexed yet, or another "
                    f"workspace/project ({wait})")
        elif isinstance(err, PortalError):
            kind, text = "error", f"the Portal answered {err.status or ''} {err.code}: {err.message} ({wait})"
        else:
            kind, text = "error", f"the pane failed: {type(err).__name__}: {err} ({wait})"
        self._status(pane, kind, text, retry_in=self.interval)

    def _status(self, pane: LossPane, kind: str, message: str, retry_in: float = 0.0) -> None:
        new = {"kind": kind, "message": message, "retry_in": round(retry_in, 3)}
        if pane.status != new:
            pane.status = new

    def _send(self, pane: LossPane, op: str, run: str, metric: str, steps: array, values: array,
              **extra: Any) -> None:
        self.seq += 1
        header = {"type": "points", "seq": self.seq, "op": op, "run": run, "metric": metric, "n": len(steps),
                  "start_step": extra.get("start_step"), "end_step": extra.get("end_step"),
                  "sent_at": time.time() * 1000.0}
        pane.send(header, buffers=buffers(steps, values))

    def _grew(self, pane: LossPane) -> bool:
        """A parked pane's timer: whether listing ``compare=``'s experiment or group again found new runs (or
        failed: then a full poll says what is wrong, in words, and retries)."""
        before = list(self.runs)
        try:
            self._resolve(pane)
        except Exception:
            return True
        return self.runs != before

    def _resolve(self, pane: LossPane) -> None:
        """The runs ``compare=`` names (once; every :data:`RESOLVE_SECONDS` while an experiment or group may grow)."""
        now = time.monotonic()
        if self.resolved_at is not None and (not self.compare_grows or now - self.resolved_at < RESOLVE_SECONDS):
            return
        resolved = resolve_compare(self.client, self.run_id, self.compare_entries)
        self.resolved_at = now
        self.compare_grows, self.compare_notes = resolved.grows, resolved.notes
        if resolved.run_ids == self.runs and pane.run_ids:
            return
        self.runs = resolved.run_ids
        configs = run_configs(self.client, self.runs)
        with pane.hold_sync():
            pane.configs = configs
            pane.run_ids = list(self.runs)
            pane.stellar_href = stellar_page_href(self.client, self.run_id, pane.project or None, self.runs[1:],
                                              pane.source)

    def _poll(self, pane: LossPane) -> bool:
        """One round: states, catalogs, then reduced reads (on resync), zoomed reads, tails. True if new points."""
        self._resolve(pane)
        runs_info: dict[str, dict] = {}
        names_seen: list[str] = []
        catalogs = {}
        for run in self.runs:
            info = self.client.run(run, source=self.source)
            catalog = self.client.metrics(run, source=self.source)
            catalogs[run] = {m.name: m for m in catalog}
            runs_info[run] = {
                "state": info.state or info.lifecycle_state,
                "status_message": info.tags.get("tau.status.message", ""),
                "warnings": list(info.metadata.warnings if info.metadata else ()) + list(catalog.metadata.warnings),
                "metrics": {m.name: {"count": m.count, "last_step": m.latest_step,
                                     "last_value": m.latest_value if m.latest_value is None
                                     or math.isfinite(m.latest_value) else None,
                                     "non_finite_count": m.non_finite_count} for m in catalog},
            }
            if run == self.run_id:
                names_seen = [m.name for m in catalog]
                if self.project is None and info.project:
                    self.project = info.project
        metrics = self.fixed_metrics or loss_first(names_seen)
        with pane.hold_sync():
            if pane.runs != runs_info:
                pane.runs = runs_info
            state = runs_info[self.run_id]["state"]
            if pane.state != state:
                pane.state = state
            if list(pane.metrics) != metrics:
                pane.metrics = metrics
        self._status(pane, "ok", self._ok_message(runs_info))

        with self.lock:
            resync, self.resync_needed = self.resync_needed, False
            zooms, self.zooms = self.zooms, []
            width = self.width
        now = time.monotonic()
        if not self.hello and now - self.last_resync >= RESYNC_SECONDS:
            resync = True
        got_new = False
        for run in self.runs:
            for metric in metrics:
                summary = catalogs[run].get(metric)
                if summary is None:
                    continue
                key = (run, metric)
                held = self.held.setdefault(key, _Held())
                if resync or held.count < 0:
                    if held.count < 0 or summary.count != held.count or held.width != width:
                        series = self._series(run, metric, max_points=_max_points(width))
                        held.reset(series.steps, series.values)
                        held.width = width
                        got_new = True
                    self._send(pane, "reset", run, metric, *_chunk(held.steps, held.values))
                    self._extras(pane, run, metric, held, summary.non_finite_count, force=True)
                elif summary.count != held.count or (summary.latest_step or 0) != (held.last_step or 0):
                    start = held.last_step
                    series = self._series(run, metric, start_step=start)
                    steps, values = _chunk(series.steps, series.values)
                    if start is not None and steps and steps[0] == start and len(held.values) \
                            and values[0] == held.values[-1]:
                        steps, values = steps[1:], values[1:]  # the point we already have, unchanged
                    if steps:
                        held.append(steps, values)
                        self._send(pane, "append", run, metric, steps, values)
                        got_new = True
                    self._extras(pane, run, metric, held, summary.non_finite_count)
                held.count = summary.count
        if resync:
            self.last_resync = now
        for zoom in zooms:
            self._zoom(pane, zoom, metrics, width)
        return got_new

    def _ok_message(self, runs_info: dict) -> str:
        primary = runs_info[self.run_id]
        warnings = [*self.compare_notes, *(w for r in runs_info.values() for w in r.get("warnings", ()))]
        text = "connected"
        if primary["state"] == "failed":
            text = "the run failed" + (f": {primary['status_message']}" if primary.get("status_message") else "")
        if warnings:
            text += " — " + "; ".join(dict.fromkeys(warnings))
        return text

    def _series(self, run: str, metric: str, **kw: Any) -> Series:
        return self.client.series(run, metric, project=self.project if run == self.run_id else None,
                                  source=self.source, **kw)

    def _extras(self, pane: LossPane, run: str, metric: str, held: _Held, non_finite_count: int,
                force: bool = False) -> None:
        """Non-finite marks and wall-time samples from the local Portal's page data (TauGrid's v2 has neither)."""
        if not self.extras_available or not (force or non_finite_count != held.non_finite_count):
            return
        held.non_finite_count = non_finite_count
        try:
            details = self.client.point_details(run, metric, project=self.project if run == self.run_id else None,
                                                source=self.source)
        except PortalError as err:
            if err.retryable or (isinstance(err, NotFoundError) and err.message != ROUTE_NOT_FOUND):
                raise  # the Portal is away, or the run is: the pane says so and retries
            # A Portal without page data (TauGrid's answers 404 for the route, its boundary 403): counts only.
            self.extras_available = False
            return
        marks = details.non_finite
        self._send(pane, "nonfinite", run, metric, *_chunk([m.step for m in marks], [m.value for m in marks]))
        if details.wall_time_steps:
            self._send(pane, "walltime", run, metric,
                       *_chunk(details.wall_time_steps, [float(w) for w in details.wall_times]))

    def _zoom(self, pane: LossPane, zoom: dict, metrics: list[str], width: int) -> None:
        metric = zoom.get("metric")
        try:
            start, end = int(zoom["start_step"]), int(zoom["end_step"])
        except (KeyError, TypeError, ValueError):
            return
        if metric not in metrics or end < start:
            return
        for run in self.runs:
            held = self.held.get((run, metric))
            if held is None:
                continue
            series = self._series(run, metric, start_step=start, end_step=end, max_points=_max_points(width))
            steps, values = _chunk(series.steps, series.values)
            held.splice(start, end, steps, values)
            self._send(pane, "range", run, metric, steps, values, start_step=start, end_step=end)


def stellar_page_href(client: PortalClient, run_id: str, project: str | None, compare: Iterable[str] = (),
                  pane_source: str = "") -> str:
    """The run's Stellar page (through Jupyter inside it); a comparing pane links the page comparing those runs."""
    return stellar_link(run_id, project if project is not None else client.project, portal_url=client.base_url,
                        workspace=client.workspace, compare=compare, source=pane_source or None)
