"""The loss pane: a live anywidget plot of a run's metrics, fed by a kernel-side thread polling the Portal
(:mod:`taunotebook.pane_poller`).

Python owns the data and the polling; the browser module (``js/pane/``, bundled with ``js/shared/`` and a
plotly.js of the traces it draws into ``taunotebook/static/pane.js``, 1.5 MB) owns the drawing. The browser
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
    every metric name the primary run (then the compared runs) has, in the catalog's order, without
    ``tau/`` markers (the ``metrics=`` argument given: exactly those). Sent only when the set changes.
``total_metrics``
    how many metrics the primary run has (the header's "N metrics").
``runs``
    ``{run_id: {"state": str, "status_message": str, "warnings": [str], "metrics": {name: {"count",
    "latest_step", "latest_value", "non_finite_count"}}}}`` — per run its state
    (pending/running/succeeded/failed/cancelled/…) and, for the metrics in ``visible`` only (never all
    of a wide run's), what the Portal's metric catalog says.
``state``
    the primary run's state (``""`` until known).
``lifecycle``
    a submitted run's place in its lifecycle, in its backend's words (:mod:`taunotebook.lifecycle`):
    ``{"phase", "reason", "retries", "text"}`` — ``queued: Job has not started yet ...`` from Ray,
    ``failed: killed by SIGKILL (exit 137)`` from the local wrapper; ``{}`` for a pane not made by
    ``SubmittedRun.pane()``. Read while the Portal has no metrics of the run yet.
``resources``
    what the submitted job asked for (``{"gpus": 2, "image": ..., "queue": ...}``, the given
    :class:`~taunotebook.resources.JobResources` fields); the header shows them.
``status``
    ``{"kind": "connecting"|"ok"|"unreachable"|"unauthorized"|"not_found"|"error"|"closed",
    "message": str, "retry_in": float}`` — the connection to the Portal, in words.
``stellar_href``
    the "Open in Stellar" link (through Jupyter's proxy inside Jupyter, else the Portal's own URL); a pane
    comparing runs links the Stellar page comparing the runs ``compare`` resolved to (``&compare=b,c``).
``checkpoints``
    ``{"checkpoints": [{"step", "uri", "size_bytes", "deleted"}], "retries": [{"step", "attempt", "max_retries",
    "resume_from"}]}`` — the primary run's checkpoints and retries (``/runs/{run_id}/checkpoints``), marked on
    each of its plots (``js/shared/checkpoint_marks.js``); ``{}`` until read, and from a Portal without the route.
``compare_checkpoints``
    ``{run_id: {"checkpoints": [...], "retries": [...]}}`` — the same for each compared run that has any, marked
    in that run's colour.
``media``
    ``{"tags": [{"kind": "histograms"|"images"|"text", "tag", "count", "step_min", "step_max"}], "unavailable":
    str | None, "compared": {run_id: {"tags": [...], "unavailable": ...}}}`` — the primary run's media tags
    (``/runs/{run_id}/media``) and, in a pane comparing runs, each compared run's (``compared``, absent otherwise),
    each run's read again at most every :data:`~taunotebook.pane_media.MEDIA_SECONDS` while that run lives and sent
    when they change; the browser draws a section per kind below the metrics, a card per tag with a panel per drawn
    run (``js/pane/media_section.js``). ``{}`` until read, and from a Portal without the route; ``unavailable``
    says in words why a run has none here (a Kusto-served run).
``media_visible`` (browser → Python)
    the cards on screen, as ``"<kind>/<tag>"`` (``"images/samples"``): only these are read, for every drawn run
    that has the tag.
``media_step`` (browser → Python)
    the step cursor (``js/shared/step_cursor.js``: a click on a loss curve, a typed step); ``None``: each card
    shows its tag's latest step. Every card shows its tag's stored step nearest it and labels that step.
``aggregate``, ``band`` (both ways)
    how compared runs are drawn: ``""`` each its own line, ``"mean"`` or ``"median"`` one line with a band
    (``band``: ``"minmax"``, ``"std"`` for ±1 standard deviation, ``"none"``), computed in the browser by
    ``js/shared/aggregate.js`` at the union of the runs' steps (docs/comparing-runs.md says the rule).
``x_axis`` (both ways)
    what the plots are drawn against: ``"step"``, ``"relative"``, ``"wall"`` or ``"metric:<name>"`` (``""``: the
    browser's last choice). On a metric axis the kernel polls that metric for every drawn run beside the
    visible ones (and reads it again for a zoomed window), and the browser joins it by step
    (``js/shared/x_metric.js``: the last x value carried forward, points before its first value counted
    and not drawn; docs/loss-pane.md).
``visible`` (browser → Python)
    the metric names whose plots exist in the browser (open section, in or near the viewport, or pinned
    and on screen). Only these are fetched and polled, for every drawn run: a name entering gets a fresh
    ``reset``, one leaving is no longer polled and what was sent for it is forgotten. Until the browser
    sets it (no browser, nbclient, the first poll) the default set is polled: the loss-like metrics (name
    contains "loss", any case) then the first others in catalog order, at most 8 (``metrics=`` given: its
    first 8).
``pinned``, ``filter``, ``sections`` (browser → Python)
    what the user pinned, typed in the search box (a regex, else a substring) and opened or collapsed per
    section; kept with the notebook's widget state, not read by Python.
``width`` (browser → Python)
    the plot width in CSS pixels; the first reduced request asks for ``4 × width`` points (M4).
``pane_id``
    a random id, in the first state the page gets: it names the static output shown beside the widget (below),
    which the live view hides, and keys what the page keeps per pane.

The points message, Python → browser, via ``widget.send(header, buffers=[steps, values])``::

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

Media messages, Python → browser (:mod:`taunotebook.pane_media`), each sent only when it differs from the
run's panel's last one. One run's read of a card (``run``: the primary run or a compared one), JSON and no
buffers::

    {"type": "media", "seq": int, "kind": "histograms"|"images"|"text", "run": run_id, "tag": str,
     "requested_step": int | None, ...}

``requested_step`` is the cursor's step, or before the cursor is set the tag's latest step over the drawn runs
(every run's panel reads the same step); with, for ``histograms`` (``requested_step`` null), the tag reduced to at
most
:data:`~taunotebook.pane_media.HISTOGRAM_STEPS` steps (never dropping the cursor's): ``"steps", "wall_times",
"basis_points", "summary", "buckets", "total", "reduced"`` as ``/histograms`` answers them (NaN as null); for
``images`` the stored ``"step"`` and its
``"images": [{"index", "digest", "content_type", "width", "height", "caption", "size_bytes"}]``; for
``text`` ``"step", "wall_time", "shape", "text"``; and on a failed read ``"error"``: the Portal's message in
words, which the card shows. An image's bytes, before the first listing that names it and once per page::

    header  = {"type": "image", "seq": int, "run": run_id, "tag": str, "digest": "sha256:<hex>",
               "content_type": str, "thumbnail": true, "n": int, "sent_at": epoch ms}
    buffers = [the thumbnail's n bytes (a PNG, longest side ≤ 160 px)]

and, answering the page's ``image-full`` message (below), the image as stored, with ``"thumbnail": false``, the
listing's ``content_type`` and ``"tag": null`` — or, with no buffer, ``"error"``: why it could not be read (the
Portal's words, or an image this pane never listed for that run).

Each poll reads, per drawn run, one ``/stellar/data/runs/{run}/tails`` answer for the visible metrics
(their catalog entries and new points; the metric names only when they changed); against a Portal
without that route (TauGrid's), the v2 catalog and one ``/series`` per changed metric
(:mod:`taunotebook.pane_reads`).

The static output
=================

Displaying the pane shows two outputs: the widget, and a static one (display id ``tau-pane-<pane_id>``) holding
a PNG of the first :data:`~taunotebook.pane_picture.MAX_PLOTS` metrics it draws, drawn in the kernel from the
points the poller holds (:mod:`taunotebook.pane_picture`), and one line of text (run, state, latest values), as
``text/html`` (marked ``data-tau-pane-static``), ``image/png`` and ``text/plain``. The poller redraws it
(``update_display``) while the run lives, at most every :data:`~taunotebook.pane_poller.FALLBACK_SECONDS`, and once
more when polling stops. A live view hides it with CSS; everywhere the live view cannot load (a widget manager
without anywidget, ``jupyter nbconvert --to html``, GitHub, nbviewer, a notebook reopened without its kernel) it
is what shows. Below the picture it keeps the primary run's media at the step cursor (``media_step``; else each
tag's latest step), read by the poller for it (:mod:`taunotebook.pane_static_media`, again only when the tags or the
cursor changed): each histogram tag drawn as a PNG (bands over the steps and the histogram at the step), the images
of each image tag as ``data:`` URIs, the strings of each text tag; within a stated budget (at most 4 tags of each
kind, 4 images a tag, 256 kB of images, 8 strings a tag), saying in words what it left out and linking the run's
Stellar page. It is a separate output because a front end with a widget manager renders the widget's own
bundle with the manager even when the model's module cannot load: it never falls back to another type there.

``seq`` counts messages per widget; until the browser has said ``hello`` Python resends every series
as ``reset`` every :data:`RESYNC_SECONDS` (a browser still loading the module drops messages, and while
a cell runs the kernel cannot read the browser's ``hello``).

Browser → Python custom messages: ``{"type": "hello", "width": px}`` (a model was created in a page),
``{"type": "zoom", "metric": name, "start_step": int, "end_step": int}`` and
``{"type": "unzoom", "metric": name}``; ``{"type": "image-full", "run": run_id, "digest": "sha256:<hex>"}``, an
image card's "full image" link (answered by an ``image`` message with the stored bytes on the next poll); and
``{"type": "note", "text": str}``, the pane's "note" action: Python
posts it to the run's notes route with its client (the token never reaches the browser) and answers
``{"type": "note-result", "ok": bool, "message": str}``.
"""

