"""The loss pane's picture and line of text for front ends where its live view cannot load (no anywidget, an
exported HTML, GitHub, nbviewer): a PNG of the first metrics it draws, from the points it already holds."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from taunotebook.raster import LINE_HEIGHT, Canvas, hex_rgb, text_width

__all__ = ["MAX_PLOTS", "RUN_COLORS", "Snapshot", "assign_run_colors", "format_value", "picture_png",
           "text_line"]

MAX_PLOTS = 6  # metrics drawn in the picture; the others are counted ("and K more")
LINE_METRICS = 4  # latest values named in the one line of text
COLUMNS = 3
CELL_W, CELL_H = 300, 170
TITLE_H = 16
# The Stellar pages' run colours (js/shared/palette.js): a run has the same colour in the picture.
RUN_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
BACKGROUND, INK, MUTED, RULE = 0, 1, 2, 3
_PALETTE = [(255, 255, 255), (34, 34, 34), (110, 110, 110), (214, 214, 214)] + [hex_rgb(c) for c in RUN_COLORS]
_FIRST_RUN_COLOR = 4


@dataclass(frozen=True)
class Snapshot:
    """What the pane shows, as the poller last read it: ``series[(run, metric)] = (steps, values)``, the
    reduced points the live view draws; ``latest[metric] = (value, step)`` of the pane's run."""

    run_id: str
    state: str = ""
    status: str = ""
    runs: tuple[str, ...] = ()
    metrics: tuple[str, ...] = ()
    total_metrics: int = 0
    series: Mapping[tuple[str, str], tuple[Sequence[int], Sequence[float]]] = field(default_factory=dict)
    latest: Mapping[str, tuple[float | None, int | None]] = field(default_factory=dict)
    media: Any = None  # the run's media at the step cursor (a pane_static_media.MediaPicture), or None

    @property
    def shown(self) -> tuple[str, ...]:
        return self.metrics[:MAX_PLOTS]

    @property
    def more(self) -> int:
        """Metrics of the run not in the picture."""
        return max(self.total_metrics, len(self.metrics)) - len(self.shown)


def _fnv1a(text: str) -> int:
    h = 0x811C9DC5
    for byte in text.encode("utf-8"):
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def assign_run_colors(run_ids: Sequence[str]) -> dict[str, int]:
    """Each run's index into :data:`RUN_COLORS`, by the rule of ``js/shared/palette.js``'s ``assignRunColors``."""
    slots: dict[str, int] = {}
    taken: set[int] = set()
    for run in run_ids:
        if run in slots:
            continue
        slot = _fnv1a(run) % len(RUN_COLORS)
        if len(taken) < len(RUN_COLORS):
            while slot in taken:
                slot = (slot + 1) % len(RUN_COLORS)
        taken.add(slot)
        slots[run] = slot
    return slots


def format_value(value: float | int | None) -> str:
    """A value as the pane writes it (``js/shared/format.js``): 12,000; 0.123457; 1.2345e-07; NaN; –."""
    if value is None:
        return "–"
    v = float(value)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if v.is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    if v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e6):
        return f"{v:.4e}"
    return f"{v:.6g}"


def _axis_value(value: float) -> str:
    """A y-axis end, short: 4 significant digits."""
    if value.is_integer() and abs(value) < 1e6:
        return f"{int(value):,}"
    return f"{value:.4g}"


def _latest_words(snap: Snapshot, name: str) -> str:
    value, step = snap.latest.get(name, (None, None))
    if value is None and step is None:
        return f"{name} –"
    return f"{name} {format_value(value)}" + (f" (step {step:,})" if step is not None else "")


def text_line(snap: Snapshot) -> str:
    """One line: the run, its state and the latest values of the first metrics."""
    parts = [f"loss pane · run {snap.run_id}", snap.state or "state unknown"]
    if snap.status:
        parts.append(snap.status)
    parts += [_latest_words(snap, m) for m in snap.metrics[:LINE_METRICS]]
    rest = max(snap.total_metrics, len(snap.metrics)) - min(len(snap.metrics), LINE_METRICS)
    if rest > 0:
        parts.append(f"and {rest:,} more metric{'s' if rest != 1 else ''}")
    return " · ".join(parts)


