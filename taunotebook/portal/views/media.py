"""A run's histograms, images and text (our additions, issue 29): ``GET /api/v2/stellar/runs/{run_id}/media``,
``…/histograms``, ``…/histograms/at``, ``…/images``, ``…/images/{hex}`` and ``…/text``.

Thin over the store's media reads (:class:`~tau_collector.reads.ReadsMedia`): the run is found as every read of
a run finds it (source, workspace, path id, run lookup), the parameters are checked here (steps int64, bounded
``max_steps`` and ``keep``), the answer is the reader's. A tag is a query value, never a path: any text is just a
tag the run has or not. A run served by Kusto lists no media, saying in words that they live with the run's
store; its other media reads are 404 saying the same. Image bytes are streamed from the store's content-addressed
files with their digest as ETag (immutable: a digest names its bytes forever); a thumbnail is decoded and resized
with Pillow, imported only here, and a stored image it cannot decode is a 422 in words, never a 500.
Thumbnails are not cached by the Portal: their answers are immutable, so the browser keeps them.
"""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from starlette.responses import Response, StreamingResponse

from tau_collector.reads import ReadsMedia

from ..context import Context, Found
from ..errors import SECURITY_HEADERS, V2Error, json_response, metadata
from ..params import bounded_int_param, parse_int
from ..serving import open_for_streaming
from ..wire.media import histograms_json, images_json, media_tags_json, text_json

__all__ = ["DEFAULT_MAX_STEPS", "MAX_INLINE_BYTES", "MAX_INLINE_THUMBNAIL_BYTES", "MAX_KEEP", "MAX_MAX_STEPS",
           "MAX_THUMBNAIL_SOURCE_BYTES", "MAX_THUMBNAIL_SOURCE_PIXELS", "THUMBNAIL_SIDE", "histogram_at", "histograms",
           "image", "images", "read", "text"]

DEFAULT_MAX_STEPS = 500
MAX_MAX_STEPS = 10_000  # the store's bound (media_reads.MAX_STEPS)
MAX_KEEP = 64  # steps a view asks never to be dropped: its cursor and the compared runs' steps
THUMBNAIL_SIDE = 160  # a thumbnail's longest side, in pixels
MAX_THUMBNAIL_SOURCE_BYTES = 64 * 1024 * 1024  # a stored image larger than this is not decoded for a thumbnail
MAX_THUMBNAIL_SOURCE_PIXELS = 64 * 1024 * 1024  # nor one claiming more pixels (a decompression bomb)
MAX_INLINE_THUMBNAIL_BYTES = 4096  # an image its own thumbnail and this small rides in an inline_thumbnails answer
MAX_INLINE_BYTES = 64 * 1024  # the inlined images' bytes an answer, at most
CACHE_CONTROL = "private, max-age=31536000, immutable"
# Served as themselves; any other stored type goes out as bytes to download (an SVG or HTML "image" must never
# run in the Portal's origin).
_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp"})
_HEX = re.compile(r"[0-9a-f]{64}")
_KUSTO_WORDS = ("the {served} source holds metrics only: the run's histograms, images and text live with the "
                "run's store (open the Portal on that store to see them)")


def _media_reader(ctx: Context) -> tuple[str, Found, ReadsMedia | None]:
    source, workspace = ctx.source_and_workspace()
    found = ctx.exact_run(source, workspace)
    reader = found.reader if isinstance(found.reader, ReadsMedia) else None
    return source, found, reader


def _require_media(found: Found, reader: ReadsMedia | None) -> ReadsMedia:
    if reader is None:
        raise V2Error(404, "NOT_FOUND", f"run {found.run.run_id} has no media here: "
                                        + _KUSTO_WORDS.format(served=found.served))
    return reader


def _tag(ctx: Context) -> str:
    tag = ctx.query.get("tag")
    if not tag:
        raise V2Error(400, "INVALID_ARGUMENT", "tag is required")
    return tag


def _step(ctx: Context) -> int:
    raw = ctx.query.get("step")
    if not raw:
        raise V2Error(400, "INVALID_ARGUMENT", "step is required")
    return parse_int(raw, "step")