from __future__ import annotations

import base64
import html
import threading
import uuid
import weakref
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from taunotebook.client import PortalClient, PortalError, check_source
from taunotebook.pane_picture import Snapshot, picture_png, text_line
from taunotebook.pane_poller import DEFAULT_WIDTH, TERMINAL_STATES, Poller, stellar_page_href
from taunotebook.pane_static_media import media_html, media_words

__all__ = ["BUILD_HINT", "BUNDLE", "LossPane", "TERMINAL_STATES"]

BUNDLE = Path(__file__).resolve().parent / "static" / "pane.js"
TIME_AXES = ("step", "relative", "wall")
METRIC_AXIS = "metric:"
AGGREGATES = ("", "mean", "median")  # compared runs: each its line, or one line with a band around it
BANDS = ("minmax", "std", "none")
BUILD_HINT = "npm --prefix js ci && npm --prefix js run build   (or: pip install -e .)"

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


class LossPane(anywidget.AnyWidget):
    """A live plot of a run's metrics (``loss`` first), polled from the Portal by a background thread.

    ``portal`` is a :class:`~taunotebook.client.PortalClient`, a base URL (token from ``TAU_PORTAL_TOKEN``
    or the URL's ``?token=``), or ``None`` for ``TAU_PORTAL_URL``/``TAU_PORTAL_TOKEN``. ``metrics``
    limits the metrics drawn (default: all the run has). ``compare`` adds other runs to every plot: run
    ids, or an experiment or run group id for all of its runs (:mod:`taunotebook.compare_runs`; a run
    id wins when an id names both); ``aggregate="mean"`` (or ``"median"``) draws them as one line with a
    ``band`` (``"minmax"``, ``"std"``, ``"none"``), the seeds of one configuration as W&B groups them.
    ``source`` (``local``, ``kusto`` or ``auto``; default: the client's, else the Portal's default) is
    named on every read and carried by "Open in Stellar". ``x`` is the x axis: ``"step"``, ``"relative"``,
    ``"wall"`` or a metric of the run (``x="tokens"``: each point at the run's token count at its step;
    default: the axis last chosen in the browser). ``close()`` stops the thread.
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
    pane_id = traitlets.Unicode("").tag(sync=True)
    total_metrics = traitlets.Int(0).tag(sync=True)
    visible = traitlets.List(traitlets.Unicode()).tag(sync=True)
    pinned = traitlets.List(traitlets.Unicode()).tag(sync=True)
    filter = traitlets.Unicode("").tag(sync=True)
    sections = traitlets.Dict().tag(sync=True)  # {section: open}; not read by Python, kept as the page sends it
    aggregate = traitlets.Enum(AGGREGATES, "").tag(sync=True)
    band = traitlets.Enum(BANDS, "minmax").tag(sync=True)
    x_axis = traitlets.Unicode("").tag(sync=True)
    lifecycle = traitlets.Dict().tag(sync=True)  # the backend's {"phase", "reason", "retries", "text"}
    resources = traitlets.Dict().tag(sync=True)  # what the job asked for: {"gpus": 2, "image": ...}
    checkpoints = traitlets.Dict({}).tag(sync=True)
    compare_checkpoints = traitlets.Dict({}).tag(sync=True)
    media = traitlets.Dict({}).tag(sync=True)  # the run's media tags (histograms, images, text)
    media_visible = traitlets.List(traitlets.Unicode()).tag(sync=True)  # "<kind>/<tag>" of the cards on screen
    media_step = traitlets.Int(None, allow_none=True).tag(sync=True)  # the step cursor; None: the latest steps

    def __init__(
        self,
        run_id: str,
        metrics: Iterable[str] | None = None,
        *,
        portal: PortalClient | str | None = None,
        project: str | None = None,
        compare: Iterable[str] = (),
        source: str | None = None,
        aggregate: str = "",
        band: str = "minmax",
        x: str | None = None,
        start: bool = True,
        job: Callable[[], Any] | None = None,
        resources: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(run_id, str) or not run_id.strip():
            raise ValueError(f"run_id must be a non-empty string, got {run_id!r}")
        if aggregate not in AGGREGATES:
            raise ValueError(f"aggregate must be one of {', '.join(map(repr, AGGREGATES))}, got {aggregate!r}")
        if band not in BANDS:
            raise ValueError(f"band must be one of {', '.join(map(repr, BANDS))}, got {band!r}")
        source = check_source(source)
        x_axis = x_axis_value(x)
        self._esm = _bundle()
        if isinstance(portal, PortalClient):
            client, owns = portal, False
        else:
            # No client-level retries: the pane's own backoff retries, and says so in the pane meanwhile.
            client, owns = PortalClient(portal, project=project, source=source, retries=0, timeout=5.0), True
        source = source if source is not None else (client.source or "")
        requested = list(dict.fromkeys(str(m) for m in metrics)) if metrics else []
        # pane_id is in the first state the page gets (the model id is known only once the comm is open).
        super().__init__(run_id=run_id.strip(), project=project or "", source=source,
                         compare=[str(c) for c in compare], metrics=requested, aggregate=aggregate, band=band,
                         x_axis=x_axis, resources=_jsonable(resources or {}), pane_id=uuid.uuid4().hex)
        self.stellar_href = stellar_page_href(client, self.run_id, project, self.compare, self.source)
        self._displayed = False  # the static output exists somewhere (this pane was displayed in a kernel)
        self._snapshot = Snapshot(run_id=self.run_id)
        self._static_lock = threading.Lock()
        self._poller = Poller(_PaneOutput(self), client, owns, run_id=self.run_id, project=project,
                              source=self.source, compare=self.compare, metrics=requested or None,
                              x_metric=axis_metric(x_axis), job=job)
        self.on_msg(_on_msg_weak(self))
        self.observe(_on_width, names="width")
        self.observe(_on_visible, names="visible")  # set from Python; a browser's update comes by set_state
        self.observe(_on_x_axis, names="x_axis")
        self.observe(_on_media, names=["media_visible", "media_step"])  # set from Python (pane.media_step = 500)
        if start:
            self._poller.start()

    # -- lifecycle

    @property
    def polling(self) -> bool:
        """True while the background thread polls the Portal (false once the run is terminal and drained).

        A drained pane's thread stays parked on an event, without timers, to answer a page's zoom or
        reload; ``close()`` ends it.
        """
        return self._poller.polling

    def set_state(self, sync_data: dict) -> None:
        """A browser's update: its ``visible`` (even one equal to the last) decides what is polled from now on."""
        if "x_axis" in sync_data and axis_metric(sync_data["x_axis"]) is None and sync_data["x_axis"] not in TIME_AXES:
            sync_data = {k: v for k, v in sync_data.items() if k != "x_axis"}  # not an axis: ignored
        super().set_state(sync_data)
        if "visible" in sync_data:
            self._poller.set_visible(self.visible)
        if "media_visible" in sync_data or "media_step" in sync_data:
            self._poller.set_media(self.media_visible if "media_visible" in sync_data else None, self.media_step,
                                   step_given="media_step" in sync_data)

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

    # -- display: the live widget plus a static output the live view hides

    @property
    def static_display_id(self) -> str:
        return f"tau-pane-{self.pane_id}"

    def _repr_mimebundle_(self, **kwargs: Any):
        bundle = super()._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        if isinstance(data, dict) and "text/plain" in data:
            data["text/plain"] = f"LossPane(run_id={self.run_id!r})"  # not every trait (a wide run's are large)
        return bundle

    def _ipython_display_(self) -> None:
        from IPython.display import display

        bundle = self._repr_mimebundle_()
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
        display(data, metadata=metadata, raw=True)
        with self._static_lock:
            self._displayed = True
            display(self.static_bundle(), raw=True, display_id=self.static_display_id)

    def static_bundle(self) -> dict[str, str]:
        """The static output: ``text/html`` (the picture and the line, marked for the live view to hide),
        ``image/png`` and ``text/plain`` (the line)."""
        snap = self._snapshot
        png = base64.b64encode(picture_png(snap)).decode("ascii")
        line = text_line(snap)
        media = media_words(snap.media)
        line = f"{line} · {media}" if media else line
        text = html.escape(line)
        body = (f'<div class="tau-pane-static" data-tau-pane-static="{html.escape(self.pane_id)}">'
                f'<img alt="{text}" src="data:image/png;base64,{png}" style="max-width:100%">'
                f'<div class="tau-pane-static-line" style="font-family:monospace;font-size:12px">{text}</div>'
                f'{media_html(snap.media, self.stellar_href)}</div>')
        return {"text/html": body, "image/png": png, "text/plain": line}

    def _refresh_static(self, snapshot: Snapshot) -> None:
        """The poller's thread: keep the snapshot, and redraw the static output where it was displayed."""
        with self._static_lock:
            self._snapshot = snapshot
            if not self._displayed:
                return
            from IPython.display import update_display

            update_display(self.static_bundle(), raw=True, display_id=self.static_display_id)


