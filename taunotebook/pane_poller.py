"""The loss pane's kernel-side thread: it polls the Portal and hands each answer's points to
:class:`~taunotebook.pane_points.PanePoints`, which mirrors what the browser holds and sends it binary chunks (the
message contract is in :mod:`taunotebook.pane`). Polls come every
:data:`MIN_INTERVAL` while points keep arriving, back off to :data:`IDLE_INTERVAL` on a quiet run and to
:data:`FAIL_INTERVAL` while the Portal fails; the status says which, in words.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from taunotebook.client import PortalClient, Tails, stellar_link
from taunotebook.compare_runs import resolve_compare, run_configs
from taunotebook.pane_checkpoints import CHECKPOINT_SECONDS, CheckpointMarks
from taunotebook.pane_held import Held as _Held
from taunotebook.pane_held import buffers
from taunotebook.pane_media import PaneMedia
from taunotebook.pane_picture import Snapshot
from taunotebook.pane_points import PanePoints, max_points
from taunotebook.pane_reads import MAX_TAIL_METRICS, TailReader
from taunotebook.pane_runs import DEFAULT_VISIBLE, default_visible
from taunotebook.pane_runs import RunView as _RunView
from taunotebook.pane_runs import catalog_entry as _entry
from taunotebook.pane_static import FALLBACK_SECONDS, StaticPicture, snapshot_of
from taunotebook.pane_static_media import MediaPicture, StaticMedia, media_key
from taunotebook.pane_words import failure_words, ok_words

__all__ = ["CHECKPOINT_SECONDS", "DEFAULT_VISIBLE", "DEFAULT_WIDTH", "FALLBACK_SECONDS", "PaneOutput", "Poller",
           "TERMINAL_STATES", "buffers",
           "default_visible", "stellar_page_href"]

TERMINAL_STATES = frozenset({"succeeded", "completed", "failed", "cancelled", "canceled", "incomplete"})
MIN_INTERVAL = 0.2  # seconds between polls while points keep arriving
IDLE_INTERVAL = 2.0  # the slowest poll of a quiet, healthy run
FAIL_INTERVAL = 10.0  # the slowest retry while the Portal fails
RESYNC_SECONDS = 2.0
RESOLVE_SECONDS = 10.0  # how often an experiment or group in compare= is listed again (a sweep adds runs)
DEFAULT_WIDTH = 800


class PaneOutput(Protocol):
    """What the poller calls on its pane (:class:`~taunotebook.pane.LossPane` gives it one): ``publish`` sets the
    named synced traits that changed, in one message; ``send`` is one binary "points" message; ``fallback`` redraws
    the static picture and line of text shown where the live view cannot load. Each returns False once the pane is
    gone (garbage collected): the thread then ends."""

    def publish(self, **traits: Any) -> bool: ...

    def send(self, header: dict, buffers: list[bytes]) -> bool: ...

    def fallback(self, snapshot: Snapshot) -> bool: ...


class Poller:
    """The background thread's job: read the Portal, mirror what the browser holds, send chunks.

    Its state is its own; the pane reaches it only through :meth:`start`, :meth:`stop`, :meth:`on_message`,
    :meth:`set_width` and :meth:`set_visible` (any thread), and it reaches the pane only through its
    :class:`PaneOutput`. Each poll reads, per drawn run, one :meth:`PortalClient.tails` answer for the visible
    metrics (a Portal without that route: the v2 catalog and one series read per changed metric).
    """

    def __init__(self, out: PaneOutput, client: PortalClient, owns_client: bool, *, run_id: str,
                 project: str | None = None, source: str | None = None, compare: Iterable[str] = (),
                 metrics: Iterable[str] | None = None, x_metric: str | None = None,
                 job: Callable[[], Any] | None = None) -> None:
        self.out = out
        self.job = job  # the backend's lifecycle of the primary run (a submitted run's pane), or None
        self.job_lifecycle: dict | None = None
        self.client = client
        self.owns_client = owns_client
        self.source = source or None  # named on every read, whatever the client's own default
        self.run_id = run_id
        self.given_project = project or None
        self.project = project or None  # then the run's own, once read
        self.runs = [run_id]  # then the runs compare= resolves to, on the first poll
        self.compare_entries = [c for c in compare if c != run_id]
        self.resolved_at: float | None = None
        self.compare_grows = False
        self.compare_notes: list[str] = []
        self.fixed_metrics = list(dict.fromkeys(metrics)) if metrics else None
        self.x_metric = x_metric or None  # the x axis's metric: polled beside the visible ones, never shown alone
        self.views: dict[str, _RunView] = {}
        self._names: list[str] | None = None  # _all_names(), until a run's names change
        self._names_changed = True
        self._default: tuple[list[str] | None, list[str]] | None = None  # (names, their default visible set)
        self.stop_event = threading.Event()
        self.wake = threading.Event()
        # Guards what the kernel's thread hands over: width, resync, zooms, visible.
        self.lock = threading.Lock()
        self.width = DEFAULT_WIDTH
        self.resync_needed = True  # reduced full-range reads for every series before the next tail
        self.browser_visible: list[str] | None = None  # None until the browser says
        self.entering: set[str] = set()  # metrics that became visible since the last poll: a fresh reset each
        self.hello = False
        self.last_resync = 0.0
        self.zooms: list[dict] = []
        self.interval = MIN_INTERVAL
        self.failures = 0
        self.terminal_polls = 0
        self.parked = False
        self.reader = TailReader(client, self.source)  # each poll's one read per run
        # What the browser holds of each series, and the points messages that keep it so
        self.points = PanePoints(client, self.source, self._send_message,
                                 lambda run: self.project if run == self.run_id else None)
        self.marks = CheckpointMarks(client, self.source)  # the local Portal's /runs/{run_id}/checkpoints
        self.media = PaneMedia(client, self.source, run_id)  # the histograms, images and text on screen
        self.shown: list[str] = []  # the metrics the last poll read, in the pane's order
        self.static = StaticPicture()
        self.static_media = StaticMedia(client, self.source, run_id)  # the media the saved picture keeps
        self.thread = threading.Thread(target=self._main, name=f"tau-loss-pane-{run_id}", daemon=True)

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

    @property
    def requests(self) -> int:
        """Portal reads made so far (for tests and benchmarks)."""
        return (self.reader.requests + self.points.requests + self.marks.requests + self.media.requests
                + self.static_media.requests)

    @property
    def held(self) -> dict[tuple[str, str], _Held]:
        """What the browser holds of each (run, metric) (:class:`~taunotebook.pane_points.PanePoints`)."""
        return self.points.held

    @property
    def extras_available(self) -> bool:
        """Whether the Portal has page data (non-finite marks, wall times)."""
        return self.points.extras_available

    @property
    def polling(self) -> bool:
        return self.thread.is_alive() and not self.parked

    def on_message(self, content: dict) -> None:
        kind = content.get("type") if isinstance(content, dict) else None
        with self.lock:
            if kind == "hello":
                width = content.get("width")
                if isinstance(width, int | float) and width > 0:
                    self.width = int(width)
                self.hello = True
                self.resync_needed = True
                self.media.resend()
            elif kind == "zoom":
                self.zooms.append(content)
            elif kind == "unzoom":
                self.resync_needed = True
            elif kind == "image-full":  # an image card's "full image" link: its stored bytes, on the next poll
                self.media.request_full(content.get("run"), content.get("digest"))
            else:
                return
        self.wake.set()

    def set_width(self, width: int) -> None:
        new = max(1, int(width))
        with self.lock:
            old, self.width = self.width, new
            # A much wider or narrower pane gets a first read sized for it; small resizes keep what is drawn.
            if abs(new - old) > 0.25 * old:
                self.resync_needed = True
        self.wake.set()

    def set_visible(self, names: Iterable[str]) -> None:
        """The browser's ``visible``: only these are polled; each one entering gets a fresh ``reset``."""
        new = list(dict.fromkeys(str(n) for n in names))
        with self.lock:
            before = set(self.browser_visible if self.browser_visible is not None else self._default_visible())
            self.browser_visible = new
            self.entering |= set(new) - before
        self.wake.set()

    def set_media(self, visible: Iterable[str] | None = None, step: object = None, *, step_given: bool = False) -> None:
        """The browser's ``media_visible`` (the cards on screen) and ``media_step`` (the step cursor)."""
        if visible is not None:
            self.media.set_visible(visible)
        if step_given:
            self.media.set_step(step)
        self.wake.set()

    def set_x_metric(self, name: str | None) -> None:
        """The x axis became ``name`` (a metric) or a time axis (None): poll that metric beside the visible ones,
        from a fresh reset."""
        with self.lock:
            if name == self.x_metric:
                return
            self.x_metric = name or None
            if self.x_metric is not None:
                self.entering.add(self.x_metric)
        self.wake.set()

    # -- the thread

    def _main(self) -> None:
        try:
            relist_only = False
            while not self.stop_event.is_set():
                if relist_only:
                    relist_only = not self._grew()
                if not relist_only:
                    try:
                        self._read_job()
                        got_new = self._poll()
                    except _PaneGone:
                        return
                    except Exception as err:  # the pane must say what broke, never die silently
                        if not self._failed(err):
                            return
                    else:
                        self.failures = 0
                        drained = self._drained(got_new)
                        if drained and not self._status("ok", self._done_message()):
                            return
                        try:
                            self._fallback(final=drained)  # before `polling` turns false: the final picture is out
                        except _PaneGone:
                            return
                        self.parked = drained
                        self.interval = MIN_INTERVAL if got_new else min(IDLE_INTERVAL, self.interval * 1.5)
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

    def _publish(self, **traits: Any) -> None:
        if not self.out.publish(**traits):
            raise _PaneGone

    def _read_job(self) -> None:
        """The backend's word on the job (``queued: Job has not started yet ...``) as the ``lifecycle`` trait:
        said even while the Portal has no metrics of the run yet; no more asked once it is terminal."""
        if self.job is None or (self.job_lifecycle or {}).get("phase") in TERMINAL_STATES:
            return
        try:
            current = self.job().to_json()
        except Exception as err:  # the backend's answer is extra: the pane goes on without it
            current = {"phase": "unknown", "reason": f"{type(err).__name__}: {err}", "retries": 0,
                       "text": f"unknown: {type(err).__name__}: {err}"}
        self.job_lifecycle = current
        self._publish(lifecycle=current)

    def _drained(self, got_new: bool) -> bool:
        states = [self.views[r].state if r in self.views else "" for r in self.runs]
        if not all(s in TERMINAL_STATES for s in states) or got_new or self.resync_needed or self.zooms \
                or self.entering:
            self.terminal_polls = 0
            return False
        # One more quiet poll after the terminal state: the last chunks may land just after the status marker.
        self.terminal_polls += 1
        return self.terminal_polls >= 2

    def _primary_state(self) -> str:
        view = self.views.get(self.run_id)
        return view.state if view else ""

    def _done_message(self) -> str:
        total = sum(len(h.steps) for h in self.held.values())
        notes = "".join(f" — {note}" for note in self.compare_notes)
        return f"run {self._primary_state() or 'finished'}: all points loaded ({total} drawn); polling stopped{notes}"

    def _failed(self, err: Exception) -> bool:
        self.failures += 1
        self.interval = min(FAIL_INTERVAL, 0.5 * 2 ** (self.failures - 1))
        kind, text = failure_words(err, self.interval, self.client.base_url, self.run_id, self.job_lifecycle)
        return self._status(kind, text, retry_in=self.interval)

    def _fallback(self, final: bool) -> None:
        """Redraw the static picture when it is due (:class:`~taunotebook.pane_static.StaticPicture`)."""
        now = time.monotonic()
        media = self.static_media.settled_key(self._media_key(), now, self._live()) if self.media.available else ()
        if not self.static.refresh(lambda: self.out.fallback(self.snapshot()), self._primary_state(), self.shown,
                                   self.held, now, final, media):
            raise _PaneGone

    def _live(self) -> bool:
        """Whether a drawn run has not ended (its media may still grow)."""
        return not all((v.state if (v := self.views.get(r)) else "") in TERMINAL_STATES for r in self.runs)

    def _media_key(self) -> tuple:
        unavailable = (self.media.tags_sent or {}).get("unavailable")
        return media_key(self.media.tags, self._media_step(), self.media.compared_tags()), unavailable

    def _media_step(self) -> int | None:
        with self.media.lock:
            return self.media.step

    def _static_media(self) -> MediaPicture | None:
        """The runs' media at the step cursor for the saved picture (read again only when they changed)."""
        unavailable = (self.media.tags_sent or {}).get("unavailable")
        compared = self.media.compared_tags()
        if not self.media.available or not (self.media.tags or unavailable or any(compared.values())):
            return None
        try:
            return self.static_media.current(self.media.tags, self._media_step(), self.project, unavailable,
                                             compared=compared, live=self._live())
        except Exception as err:  # the picture's media are extra: the curves are drawn whatever happens here
            return MediaPicture(errors=(f"{type(err).__name__}: {err}",))

    def snapshot(self) -> Snapshot:
        """What the pane shows now, copied (the thread goes on changing what it holds)."""
        return snapshot_of(self.run_id, self.runs, self.views.get(self.run_id), self._primary_state(), self.shown,
                           self.held, self.fixed_metrics, self._static_media())

    def _status(self, kind: str, message: str, retry_in: float = 0.0) -> bool:
        return self.out.publish(status={"kind": kind, "message": message, "retry_in": round(retry_in, 3)})

    def _send_message(self, header: dict, data: list[bytes]) -> None:
        if not self.out.send(header, data):
            raise _PaneGone

    def _grew(self) -> bool:
        """A parked pane's timer: whether listing ``compare=``'s experiment or group again found new runs (or
        failed: then a full poll says what is wrong, in words, and retries)."""
        before = list(self.runs)
        try:
            self._resolve()
        except _PaneGone:
            raise
        except Exception:
            return True
        return self.runs != before

    def _resolve(self) -> None:
        """The runs ``compare=`` names (once; every :data:`RESOLVE_SECONDS` while an experiment or group may grow)."""
        now = time.monotonic()
        if self.resolved_at is not None and (not self.compare_grows or now - self.resolved_at < RESOLVE_SECONDS):
            return
        resolved = resolve_compare(self.client, self.run_id, self.compare_entries)
        self.resolved_at = now
        self.compare_grows, self.compare_notes = resolved.grows, resolved.notes
        if resolved.run_ids == self.runs and self.views:
            return
        self.runs = resolved.run_ids
        self._names, self._names_changed = None, True  # the union of the runs' names may differ
        configs = run_configs(self.client, self.runs)
        self._publish(configs=configs, run_ids=list(self.runs),
                      stellar_href=stellar_page_href(self.client, self.run_id, self.given_project, self.runs[1:],
                                                     self.source or ""))

    # -- one poll

    def _all_names(self) -> list[str] | None:
        """Every metric of the drawn runs: the primary run's in catalog order, then those only compared runs have
        (worked out again only when a run's names changed: a 10,000-metric run's poll does not walk them)."""
        if self._names is not None:
            return self._names
        primary = self.views.get(self.run_id)
        if primary is None or primary.names is None:
            return None
        names = [n for n in primary.names if not n.startswith("tau/")]
        seen = set(names)
        for run in self.runs[1:]:
            view = self.views.get(run)
            for n in (view.names or ()) if view else ():
                if n not in seen and not n.startswith("tau/"):
                    seen.add(n)
                    names.append(n)
        self._names = names
        return names

    def _default_visible(self) -> list[str]:
        names = self._all_names()
        if self._default is None or self._default[0] is not names:
            self._default = (names, default_visible(names or (), self.fixed_metrics))
        return self._default[1]

    def _visible(self, browser: list[str] | None) -> list[str]:
        """The metrics read this poll: those the browser shows (or the default set), then the x axis's metric."""
        if browser is None:
            shown = self._default_visible()
        else:
            shown = [m for m in browser if self.fixed_metrics is None or m in self.fixed_metrics]
        x = self.x_metric
        return shown if x is None or x in shown else [*shown, x]

    def _poll(self) -> bool:
        """One round: per run one read of its visible metrics (reduced full range on resync or on entering,
        tails otherwise), then zoomed reads. True if new points came."""
        self._resolve()
        with self.lock:
            resync, self.resync_needed = self.resync_needed, False
            zooms, self.zooms = self.zooms, []
            width = self.width
            browser = None if self.browser_visible is None else list(self.browser_visible)
            entering, self.entering = self.entering, set()
        now = time.monotonic()
        if not self.hello and now - self.last_resync >= RESYNC_SECONDS:
            resync = True
        got_new = False
        visible = self._visible(browser)
        for run in self.runs:
            view = self.views.setdefault(run, _RunView())
            first = view.names is None
            got_new |= self._read_run(run, view, visible, resync, entering, width)
            if first and run == self.run_id and self._visible(browser) != visible:
                # The first answer named the run's metrics: now the default set can be read.
                visible = self._visible(browser)
                got_new |= self._read_run(run, view, visible, resync, entering, width)
        # Metrics that left the view: stop polling them and forget what was sent.
        self.shown = list(visible)
        shown = set(visible)
        self.points.forget(lambda k: k[1] in shown and k[0] in self.views)
        if resync:
            self.last_resync = now
        for zoom in zooms:
            self.points.zoom(zoom, shown, width, self.runs, self.x_metric)
        self._read_checkpoints(now)
        self._read_media(now)
        return got_new

    def _read_checkpoints(self, now: float) -> None:
        """Each shown run's checkpoints and retries, for the markers on the plots (trait ``checkpoints`` for the
        primary run, ``compare_checkpoints`` for the compared ones, drawn in their colours)."""
        primary = self.views.get(self.run_id)
        payload, compared = self.marks.read(self.runs, self.run_id, self.project, now,
                                            primary is not None and primary.state in TERMINAL_STATES)
        if payload is not None:
            self._publish(checkpoints=payload)
        if compared is not None:
            self._publish(compare_checkpoints=compared)

    def _read_media(self, now: float) -> None:
        """The drawn runs' media tags and the media cards on screen (:class:`~taunotebook.pane_media.PaneMedia`)."""
        compared = [(r, (v.state if (v := self.views.get(r)) else "") in TERMINAL_STATES) for r in self.runs[1:]]
        self.media.poll(now, project=self.project, ended=self._primary_state() in TERMINAL_STATES, compared=compared,
                        publish=self._publish, send=self._send_message)

    def _publish_runs(self) -> None:
        runs_info = {run: {"state": v.state, "status_message": v.status_message, "warnings": v.warnings,
                           "metrics": dict(v.entries)}
                     for run in self.runs if (v := self.views.get(run)) is not None}
        primary = self.views[self.run_id]
        traits: dict[str, Any] = {"runs": runs_info, "state": primary.state,
                                  "status": {"kind": "ok", "message": self._ok_message(runs_info), "retry_in": 0.0}}
        if self._names_changed:  # the names go to the browser only when they change
            names = self._all_names()
            if self.fixed_metrics is not None:
                traits["metrics"] = list(self.fixed_metrics)
            elif names is not None:
                traits["metrics"] = names
            if primary.names is not None:
                traits["total_metrics"] = sum(1 for n in primary.names if not n.startswith("tau/"))
            self._names_changed = False
        self._publish(**traits)

    def _read_run(self, run: str, view: _RunView, visible: list[str], resync: bool, entering: set[str],
                  width: int) -> bool:
        """Read the run's visible metrics (one request per :data:`MAX_TAIL_METRICS`) and send what is new."""
        if view.names is not None:
            present = set(view.names)
            visible = [m for m in visible if m in present]
        since: dict[str, tuple[int | None, int | None]] = {}
        for metric in visible:
            held = self.held.get((run, metric))
            if held is None or metric in entering or (resync and held.width != width):
                since[metric] = (None, None)  # a reduced full-range read: a reset
            else:
                since[metric] = (held.last_step, held.count)
        got_new = False
        metrics = list(since)
        entries: dict[str, dict] = {}
        for i in range(0, max(1, len(metrics)), MAX_TAIL_METRICS):
            chunk = {m: since[m] for m in metrics[i:i + MAX_TAIL_METRICS]}
            answer = self._tails(run, view, chunk, max_points(width))
            view.state = answer.state or answer.lifecycle_state
            view.status_message = answer.status_message
            view.warnings = list(answer.metadata.warnings)
            if answer.names is not None and list(answer.names) != view.names:
                view.names = list(answer.names)
                self._names, self._names_changed = None, True
            view.cursor = answer.cursor
            if run == self.run_id and self.project is None and answer.project:
                self.project = answer.project
            entries.update((t.name, _entry(t.summary)) for t in answer.metrics if t.summary is not None)
            view.entries = {m: entries[m] for m in metrics if m in entries}
            self._publish_runs()  # the catalog before its points: the browser knows what it draws
            got_new |= self.points.apply_answer(run, answer.metrics, chunk, resync, width)
        return got_new

    def _tails(self, run: str, view: _RunView, since: dict, max_points: int) -> Tails:
        return self.reader.read(run, since, catalog_since=view.cursor, max_points=max_points,
                                project=self.project if run == self.run_id else None)

    def _ok_message(self, runs_info: dict) -> str:
        return ok_words(runs_info[self.run_id], [*self.compare_notes, *(w for r in runs_info.values()
                                                                          for w in r.get("warnings", ()))])


class _PaneGone(Exception):
    """The pane was garbage collected: the thread ends."""


def stellar_page_href(client: PortalClient, run_id: str, project: str | None, compare: Iterable[str] = (),
                  pane_source: str = "") -> str:
    """The run's Stellar page (through Jupyter inside it); a comparing pane links the page comparing those runs."""
    return stellar_link(run_id, project if project is not None else client.project, portal_url=client.base_url,
                        workspace=client.workspace, compare=compare, source=pane_source or None)
