"""DESIGN §7 over HTTP: a line drawn from the reduced series at max_points/4 px is pixel-identical to the full data."""

from __future__ import annotations

import numpy as np
import pytest

from fixtures.portal import LOSS_POINTS, loss_value

HEIGHT = 480


def rasterize(steps, values, first: int, last: int, width: int, vmin: float, vmax: float) -> set[tuple[int, int]]:
    """Pixels of a polyline: column = step bucket (as a chart maps steps to x), row = quantized value."""
    steps = np.asarray(steps, dtype=np.int64)
    values = np.asarray(values, dtype=np.float64)
    cols = ((steps - first) * width) // (last - first + 1)
    rows = np.floor((values - vmin) / (vmax - vmin) * (HEIGHT - 1)).astype(np.int64)
    pixels = {(int(cols[0]), int(rows[0]))}
    for c0, r0, c1, r1 in zip(cols[:-1].tolist(), rows[:-1].tolist(), cols[1:].tolist(), rows[1:].tolist(),
                              strict=True):
        if c0 == c1:
            pixels.update((c0, r) for r in range(min(r0, r1), max(r0, r1) + 1))
        else:
            pixels.update(_bresenham(c0, r0, c1, r1))
    return pixels


def _bresenham(x0: int, y0: int, x1: int, y1: int):
    dx, dy = abs(x1 - x0), -abs(y1 - y0)
    sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
    err = dx + dy
    while True:
        yield x0, y0
        if x0 == x1 and y0 == y1:
            return
        e2 = 2 * err
        if e2 >= dy:
            err += dy
            x0 += sx
        if e2 <= dx:
            err += dx
            y0 += sy


FULL_STEPS = np.arange(LOSS_POINTS)
FULL_VALUES = np.array([loss_value(s) for s in range(LOSS_POINTS)])


@pytest.mark.parametrize(("start", "end", "max_points"), [
    (None, None, 8000), (None, None, 12000), (None, None, 400), (1234, 15000, 400), (19_000, 19_999, 40),
])
def test_reduced_series_draws_the_same_pixels_as_the_full_series(api, start, end, max_points):
    params = {"target": "run-a", "metric": "train/loss", "max_points": max_points}
    params.update({k: v for k, v in (("start_step", start), ("end_step", end)) if v is not None})
    body = api.get("/api/v2/stellar/runs/run-a/series", params=params).json()
    first = 0 if start is None else start
    last = LOSS_POINTS - 1 if end is None else end
    full_steps, full_values = FULL_STEPS[first:last + 1], FULL_VALUES[first:last + 1]
    assert body["source_points"] == full_steps.size and body["metadata"]["partial"] is True
    assert body["returned_points"] <= max_points
    steps = [p["step"] for p in body["points"]]
    values = [p["value"] for p in body["points"]]
    width = max_points // 4
    vmin, vmax = float(full_values.min()), float(full_values.max())
    assert rasterize(steps, values, first, last, width, vmin, vmax) == rasterize(
        full_steps, full_values, first, last, width, vmin, vmax)


def test_the_raster_comparison_catches_a_reducer_that_drops_spikes():
    # Every 3rd point (no min/max per bucket) misses spikes: the property above is not vacuous.
    width, vmin, vmax = 2000, float(FULL_VALUES.min()), float(FULL_VALUES.max())
    full = rasterize(FULL_STEPS, FULL_VALUES, 0, LOSS_POINTS - 1, width, vmin, vmax)
    strided = rasterize(FULL_STEPS[::3], FULL_VALUES[::3], 0, LOSS_POINTS - 1, width, vmin, vmax)
    assert strided != full
