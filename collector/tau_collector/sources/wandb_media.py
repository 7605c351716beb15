"""W&B's media values in history rows (``histogram``, ``image-file``, ``images/separated``) as media records, every
size checked before anything is allocated or read.

wandb writes a logged ``wandb.Histogram`` as ``{"_type": "histogram", "bins": [n+1 edges], "values": [n counts]}``
(``wandb/sdk/data_types/histogram.py``); W&B's server and exports pack evenly spaced edges as
``{"_type": "histogram", "packedBins": {"min", "size", "count"}, "values": [...]}``. Either becomes a
:class:`~.media.HistogramRecord` whose buckets are ``[left, right, count]`` rows, as TensorBoard's reader
yields them. A logged ``wandb.Image`` is ``{"_type": "image-file", "path": "media/images/….png", "sha256",
"size", "width", "height", "format", "caption"?}`` (``wandb/sdk/data_types/image.py``; ``path`` relative to the
run's ``files/``), and a list of images ``{"_type": "images/separated", "filenames": [...], "captions"?: [...],
"width", "height", "format", "count"}``: an :class:`~.media.ImageRecord` of the tag at the row's step, the bytes
read from the file, captions kept.

Bounds: a histogram holds at most ``max_values // 3`` buckets (as a TensorBoard histogram tensor counts three
values a bucket), its edges and counts finite; a ``packedBins.count`` or ``size`` is checked before any edge is
made. An image path must stay inside the files folder (no absolute path, no ``..``, no symbolic link out of it),
name a regular file of at most ``max_image_bytes`` whose size is the one the row gives; a list holds at most
``max_values`` images. A value that breaks a rule, or an image file that is missing, is a problem in words
(``bad_value``) naming the file, the row and the tag; the row's scalars and its other media still go through.

A live run may write an image file just after the row naming it: while the job runs, a row whose image file is
missing ends the batch before it, and the row is read again (:class:`ImageWaits`, at most
:data:`MISSING_IMAGE_WAIT_SECONDS` a row, as a torn tail is read again); after that, or once the run is complete,
the missing file is reported in words and the row goes through without it.
"""

from __future__ import annotations

import math
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tau_collector.projection.projector import RowError, history_step, history_time_ns
from tau_collector.sources.base import Batch, Position
from tau_collector.sources.media import HistogramRecord, ImageRecord, MediaRecord
from tau_collector.sources.read_limits import Limits
from tau_collector.sources.records import HistoryRow, ProblemKind, SourceProblem

__all__ = ["HISTOGRAM_TYPE", "IMAGES_TYPE", "IMAGE_FILE_TYPE", "MEDIA_TYPES", "MISSING_IMAGE_WAIT_SECONDS",
           "ImageWaits", "MediaScope", "RowMedia",
           "histogram_buckets", "media_files", "media_scope", "read_image_file", "row_media", "take_media"]

HISTOGRAM_TYPE = "histogram"
IMAGE_FILE_TYPE = "image-file"
IMAGES_TYPE = "images/separated"
MISSING_IMAGE_WAIT_SECONDS = 30.0  # how long a live row waits for an image file it names to appear
MEDIA_TYPES = frozenset({HISTOGRAM_TYPE, IMAGE_FILE_TYPE, IMAGES_TYPE})
# The ``dropped`` bucket of the other ``_type`` values (a fixed few: a file cannot make buckets up).
_DROPPED = {"table-file": "wandb_table", "table": "wandb_table", "joined-table": "wandb_table",
            "partitioned-table": "wandb_table", "audio-file": "wandb_audio", "video-file": "wandb_video",
            "html-file": "wandb_html", "object3D-file": "wandb_object3d", "plotly-file": "wandb_plotly"}


@dataclass(frozen=True, slots=True)
class MediaScope:
    """How one source reads its rows' media: image paths are relative to ``files_dir``; ``separator`` joins
    nested keys into the tag (``None``: only top-level values are media, as a TauGrid history row holds them);
    ``max_depth`` as for scalars; ``max_values`` a histogram's or list's bound (:attr:`.Limits.max_tensor_values`);
    ``max_image_bytes`` one image file's (:attr:`.Limits.max_line_bytes`)."""

    files_dir: str
    separator: str | None = "."
    max_depth: int = 32
    max_values: int = 100_000
    max_image_bytes: int = 16 * 1024 * 1024


def media_scope(files_dir: str, limits: Limits, separator: str | None = ".") -> MediaScope:
    """How a history source under ``limits`` reads its rows' media, image paths relative to ``files_dir``."""
    return MediaScope(files_dir, separator, limits.max_depth, limits.max_tensor_values, limits.max_line_bytes)


