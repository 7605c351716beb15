"""The media in the loss pane's static picture: the histograms, images and text of the primary run and of the runs it
compares (at most :data:`MAX_RUNS`) at the step cursor (else each tag's latest step), read for the saved notebook
within a stated budget and written as HTML that needs no kernel and no network (histograms drawn in the kernel as
PNGs, images as ``data:`` URIs, text as text)."""

from __future__ import annotations

import base64
import html
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from taunotebook.client import PortalClient, PortalError
from taunotebook.client.media_models import Histograms, MediaTag
from taunotebook.pane_picture import RUN_COLORS, assign_run_colors, format_value
from taunotebook.raster import Canvas, hex_rgb, text_width

__all__ = ["BUDGET_WORDS", "HISTOGRAM_STEPS", "MAX_HISTOGRAM_TAGS", "MAX_IMAGE_BYTES", "MAX_IMAGE_TAGS",
           "MAX_IMAGES_PER_TAG", "MAX_RUNS", "MAX_TEXT_CHARS", "MAX_TEXT_STRINGS", "MAX_TEXT_TAGS", "MediaPicture",
           "REFRESH_SECONDS", "StaticHistogram", "StaticImage", "StaticImages", "StaticMedia", "StaticText",
           "histogram_png", "media_html", "media_key", "media_words"]

# The budget of what one pane's saved picture carries (its notebook grows by at most about this much), shared by the
# runs it shows: a tag counts once whatever the runs holding it, the images' bytes are for all runs together.
MAX_RUNS = 4  # runs whose media are kept: the primary and the first compared ones
MAX_HISTOGRAM_TAGS = 4  # histogram tags drawn (bands over steps and the histogram at the step)
HISTOGRAM_STEPS = 100  # steps of a tag's bands (the Portal reduces to these, never dropping the cursor's)
MAX_IMAGE_TAGS = 4
MAX_IMAGES_PER_TAG = 4  # images of one tag at its step
MAX_IMAGE_BYTES = 256 * 1024  # all images' bytes together (thumbnails, ≤ 160 px a side)
MAX_TEXT_TAGS = 4
MAX_TEXT_STRINGS = 8  # strings of one tag at its step
MAX_TEXT_CHARS = 2000  # characters of one string
REFRESH_SECONDS = 30.0  # while a shown run lives, its tags' growth re-reads the media at most this often
BUDGET_WORDS = (f"the saved picture keeps the media of at most {MAX_RUNS} runs, {MAX_HISTOGRAM_TAGS} histogram, "
                f"{MAX_IMAGE_TAGS} image and "
                f"{MAX_TEXT_TAGS} text tags, {MAX_IMAGES_PER_TAG} images a tag and {MAX_IMAGE_BYTES // 1024} kB of "
                f"images, {MAX_TEXT_STRINGS} strings a tag")

_IMAGE_TYPES = {b"\x89PNG": "image/png", b"\xff\xd8\xff": "image/jpeg", b"GIF8": "image/gif"}
_KINDS = ("histograms", "images", "text")
_UNITS = {"histograms": "histogram tag", "images": "image tag", "text": "text tag"}


@dataclass(frozen=True)
class StaticHistogram:
    """A histogram tag's bands over ``steps`` (``summary`` rows: count, min, max, then ``basis_points``) and its
    ``buckets`` at ``step``, the stored step nearest the one asked for."""

    tag: str
    steps: tuple[int, ...]
    basis_points: tuple[int, ...]
    summary: tuple[tuple[float, ...], ...]
    step: int | None
    buckets: tuple[tuple[float, float, float], ...] | None
    run: str = ""


@dataclass(frozen=True)
class StaticImage:
    digest: str
    content_type: str
    data: bytes
    caption: str | None = None
    width: int | None = None
    height: int | None = None

    def data_uri(self) -> str:
        return f"data:{self.content_type};base64,{base64.b64encode(self.data).decode('ascii')}"


@dataclass(frozen=True)
class StaticImages:
    tag: str
    step: int
    images: tuple[StaticImage, ...]
    total: int  # images the tag holds at the step
    run: str = ""


@dataclass(frozen=True)
class StaticText:
    tag: str
    step: int
    text: tuple[str, ...]
    total: int  # strings the tag holds at the step
    run: str = ""