def _flag(ctx: Context, name: str, default: bool) -> bool:
    raw = ctx.query.get(name).lower()
    if not raw:
        return default
    if raw in ("1", "true"):
        return True
    if raw in ("0", "false"):
        return False
    raise V2Error(400, "INVALID_ARGUMENT", f"{name} must be true or false")


def _keep(ctx: Context) -> tuple[int, ...]:
    """``keep``: steps the reduction never drops, comma-separated or repeated, at most :data:`MAX_KEEP`."""
    parts = [p.strip() for raw in ctx.query.all("keep") for p in raw.split(",")]
    parts = [p for p in parts if p]
    if len(parts) > MAX_KEEP:
        raise V2Error(400, "INVALID_ARGUMENT", f"keep must name at most {MAX_KEEP} steps")
    return tuple(dict.fromkeys(parse_int(p, "keep") for p in parts))


def _max_steps(ctx: Context) -> int:
    return bounded_int_param(ctx.query, "max_steps", DEFAULT_MAX_STEPS, 1, MAX_MAX_STEPS)


def _no_such_tag(found: Found, kind: str, tag: str) -> V2Error:
    return V2Error(404, "NOT_FOUND", f"run {found.run.run_id} has no {kind} tag {tag!r}")


def _store_refusal(err: ValueError) -> V2Error:
    """The store's bound on one answer (too many bucket values, too much text), in its words."""
    return V2Error(400, "INVALID_ARGUMENT", str(err))


def read(ctx: Context) -> Response:
    """``…/media``: the run's histogram, image and text tags with their counts and step ranges."""
    source, found, reader = _media_reader(ctx)
    meta = metadata(source, [found.served], False, found.warnings)
    if reader is None:
        words = _KUSTO_WORDS.format(served=found.served)
        meta["availability"] = {"state": "unavailable", "reasons": [*found.warnings, words]}
        return json_response(media_tags_json(meta, ctx.run_id, [], words))
    return json_response(media_tags_json(meta, ctx.run_id, reader.media_tags(found.run.run_id), None))


def histograms(ctx: Context) -> Response:
    """``…/histograms``: a histogram tag over a step range, reduced to at most ``max_steps`` steps."""
    source, found, reader = _media_reader(ctx)
    tag = _tag(ctx)
    step_min, step_max = (None if not ctx.query.get(n) else parse_int(ctx.query.get(n), n)
                          for n in ("step_min", "step_max"))
    if step_min is not None and step_max is not None and step_min > step_max:
        raise V2Error(400, "INVALID_ARGUMENT", "step_min must be <= step_max")
    max_steps, keep, buckets = _max_steps(ctx), _keep(ctx), _flag(ctx, "buckets", True)
    reader = _require_media(found, reader)
    run_id = found.run.run_id
    try:
        series = reader.histograms(run_id, tag, step_min=step_min, step_max=step_max, max_steps=max_steps,
                                   keep=keep, buckets=buckets)
    except ValueError as err:
        raise _store_refusal(err) from None
    # Only an empty answer asks whether the tag exists at all: the run's tag list costs what the run holds (every
    # tag's files, every image row), recounted after each change of a live store, and a tag read is one tag's.
    if not series.total and not any(t.kind == "histograms" and t.tag == tag for t in reader.media_tags(run_id)):
        raise _no_such_tag(found, "histogram", tag)
    return json_response(histograms_json(metadata(source, [found.served], False, found.warnings), ctx.run_id,
                                         series))


class _At(NamedTuple):
    """One read of a tag at a step: the run's source and lookup, the tag and step asked for, the reader's answer."""

    source: str
    found: Found
    tag: str
    step: int
    value: Any


def _media_read(ctx: Context, read: Callable[[ReadsMedia, str, str, int], Any]) -> _At:
    """``read(reader, run_id, tag, step)`` for a route reading one tag at one step: the run found, ``tag`` and
    ``step`` checked, a Kusto-served run refused in words, the store's bound on an answer a 400 in its words."""
    source, found, reader = _media_reader(ctx)
    tag, step = _tag(ctx), _step(ctx)
    reader = _require_media(found, reader)
    try:
        value = read(reader, found.run.run_id, tag, step)
    except ValueError as err:
        raise _store_refusal(err) from None
    return _At(source, found, tag, step, value)


