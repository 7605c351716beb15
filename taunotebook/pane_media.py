"""The loss pane's media: the primary run's histogram, image and text tags (trait ``media``), and for the cards
the browser reports on screen (``media_visible``) what they show at the step cursor (``media_step``), sent as
``media`` messages and image bytes as ``image`` messages (the contract in :mod:`taunotebook.pane`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from taunotebook.client import NotFoundError, PortalClient, PortalError
from taunotebook.client.media_models import MEDIA_KINDS, MediaTag
from taunotebook.pane_reads import ROUTE_NOT_FOUND

__all__ = ["HISTOGRAM_STEPS", "MEDIA_SECONDS", "PaneMedia", "card_key", "parse_card"]

MEDIA_SECONDS = 2.0  # the media tags are read again at most this often while the run lives (a quiet run's poll)
HISTOGRAM_STEPS = 200  # the steps of a histogram card's bands and heat map (the Portal reduces to these)

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


class PaneMedia:
    """Reads the media of the pane's run for the poller's thread; the kernel's thread hands over what is on screen
    and the cursor (:meth:`set_visible`, :meth:`set_step`, :meth:`resend`). Each card's read is made only when what
    it shows may have changed (it entered the screen, the cursor moved, its tag grew while it follows the latest
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
        self.tags: dict[tuple[str, str], MediaTag] = {}
        self.tags_read_at: float | None = None
        self.final_read = False  # the tags were read once after the run ended (or said unavailable): no more reads
        self.tags_sent: dict | None = None
        self.read_for: dict[tuple[str, str], tuple] = {}  # per card, what its last read was made for
        self.sent: dict[tuple[str, str], Any] = {}  # per card, what its last message carried
        self.images_sent: set[str] = set()  # digests whose bytes the page holds
        self.seq = 0

    # -- the kernel's thread

    def set_visible(self, keys: Iterable[object]) -> None:
        cards = [c for c in (parse_card(k) for k in keys) if c is not None]
        with self.lock:
            self.visible = list(dict.fromkeys(cards))

    def set_step(self, step: object) -> None:
        ok = step is None or (isinstance(step, int) and not isinstance(step, bool))
        with self.lock:
            self.step = step if ok else None  # type: ignore[assignment]

    def resend(self) -> None:
        """A page (re)loaded: everything on screen is sent again (the ``media`` trait is in the state it gets)."""
        with self.lock:
            self.read_for.clear()
            self.sent.clear()
            self.images_sent.clear()

    # -- the poller's thread

    def poll(self, now: float, *, project: str | None, ended: bool, publish: Publish, send: Send) -> None:
        if not self.available:
            return
        self._read_tags(now, project, ended, publish)
        if not self.available:
            return
        with self.lock:
            visible, step = list(self.visible), self.step
        for kind, tag in visible:
            info = self.tags.get((kind, tag))
            if info is None:
                continue
            want = self._wanted(kind, info, step)
            if self.read_for.get((kind, tag)) == want:
                continue
            self.read_for[(kind, tag)] = want
            self._read_card(kind, tag, info, step, project, send)

    def _read_tags(self, now: float, project: str | None, ended: bool, publish: Publish) -> None:
        recent = self.tags_read_at is not None and now - self.tags_read_at < MEDIA_SECONDS
        if self.tags_read_at is not None and (self.final_read or (recent and not ended)):
            return
        self.tags_read_at = now
        self.final_read = ended
        self.requests += 1
        try:
            answer = self.client.media_tags(self.run_id, project=project, source=self.source)
        except NotFoundError as err:
            if err.message == ROUTE_NOT_FOUND:
                self.available = False  # TauGrid's Portal: no media routes
            return
        except PortalError:
            return  # the cards wait for the next read; the metrics go on either way
        self.tags = {(t.kind, t.tag): t for t in answer.tags if t.kind in MEDIA_KINDS}
        if answer.unavailable:
            self.final_read = True  # a Kusto-served run: its media are not here, and will not be
        payload = {"tags": [{"kind": t.kind, "tag": t.tag, "count": t.count, "step_min": t.step_min,
                             "step_max": t.step_max} for t in self.tags.values()],
                   "unavailable": answer.unavailable}
        if payload != self.tags_sent:
            publish(media=payload)
            self.tags_sent = payload

    @staticmethod
    def _wanted(kind: str, info: MediaTag, step: int | None) -> tuple:
        """What a card's read is for: a histogram's range reads again as its tag grows; an image or text card reads
        the cursor's step, or its tag's latest step while no cursor is set."""
        if kind == "histograms":
            return (info.count, info.step_max, step)
        return (step,) if step is not None else (None, info.step_max)

    def _read_card(self, kind: str, tag: str, info: MediaTag, step: int | None, project: str | None,
                   send: Send) -> None:
        at = step if step is not None else info.step_max
        base = {"type": "media", "kind": kind, "run": self.run_id, "tag": tag, "requested_step": at}
        try:
            self.requests += 1
            if kind == "histograms":
                h = self.client.histograms(self.run_id, tag, max_steps=HISTOGRAM_STEPS,
                                           keep=() if step is None else (step,), project=project,
                                           source=self.source)
                body = {"steps": list(h.steps), "wall_times": list(h.wall_times), "basis_points": list(h.basis_points),
                        "summary": [list(r) for r in h.summary], "total": h.total, "reduced": h.reduced,
                        "buckets": None if h.buckets is None else [[list(b) for b in row] for row in h.buckets]}
                # Without requested_step: the same answer for another cursor is not sent again.
                self._send_once(kind, tag, {**base, "requested_step": None, **_finite(body)}, send)
            elif at is None:
                return
            elif kind == "text":
                t = self.client.text_at(self.run_id, tag, at, project=project, source=self.source)
                self._send_once(kind, tag, {**base, "step": t.step, "wall_time": t.wall_time,
                                            "shape": list(t.shape), "text": list(t.text)}, send)
            else:
                self._images(tag, at, base, project, send)
        except PortalError as err:
            self.read_for.pop((kind, tag), None)  # read again next poll: a card is never left blank
            self._send_once(kind, tag, {**base, "error": _words(err)}, send)

    def _images(self, tag: str, at: int, base: dict, project: str | None, send: Send) -> None:
        near = self.client.images_near(self.run_id, tag, at, project=project, source=self.source)
        listing = [{"index": i.index, "digest": i.digest, "content_type": i.content_type, "width": i.width,
                    "height": i.height, "caption": i.caption, "size_bytes": i.size_bytes} for i in near.images]
        # The bytes first (each digest once per page), then the listing that names them.
        for image in near.images:
            if image.digest in self.images_sent:
                continue
            self.requests += 1
            data = self.client.image_bytes(self.run_id, image.digest, thumbnail=True, project=project,
                                           source=self.source)
            self.seq += 1
            send({"type": "image", "seq": self.seq, "run": self.run_id, "tag": tag, "digest": image.digest,
                  "content_type": "image/png", "thumbnail": True, "n": len(data),
                  "sent_at": time.time() * 1000.0}, [data])
            self.images_sent.add(image.digest)
        self._send_once("images", tag, {**base, "step": near.step, "images": listing}, send)

    def _send_once(self, kind: str, tag: str, message: dict, send: Send) -> None:
        if self.sent.get((kind, tag)) == message:
            return
        self.sent[(kind, tag)] = message
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