@dataclass(frozen=True)
class MediaPicture:
    """What the saved picture shows of the runs' media (``runs``: the primary first), at the cursor ``step`` (None:
    each tag's latest), and in words what it leaves out (``left_out``) or could not read (``errors``)."""

    step: int | None = None
    histograms: tuple[StaticHistogram, ...] = ()
    images: tuple[StaticImages, ...] = ()
    text: tuple[StaticText, ...] = ()
    left_out: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    unavailable: str | None = None
    runs: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.histograms or self.images or self.text or self.left_out or self.errors or self.unavailable)


def media_key(tags: Mapping[tuple[str, str], MediaTag], step: int | None,
              compared: Mapping[str, Mapping[tuple[str, str], MediaTag]] | None = None) -> tuple:
    """What the picture's media depend on: the tags of the primary run and of each compared run (counts and last
    steps), and the cursor."""
    def listing(t: Mapping[tuple[str, str], MediaTag]) -> tuple:
        return tuple(sorted((k, i.count, i.step_max) for k, i in t.items()))

    key = (step, listing(tags))
    return (*key, tuple((run, listing(t)) for run, t in compared.items())) if compared else key


def _size(n: int) -> str:
    return f"{n // 1024:,} kB" if n >= 1024 else f"{n:,} bytes"


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _names(items: Sequence[str]) -> str:
    return ", ".join(items[:3]) + (", …" if len(items) > 3 else "")


def _shape(key: tuple) -> tuple:
    """A :meth:`StaticMedia.settled_key` key without the tags' counts and last steps: the cursor, which tags of which
    runs, and the words on media that are not here."""
    (step, primary, *compared), unavailable = key
    def names(listing: tuple) -> tuple:
        return tuple(k for k, _, _ in listing)

    return step, names(primary), tuple((run, names(listing)) for run, listing in (compared[0] if compared else ())), \
        unavailable


