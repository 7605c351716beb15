"""Histograms, images and text of an event file as typed records, which never become MetricEvents.

A reader asked for them (:class:`MediaRequest`, given to :func:`.tensorboard_run.read_segment` or
:func:`.event_columns.read_block_columns`) turns each value of a histograms, images or text series
(:func:`.data_compat.series_kind`, the tag's first metadata) into one record, with its run, tag, step,
wall time and where it was read (``record``: the frame's 1-based number in its file, ``offset``: its
byte offset), holding what a store keeps: bucket arrays, the encoded image bytes, strings. The scalar
path is unchanged, and still counts these values as ``dropped``: nothing stores them yet.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tau_collector.sources.data_compat import HISTOGRAMS, IMAGES, TEXT, histogram_buckets, image_values, text_values
from tau_collector.sources.read_limits import DEFAULT_LIMITS

__all__ = [
    "MEDIA_KINDS",
    "HistogramRecord",
    "ImageRecord",
    "MediaRecord",
    "MediaRequest",
    "TextRecord",
    "image_content_type",
    "media_record",
]

MEDIA_KINDS = (HISTOGRAMS, IMAGES, TEXT)
# The values a series of each kind takes: TensorBoard migrates old ``histo`` and ``image`` values to tensors.
_VALUE_KINDS = {HISTOGRAMS: ("histo", "tensor"), IMAGES: ("image", "tensor"), TEXT: ("tensor",)}


@dataclass(frozen=True, slots=True)
class MediaRequest:
    """Which kinds a reader turns into records (of :data:`MEDIA_KINDS`), and the most values one tensor may have."""

    kinds: frozenset[str]
    max_values: int = DEFAULT_LIMITS.max_tensor_values

    def __post_init__(self) -> None:
        unknown = sorted(set(self.kinds) - set(MEDIA_KINDS))
        if unknown:
            raise ValueError(f"unknown media kinds {unknown}; the kinds are {list(MEDIA_KINDS)}")


@dataclass(slots=True, eq=False)
class HistogramRecord:
    """``buckets``: float64 ``[k, 3]`` rows of ``(left, right, count)``, as TensorBoard's reader yields them."""

    run: str
    tag: str
    step: int
    wall_time: float
    buckets: np.ndarray
    record: int
    offset: int

    kind = HISTOGRAMS

    @property
    def name(self) -> str:
        return _name(self.run, self.tag)


@dataclass(slots=True)
class ImageRecord:
    """``images``: the encoded images of one event (PNG from every writer we know), with the width and
    height the writer gave (of the batch, for several); ``captions``: one per image when the writer gives them
    (W&B's), else empty."""

    run: str
    tag: str
    step: int
    wall_time: float
    width: int
    height: int
    images: tuple[bytes, ...]
    record: int
    offset: int
    captions: tuple[str | None, ...] = ()

    kind = IMAGES

    @property
    def name(self) -> str:
        return _name(self.run, self.tag)

    @property
    def content_types(self) -> tuple[str, ...]:
        return tuple(image_content_type(image) for image in self.images)

    def caption(self, rank: int) -> str | None:
        """The caption of the image at ``rank``, or None."""
        return self.captions[rank] if rank < len(self.captions) else None


@dataclass(slots=True)
class TextRecord:
    """``text``: the strings of one event in row-major order; ``shape``: the tensor's (``()`` for one string)."""

    run: str
    tag: str
    step: int
    wall_time: float
    text: tuple[str, ...]
    shape: tuple[int, ...]
    record: int
    offset: int

    kind = TEXT

    @property
    def name(self) -> str:
        return _name(self.run, self.tag)


MediaRecord = HistogramRecord | ImageRecord | TextRecord


def _name(run: str, tag: str) -> str:
    """The record's name as a scalar of its run is named (``run/tag``, or the tag for the logdir's own run)."""
    return f"{run}/{tag}" if run else tag


# Magic numbers of the formats TensorBoard's images plugin names (``img_mime_type_detector``).
_MAGIC = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"), (b"GIF87a", "image/gif"),
          (b"GIF89a", "image/gif"), (b"BM", "image/bmp"))
OCTET_STREAM = "application/octet-stream"


def image_content_type(data: bytes) -> str:
    """The MIME type of an encoded image by its first bytes: PNG, JPEG, GIF, BMP, else ``application/octet-stream``."""
    for magic, content_type in _MAGIC:
        if data.startswith(magic):
            return content_type
    return OCTET_STREAM


def media_record(request: MediaRequest, plugin: str, value, kind: str, run: str, step: int, wall_time: float,
                 record: int, offset: int) -> MediaRecord | None:
    """The record of one summary ``value`` of ``kind`` (its ``value`` oneof) in a series of ``plugin``, or
    ``None`` when the request does not ask for it. :class:`ValueError` says why a value asked for cannot be read."""
    if plugin not in request.kinds or kind not in _VALUE_KINDS[plugin]:
        return None
    tag = value.tag or value.node_name
    limit = request.max_values
    if plugin == HISTOGRAMS:
        return HistogramRecord(run, tag, step, wall_time, histogram_buckets(value, kind, limit), record, offset)
    if plugin == IMAGES:
        width, height, images = image_values(value, kind, limit)
        return ImageRecord(run, tag, step, wall_time, width, height, tuple(images), record, offset)
    shape, strings = text_values(value, limit)
    return TextRecord(run, tag, step, wall_time, tuple(strings), shape, record, offset)