def histogram_at(ctx: Context) -> Response:
    """``…/histograms/at``: the histogram of a tag at exactly one step."""
    at = _media_read(ctx, lambda reader, run_id, tag, step: reader.histogram_at(run_id, tag, step))
    found = at.found
    if at.value is None:
        raise V2Error(404, "NOT_FOUND", f"run {found.run.run_id} has no histogram {at.tag!r} at step {at.step}")
    return json_response(histograms_json(metadata(at.source, [found.served], False, found.warnings), ctx.run_id,
                                         at.value))


def images(ctx: Context) -> Response:
    """``…/images``: every image of a tag at the stored step nearest the one asked for; ``inline_thumbnails=true``
    carries each small image's bytes in the answer (``thumbnail_data``), the page's cursor then needing no second
    request for it."""
    inline = _flag(ctx, "inline_thumbnails", False)
    read = _media_read(ctx, lambda reader, run_id, tag, step: reader.images_near(run_id, tag, step))
    found, tag, at = read.found, read.tag, read.value
    if at is None:
        raise _no_such_tag(found, "image", tag)
    warnings = found.warnings
    if at.more:
        warnings = [*warnings, f"step {at.step} of {tag!r} holds more images than an answer lists: the first "
                               f"{len(at.images)} are listed"]
    return json_response(images_json(metadata(read.source, [found.served], at.more, warnings), ctx.run_id,
                                     read.step, at, _inline_thumbnails(found.reader, at.images) if inline else None))


def _inline_thumbnails(reader, rows) -> dict[str, str]:
    """``digest → data: URI`` of the images of ``rows`` that are their own thumbnail (an image type served as
    itself, known to be at most :data:`THUMBNAIL_SIDE` px a side) and at most :data:`MAX_INLINE_THUMBNAIL_BYTES`,
    :data:`MAX_INLINE_BYTES` of them an answer in their order; an image whose file cannot be read is left out
    (its ``thumbnail_url`` still serves it, or says why not)."""
    out: dict[str, str] = {}
    budget = MAX_INLINE_BYTES
    for row in rows:
        size = row.size_bytes
        if (not row.digest or row.digest in out or row.content_type not in _IMAGE_TYPES or not _small(row)
                or not isinstance(size, int) or not 0 < size <= min(MAX_INLINE_THUMBNAIL_BYTES, budget)):
            continue
        _, path = reader.artifact_file(row)
        if path is None:
            continue
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_INLINE_THUMBNAIL_BYTES + 1)
        except OSError:
            continue
        if not data or len(data) > min(MAX_INLINE_THUMBNAIL_BYTES, budget):
            continue  # the file is not the size its row says: served by its URL, never inlined past the bound
        budget -= len(data)
        out[row.digest] = f"data:{row.content_type};base64,{base64.b64encode(data).decode('ascii')}"
    return out


def text(ctx: Context) -> Response:
    """``…/text``: the strings of a text tag at the stored step nearest the one asked for."""
    read = _media_read(ctx, lambda reader, run_id, tag, step: reader.text_at(run_id, tag, step))
    found = read.found
    if read.value is None:
        raise _no_such_tag(found, "text", read.tag)
    return json_response(text_json(metadata(read.source, [found.served], False, found.warnings), ctx.run_id,
                                   read.step, read.value))


# -- image bytes ----------------------------------------------------------------------------------------------------