class StaticMedia:
    """Reads the media for the static picture on the poller's thread, again only when :func:`media_key` changed (a
    run that only grew: at most every :data:`REFRESH_SECONDS` while a shown run lives, and once when they all ended);
    an image's bytes are read once per run and digest."""

    def __init__(self, client: PortalClient, source: str | None, run_id: str) -> None:
        self.client = client
        self.source = source
        self.run_id = run_id
        self.key: tuple | None = None
        self.read_at: float | None = None
        self.picture = MediaPicture()
        self.image_bytes: dict[tuple[str, str], bytes | None] = {}
        self.requests = 0

    def settled_key(self, key: tuple, now: float, live: bool) -> tuple:
        """``(media_key(…), unavailable)`` as the picture goes by: while a shown run lives (``live``), tags that only
        grew (counts and last steps; the same tags, cursor and words) within :data:`REFRESH_SECONDS` of the last read
        keep the last read's key; a cursor moved, a tag new or gone, or no run live, at once."""
        if (live and self.key is not None and self.read_at is not None and now - self.read_at < REFRESH_SECONDS
                and key != self.key and _shape(key) == _shape(self.key)):
            return self.key
        return key

    def current(self, tags: Mapping[tuple[str, str], MediaTag], step: int | None, project: str | None,
                unavailable: str | None = None, *,
                compared: Mapping[str, Mapping[tuple[str, str], MediaTag]] | None = None,
                now: float | None = None, live: bool = False) -> MediaPicture:
        """The picture's media, read again when :meth:`settled_key` changed (``now``: monotonic seconds)."""
        now = time.monotonic() if now is None else now
        key = self.settled_key((media_key(tags, step, compared), unavailable), now, live)
        if key != self.key:
            self.picture = self.read(tags, step, project, unavailable, compared=compared)
            self.key, self.read_at = key, now
        return self.picture

    def read(self, tags: Mapping[tuple[str, str], MediaTag], step: int | None, project: str | None,
             unavailable: str | None = None, *,
             compared: Mapping[str, Mapping[tuple[str, str], MediaTag]] | None = None) -> MediaPicture:
        """The picture's media: ``tags`` are the primary run's, ``compared`` each compared run's (in the pane's order);
        a tag is read for every shown run that holds it, the images' bytes within one budget for all of them."""
        by_run = {self.run_id: tags, **{r: t for r, t in (compared or {}).items() if r != self.run_id}}
        runs = list(by_run)[:MAX_RUNS]
        left_out: list[str] = []
        errors: list[str] = []
        if len(by_run) > MAX_RUNS:
            rest = list(by_run)[MAX_RUNS:]
            left_out.append(f"the media of {_plural(len(rest), 'compared run')} ({_names(rest)})")
        union: dict[tuple[str, str], None] = {}
        for run in runs:
            for key in by_run[run]:
                union.setdefault(key)
        by_kind = {kind: [tag for (k, tag) in union if k == kind] for kind in _KINDS}
        limits = {"histograms": MAX_HISTOGRAM_TAGS, "images": MAX_IMAGE_TAGS, "text": MAX_TEXT_TAGS}
        for kind in _KINDS:
            extra = by_kind[kind][limits[kind]:]
            if extra:
                left_out.append(f"{_plural(len(extra), _UNITS[kind])} ({_names(extra)})")
        histograms, images, texts = [], [], []
        budget = [MAX_IMAGE_BYTES]
        for kind in _KINDS:
            for tag in by_kind[kind][:limits[kind]]:
                for run in runs:
                    info = by_run[run].get((kind, tag))
                    if info is None:
                        continue
                    at = step if step is not None else info.step_max
                    of = "" if run == self.run_id else f" of run {run}"
                    common = {"project": project if run == self.run_id else None, "source": self.source}
                    try:
                        if kind == "histograms":
                            histograms.append(self._histogram(run, tag, step, at, common))
                        elif kind == "images":
                            images.append(self._images(run, tag, at, common, budget, left_out, of))
                        else:
                            texts.append(self._text(run, tag, at, common, left_out, of))
                    except PortalError as err:
                        errors.append(f"{kind} {tag}{of}: {err.message}")
        return MediaPicture(step=step, histograms=tuple(histograms), images=tuple(images), text=tuple(texts),
                            left_out=tuple(left_out), errors=tuple(errors), unavailable=unavailable,
                            runs=tuple(runs))

    def _histogram(self, run: str, tag: str, cursor: int | None, at: int, common: dict) -> StaticHistogram:
        self.requests += 1
        bands = self.client.histograms(run, tag, max_steps=HISTOGRAM_STEPS,
                                       keep=() if cursor is None else (cursor,), buckets=False, **common)
        step, buckets = self._near(run, tag, bands, at, common)
        return StaticHistogram(tag=tag, steps=tuple(bands.steps), basis_points=tuple(bands.basis_points),
                               summary=tuple(tuple(r) for r in bands.summary), step=step, buckets=buckets, run=run)

    def _near(self, run: str, tag: str, bands: Histograms, at: int, common: dict) -> tuple[int | None, tuple | None]:
        """The histogram at the stored step nearest ``at`` (the earlier on a tie), as the cards find it."""
        self.requests += 2
        after = self.client.histograms(run, tag, step_min=at, max_steps=1, **common)
        before = self.client.histograms(run, tag, step_max=at, max_steps=2, **common)
        found = []
        if after.steps:
            found.append((after.steps[0], (after.buckets or ((),))[0]))
        if before.steps:
            found.append((before.steps[-1], (before.buckets or ((),))[-1]))
        if not found:
            return None, None
        found.sort(key=lambda f: (abs(f[0] - at), f[0]))
        return found[0][0], tuple(tuple(b) for b in found[0][1])

    def _images(self, run: str, tag: str, at: int, common: dict, budget: list[int], left_out: list[str],
                of: str) -> StaticImages:
        self.requests += 1
        near = self.client.images_near(run, tag, at, **common)
        kept: list[StaticImage] = []
        over = 0
        for ref in near.images[:MAX_IMAGES_PER_TAG]:
            data = self._bytes(run, ref.digest, common)
            content_type = next((t for magic, t in _IMAGE_TYPES.items() if data and data.startswith(magic)), None)
            if data is None or content_type is None or len(data) > budget[0]:
                over += 1
                continue
            budget[0] -= len(data)
            kept.append(StaticImage(digest=ref.digest, content_type=content_type, data=data, caption=ref.caption,
                                    width=ref.width, height=ref.height))
        rest = len(near.images) - len(kept)
        if rest:
            why = f"{over:,} over the budget of {_size(MAX_IMAGE_BYTES)} or unreadable" if over else ""
            more = len(near.images) - min(len(near.images), MAX_IMAGES_PER_TAG)
            parts = [p for p in (f"{more:,} past {MAX_IMAGES_PER_TAG} a tag" if more else "", why) if p]
            left_out.append(f"{_plural(rest, 'image')} of {tag}{of} at step {near.step:,} ({'; '.join(parts)})")
        return StaticImages(tag=tag, step=near.step, images=tuple(kept), total=len(near.images), run=run)

    def _bytes(self, run: str, digest: str, common: dict) -> bytes | None:
        if (run, digest) not in self.image_bytes:
            self.requests += 1
            try:
                self.image_bytes[(run, digest)] = self.client.image_bytes(run, digest, thumbnail=True, **common)
            except PortalError:
                self.image_bytes[(run, digest)] = None
        return self.image_bytes[(run, digest)]

    def _text(self, run: str, tag: str, at: int, common: dict, left_out: list[str], of: str) -> StaticText:
        self.requests += 1
        t = self.client.text_at(run, tag, at, **common)
        strings = tuple(s if len(s) <= MAX_TEXT_CHARS else s[:MAX_TEXT_CHARS] + "…" for s in t.text[:MAX_TEXT_STRINGS])
        if len(t.text) > MAX_TEXT_STRINGS:
            left_out.append(f"{_plural(len(t.text) - MAX_TEXT_STRINGS, 'string')} of {tag}{of} at step {t.step:,}")
        return StaticText(tag=tag, step=t.step, text=strings, total=len(t.text), run=run)


