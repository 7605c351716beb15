"""A run's histograms, images and text (our ``/runs/{run_id}/media``, ``…/histograms``, ``…/images``, ``…/text``):
their encoders and OpenAPI fragments.

Numbers a histogram cannot give as a finite float (the summary of an empty histogram, an infinite bucket edge)
are ``null``: Go's encoder, whose bytes the Portal writes, has no spelling for them.
"""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import quote

import numpy as np

from tau_collector.reads import ArtifactRow
from tau_collector.reads.media_rows import HistogramSeries, ImagesAt, MediaTag, TextAt
from tau_collector.taugrid.gojson import RawJSON, encode_float

from ..prefixes import API_BASE
from .common import INT64, NONNEG, STRINGS, ref

__all__ = ["HISTOGRAMS", "IMAGES_AT", "MEDIA_TAGS", "TEXT_AT", "histograms_json", "image_url", "images_json",
           "media_tags_json", "text_json"]

MEDIA_KINDS = ("histograms", "images", "text")


def media_tags_json(meta: dict, run_id: str, tags: list[MediaTag], unavailable: str | None) -> dict[str, Any]:
    return {"metadata": meta, "run_id": run_id,
            "tags": [{"kind": t.kind, "tag": t.tag, "count": t.count, "step_min": t.step_min, "step_max": t.step_max}
                     for t in tags],
            "unavailable": unavailable}


def _number(value: float) -> str:
    return encode_float(value) if math.isfinite(value) else "null"


def _floats(values) -> RawJSON:
    """A list of floats as JSON (non-finite as ``null``), encoded in one pass."""
    return RawJSON("[" + ",".join(map(_number, values)) + "]")


def _bucket_lists(steps: list[np.ndarray]) -> RawJSON:
    """Each step's ``[k, 3]`` buckets as ``[[left,right,count],…]``, every distinct number encoded once: a tag's edges
    and counts repeat from step to step (500 steps × 64 buckets are ~96,000 numbers, a few thousand distinct), and
    :func:`encode_float` per number was most of a distribution's answer. The same bytes as encoding each (numbers
    told apart by their bits: ``-0`` is not ``0``)."""
    arrays = [np.asarray(step, dtype=np.float64).reshape(-1, 3) for step in steps]
    if not arrays:
        return RawJSON("[]")
    flat = np.concatenate(arrays)
    distinct, inverse = np.unique(flat.reshape(-1).view(np.uint64), return_inverse=True)
    words = np.array([_number(v) for v in distinct.view(np.float64).tolist()], dtype=object)[inverse.reshape(-1, 3)]
    rows = (words[:, 0] + "," + words[:, 1] + "," + words[:, 2]).tolist()  # "left,right,count" of every bucket
    out, at = [], 0
    for step in arrays:
        out.append("[[" + "],[".join(rows[at:at + len(step)]) + "]]" if len(step) else "[]")
        at += len(step)
    return RawJSON("[" + ",".join(out) + "]")


def histograms_json(meta: dict, run_id: str, series: HistogramSeries) -> dict[str, Any]:
    """The steps shown, their wall times, each step's summary row and (when read) its ``[left, right, count]``
    buckets."""
    buckets = None if series.buckets is None else _bucket_lists(series.buckets)
    return {"metadata": meta, "run_id": run_id, "tag": series.tag, "total": int(series.total),
            "reduced": bool(series.reduced), "basis_points": [int(b) for b in series.basis_points],
            "steps": [int(s) for s in series.steps.tolist()],
            "wall_times": _floats(series.wall_times.tolist()),
            "summary": RawJSON("[" + ",".join(_floats(row).text for row in series.summary.tolist()) + "]"),
            "buckets": buckets}


def image_url(run_id: str, digest: str) -> str:
    """Where an image's bytes are served: ``…/runs/{run_id}/images/{hex}`` (the run id escaped as a path segment)."""
    return f"{API_BASE}/runs/{quote(run_id, safe='')}/images/{digest.removeprefix('sha256:')}"


def _image_json(run_id: str, row: ArtifactRow) -> dict[str, Any]:
    tags = row.tags or {}
    url = image_url(run_id, row.digest or "")

    def size(key: str) -> int | None:
        value = tags.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None

    return {"index": row.rank or 0, "digest": row.digest, "content_type": row.content_type,
            "width": size("width"), "height": size("height"), "caption": row.caption,
            "size_bytes": row.size_bytes, "url": url, "thumbnail_url": url + "?thumbnail=1"}


def images_json(meta: dict, run_id: str, requested: int, found: ImagesAt,
                inline: dict[str, str] | None = None) -> dict[str, Any]:
    """The images at the step found; with ``inline`` (digest → ``data:`` URI, asked by ``inline_thumbnails``) each
    image also carries ``thumbnail_data``, its URI or null."""
    images = [_image_json(run_id, row) for row in found.images if row.digest]
    if inline is not None:
        for image in images:
            image["thumbnail_data"] = inline.get(image["digest"])
    return {"metadata": meta, "run_id": run_id, "tag": found.tag, "requested_step": requested, "step": found.step,
            "images": images}