def x_axis_value(x: str | None) -> str:
    """The ``x_axis`` trait for ``LossPane(x=…)``: ``None`` → ``""`` (the browser's last choice); ``"step"``,
    ``"relative"`` or ``"wall"`` as given; ``"metric:<name>"`` or any other name → ``"metric:<name>"``."""
    if x is None:
        return ""
    if not isinstance(x, str) or not x.strip():
        raise ValueError(f"x must be 'step', 'relative', 'wall' or a metric's name (e.g. x='tokens'), got {x!r}")
    x = x.strip()
    if x in TIME_AXES:
        return x
    name = x[len(METRIC_AXIS):] if x.startswith(METRIC_AXIS) else x
    if not name:
        raise ValueError(f"x={x!r} names no metric: write x='tokens' (or x='metric:tokens')")
    return METRIC_AXIS + name


def axis_metric(axis: object) -> str | None:
    """The metric an ``x_axis`` value draws against (``"metric:tokens"`` → ``"tokens"``), else None."""
    if isinstance(axis, str) and axis.startswith(METRIC_AXIS) and len(axis) > len(METRIC_AXIS):
        return axis[len(METRIC_AXIS):]
    return None


def _on_msg_weak(pane: LossPane):
    ref = weakref.ref(pane)

    def handler(_widget: Any, content: Any, _buffers: Any) -> None:
        p = ref()
        if p is None:
            return
        if isinstance(content, dict) and content.get("type") == "note":
            # The pane's "note" action: posted to the run's notes route by this kernel's client (the token stays in
            # Python), off the kernel's message loop; the answer goes back as a "note-result" message.
            threading.Thread(target=_post_note, args=(ref, str(content.get("text", ""))), daemon=True,
                             name="tau-pane-note").start()
            return
        p._poller.on_message(content)

    return handler


