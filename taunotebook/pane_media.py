"""The loss pane's media: the histogram, image and text tags of the primary run and of each compared run (trait
``media``), and for the cards the browser reports on screen (``media_visible``) what each run's panel shows at the
step cursor (``media_step``), sent as ``media`` messages and image bytes as ``image`` messages (thumbnails once per
page, a full image when its link asks; the contract in :mod:`taunotebook.pane`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from taunotebook.client import NotFoundError, PortalClient, PortalError
from taunotebook.client.media_models import MEDIA_KINDS, MediaTag
from taunotebook.pane_reads import ROUTE_NOT_FOUND

__all__ = ["HISTOGRAM_STEPS", "MEDIA_SECONDS", "PaneMedia", "card_key", "parse_card"]

MEDIA_SECONDS = 2.0  # the media tags are read again at most this often while the run lives (a quiet run's poll)
HISTOGRAM_STEPS = 200  # the steps of a histogram card's bands and heat map (the Portal reduces to these)
FULL_WANTED_MAX = 16  # full images asked for and not yet read: more requests wait for the page to ask again

Publish = Callable[..., None]
Send = Callable[[dict, list[bytes]], None]


def card_key(kind: str, tag: str) -> str:
    """A card's name in ``media_visible``: ``<kind>/<tag>`` (``histograms/layer1/weights``)."""
    return f"{kind}/{tag}"


def parse_card(key: object) -> tuple[str, str] | None:
    """``(kind, tag)`` of a ``media_visible`` entry, or None for one that names no card."""
    if not isinstance(key, str) or "/" not in key:
        return None
    kind, tag = key.split("/", 1)
    return (kind, tag) if kind in MEDIA_KINDS and tag else None


@dataclass
class _RunTags:
    """What the ``…/media`` reads of one drawn run learned: its tags, when they were read, whether they are final."""

    tags: dict[tuple[str, str], MediaTag] = field(default_factory=dict)
    read_at: float | None = None
    final: bool = False  # read once after the run ended (or said unavailable): not read again
    unavailable: str | None = None
    answered: bool = False  # the Portal answered a read