def picture_png(snap: Snapshot) -> bytes:
    """The picture: a title line, then one small plot per shown metric (name, latest value, each drawn run's line,
    the y range and the step range), then "and K more metrics" when the run has others."""
    shown = snap.shown
    columns = max(1, min(COLUMNS, len(shown)))
    rows = max(1, math.ceil(len(shown) / columns))
    footer = LINE_HEIGHT + 4 if snap.more > 0 or not shown else 0
    width = columns * CELL_W
    canvas = Canvas(width, TITLE_H + rows * CELL_H + footer, _PALETTE)
    title = f"run {snap.run_id} · {snap.state or 'state unknown'}"
    canvas.text(6, 4, title, INK, max_width=width - 12)
    colors = assign_run_colors(snap.runs or (snap.run_id,))
    for i, name in enumerate(shown):
        _plot(canvas, snap, name, (i % columns) * CELL_W, TITLE_H + (i // columns) * CELL_H, colors)
    if not shown:
        canvas.text(6, TITLE_H + CELL_H // 2, "no points yet", MUTED)
    if snap.more > 0:
        canvas.text(6, canvas.height - LINE_HEIGHT, f"and {snap.more:,} more metric{'s' if snap.more != 1 else ''}",
                    MUTED, max_width=width - 12)
    return canvas.png()


def plot_box(column_x: int, row_y: int) -> tuple[int, int, int, int]:
    """The plot area of the cell at (column_x, row_y): x0, y0, x1, y1 (exclusive), inside its frame."""
    return column_x + 52, row_y + 16, column_x + CELL_W - 10, row_y + CELL_H - 18


def _plot(canvas: Canvas, snap: Snapshot, name: str, cx: int, cy: int, colors: dict[str, int]) -> None:
    x0, y0, x1, y1 = plot_box(cx, cy)
    value, step = snap.latest.get(name, (None, None))
    latest = format_value(value) + (f" @ {step:,}" if step is not None else "")
    right = cx + CELL_W - 10
    latest_x = right - text_width(latest)
    canvas.text(cx + 6, cy + 4, name, INK, max_width=latest_x - cx - 12)
    canvas.text(latest_x, cy + 4, latest, MUTED)
    canvas.frame(x0 - 1, y0 - 1, x1 + 1, y1 + 1, RULE)
    drawn = [(run, snap.series.get((run, name))) for run in (snap.runs or (snap.run_id,))]
    drawn = [(run, s) for run, s in drawn if s is not None and len(s[0])]
    finite = [v for _, (_, values) in drawn for v in values if math.isfinite(v)]
    if not finite:
        canvas.text(x0 + 6, (y0 + y1) // 2 - 3, "no points yet", MUTED)
        return
    lo, hi = min(finite), max(finite)
    smin = min(s[0][0] for _, s in drawn)
    smax = max(s[0][-1] for _, s in drawn)
    canvas.text(cx + 4, y0, _axis_value(hi), MUTED, max_width=x0 - cx - 8)
    canvas.text(cx + 4, y1 - 7, _axis_value(lo), MUTED, max_width=x0 - cx - 8)
    canvas.text(x0, y1 + 4, f"{smin:,}", MUTED)
    last = f"step {smax:,}"
    canvas.text(x1 - text_width(last), y1 + 4, last, MUTED)
    # The primary run last: drawn over the others.
    for run, (steps, values) in sorted(drawn, key=lambda d: d[0] == snap.run_id):
        _polyline(canvas, steps, values, (x0, y0, x1, y1), (smin, smax, lo, hi),
                  _FIRST_RUN_COLOR + colors.get(run, 0))


def _polyline(canvas: Canvas, steps: Sequence[int], values: Sequence[float], box: tuple[int, int, int, int],
              ranges: tuple[float, float, float, float], color: int) -> None:
    """A series as a line, one pixel column at a time (its min-max there, joined to the next column's first
    point); a non-finite value breaks the line."""
    x0, y0, x1, y1 = box
    smin, smax, lo, hi = ranges
    xscale = (x1 - 1 - x0) / (smax - smin) if smax > smin else 0.0
    yscale = (y1 - 1 - y0) / (hi - lo) if hi > lo else 0.0
    ymid = (y0 + y1 - 1) // 2
    column: list[int] | None = None  # [x, first y, min y, max y, last y]
    previous: list[int] | None = None
    columns = 0  # in the current unbroken stretch

    def flush() -> None:
        nonlocal previous, columns
        if column is None:
            return
        x, first, ymin, ymax, _last = column
        if previous is not None:
            canvas.line(previous[0], previous[4], x, first, color)
        for y in range(ymin, ymax + 1):
            canvas.set(x, y, color)
        previous = column
        columns += 1

    def end_stretch() -> None:
        nonlocal previous, columns
        if columns == 1 and previous is not None and previous[2] == previous[3]:
            canvas.rect(previous[0] - 1, previous[2] - 1, previous[0] + 2, previous[2] + 2, color)  # a lone point
        previous, columns = None, 0

    for step, value in zip(steps, values, strict=False):
        if not math.isfinite(value):
            flush()
            end_stretch()
            column = None
            continue
        x = x0 + round((step - smin) * xscale) if xscale else (x0 + x1) // 2
        y = (y1 - 1 - round((value - lo) * yscale)) if yscale else ymid
        if column is not None and column[0] == x:
            column[2], column[3], column[4] = min(column[2], y), max(column[3], y), y
            continue
        flush()
        column = [x, y, y, y, y]
    flush()
    end_stretch()