def _post_note(ref: weakref.ref, text: str) -> None:
    pane = ref()
    if pane is None:
        return
    try:
        note = pane._poller.client.add_note(pane.run_id, text, project=pane.project or None,
                                            source=pane.source or None)
        result = {"type": "note-result", "ok": True, "message": f"note added ({note.created_at})"}
    except (PortalError, ValueError) as err:
        result = {"type": "note-result", "ok": False, "message": f"the note could not be added: {err}"}
    pane.send(result)


class _PaneOutput:
    """The poller's way to its pane (:class:`~taunotebook.pane_poller.PaneOutput`), through a weak reference:
    a pane that is garbage collected stops its thread."""

    def __init__(self, pane: LossPane) -> None:
        self._pane = weakref.ref(pane)

    def publish(self, **traits: Any) -> bool:
        pane = self._pane()
        if pane is None:
            return False
        changed = {k: v for k, v in traits.items() if getattr(pane, k) != v}
        if changed:
            with pane.hold_sync():
                for key, value in changed.items():
                    setattr(pane, key, value)
        return True

    def send(self, header: dict, buffers: list[bytes]) -> bool:
        pane = self._pane()
        if pane is None:
            return False
        pane.send(header, buffers=buffers)
        return True

    def fallback(self, snapshot: Snapshot) -> bool:
        pane = self._pane()
        if pane is None:
            return False
        pane._refresh_static(snapshot)
        return True


def _jsonable(resources: Mapping[str, Any]) -> dict[str, Any]:
    """The ``resources`` trait: tuples as lists, mappings as dicts (what JSON carries)."""
    return {str(k): list(v) if isinstance(v, tuple) else dict(v) if isinstance(v, Mapping) else v
            for k, v in resources.items()}


def _on_width(change: dict) -> None:
    change["owner"]._poller.set_width(change["new"])


def _on_x_axis(change: dict) -> None:
    change["owner"]._poller.set_x_metric(axis_metric(change["new"]))


def _on_media(change: dict) -> None:
    pane = change["owner"]
    pane._poller.set_media(pane.media_visible, pane.media_step, step_given=True)


def _on_visible(change: dict) -> None:
    change["owner"]._poller.set_visible(change["new"])