class PaneMedia:
    """Reads the media of the pane's runs (the primary run, then the compared ones) for the poller's thread; the
    kernel's thread hands over what is on screen, the cursor and the full images asked for (:meth:`set_visible`,
    :meth:`set_step`, :meth:`request_full`, :meth:`resend`). Each run's card read is made only when what it shows
    may have changed (the card entered the screen, the cursor moved, its tag grew while it follows the latest
    step), and its answer is sent only when it differs from what was sent."""

    def __init__(self, client: PortalClient, source: str | None, run_id: str) -> None:
        self.client = client
        self.source = source
        self.run_id = run_id
        self.available = True  # until the Portal says it has no such route (TauGrid's)
        self.requests = 0
        self.lock = threading.Lock()
        self.visible: list[tuple[str, str]] = []
        self.step: int | None = None  # the cursor; None: each card shows its tag's latest step
        self.full_wanted: list[tuple[str, str]] = []  # (run, digest) of full images the page asked for
        self.runs: dict[str, _RunTags] = {run_id: _RunTags()}  # the drawn runs, the primary first
        self.tags_sent: dict | None = None
        self.read_for: dict[tuple[str, str, str], tuple] = {}  # per (run, kind, tag), what its last read was for
        self.sent: dict[tuple[str, str, str], Any] = {}  # per (run, kind, tag), what its last message carried
        self.images_sent: set[str] = set()  # digests whose thumbnails the page holds
        self.listed: dict[tuple[str, str], str] = {}  # (run, digest) of the images sent in listings → content type
        self.seq = 0

    @property
    def tags(self) -> dict[tuple[str, str], MediaTag]:
        """The primary run's tags."""
        return self.runs[self.run_id].tags

    def compared_tags(self) -> dict[str, dict[tuple[str, str], MediaTag]]:
        """Each compared run's tags, in the pane's order (those whose tags were read)."""
        return {run: rt.tags for run, rt in self.runs.items() if run != self.run_id and rt.answered}

    # -- the kernel's thread

    def set_visible(self, keys: Iterable[object]) -> None:
        cards = [c for c in (parse_card(k) for k in keys) if c is not None]
        with self.lock:
            self.visible = list(dict.fromkeys(cards))

    def set_step(self, step: object) -> None:
        ok = step is None or (isinstance(step, int) and not isinstance(step, bool))
        with self.lock:
            self.step = step if ok else None  # type: ignore[assignment]

    def request_full(self, run: object, digest: object) -> None:
        """The page's "full image" link: the image's stored bytes, sent once as an ``image`` message
        (``thumbnail`` false) on the next poll. Only an image this pane listed for that run is read."""
        if not isinstance(run, str) or not isinstance(digest, str):
            return
        with self.lock:
            if (run, digest) not in self.full_wanted and len(self.full_wanted) < FULL_WANTED_MAX:
                self.full_wanted.append((run, digest))

    def resend(self) -> None:
        """A page (re)loaded: everything on screen is sent again (the ``media`` trait is in the state it gets)."""
        with self.lock:
            self.read_for.clear()
            self.sent.clear()
            self.images_sent.clear()

    # -- the poller's thread

    def poll(self, now: float, *, project: str | None, ended: bool, publish: Publish, send: Send,
             compared: Sequence[tuple[str, bool]] = ()) -> None:
        """One round: each drawn run's tags when due (``compared``: the compared runs, each with whether it ended),
        then each card on screen for every run that has its tag, then the full images asked for."""
        if not self.available:
            return
        self._follow_runs([r for r, _ in compared if r != self.run_id])
        for run, run_ended in [(self.run_id, ended), *compared]:
            if run in self.runs:
                self._read_tags(run, now, project if run == self.run_id else None, run_ended)
            if not self.available:
                return
        self._publish_tags(publish)
        with self.lock:
            visible, step = list(self.visible), self.step
            full, self.full_wanted = self.full_wanted, []
        for kind, tag in visible:
            holders = [(run, info) for run, rt in self.runs.items() if (info := rt.tags.get((kind, tag)))]
            if not holders:
                continue
            latest = max(info.step_max for _, info in holders)  # the card's step before the cursor is set
            for run, info in holders:
                want = self._wanted(kind, info, step, latest)
                if self.read_for.get((run, kind, tag)) == want:
                    continue
                self.read_for[(run, kind, tag)] = want
                self._read_card(run, kind, tag, step if step is not None else latest, step,
                                project if run == self.run_id else None, send)
        for run, digest in full:
            self._full_image(run, digest, project if run == self.run_id else None, send)

    def _follow_runs(self, compared: list[str]) -> None:
        """The compared runs now drawn: a new one is read from scratch, one no longer drawn is forgotten."""
        wanted = [self.run_id, *dict.fromkeys(compared)]
        if list(self.runs) == wanted:
            return
        self.runs = {run: self.runs.get(run) or _RunTags() for run in wanted}
        for key in [k for k in self.read_for if k[0] not in self.runs]:
            self.read_for.pop(key, None)
            self.sent.pop(key, None)

    def _read_tags(self, run: str, now: float, project: str | None, ended: bool) -> None:
        rt = self.runs[run]
        recent = rt.read_at is not None and now - rt.read_at < MEDIA_SECONDS
        if rt.read_at is not None and (rt.final or (recent and not ended)):
            return
        rt.read_at = now
        rt.final = ended
        self.requests += 1
        try:
            answer = self.client.media_tags(run, project=project, source=self.source)
        except NotFoundError as err:
            if err.message == ROUTE_NOT_FOUND:
                self.available = False  # TauGrid's Portal: no media routes
            return
        except PortalError:
            return  # the cards wait for the next read; the metrics go on either way
        rt.tags = {(t.kind, t.tag): t for t in answer.tags if t.kind in MEDIA_KINDS}
        rt.answered = True
        rt.unavailable = answer.unavailable
        if answer.unavailable:
            rt.final = True  # a Kusto-served run: its media are not here, and will not be

    def _publish_tags(self, publish: Publish) -> None:
        def listing(rt: _RunTags) -> dict:
            return {"tags": [{"kind": t.kind, "tag": t.tag, "count": t.count, "step_min": t.step_min,
                              "step_max": t.step_max} for t in rt.tags.values()], "unavailable": rt.unavailable}

        read = {run: rt for run, rt in self.runs.items() if rt.answered}
        if self.run_id not in read:
            return
        payload = listing(read[self.run_id])
        if len(self.runs) > 1:
            payload["compared"] = {run: listing(rt) for run, rt in read.items() if run != self.run_id}
        if payload != self.tags_sent:
            publish(media=payload)
            self.tags_sent = payload

    @staticmethod
    def _wanted(kind: str, info: MediaTag, step: int | None, latest: int) -> tuple:
        """What a run's card read is for: a histogram's range reads again as its tag grows; an image or text card
        reads the cursor's step, or (no cursor) the latest step of the tag over the drawn runs."""
        if kind == "histograms":
            return (info.count, info.step_max, step)
        return (step,) if step is not None else (None, latest, info.step_max)

    def _read_card(self, run: str, kind: str, tag: str, at: int, step: int | None, project: str | None,
                   send: Send) -> None:
        base = {"type": "media", "kind": kind, "run": run, "tag": tag, "requested_step": at}
        try:
            self.requests += 1
            if kind == "histograms":
                h = self.client.histograms(run, tag, max_steps=HISTOGRAM_STEPS,
                                           keep=() if step is None else (step,), project=project,
                                           source=self.source)
                body = {"steps": list(h.steps), "wall_times": list(h.wall_times), "basis_points": list(h.basis_points),
                        "summary": [list(r) for r in h.summary], "total": h.total, "reduced": h.reduced,
                        "buckets": None if h.buckets is None else [[list(b) for b in row] for row in h.buckets]}
                # Without requested_step: the same answer for another cursor is not sent again.
                self._send_once(run, kind, tag, {**base, "requested_step": None, **_finite(body)}, send)
            elif kind == "text":
                t = self.client.text_at(run, tag, at, project=project, source=self.source)
                self._send_once(run, kind, tag, {**base, "step": t.step, "wall_time": t.wall_time,
                                                 "shape": list(t.shape), "text": list(t.text)}, send)
            else:
                self._images(run, tag, at, base, project, send)
        except PortalError as err:
            self.read_for.pop((run, kind, tag), None)  # read again next poll: a card is never left blank
            self._send_once(run, kind, tag, {**base, "error": _words(err)}, send)

    def _images(self, run: str, tag: str, at: int, base: dict, project: str | None, send: Send) -> None:
        near = self.client.images_near(run, tag, at, project=project, source=self.source)
        listing = [{"index": i.index, "digest": i.digest, "content_type": i.content_type, "width": i.width,
                    "height": i.height, "caption": i.caption, "size_bytes": i.size_bytes} for i in near.images]
        # The bytes first (each digest once per page), then the listing that names them.
        for image in near.images:
            self.listed[(run, image.digest)] = image.content_type or "application/octet-stream"
            if image.digest in self.images_sent:
                continue
            self.requests += 1
            data = self.client.image_bytes(run, image.digest, thumbnail=True, project=project, source=self.source)
            self._send_image({"run": run, "tag": tag, "digest": image.digest, "content_type": "image/png",
                              "thumbnail": True}, data, send)
            self.images_sent.add(image.digest)
        self._send_once(run, "images", tag, {**base, "step": near.step, "images": listing}, send)

    def _full_image(self, run: str, digest: str, project: str | None, send: Send) -> None:
        """An image's stored bytes for the page's "full image" link, or the words saying why not."""
        head = {"run": run, "tag": None, "digest": digest, "thumbnail": False}
        content_type = self.listed.get((run, digest))
        if content_type is None:
            self._send_image({**head, "error": f"image {digest[:80]!r} of run {run[:80]!r} is not one this pane "
                                               "listed"}, b"", send)
            return
        try:
            self.requests += 1
            data = self.client.image_bytes(run, digest, thumbnail=False, project=project, source=self.source)
        except PortalError as err:
            self._send_image({**head, "error": _words(err)}, b"", send)
            return
        self._send_image({**head, "content_type": content_type}, data, send)

    def _send_image(self, header: dict, data: bytes, send: Send) -> None:
        self.seq += 1
        send({"type": "image", "seq": self.seq, **header, "n": len(data), "sent_at": time.time() * 1000.0},
             [data] if data else [])

    def _send_once(self, run: str, kind: str, tag: str, message: dict, send: Send) -> None:
        if self.sent.get((run, kind, tag)) == message:
            return
        self.sent[(run, kind, tag)] = message
        self.seq += 1
        send({**message, "seq": self.seq}, [])


def _finite(body: dict) -> dict:
    """NaN (a bucket the Portal could not say) as None: JSON carries no NaN."""
    def clean(v: Any) -> Any:
        if isinstance(v, float):
            return v if v == v and v not in (float("inf"), float("-inf")) else None
        if isinstance(v, list):
            return [clean(x) for x in v]
        return v
    return {k: clean(v) for k, v in body.items()}


def _words(err: PortalError) -> str:
    """The Portal's message, as a card shows it."""
    status = f"{err.status} " if err.status else ""
    return f"the Portal answered {status}{err.code}: {err.message}"