def text_json(meta: dict, run_id: str, requested: int, found: TextAt) -> dict[str, Any]:
    return {"metadata": meta, "run_id": run_id, "tag": found.tag, "requested_step": requested, "step": found.step,
            "wall_time": float(found.wall_time) if math.isfinite(found.wall_time) else None,
            "shape": [int(n) for n in found.shape], "text": list(found.text)}


_NUMBER = {"type": "number", "nullable": True}
_NUMBERS = {"type": "array", "items": _NUMBER}
_HEAD = {"metadata": ref("Metadata"), "run_id": {"type": "string"}, "tag": {"type": "string"}}

MEDIA_TAGS = {
    "type": "object", "additionalProperties": False, "required": ["metadata", "run_id", "tags", "unavailable"],
    "properties": {
        "metadata": ref("Metadata"), "run_id": {"type": "string"},
        "tags": {"type": "array", "description": "by kind, then tag", "items": {
            "type": "object", "additionalProperties": False,
            "required": ["kind", "tag", "count", "step_min", "step_max"],
            "properties": {"kind": {"type": "string", "enum": list(MEDIA_KINDS)}, "tag": {"type": "string"},
                           "count": {**NONNEG, "description": "steps (histograms, text) or images (images)"},
                           "step_min": INT64, "step_max": INT64}}},
        "unavailable": {"type": "string", "nullable": True,
                        "description": "null, or why the source cannot show the run's media (Kusto: they live "
                                       "with the run's store)"},
    },
}

HISTOGRAMS = {
    "type": "object", "additionalProperties": False,
    "required": ["metadata", "run_id", "tag", "total", "reduced", "basis_points", "steps", "wall_times", "summary",
                 "buckets"],
    "properties": {
        **_HEAD,
        "total": {**NONNEG, "description": "steps the range holds"},
        "reduced": {"type": "boolean", "description": "the answer holds fewer steps than the range"},
        "basis_points": {"type": "array", "items": {"type": "integer"},
                         "description": "the percentiles of each summary row after count, min, max (in 1/10000)"},
        "steps": {"type": "array", "items": INT64, "description": "ascending"},
        "wall_times": {**_NUMBERS, "description": "seconds since the epoch, one per step"},
        "summary": {"type": "array", "description": "one row per step: count, min, max, then a value per basis "
                                                    "point (null for an empty histogram)", "items": _NUMBERS},
        "buckets": {"type": "array", "nullable": True, "description": "one list per step of [left, right, count] "
                    "(null edges are infinite); null when buckets=false",
                    "items": {"type": "array", "items": {"type": "array", "items": _NUMBER}}},
    },
}

IMAGES_AT = {
    "type": "object", "additionalProperties": False,
    "required": ["metadata", "run_id", "tag", "requested_step", "step", "images"],
    "properties": {
        **_HEAD, "requested_step": INT64,
        "step": {**INT64, "description": "the stored step nearest requested_step (the earlier on a tie)"},
        "images": {"type": "array", "description": "every image of that step, in their event's order", "items": {
            "type": "object", "additionalProperties": False,
            "required": ["index", "digest", "content_type", "width", "height", "caption", "size_bytes", "url",
                         "thumbnail_url"],
            "properties": {
                "index": {**NONNEG, "description": "the image's place in its event"},
                "digest": {"type": "string", "description": "sha256:<hex> of the encoded image"},
                "content_type": {"type": "string", "nullable": True},
                "width": {"type": "integer", "nullable": True}, "height": {"type": "integer", "nullable": True},
                "caption": {"type": "string", "nullable": True},
                "size_bytes": {"type": "integer", "format": "int64", "nullable": True},
                "url": {"type": "string", "description": "the bytes: …/runs/{run_id}/images/{hex}"},
                "thumbnail_url": {"type": "string", "description": "url?thumbnail=1: a PNG at most 160 px a side"},
                "thumbnail_data": {"type": "string", "nullable": True,
                                   "description": "with inline_thumbnails=true: a data: URI of the image's bytes "
                                                  "when it is its own thumbnail and at most 4,096 bytes (64 KiB "
                                                  "an answer), else null"},
            }}},
    },
}

TEXT_AT = {
    "type": "object", "additionalProperties": False,
    "required": ["metadata", "run_id", "tag", "requested_step", "step", "wall_time", "shape", "text"],
    "properties": {
        **_HEAD, "requested_step": INT64,
        "step": {**INT64, "description": "the stored step nearest requested_step (the earlier on a tie)"},
        "wall_time": _NUMBER,
        "shape": {"type": "array", "items": NONNEG, "description": "the text tensor's shape ([] for one string)"},
        "text": {**STRINGS, "description": "the strings, row-major"},
    },
}
