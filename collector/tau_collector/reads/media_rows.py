"""The rows a reader answers about a run's histograms, images and text (the media read contract's shapes).

Plain values, ready to encode: a route returns them as JSON without knowing where they came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tau_collector.reads.rows import ArtifactRow

if TYPE_CHECKING:  # the read contract never loads numpy itself
    import numpy as np

__all__ = ["HistogramSeries", "ImagesAt", "MediaTag", "TextAt"]


@dataclass(frozen=True, slots=True)
class MediaTag:
    """One non-scalar tag of a run: ``kind`` (``histograms``, ``images``, ``text``), how many steps it has
    (``count``; for images, of images), and its step range."""

    kind: str
    tag: str
    count: int
    step_min: int
    step_max: int


@dataclass(slots=True)
class HistogramSeries:
    """A histogram tag over a step range: the steps shown (sorted), their wall times, the summary of each
    (``summary[i]``: count, min, max and the percentiles of ``BASIS_POINTS``) and, when asked for, the buckets
    of each (``buckets[i]``: float64 ``[k, 3]`` rows of left, right, count). ``total`` is how many steps the
    range holds; ``reduced`` says the answer has fewer."""

    tag: str
    steps: np.ndarray
    wall_times: np.ndarray
    summary: np.ndarray
    buckets: list[np.ndarray] | None
    total: int
    reduced: bool
    basis_points: tuple[int, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class TextAt:
    """The strings of a text tag at ``step`` (the stored step nearest the one asked for), row-major, and shape."""

    tag: str
    step: int
    wall_time: float
    text: tuple[str, ...]
    shape: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ImagesAt:
    """Every image of a tag at ``step`` (the stored step nearest the one asked for), in their event's order;
    ``more`` when the step holds more than a read lists (the first ones are)."""

    tag: str
    step: int
    images: tuple[ArtifactRow, ...]
    more: bool = False