def image(ctx: Context) -> Response:
    """``…/images/{hex}[?thumbnail=1]``: an image's bytes, or a PNG at most :data:`THUMBNAIL_SIDE` px a side."""
    _, found, reader = _media_reader(ctx)
    hexdigest = ctx.ids["digest"]
    thumbnail = _flag(ctx, "thumbnail", False)
    run_id = found.run.run_id
    missing = V2Error(404, "NOT_FOUND", f"run {run_id} holds no image {hexdigest}")
    if not _HEX.fullmatch(hexdigest):
        raise missing
    row = _require_media(found, reader).image(run_id, "sha256:" + hexdigest)
    if row is None:
        raise missing
    tag = f'"sha256:{hexdigest}' + (f';thumbnail{THUMBNAIL_SIDE}"' if thumbnail else '"')
    headers = {**SECURITY_HEADERS, "ETag": tag, "Cache-Control": CACHE_CONTROL,
               # An image is never a document: nothing it holds runs, whatever a browser makes of it.
               "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; sandbox"}
    if _matches(ctx.headers.get("if-none-match", ""), tag):
        return Response(status_code=304, headers=headers)
    state, path = found.reader.artifact_file(row)
    if path is None:
        raise V2Error(404, "NOT_FOUND", f"image {hexdigest} of run {run_id} cannot be read: "
                                        + ("its file is gone from the store" if state == "gone"
                                           else f"it lives at {row.uri}, which this Portal does not serve"))
    content_type = row.content_type if row.content_type in _IMAGE_TYPES else "application/octet-stream"
    if thumbnail and not _small(row):
        data = _thumbnail(path, hexdigest)
        if data is not None:
            return Response(data, media_type="image/png", headers=headers)
    blocks, size = open_for_streaming(path, f"image {hexdigest} of run {run_id} cannot be read: its file is gone "
                                            "from the store")
    headers["Content-Length"] = str(size)
    return StreamingResponse(blocks, media_type=content_type, headers=headers)


def _matches(if_none_match: str, etag: str) -> bool:
    """Whether an ``If-None-Match`` header names ``etag`` (weak or strong, or ``*``)."""
    for candidate in if_none_match.split(","):
        candidate = candidate.strip().removeprefix("W/")
        if candidate == "*" or candidate == etag:
            return True
    return False


def _small(row) -> bool:
    """The stored image is known (from its row) to fit a thumbnail already."""
    tags = row.tags or {}
    width, height = tags.get("width"), tags.get("height")
    return (isinstance(width, int) and isinstance(height, int) and 0 < width <= THUMBNAIL_SIDE
            and 0 < height <= THUMBNAIL_SIDE)


def _thumbnail(path: Path, hexdigest: str) -> bytes | None:
    """The image at ``path`` as a PNG at most :data:`THUMBNAIL_SIDE` px a side; None when it already is that small
    (the image itself is the thumbnail). 422 in words for an image that cannot be decoded or is too big to."""
    from PIL import Image, UnidentifiedImageError

    def refuse(why: str) -> V2Error:
        return V2Error(422, "UNDECODABLE_IMAGE", f"image {hexdigest} has no thumbnail: {why}")

    try:
        if path.stat().st_size > MAX_THUMBNAIL_SOURCE_BYTES:
            raise refuse(f"it is larger than {MAX_THUMBNAIL_SOURCE_BYTES} bytes; download it whole instead")
        with Image.open(path) as im:
            width, height = im.size
            if width * height > MAX_THUMBNAIL_SOURCE_PIXELS:
                raise refuse(f"it claims {width}x{height} pixels, more than the {MAX_THUMBNAIL_SOURCE_PIXELS} a "
                             "thumbnail is made from")
            if width <= THUMBNAIL_SIDE and height <= THUMBNAIL_SIDE:
                return None
            im.draft("RGB", (THUMBNAIL_SIDE, THUMBNAIL_SIDE))  # JPEG: decode at a reduced scale
            im.thumbnail((THUMBNAIL_SIDE, THUMBNAIL_SIDE))
            if im.mode not in ("1", "L", "LA", "P", "RGB", "RGBA", "I;16"):
                im = im.convert("RGBA")
            out = io.BytesIO()
            im.save(out, format="PNG")
            return out.getvalue()
    except V2Error:
        raise
    except (UnidentifiedImageError, Image.DecompressionBombError):
        raise refuse("its bytes are not an image format Pillow decodes") from None
    except (OSError, ValueError, SyntaxError, EOFError, MemoryError) as err:
        # Pillow's words may name the file's place on this machine: only the kind of failure goes out.
        raise refuse(f"its bytes could not be decoded ({type(err).__name__}: truncated or corrupt)") from None

