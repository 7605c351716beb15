"""``log``, ``histogram`` and ``image``: a notebook job logs scalars, histograms and images in one line each, with
neither TensorBoard nor W&B installed.

::

    from taunotebook import histogram, image, log
    log(step=3, loss=0.25, weights=histogram(w), sample=image(pixels, caption="epoch 3"))

The row is W&B-shaped (``{"_type": "histogram", "bins", "values"}``, ``{"_type": "image-file", "path", …}``) and
written as ``tau_collector``'s ``log()`` writes rows: into the chunk files of ``$TAU_HISTORY_DIR`` when the job
runs under ``%%tau_submit`` (``tau-collector wrap`` sets it), else printed on stdout as one JSON line for the job's
normalizer. Each image is written first, as a PNG (or the encoded bytes given), under ``media/images/`` beside
the history (``$TAU_HISTORY_DIR``, else the current directory), named by its content; the row names it by its
path relative to that directory, as W&B names files under a run's ``files/``. The collector reads both into the
run's histograms and images (``tau_collector.sources.wandb_media``).
"""

from __future__ import annotations

import hashlib
import os
import re
import struct
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_BUCKETS", "MAX_IMAGE_BYTES", "Image", "histogram", "image", "log"]

MAX_BUCKETS = 33_333  # the most buckets the collector reads by default (its max_tensor_values // 3)
MAX_IMAGE_BYTES = 16 * 1024 * 1024  # the largest image file the collector reads by default (its max_line_bytes)
MEDIA_DIR = os.path.join("media", "images")
_PNG = b"\x89PNG\r\n\x1a\n"
_JPEG = b"\xff\xd8\xff"
# Start-of-frame markers (baseline, progressive, lossless, arithmetic…): C0..CF but DHT, JPG and DAC.
_JPEG_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_JPEG_MAX_SEGMENTS = 1024  # segments read looking for the frame header before giving up on the size
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def histogram(values: Any = None, *, bins: int = 64) -> dict:
    """A W&B-shaped histogram: of ``values`` (any sequence or array of numbers; non-finite ones left out) in
    ``bins`` equal buckets, or of a computed histogram given as a pair (``(edges, counts)`` or numpy's
    ``(counts, edges)``: the edges are the one longer by one)."""
    import numpy as np

    if isinstance(values, tuple) and len(values) == 2 and all(np.ndim(v) == 1 for v in values):
        first, second = (np.asarray(v, dtype=np.float64) for v in values)
        if len(first) == len(second) + 1:
            edges, counts = first, second
        elif len(second) == len(first) + 1:
            counts, edges = first, second
        else:
            raise ValueError(f"histogram((edges, counts)): {len(first)} and {len(second)} numbers; the edges are "
                             "one more than the counts")
    else:
        if values is None:
            raise ValueError("histogram() needs values, or a pair (edges, counts)")
        if not isinstance(bins, int) or isinstance(bins, bool) or bins < 1:
            raise ValueError(f"histogram(bins=…) must be a positive integer, got {bins!r}")
        data = np.asarray(values, dtype=np.float64).ravel()
        data = data[np.isfinite(data)]
        if not len(data):
            raise ValueError("histogram(): no finite values to count")
        counts, edges = np.histogram(data, bins=min(bins, MAX_BUCKETS))
    if len(counts) > MAX_BUCKETS:
        raise ValueError(f"histogram(): {len(counts)} buckets, more than the {MAX_BUCKETS} the collector reads")
    if not (np.isfinite(edges).all() and np.isfinite(counts).all()) or (np.diff(edges) < 0).any() or \
            (counts < 0).any():
        raise ValueError("histogram(): the edges must be finite and increasing, the counts finite and not negative")
    return {"_type": "histogram", "bins": edges.tolist(), "values": [_count(c) for c in counts.tolist()]}


