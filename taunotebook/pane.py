"""The loss pane: a live anywidget plot of a run's metrics, fed by a kernel-side thread polling the Portal.

Python owns the data and the polling; the browser module (``js/pane/``, bundled with ``js/shared/`` and a
plotly.js of the traces it draws into ``taunotebook/static/pane.js``, 1.4 MB) owns the drawing. The browser
never talks to the Portal, so the pane works wherever the kernel can reach it (JupyterLab, Notebook 7,
JupyterHub, VS Code, a remote kernel). Smoothing and run colours are the Stellar pages' own
(``js/shared/smoothing.js``, ``js/shared/palette.js``): a run compared here has the colour it has on the page
that "Open in Stellar" opens.

The contract between the two sides
==================================

Synced traitlets (Python → browser unless noted):

``run_id``, ``project``, ``compare``
    the primary run, its project, and what is drawn beside it as given: run ids, experiment ids or run
    group ids (:mod:`taunotebook.compare_runs` resolves them).
``run_ids``
    the runs drawn, in legend order: the primary run, then the runs ``compare`` resolved to.
``configs``
    ``{run_id: {field: scalar} | None}`` — the drawn runs' config fields; the legend names each run by
    what differs between them (``js/shared/differing.js``), else by its id.
``source``
    the Portal source every read names (``local``, ``kusto``, ``auto``; ``""`` for the Portal's default).
``metrics``
    the metric names drawn, ``loss`` first (the ``metrics=`` argument, else every metric the run has).
``runs``
    ``{run_id: {"state": str, "metrics": {name: {"count", "last_step", "last_value",
    "non_finite_count"}}}}`` — per run its state (pending/running/succeeded/failed/cancelled/…)
    and, per metric, what the Portal's metric catalog says.
``state``
    the primary run's state (``""`` until known).
``status``
    ``{"kind": "connecting"|"ok"|"unreachable"|"unauthorized"|"not_found"|"error"|"closed",
    "message": str, "retry_in": float}`` — the connection to the Portal, in words.
``stellar_href``
    the "Open in Stellar" link (through Jupyter's proxy inside Jupyter, else the Portal's own URL); a pane
    comparing runs links the Stellar page comparing the runs ``compare`` resolved to (``&compare=b,c``).
``width`` (browser → Python)
    the plot width in CSS pixels; the first reduced request asks for ``4 × width`` points (M4).
``snapshot`` (browser → Python)
    a PNG data URL of the last drawn figure; Python mirrors it into a static HTML output so a saved
    notebook shows the figure without a kernel.

One binary message shape, Python → browser, via ``widget.send(header, buffers=[steps, values])``::

    header  = {"type": "points", "seq": int, "op": op, "run": run_id, "metric": name, "n": int,
               "start_step": int | None, "end_step": int | None, "sent_at": epoch ms}
    buffers = [steps: n × int64 little-endian, values: n × float64 little-endian]

``op`` says what the browser does with the chunk for series ``(run, metric)``:

- ``reset``     replace the series (a reduced full-range read);
- ``append``    drop held points whose step ≥ the chunk's first step, then append (tail reads: last wins);
- ``range``     replace the held points with ``start_step ≤ step ≤ end_step`` (a zoomed read at full
                fidelity);
- ``nonfinite`` replace the series' non-finite marks (values are NaN / ±Inf);
- ``walltime``  merge (step → wall time µs, as float64) samples for the wall-time axis.

``seq`` counts messages per widget; until the browser has said ``hello`` Python resends every series
as ``reset`` every :data:`RESYNC_SECONDS` (a browser still loading the module drops messages, and while
a cell runs the kernel cannot read the browser's ``hello``).

Browser → Python custom messages: ``{"type": "hello", "width": px}`` (a model was created in a page),
``{"type": "zoom", "metric": name, "start_step": int, "end_step": int}`` and
``{"type": "unzoom", "metric": name}``.
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
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from taunotebook.client import (
    AuthorizationError,
    NotFoundError,
    PortalClient,
    PortalError,
    PortalUnreachable,
    Series,
    check_source,
    stellar_link,
)
from taunotebook.compare_runs import resolve_compare, run_configs

__all__ = ["BUILD_HINT", "BUNDLE", "LossPane", "TERMINAL_STATES"]

BUNDLE = Path(__file__).resolve().parent / "static" / "pane.js"
BUILD_HINT = "npm --prefix js ci && npm --prefix js run build   (or: pip install -e .)"
TERMINAL_STATES = frozenset({"succeeded", "completed", "failed", "cancelled", "canceled", "incomplete"})

MIN_INTERVAL = 0.2  # seconds between polls while points keep arriving
IDLE_INTERVAL = 2.0  # the slowest poll of a quiet, healthy run
FAIL_INTERVAL = 10.0  # the slowest retry while the Portal fails
RESYNC_SECONDS = 2.0
RESOLVE_SECONDS = 10.0  # how often an experiment or group in compare= is listed again (a sweep adds runs)
MAX_POINTS = 12000  # TauGrid's cap for one series read
ROUTE_NOT_FOUND = "route was not found"  # TauGrid's message for a path it does not serve
DEFAULT_WIDTH = 800

_bundle_text: str | None = None


def _bundle() -> str:
    global _bundle_text
    if _bundle_text is None:
        if not BUNDLE.is_file():
            raise FileNotFoundError(
                f"the loss pane's browser bundle {BUNDLE.name} is missing from the taunotebook package "
                f"({BUNDLE.parent}); build it with: {BUILD_HINT}"
            )
        _bundle_text = BUNDLE.read_text(encoding="utf-8")
    return _bundle_text


def _loss_first(names: Iterable[str]) -> list[str]:
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


def _buffers(steps: array, values: array) -> list[bytes]:
    if sys.byteorder != "little":  # pragma: no cover - the browser reads little-endian typed arrays
        steps, values = array("q", steps), array("d", values)
        steps.byteswap()
        values.byteswap()
    return [steps.tobytes(), values.tobytes()]


class _Poller:
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
        pane.send(header, buffers=_buffers(steps, values))

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
            pane.stellar_href = _stellar_href(self.client, self.run_id, pane.project or None, self.runs[1:],
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
        metrics = self.fixed_metrics or _loss_first(names_seen)
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


class LossPane(anywidget.AnyWidget):
    """A live plot of a run's metrics (``loss`` first), polled from the Portal by a background thread.

    ``portal`` is a :class:`~taunotebook.client.PortalClient`, a base URL (token from ``TAU_PORTAL_TOKEN``
    or the URL's ``?token=``), or ``None`` for ``TAU_PORTAL_URL``/``TAU_PORTAL_TOKEN``. ``metrics``
    limits the metrics drawn (default: all the run has). ``compare`` adds other runs to every plot: run
    ids, or an experiment or run group id for all of its runs (:mod:`taunotebook.compare_runs`; a run
    id wins when an id names both). ``source`` (``local``, ``kusto`` or ``auto``; default: the client's,
    else the Portal's default) is named on every read and carried by "Open in Stellar". ``close()`` stops
    the thread.
    """

    run_id = traitlets.Unicode().tag(sync=True)
    project = traitlets.Unicode("").tag(sync=True)
    source = traitlets.Unicode("").tag(sync=True)
    compare = traitlets.List(traitlets.Unicode()).tag(sync=True)
    run_ids = traitlets.List(traitlets.Unicode()).tag(sync=True)
    configs = traitlets.Dict().tag(sync=True)
    metrics = traitlets.List(traitlets.Unicode()).tag(sync=True)
    runs = traitlets.Dict().tag(sync=True)
    state = traitlets.Unicode("").tag(sync=True)
    status = traitlets.Dict({"kind": "connecting", "message": "connecting to the Portal…", "retry_in": 0}).tag(
        sync=True)
    stellar_href = traitlets.Unicode("").tag(sync=True)
    width = traitlets.Int(DEFAULT_WIDTH).tag(sync=True)
    snapshot = traitlets.Unicode("").tag(sync=True)
    pane_id = traitlets.Unicode("").tag(sync=True)

    def __init__(
        self,
        run_id: str,
        metrics: Iterable[str] | None = None,
        *,
        portal: PortalClient | str | None = None,
        project: str | None = None,
        compare: Iterable[str] = (),
        source: str | None = None,
        start: bool = True,
    ) -> None:
        if not isinstance(run_id, str) or not run_id.strip():
            raise ValueError(f"run_id must be a non-empty string, got {run_id!r}")
        source = check_source(source)
        self._esm = _bundle()
        if isinstance(portal, PortalClient):
            client, owns = portal, False
        else:
            # No client-level retries: the pane's own backoff retries, and says so in the pane meanwhile.
            client, owns = PortalClient(portal, project=project, source=source, retries=0, timeout=5.0), True
        source = source if source is not None else (client.source or "")
        self._requested_metrics = list(metrics) if metrics else []
        super().__init__(run_id=run_id.strip(), project=project or "", source=source,
                         compare=[str(c) for c in compare],
                         metrics=_loss_first(self._requested_metrics) if self._requested_metrics else [])
        self.stellar_href = _stellar_href(client, self.run_id, project, self.compare, self.source)
        self.pane_id = self.model_id  # names the static fallback output this pane's live view hides
        self._static_display = None
        self._poller = _Poller(self, client, owns)
        self.on_msg(_on_msg_weak(self))
        self.observe(_on_width, names="width")
        self.observe(_on_snapshot, names="snapshot")
        if start:
            self._poller.start()

    # -- lifecycle

    @property
    def polling(self) -> bool:
        """True while the background thread polls the Portal (false once the run is terminal and drained).

        A drained pane's thread stays parked on an event, without timers, to answer a page's zoom or
        reload; ``close()`` ends it.
        """
        return self._poller.thread.is_alive() and not self._poller.parked

    def close(self) -> None:
        """Stop polling (joins the thread) and close the widget."""
        poller = getattr(self, "_poller", None)
        if poller is not None:
            poller.stop()
        super().close()

    def __del__(self) -> None:
        poller = getattr(self, "_poller", None)
        if poller is not None:
            poller.stop(join=False)

    # -- display: the live widget plus a static fallback the live view hides

    def _ipython_display_(self) -> None:
        from IPython.display import HTML, display

        bundle = self._repr_mimebundle_()
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
        display(data, metadata=metadata, raw=True)
        self._static_display = display(HTML(self._static_html()), display_id=True)

    def _static_html(self) -> str:
        """The saved-notebook fallback: the last drawn figure as an image (hidden while the live pane shows)."""
        import html

        label = html.escape(f"loss pane: {self.run_id} ({self.state or 'state unknown'})")
        body = (f'<img alt="{label}" src="{html.escape(self.snapshot)}" style="max-width:100%">'
                if self.snapshot.startswith("data:image/") else "")
        return f'<div class="tau-pane-static" data-tau-pane-static="{html.escape(self.pane_id)}">{body}</div>'


def _on_msg_weak(pane: LossPane):
    ref = weakref.ref(pane)

    def handler(_widget: Any, content: Any, _buffers: Any) -> None:
        p = ref()
        if p is not None:
            p._poller.on_message(content)

    return handler


def _on_width(change: dict) -> None:
    pane: LossPane = change["owner"]
    poller = pane._poller
    new = max(1, int(change["new"]))
    with poller.lock:
        old, poller.width = poller.width, new
        # A much wider or narrower pane gets a first read sized for it; small resizes keep what is drawn.
        if abs(new - old) > 0.25 * old:
            poller.resync_needed = True
    poller.wake.set()


def _on_snapshot(change: dict) -> None:
    pane: LossPane = change["owner"]
    if pane._static_display is not None:
        from IPython.display import HTML

        pane._static_display.update(HTML(pane._static_html()))


def _stellar_href(client: PortalClient, run_id: str, project: str | None, compare: Iterable[str] = (),
                  pane_source: str = "") -> str:
    """The run's Stellar page (through Jupyter inside it); a comparing pane links the page comparing those runs."""
    return stellar_link(run_id, project if project is not None else client.project, portal_url=client.base_url,
                        workspace=client.workspace, compare=compare, source=pane_source or None)
