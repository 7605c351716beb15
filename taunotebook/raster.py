"""A small paletted raster canvas (rectangles, lines, 5×7 text) that encodes itself as a PNG, so the loss pane's
picture needs no imaging library in the kernel; and :func:`encode_png` for the pixels a job logs as an image."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

from taunotebook.raster_font import GLYPH_HEIGHT, GLYPH_WIDTH, GLYPHS

__all__ = ["ADVANCE", "Canvas", "LINE_HEIGHT", "encode_png", "hex_rgb", "text_width"]

ADVANCE = GLYPH_WIDTH + 1  # a character's width, with its gap
LINE_HEIGHT = GLYPH_HEIGHT + 3
MAX_SIDE = 8192  # pixels: a picture is bounded whatever asks for it
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def hex_rgb(color: str) -> tuple[int, int, int]:
    """``"#1f77b4"`` → ``(31, 119, 180)``."""
    text = color.lstrip("#")
    if len(text) != 6:
        raise ValueError(f"a colour is #rrggbb, got {color!r}")
    return int(text[0:2], 16), int(text[2:4], 16), int(text[4:6], 16)


def text_width(text: str) -> int:
    return len(text) * ADVANCE


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


class Canvas:
    """``width`` × ``height`` pixels, each an index into ``palette`` (at most 256 RGB colours; index 0 fills)."""

    def __init__(self, width: int, height: int, palette: Sequence[tuple[int, int, int]]) -> None:
        if not (0 < width <= MAX_SIDE and 0 < height <= MAX_SIDE):
            raise ValueError(f"a canvas is 1..{MAX_SIDE} pixels a side, got {width}×{height}")
        if not 0 < len(palette) <= 256:
            raise ValueError(f"a palette holds 1..256 colours, got {len(palette)}")
        self.width = width
        self.height = height
        self.palette = [tuple(int(c) for c in rgb) for rgb in palette]
        self.pixels = bytearray(width * height)

    def get(self, x: int, y: int) -> int:
        return self.pixels[y * self.width + x]

    def set(self, x: int, y: int, color: int) -> None:
        if 0 <= x < self.width and 0 <= y < self.height:
            self.pixels[y * self.width + x] = color

    def rect(self, x0: int, y0: int, x1: int, y1: int, color: int) -> None:
        """Fill the pixels with ``x0 ≤ x < x1`` and ``y0 ≤ y < y1`` (clipped to the canvas)."""
        x0, x1 = max(0, x0), min(self.width, x1)
        if x0 >= x1:
            return
        row = bytes([color]) * (x1 - x0)
        for y in range(max(0, y0), min(self.height, y1)):
            start = y * self.width + x0
            self.pixels[start:start + len(row)] = row

    def frame(self, x0: int, y0: int, x1: int, y1: int, color: int) -> None:
        """A one-pixel outline of the rectangle ``[x0, x1) × [y0, y1)``."""
        self.rect(x0, y0, x1, y0 + 1, color)
        self.rect(x0, y1 - 1, x1, y1, color)
        self.rect(x0, y0, x0 + 1, y1, color)
        self.rect(x1 - 1, y0, x1, y1, color)

    def line(self, x0: int, y0: int, x1: int, y1: int, color: int) -> None:
        """A one-pixel line between two points, both ends included (Bresenham's)."""
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err = dx + dy
        while True:
            self.set(x0, y0, color)
            if x0 == x1 and y0 == y1:
                return
            e2 = 2 * err
            if e2 >= dy:
                err += dy
                x0 += sx
            if e2 <= dx:
                err += dx
                y0 += sy

    def text(self, x: int, y: int, text: str, color: int, max_width: int | None = None) -> int:
        """Draw ``text`` with its top left at (x, y), cut with "…" to ``max_width`` pixels; returns the width."""
        if max_width is not None and text_width(text) > max_width:
            keep = max(0, max_width // ADVANCE - 1)
            text = text[:keep] + "…"
        cx = x
        for char in text:
            for gx, gy in GLYPHS.get(char, GLYPHS["?"]):
                self.set(cx + gx, y + gy, color)
            cx += ADVANCE
        return cx - x

    def png(self) -> bytes:
        """The canvas as a PNG: 8-bit indexed colour, one zlib stream, no filters."""
        w = self.width
        raw = b"".join(b"\x00" + self.pixels[y * w:(y + 1) * w] for y in range(self.height))
        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 3, 0, 0, 0)
        palette = b"".join(bytes(rgb) for rgb in self.palette)
        return (PNG_SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"PLTE", palette)
                + _chunk(b"IDAT", zlib.compress(raw, 6)) + _chunk(b"IEND", b""))


_COLOUR_TYPES = {1: 0, 2: 4, 3: 2, 4: 6}  # channels -> PNG colour type: grey, grey+alpha, RGB, RGBA


def encode_png(width: int, height: int, channels: int, pixels: bytes) -> bytes:
    """8-bit pixels (rows top to bottom; ``channels`` 1 grey, 2 grey+alpha, 3 RGB, 4 RGBA) as a PNG, no filters."""
    if channels not in _COLOUR_TYPES:
        raise ValueError(f"a PNG holds 1, 2, 3 or 4 channels, not {channels}")
    stride = width * channels
    if width <= 0 or height <= 0 or len(pixels) != stride * height:
        raise ValueError(f"{len(pixels)} bytes are not {width}x{height} pixels of {channels} channels")
    raw = b"".join(b"\x00" + pixels[y * stride:(y + 1) * stride] for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, _COLOUR_TYPES[channels], 0, 0, 0)
    return PNG_SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(raw, 6)) + _chunk(b"IEND", b"")