@dataclass(slots=True)
class RowMedia:
    """What one row's media values gave: records, problems, the other ``_type`` values (tables…) by ``dropped``
    bucket, and the bytes of the images read."""

    records: list[MediaRecord] = field(default_factory=list)
    problems: list[SourceProblem] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)
    image_bytes: int = 0
    missing: list[str] = field(default_factory=list)  # the image paths whose files are not there (yet)


class ImageWaits:
    """Per input, the row waiting for an image file it names, and since when (``clock`` seconds): one row per input
    at a time (a batch ends before it), so what is held is bounded by the inputs."""

    def __init__(self, wait_seconds: float = MISSING_IMAGE_WAIT_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.wait_seconds = wait_seconds
        self._clock = clock
        self._since: dict[str, tuple[int, float]] = {}

    def wait(self, path: str, offset: int, final: bool) -> bool:
        """Whether the row at ``offset`` of ``path`` is read again later rather than now without its image: while
        the job runs, until it has waited :attr:`wait_seconds`."""
        if final:
            self._since.pop(path, None)
            return False
        now = self._clock()
        held = self._since.get(path)
        if held is None or held[0] != offset:
            self._since[path] = (offset, now)
            return True
        return now - held[1] < self.wait_seconds

    def passed(self, path: str, offset: int) -> None:
        """``path`` was read up to ``offset``: a row waited for before it is done with."""
        held = self._since.get(path)
        if held is not None and held[0] < offset:
            del self._since[path]


def _number(value: Any) -> bool:
    return type(value) in (int, float)


def _numbers(values: Any, what: str, limit: int) -> np.ndarray:
    if not isinstance(values, list):
        raise ValueError(f"its {what} is not a list")
    if len(values) > limit:
        raise ValueError(f"its {what} hold {len(values)} numbers, more than the limit of {limit}")
    if not all(_number(v) for v in values):
        raise ValueError(f"its {what} are not all numbers")
    out = np.array(values, dtype=np.float64)
    if not np.isfinite(out).all():
        raise ValueError(f"its {what} are not all finite")
    return out


def histogram_buckets(value: dict, max_values: int) -> np.ndarray:
    """The ``[k, 3]`` float64 buckets ``(left, right, count)`` of a W&B histogram value; :class:`ValueError` says why
    a value cannot be read (more than ``max_values // 3`` buckets among the reasons, checked before any array)."""
    max_buckets = max(1, max_values // 3)
    values = value.get("values")
    if not isinstance(values, list):
        raise ValueError("a histogram without a list of values (bucket counts)")
    n = len(values)
    if n > max_buckets:
        raise ValueError(f"a histogram of {n} buckets, more than the limit of {max_buckets}")
    if "packedBins" in value:
        packed = value["packedBins"]
        if not isinstance(packed, dict) or not all(_number(packed.get(k)) for k in ("min", "size", "count")):
            raise ValueError("its packedBins is not {min, size, count} numbers")
        count, low, size = packed["count"], float(packed["min"]), float(packed["size"])
        if isinstance(count, float) and not count.is_integer():
            raise ValueError(f"its packedBins.count {count} is not a whole number")
        if count > max_buckets or count < 0:
            raise ValueError(f"its packedBins.count {count} is outside 0..{max_buckets} (the bucket limit)")
        if int(count) != n:
            raise ValueError(f"its packedBins.count {int(count)} is not the number of values ({n})")
        if not (math.isfinite(low) and math.isfinite(size)) or size <= 0:
            raise ValueError(f"its packedBins min {low} and size {size} must be finite, the size positive")
        edges = low + size * np.arange(n + 1, dtype=np.float64)
        if not np.isfinite(edges).all():
            raise ValueError("its packedBins edges overflow float64")
    else:
        edges = _numbers(value.get("bins"), "bins (edges)", max_buckets + 1)
        if len(edges) != n + 1:
            raise ValueError(f"{len(edges)} bin edges for {n} values (a histogram has one edge more than values)")
    counts = _numbers(values, "values (bucket counts)", max_buckets)
    if (counts < 0).any():
        raise ValueError("a bucket count is negative")
    if (np.diff(edges) < 0).any():
        raise ValueError("its bin edges decrease")
    return np.column_stack([edges[:-1], edges[1:], counts])


@dataclass(frozen=True, slots=True)
class _ImageRef:
    path: str
    caption: str | None
    size: int | None


def _image_refs(value: dict, kind: str, max_values: int) -> tuple[list[_ImageRef], int, int]:
    """The files an image value names, with its width and height (0 when not given)."""
    width, height = value.get("width"), value.get("height")
    width = width if type(width) is int and width >= 0 else 0
    height = height if type(height) is int and height >= 0 else 0
    if kind == IMAGE_FILE_TYPE:
        path, caption, size = value.get("path"), value.get("caption"), value.get("size")
        if not isinstance(path, str):
            raise ValueError("an image-file value without a path (W&B writes it for a run's images)")
        return [_ImageRef(path, _caption(caption), size if type(size) is int else None)], width, height
    names = value.get("filenames")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ValueError("an images/separated value without a list of filenames")
    if len(names) > max_values:
        raise ValueError(f"an images/separated value of {len(names)} images, more than the limit of {max_values}")
    captions = value.get("captions")
    captions = captions if isinstance(captions, list) and len(captions) == len(names) else [None] * len(names)
    return [_ImageRef(n, _caption(c), None) for n, c in zip(names, captions, strict=True)], width, height


def _caption(caption: Any) -> str | None:
    if caption is None:
        return None
    return caption if isinstance(caption, str) else str(caption)


def read_image_file(files_dir: str, path: str, *, max_bytes: int, size: int | None = None) -> bytes:
    """The bytes of image ``path`` (relative, inside ``files_dir``). :class:`ValueError` for a path that leaves the
    folder (absolute, ``..``, a symbolic link out), a file that is not a regular one, larger than ``max_bytes`` or
    of another size than ``size``; :class:`FileNotFoundError` when it is missing."""
    if not path or os.path.isabs(path) or "\\" in path or "\0" in path:
        raise ValueError(f"image path {path!r} is not a relative path inside the run's files folder")
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise ValueError(f"image path {path!r} leaves (or wanders in) the run's files folder")
    root = os.path.realpath(files_dir)
    full = os.path.realpath(os.path.join(root, *parts))
    if not full.startswith(root + os.sep):
        raise ValueError(f"image path {path!r} is a symbolic link out of the run's files folder")
    fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"image path {path!r} is not a regular file")
        if info.st_size > max_bytes:
            raise ValueError(f"image file {path!r} holds {info.st_size} bytes, more than the limit of {max_bytes}")
        if size is not None and size != info.st_size:
            raise ValueError(f"image file {path!r} holds {info.st_size} bytes, its row says {size}")
        chunks, left = [], info.st_size
        while left > 0:
            piece = os.read(fd, min(left, 1 << 20))
            if not piece:
                raise ValueError(f"image file {path!r} shrank while it was read")
            chunks.append(piece)
            left -= len(piece)
        return b"".join(chunks)
    finally:
        os.close(fd)


def media_files(files_dir: str, prefix: str = "") -> list[tuple[str, str]]:
    """Every regular file under ``files_dir/media`` (where wandb writes a run's images and other media), in name
    order, as (path, ``prefix`` + its path relative to ``files_dir``, ``/``-separated). Symbolic links, to files
    or folders, are not followed: a link out of the run keeps nothing of elsewhere."""
    found = []
    top = os.path.join(files_dir, "media")
    for folder, dirs, names in os.walk(top):  # os.walk follows no links to folders
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(folder, name)
            try:
                if not stat.S_ISREG(os.lstat(path).st_mode):
                    continue
            except OSError:
                continue  # gone meanwhile
            found.append((path, prefix + os.path.relpath(path, files_dir).replace(os.sep, "/")))
    return found


def _media_values(fields: dict, scope: MediaScope) -> list[tuple[str, dict]]:
    """(tag, value) of every ``_type`` value of a row, in key order; nested as the scalars are flattened."""
    found: list[tuple[str, dict]] = []
    if dict not in map(type, fields.values()):  # most rows: numbers only, checked without a Python loop
        return found
    stack: list[tuple[str, dict, int]] = []
    for key, value in fields.items():
        if type(value) is dict:
            if "_type" in value:
                found.append((key, value))
            elif scope.separator is not None:
                stack.append((key, value, 2))
    while stack:
        name, mapping, depth = stack.pop()
        if depth > scope.max_depth:
            continue
        for key, inner in mapping.items():
            if type(inner) is dict:
                full = f"{name}{scope.separator}{key}"
                if "_type" in inner:
                    found.append((full, inner))
                else:
                    stack.append((full, inner, depth + 1))
    return found


def row_media(row: HistoryRow, path: str, scope: MediaScope, *, step_field: str = "_step",
              time_field: str = "_timestamp", image_budget: int | None = None) -> RowMedia:
    """The media of one history ``row`` of file ``path``. A row without a valid step or time gives none (the
    projection reports the row). ``image_budget``: the bytes of images one row may hold (as an event record's
    images are bounded by the record limit); images past it become problems, so a row naming a thousand large
    images stays bounded."""
    out = RowMedia()
    values = _media_values(row.fields, scope)
    if not values:
        return out
    try:
        step = history_step(row.fields.get(step_field))
        history_time_ns(raw_time := row.fields.get(time_field))  # the projection's rule for the row's time
    except RowError:
        return out
    wall_time = float(raw_time)
    for tag, value in values:
        kind = value.get("_type")
        if kind not in MEDIA_TYPES:
            bucket = _DROPPED.get(kind, "wandb_media") if isinstance(kind, str) else "wandb_media"
            out.dropped[bucket] = out.dropped.get(bucket, 0) + 1
            continue
        try:
            if kind == HISTOGRAM_TYPE:
                out.records.append(HistogramRecord("", tag, step, wall_time, histogram_buckets(value, scope.max_values),
                                                   row.line, row.offset))
                continue
            refs, width, height = _image_refs(value, kind, scope.max_values)
        except ValueError as exc:
            out.problems.append(_problem(path, row, tag, f"{exc}; the value was skipped"))
            continue
        images, captions = [], []
        for ref in refs:
            if image_budget is not None and out.image_bytes >= image_budget:
                out.problems.append(_problem(path, row, tag, f"image {ref.path!r} was not read: the row's images "
                                             f"already hold {out.image_bytes} bytes, the most one batch holds"))
                continue
            try:
                data = read_image_file(scope.files_dir, ref.path, max_bytes=scope.max_image_bytes, size=ref.size)
            except FileNotFoundError:
                out.missing.append(ref.path)
                out.problems.append(_problem(path, row, tag, f"image file {ref.path!r} is missing from "
                                             f"{scope.files_dir}; the image was skipped"))
                continue
            except (ValueError, OSError) as exc:
                words = exc if isinstance(exc, ValueError) else f"image file {ref.path!r} cannot be read ({exc})"
                out.problems.append(_problem(path, row, tag, f"{words}; the image was skipped"))
                continue
            out.image_bytes += len(data)
            images.append(data)
            captions.append(ref.caption)
        if images:
            out.records.append(ImageRecord("", tag, step, wall_time, width, height, tuple(images), row.line,
                                           row.offset, captions=tuple(captions)))
    return out


def _problem(path: str, row: HistoryRow, tag: str, words: str) -> SourceProblem:
    return SourceProblem(path, ProblemKind.BAD_VALUE, f"W&B media value {tag!r}: {words}", line=row.line,
                         offset=row.offset)


def take_media(batch: Batch, rows: list[HistoryRow], scope: MediaScope, *, step_field: str = "_step",
               time_field: str = "_timestamp", image_budget: int, final: bool = True,
               waits: ImageWaits | None = None) -> list[HistoryRow]:
    """Add the media of ``rows`` (the batch's rows, in file order) to ``batch``; returns the rows the batch keeps.

    Images are read here, so what a batch holds is bounded by ``image_budget`` too: once the images read pass it,
    the batch ends after that row (its ``end`` at the next row, ``more`` set; problems of later lines dropped, to
    be found again when they are read), so a history of many large images is read in batches like any other.
    One row's images are bounded by ``scope.max_image_bytes`` (:func:`row_media`). With ``waits``, a row naming an
    image file that is not there yet ends the batch before it while the job runs (not ``final``), for the row to
    be read again once the file may be there (:class:`ImageWaits` bounds how long)."""
    path = batch.input.path
    held = 0
    kept = rows
    for index, row in enumerate(rows):
        media = row_media(row, path, scope, step_field=step_field, time_field=time_field,
                          image_budget=scope.max_image_bytes)
        if media.missing and waits is not None and waits.wait(path, row.offset, final):
            _end_before(batch, row, more=False)
            kept = rows[:index]
            break
        batch.media += media.records
        batch.problems += media.problems
        for bucket, count in media.dropped.items():
            batch.drop(bucket, count)
        held += media.image_bytes
        if held >= image_budget and index + 1 < len(rows):
            _end_before(batch, rows[index + 1], more=True)
            kept = rows[:index + 1]
            break
    if waits is not None:
        waits.passed(path, batch.end.offset)
    return kept


def _end_before(batch: Batch, row: HistoryRow, *, more: bool) -> None:
    """End ``batch`` before ``row`` (read from there next), dropping the problems of the lines from there on."""
    batch.end = Position(row.offset, row.line - 1)
    batch.more, batch.stopped, batch.unreadable = more, False, False
    batch.problems = [p for p in batch.problems if p.line is None or p.line < row.line]