def media_words(picture: MediaPicture | None) -> str:
    """The media in the line of text: "3 media tags at the latest steps" (empty without media)."""
    if picture is None or picture.empty:
        return ""
    shown = len({(g.tag, kind) for kind, groups in (("h", picture.histograms), ("i", picture.images),
                                                     ("t", picture.text)) for g in groups})
    runs = f" of {len(picture.runs)} runs" if len(picture.runs) > 1 else ""
    where = f"at step {picture.step:,}" if picture.step is not None else "at their latest steps"
    return f"{_plural(shown, 'media tag')}{runs} {where}" + (", more left out" if picture.left_out else "")


# -- the histogram drawn in the kernel

H_W, H_H = 300, 150
_COLOR = RUN_COLORS[0]
BG, INK, MUTED, RULE, LINE, OVERLAY_FILL, CURSOR = range(7)
_BANDS = 8  # shades from the outermost band inward


def _blend(rgb: tuple[int, int, int], alpha: float) -> tuple[int, int, int]:
    return tuple(round(255 + (c - 255) * alpha) for c in rgb)  # type: ignore[return-value]


def _palette(color: str) -> list[tuple[int, int, int]]:
    rgb = hex_rgb(color)
    base = [(255, 255, 255), (34, 34, 34), (110, 110, 110), (214, 214, 214), rgb, _blend(rgb, 0.2), (68, 68, 68)]
    return base + [_blend(rgb, 0.15 + 0.45 * (i + 1) / _BANDS) for i in range(_BANDS)]


def _band_pairs(basis_points: Sequence[int]) -> tuple[list[tuple[int, int]], int | None]:
    """Summary columns of the nested bands, outermost first, and the median's (``histogram_traces.js``'s rule)."""
    bps = [int(b) for b in basis_points]
    pairs = [(3 + i, 3 + bps.index(10000 - lo), lo) for i, lo in enumerate(bps)
             if lo < 5000 and (10000 - lo) in bps and bps.index(10000 - lo) > i]
    pairs.sort(key=lambda p: p[2])
    return [(lo, hi) for lo, hi, _ in pairs], (3 + bps.index(5000) if 5000 in bps else None)


def _finite(v: float) -> bool:
    return isinstance(v, (int, float)) and math.isfinite(v)


def histogram_png(hist: StaticHistogram, cursor: int | None, color: str = _COLOR) -> bytes:
    """Two plots side by side: the distribution bands over the steps (TensorBoard's, darker inward, the median as a
    line, the shown step dotted) and the histogram at the step as a filled outline."""
    canvas = Canvas(2 * H_W, H_H, _palette(color))
    label = f"step {hist.step:,}" if hist.step is not None else "no step"
    if cursor is not None and hist.step is not None and cursor != hist.step:
        label += f" (nearest to {cursor:,})"
    canvas.text(6, 4, hist.tag, INK, max_width=H_W - 12)
    canvas.text(H_W + 6, 4, f"at {label}", MUTED, max_width=H_W - 12)
    _bands(canvas, hist, (44, 18, H_W - 8, H_H - 16))
    _overlay(canvas, hist, (H_W + 44, 18, 2 * H_W - 8, H_H - 16))
    return canvas.png()


