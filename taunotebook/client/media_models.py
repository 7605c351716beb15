"""The client's models for a run's histograms, images and text (the local Portal's ``/runs/{run_id}/media``,
``…/histograms``, ``…/histograms/at``, ``…/images`` and ``…/text``, additions).

A histogram's numbers that JSON cannot carry (the summary of an empty histogram, an infinite bucket edge) come
as ``null`` and read back as NaN. Unknown fields are kept in ``extra``, as in :mod:`.models`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .decode import WireModel, number_rows, wire
from .models import Metadata

__all__ = ["MEDIA_KINDS", "Histograms", "ImageRef", "ImagesAt", "MediaTag", "MediaTags", "TextAt"]

MEDIA_KINDS = ("histograms", "images", "text")


@dataclass(frozen=True, slots=True)
class MediaTag(WireModel):
    """One non-scalar tag: ``kind`` (``histograms``, ``images``, ``text``), its ``count`` (steps; for images,
    images) and step range."""

    kind: str
    tag: str
    count: int
    step_min: int
    step_max: int
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class MediaTags(WireModel):
    """A run's non-scalar tags, by kind then tag; ``unavailable`` says why a source cannot show them (Kusto)."""

    metadata: Metadata
    run_id: str
    tags: tuple[MediaTag, ...] = ()
    unavailable: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def of(self, kind: str) -> tuple[MediaTag, ...]:
        """The tags of one kind, in the Portal's order."""
        if kind not in MEDIA_KINDS:
            raise ValueError(f"kind must be one of {', '.join(MEDIA_KINDS)}, got {kind!r}")
        return tuple(t for t in self.tags if t.kind == kind)


_NUMBER = float | None


@dataclass(frozen=True, slots=True)
class Histograms(WireModel):
    """A histogram tag over steps: ``steps``, their ``wall_times``, each step's ``summary`` row (count, min, max,
    then the percentile at each of ``basis_points``) and, unless asked without, its ``buckets`` (left, right,
    count). ``total`` is how many steps the range holds; ``reduced`` says fewer are shown."""

    metadata: Metadata
    run_id: str
    tag: str
    total: int
    reduced: bool
    basis_points: tuple[int, ...] = ()
    steps: tuple[int, ...] = ()
    wall_times: tuple[float, ...] = field(default=(), metadata=wire(
        decode=number_rows("wall_times", "Histograms", depth=1), sent=list[_NUMBER]))
    summary: tuple[tuple[float, ...], ...] = field(default=(), metadata=wire(
        decode=number_rows("summary", "Histograms"), sent=list[list[_NUMBER]]))
    buckets: tuple[tuple[tuple[float, float, float], ...], ...] | None = field(
        default=None, metadata=wire(decode=number_rows("buckets", "Histograms", depth=3),
                                    sent=list[list[list[_NUMBER]]] | None))
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ImageRef(WireModel):
    """One image of a step: its place in the event (``index``), ``digest``, size, caption, and where its bytes
    (``url``) and a thumbnail at most 160 px a side (``thumbnail_url``) are served."""

    index: int
    digest: str
    url: str
    thumbnail_url: str
    content_type: str | None = None
    width: int | None = None
    height: int | None = None
    caption: str | None = None
    size_bytes: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ImagesAt(WireModel):
    """Every image of a tag at ``step``, the stored step nearest ``requested_step`` (the earlier on a tie)."""

    metadata: Metadata
    run_id: str
    tag: str
    requested_step: int
    step: int
    images: tuple[ImageRef, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TextAt(WireModel):
    """The strings of a text tag at ``step``, the stored step nearest ``requested_step``, row-major, and their
    ``shape``."""

    metadata: Metadata
    run_id: str
    tag: str
    requested_step: int
    step: int
    wall_time: float | None = None
    shape: tuple[int, ...] = ()
    text: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