def _count(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


@dataclass(frozen=True, slots=True)
class Image:
    """An encoded image to log (``data``), its size when known, its caption and format (file extension)."""

    data: bytes
    width: int | None
    height: int | None
    caption: str | None
    format: str


def image(data: Any, caption: str | None = None) -> Image:
    """An image to log: encoded bytes (PNG, JPEG, GIF…), or pixels (an array ``H×W``, ``H×W×C`` or ``C×H×W`` with
    1, 2, 3 or 4 channels; floats are taken as 0..1, integers as 0..255) encoded here as PNG."""
    if isinstance(data, bytes | bytearray | memoryview):
        raw = bytes(data)
        if raw.startswith(_PNG) and len(raw) >= 24:
            width, height = struct.unpack(">II", raw[16:24])
            found = Image(raw, width, height, caption, "png")
        elif raw.startswith(_JPEG):
            width, height = _jpeg_size(raw) or (None, None)
            found = Image(raw, width, height, caption, "jpg")
        else:
            found = Image(raw, None, None, caption, "gif" if raw.startswith(b"GIF8") else "bin")
    else:
        found = _pixels_image(data, caption)
    if len(found.data) > MAX_IMAGE_BYTES:
        raise ValueError(f"image(): {len(found.data)} bytes, more than the {MAX_IMAGE_BYTES} the collector reads")
    return found


def _jpeg_size(raw: bytes) -> tuple[int, int] | None:
    """(width, height) from a JPEG's start-of-frame header, or None when the bytes do not reach one: reads only
    segment headers (at most :data:`_JPEG_MAX_SEGMENTS`), never the compressed image."""
    at = 2  # past SOI
    for _ in range(_JPEG_MAX_SEGMENTS):
        if at >= len(raw) or raw[at] != 0xFF:  # not at a marker: not a JPEG this reads
            return None
        while at < len(raw) and raw[at] == 0xFF:  # the marker's 0xFF, and any fill bytes
            at += 1
        if at >= len(raw):
            return None
        marker = raw[at]
        at += 1
        if marker == 0x01 or 0xD0 <= marker <= 0xD7:  # TEM, RSTn: no length
            continue
        if marker in (0xD9, 0xDA) or at + 2 > len(raw):  # EOI, or SOS (the image data) before any frame header
            return None
        (length,) = struct.unpack_from(">H", raw, at)
        if length < 2:
            return None
        if marker in _JPEG_SOF:
            if length < 7 or at + 7 > len(raw):
                return None
            height, width = struct.unpack_from(">HH", raw, at + 3)
            return (width, height) if width and height else None  # height 0: given later (DNL), not read here
        at += length
    return None


def _pixels_image(data: Any, caption: str | None) -> Image:
    import numpy as np

    from taunotebook.raster import encode_png

    pixels = np.asarray(data)
    if pixels.ndim == 3 and pixels.shape[-1] not in (1, 2, 3, 4) and pixels.shape[0] in (1, 2, 3, 4):
        pixels = np.moveaxis(pixels, 0, -1)  # channels first (torch) to last
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    if pixels.ndim != 3 or pixels.shape[-1] not in (1, 2, 3, 4) or 0 in pixels.shape:
        raise ValueError(f"image(): pixels of shape {list(np.shape(data))}; give H×W, H×W×C or C×H×W with 1-4 "
                         "channels")
    if pixels.dtype.kind == "f":
        pixels = np.clip(np.nan_to_num(pixels) * 255.0 + 0.5, 0, 255)
    elif pixels.dtype.kind not in "uib":
        raise ValueError(f"image(): pixels of type {pixels.dtype}; give numbers")
    pixels = np.ascontiguousarray(np.clip(pixels, 0, 255).astype(np.uint8))
    height, width, channels = pixels.shape
    return Image(encode_png(width, height, channels, pixels.tobytes()), width, height, caption, "png")


def _history_dir() -> str:
    return os.environ.get("TAU_HISTORY_DIR") or os.getcwd()


def _write_image(name: str, item: Image) -> str:
    """Write ``item`` under ``media/images/`` beside the history (atomically, once per content); its relative path."""
    digest = hashlib.sha256(item.data).hexdigest()
    relative = os.path.join(MEDIA_DIR, f"{_UNSAFE.sub('_', name)[:80]}_{digest[:20]}.{item.format}")
    path = os.path.join(_history_dir(), relative)
    if not (os.path.isfile(path) and os.path.getsize(path) == len(item.data)):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".image-", dir=os.path.dirname(path))
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(item.data)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    return relative.replace(os.sep, "/")


def _image_value(name: str, item: Image) -> dict:
    value = {"_type": "image-file", "path": _write_image(name, item), "sha256": hashlib.sha256(item.data).hexdigest(),
             "size": len(item.data), "width": item.width, "height": item.height, "format": item.format}
    if item.caption is not None:
        value["caption"] = item.caption
    return value


def _images_value(name: str, items: Sequence[Image]) -> dict:
    value = {"_type": "images/separated", "width": items[0].width, "height": items[0].height,
             "format": items[0].format, "count": len(items), "filenames": [_write_image(name, i) for i in items]}
    if any(i.caption is not None for i in items):
        value["captions"] = [i.caption for i in items]
    return value


def log(step: Any = None, **values: Any) -> dict:
    """Log one row: numbers, :func:`histogram` values and :func:`image` values (or lists of images) by name;
    ``step`` a non-negative integer (default: the previous one + 1). Returns the row as written."""
    from tau_collector.job.history_writer import plain_value, write_row

    row: dict[str, Any] = {}
    if step is not None:
        row["step"] = plain_value("step", step)
    for name, value in values.items():
        if isinstance(value, Image):
            row[name] = _image_value(name, value)
        elif isinstance(value, list | tuple) and value and all(isinstance(v, Image) for v in value):
            row[name] = _images_value(name, value)
        elif isinstance(value, dict) and value.get("_type") == "histogram":
            row[name] = value
        else:
            row[name] = plain_value(name, value)
    write_row(row)
    return row