def _axis(canvas: Canvas, box: tuple[int, int, int, int], lo: float, hi: float, left: str, right: str) -> None:
    x0, y0, x1, y1 = box
    canvas.frame(x0 - 1, y0 - 1, x1 + 1, y1 + 1, RULE)
    canvas.text(x0 - 40, y0, format_value(hi)[:7], MUTED, max_width=38)
    canvas.text(x0 - 40, y1 - 7, format_value(lo)[:7], MUTED, max_width=38)
    canvas.text(x0, y1 + 4, left, MUTED, max_width=(x1 - x0) // 2)
    canvas.text(x1 - text_width(right), y1 + 4, right, MUTED)


def _bands(canvas: Canvas, hist: StaticHistogram, box: tuple[int, int, int, int]) -> None:
    x0, y0, x1, y1 = box
    pairs, median = _band_pairs(hist.basis_points)
    rows = hist.summary
    values = [v for r in rows for v in r[3:] if _finite(v)]
    if not hist.steps or not values:
        canvas.frame(x0 - 1, y0 - 1, x1 + 1, y1 + 1, RULE)
        canvas.text(x0 + 6, (y0 + y1) // 2, "no values", MUTED)
        return
    lo, hi = min(values), max(values)
    smin, smax = hist.steps[0], hist.steps[-1]
    _axis(canvas, box, lo, hi, f"{smin:,}", f"step {smax:,}")

    def px(step: float) -> float:
        return x0 + (step - smin) * (x1 - 1 - x0) / (smax - smin) if smax > smin else (x0 + x1) / 2

    def py(v: float) -> int:
        return y1 - 1 - round((v - lo) * (y1 - 1 - y0) / (hi - lo)) if hi > lo else (y0 + y1) // 2

    points = [(round(px(s)), i) for i, s in enumerate(hist.steps)]  # (x, summary row)
    for shade, (clo, chi) in enumerate(pairs):
        color = 7 + min(_BANDS - 1, round(shade * (_BANDS - 1) / max(1, len(pairs) - 1)))
        for i, (x, r) in enumerate(points):
            nxt = points[i + 1] if i + 1 < len(points) else None
            a_lo, a_hi = rows[r][clo], rows[r][chi]
            if not (_finite(a_lo) and _finite(a_hi)):
                continue
            if nxt is None or len(points) == 1:
                canvas.rect(x - 1, py(a_hi), x + 2, py(a_lo) + 1, color)
                continue
            b_lo, b_hi = rows[nxt[1]][clo], rows[nxt[1]][chi]
            if not (_finite(b_lo) and _finite(b_hi)):
                continue
            for cx in range(x, nxt[0] + 1):
                t = (cx - x) / (nxt[0] - x) if nxt[0] > x else 0.0
                canvas.rect(cx, py(a_hi + (b_hi - a_hi) * t), cx + 1, py(a_lo + (b_lo - a_lo) * t) + 1, color)
    if median is not None:
        prev = None
        for x, r in points:
            v = rows[r][median]
            if not _finite(v):
                prev = None
                continue
            if prev is not None:
                canvas.line(prev[0], prev[1], x, py(v), LINE)
            else:
                canvas.set(x, py(v), LINE)
            prev = (x, py(v))
    if hist.step is not None and smin <= hist.step <= smax:
        cx = round(px(hist.step))
        for y in range(y0, y1, 3):
            canvas.set(cx, y, CURSOR)


def _overlay(canvas: Canvas, hist: StaticHistogram, box: tuple[int, int, int, int]) -> None:
    x0, y0, x1, y1 = box
    rows = []
    for left, right, count in hist.buckets or ():
        left = left if _finite(left) else right
        right = right if _finite(right) else left
        if _finite(left) and _finite(right):
            rows.append((left, right, count if _finite(count) else 0.0))
    if not rows:
        canvas.frame(x0 - 1, y0 - 1, x1 + 1, y1 + 1, RULE)
        canvas.text(x0 + 6, (y0 + y1) // 2, "no histogram", MUTED)
        return
    vlo, vhi = min(r[0] for r in rows), max(r[1] for r in rows)
    if vhi <= vlo:
        pad = abs(vlo) * 0.5 or 0.5
        vlo, vhi = vlo - pad, vhi + pad
    top = max(r[2] for r in rows) or 1.0
    _axis(canvas, box, 0.0, top, format_value(vlo)[:9], format_value(vhi)[:9])

    def px(v: float) -> int:
        return x0 + round((v - vlo) * (x1 - 1 - x0) / (vhi - vlo))

    for left, right, count in rows:
        ya = y1 - 1 - round(count * (y1 - 1 - y0) / top)
        xa, xb = px(left), max(px(left), px(right))
        canvas.rect(xa, ya, xb + 1, y1, OVERLAY_FILL)
        canvas.rect(xa, ya, xb + 1, ya + 1, LINE)
        canvas.rect(xa, ya, xa + 1, y1, LINE)
        canvas.rect(xb, ya, xb + 1, y1, LINE)


# -- the HTML

def media_html(picture: MediaPicture | None, stellar_href: str = "") -> str:
    """The media block of the static output: each histogram tag's PNG, each image tag's images as ``data:`` URIs with
    their captions, each text tag's strings; then in words what the budget left out and where every step is."""
    if picture is None or picture.empty:
        return ""
    esc = html.escape
    where = f"at step {picture.step:,} (the step cursor)" if picture.step is not None else "at each tag's latest step"
    several = len(picture.runs) > 1
    slots = assign_run_colors(picture.runs)

    def run_attrs(run: str) -> str:  # the run a block is of (named in words when the picture compares runs)
        return f' data-run="{esc(run)}"' if run else ""

    def run_words(run: str) -> str:
        return f' · <span style="color:{RUN_COLORS[slots.get(run, 0)]}">run {esc(run)}</span>' if several else ""

    parts = ['<div class="tau-pane-static-media" data-tau-pane-static-media="1" '
             'style="font-family:sans-serif;font-size:12px;margin-top:4px">',
             f'<div class="tau-pane-static-media-head" style="font-weight:bold">media {esc(where)}</div>']
    if picture.unavailable:
        parts.append(f'<p class="tau-pane-static-unavailable">{esc(picture.unavailable)}</p>')
    for hist in picture.histograms:
        color = RUN_COLORS[slots[hist.run]] if several and hist.run in slots else _COLOR
        png = base64.b64encode(histogram_png(hist, picture.step, color)).decode("ascii")
        alt = f"{hist.tag}: distribution bands over {len(hist.steps):,} steps and the histogram at step {hist.step}"
        alt += f" (run {hist.run})" if several else ""
        caption = f'<figcaption>{run_words(hist.run).removeprefix(" · ")}</figcaption>' if several else ""
        parts.append(f'<figure data-kind="histograms" data-tag="{esc(hist.tag)}" data-step="{hist.step}"'
                     f'{run_attrs(hist.run)} style="margin:4px 0">{caption}<img alt="{esc(alt)}" '
                     f'src="data:image/png;base64,{png}" style="max-width:100%"></figure>')
    for group in picture.images:
        figures = []
        for image in group.images:
            size = f"{image.width}×{image.height}" if image.width and image.height else ""
            caption = image.caption or ""
            figures.append(f'<figure style="display:inline-block;margin:2px 6px 2px 0;vertical-align:top">'
                           f'<img src="{image.data_uri()}" alt="{esc(caption or group.tag)}" '
                           f'data-digest="{esc(image.digest)}" title="{esc(size)}" '
                           'style="max-width:160px;max-height:160px;image-rendering:pixelated;min-width:48px">'
                           + (f'<figcaption>{esc(caption)}</figcaption>' if caption else "") + '</figure>')
        parts.append(f'<div data-kind="images" data-tag="{esc(group.tag)}" data-step="{group.step}"'
                     f'{run_attrs(group.run)} style="margin:4px 0"><div><b>{esc(group.tag)}</b>{run_words(group.run)}'
                     f' · step {group.step:,} · {_plural(group.total, "image")}</div>{"".join(figures)}</div>')
    for text in picture.text:
        rows = "".join(f"<pre style=\"margin:2px 0;white-space:pre-wrap\">{esc(s)}</pre>" for s in text.text)
        parts.append(f'<div data-kind="text" data-tag="{esc(text.tag)}" data-step="{text.step}"{run_attrs(text.run)} '
                     f'style="margin:4px 0"><div><b>{esc(text.tag)}</b>{run_words(text.run)} · step {text.step:,}</div>'
                     f'{rows}</div>')
    for error in picture.errors:
        parts.append(f'<p class="tau-pane-static-media-error">could not be read: {esc(error)}</p>')
    if picture.left_out:
        link = (f' Every tag, step and image: <a href="{esc(stellar_href)}" target="_blank" rel="noopener">'
                "open the run in Stellar</a> (its Portal)." if stellar_href
                else " Every tag, step and image: the run's page in Stellar (its Portal).")
        parts.append('<p class="tau-pane-static-left-out" style="color:#6e6e6e">Left out of the saved picture: '
                     f'{esc("; ".join(picture.left_out))} ({esc(BUDGET_WORDS)}).{link}</p>')
    parts.append("</div>")
    return "".join(parts)

