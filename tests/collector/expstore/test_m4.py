"""M4 keeps every pixel: a line through the reduced points rasterizes like the full line (DESIGN §7)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tau_collector.expstore.read.m4 import M4Index, m4_indices

HEIGHT = 97  # pixel rows; odd on purpose, nothing lines up by accident


def rasterize(steps: np.ndarray, values: np.ndarray, width: int, y_lo: float, y_hi: float) -> list:
    """Per pixel column the lowest and highest pixel row the polyline covers (None: empty column).

    Columns split [first step, last step + 1) into ``width`` equal parts; each segment is clipped
    to every column it crosses and covers the y range between its clipped ends.
    """
    s0, span = int(steps[0]), int(steps[-1]) - int(steps[0]) + 1
    xs = [(int(s) - s0) * width / span for s in steps]
    ys = [float(v) for v in values]
    lo = [math.inf] * width
    hi = [-math.inf] * width

    def cover(col: int, a: float, b: float) -> None:
        lo[col] = min(lo[col], a, b)
        hi[col] = max(hi[col], a, b)

    for x, y in zip(xs, ys, strict=True):
        cover(min(int(x), width - 1), y, y)
    for (x1, y1), (x2, y2) in zip(zip(xs, ys, strict=True), zip(xs[1:], ys[1:], strict=True), strict=False):
        for col in range(int(x1), min(int(x2), width - 1) + 1):
            a, b = max(x1, col), min(x2, col + 1)
            cover(col, _at(x1, y1, x2, y2, a), _at(x1, y1, x2, y2, b))
    span_y = y_hi - y_lo

    def row(y: float) -> int:
        # The fraction first: a subnormal range would make a scale factor infinite (and 0 * inf NaN).
        return int((y - y_lo) / span_y * (HEIGHT - 1)) if span_y > 0 else 0

    return [None if lo[c] == math.inf else (row(lo[c]), row(hi[c])) for c in range(width)]


def _at(x1: float, y1: float, x2: float, y2: float, x: float) -> float:
    # Endpoints exactly: interpolating at x2 can round away from y2 and fake a difference.
    if x == x1:
        return y1
    if x == x2:
        return y2
    return y1 + (y2 - y1) * (x - x1) / (x2 - x1)


series = st.integers(min_value=5, max_value=400).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(min_value=0, max_value=10**7), min_size=n, max_size=n, unique=True),
        st.lists(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False),
                 min_size=n, max_size=n),
        st.integers(min_value=4, max_value=max(4, n - 1)),
    )
)


@settings(max_examples=300, deadline=None, report_multiple_bugs=False)
@given(series)
def test_reduced_line_covers_exactly_the_pixels_of_the_full_line(data):
    raw_steps, raw_values, max_points = data
    order = np.argsort(raw_steps)
    steps = np.array(raw_steps, dtype=np.int64)[order]
    values = np.array(raw_values, dtype=np.float64)[order]
    kept = m4_indices(steps, values, max_points)
    assert kept.size <= max_points
    assert np.all(np.diff(kept) > 0)  # ordered, no duplicates
    width = max_points // 4
    y_lo, y_hi = float(values.min()), float(values.max())
    assert rasterize(steps[kept], values[kept], width, y_lo, y_hi) == rasterize(steps, values, width, y_lo, y_hi)


def test_the_reference_rasterizer_takes_a_subnormal_value_range():
    steps = np.array([0, 1, 2, 3, 4], dtype=np.int64)
    values = np.array([0.0, 5e-324, 0.0, 5e-324, 0.0])
    kept = m4_indices(steps, values, 4)
    assert rasterize(steps[kept], values[kept], 1, 0.0, 5e-324) == rasterize(steps, values, 1, 0.0, 5e-324)


def test_single_point_spikes_survive_a_million_points():
    rng = np.random.default_rng(7)
    steps = np.arange(1_000_000, dtype=np.int64) * 2
    values = rng.normal(0.0, 0.01, steps.size)
    values[123_457] = 40.0
    values[876_543] = -40.0
    kept = m4_indices(steps, values, 8000, index=M4Index(values))
    assert kept.size <= 8000
    assert {123_457, 876_543} <= set(kept.tolist())
    assert kept[0] == 0 and kept[-1] == steps.size - 1


def test_few_points_are_returned_as_they_are():
    steps = np.arange(10, dtype=np.int64)
    assert m4_indices(steps, np.ones(10), 10).tolist() == list(range(10))


def test_one_point_budget_returns_the_last_point():
    steps = np.arange(10, dtype=np.int64)
    assert m4_indices(steps, np.arange(10.0), 1).tolist() == [9]


def test_sub_range_indices_are_positions_in_the_full_arrays():
    steps = np.arange(1000, dtype=np.int64)
    values = np.sin(steps / 10.0)
    index = M4Index(values)
    kept = m4_indices(steps, values, 40, index=index, lo=600, hi=900)
    assert kept.min() == 600 and kept.max() == 899 and kept.size <= 40
    assert np.array_equal(kept - 600, m4_indices(steps[600:900], values[600:900], 40))


def test_non_finite_points_are_kept_but_never_chosen_as_extremes():
    steps = np.arange(1000, dtype=np.int64)
    values = np.zeros(1000)
    values[500] = math.nan
    values[501] = math.inf
    values[502] = 7.0
    kept = set(m4_indices(steps, values, 16).tolist())
    assert 500 in kept  # the first non-finite point of its bucket, for the caller to mark
    assert 502 in kept  # the bucket maximum is the finite 7.0, not +Inf
