"""Series levels are proportional to their data: none for a file too small to need them, at most 10 % of the
metric file's bytes for every shape (narrow, long, wide)."""

from __future__ import annotations

import numpy as np
import pytest

from tau_collector.expstore import StoreReader, open_store
from tau_collector.expstore.format import levels as lv
from tau_collector.expstore.write.writer import MetricWriter, RunColumns


def _columns(metrics: int, steps: int, *, smooth: bool) -> RunColumns:
    step = np.repeat(np.arange(steps, dtype=np.int64), metrics)
    rng = np.random.default_rng(7)
    value = step * 0.5 if smooth else rng.standard_normal(step.size).cumsum() * 0.01 + 1.0
    return RunColumns(project="p", experiment_id="e", run_group_id="g", run_id="r",
                      names=[f"m/{i:05d}" for i in range(metrics)],
                      metric=np.tile(np.arange(metrics, dtype=np.int32), steps), step=step,
                      wall_time=1_760_000_000_000_000 + step * 1_000_000, value=value.astype(np.float64),
                      tags=["{}"] * step.size, tag_sets=[{}], source="history")


def _bytes(store, folder: str, suffix: str) -> int:
    root = store.root / folder
    return sum(p.stat().st_size for p in root.rglob(f"*{suffix}")) if root.exists() else 0


SHAPES = {
    "narrow, one chunk": (4, 250),
    "narrow, long": (4, 50_000),
    "one metric, long": (1, 300_000),
    "wide, few steps": (10_000, 3),
    "wide, more steps": (2_000, 50),
    "wide and long": (500, 3_000),
}


@pytest.mark.parametrize("smooth", [False, True], ids=["noisy", "smooth"])
@pytest.mark.parametrize("shape", SHAPES, ids=list(SHAPES))
def test_levels_bytes_are_at_most_a_tenth_of_the_data(tmp_path, shape, smooth):
    metrics, steps = SHAPES[shape]
    store = open_store(tmp_path / "s", create=True)
    MetricWriter(store).write_columns("k", [_columns(metrics, steps, smooth=smooth)], request_hash="h")
    data, levels = _bytes(store, "metrics", ".parquet"), _bytes(store, lv.LEVELS_DIR, ".npz")
    assert levels <= 0.10 * data, (shape, data, levels)
    assert (levels > 0) == lv.needs_levels(metrics * steps, metrics)


def test_a_small_file_has_no_levels_file_and_a_long_read_over_it_is_unchanged(tmp_path):
    store = open_store(tmp_path / "s", create=True)
    writer = MetricWriter(store)
    writer.write_columns("small", [_columns(1, 100, smooth=True)], request_hash="h")
    assert _bytes(store, lv.LEVELS_DIR, ".npz") == 0
    big = _columns(1, 20_000, smooth=True)
    big.step = big.step + 100
    writer.write_columns("big", [big], request_hash="h")
    assert _bytes(store, lv.LEVELS_DIR, ".npz") > 0
    fast, plain = StoreReader(store), StoreReader(store)
    fast.levels.min_points = 0
    plain.levels.min_points = 2**62
    for max_points in (10, 64, 500):  # bases finer and coarser than the stored levels
        a = fast.series("r", "m/00000", None, None, max_points)
        b = plain.series("r", "m/00000", None, None, max_points)
        assert a.step.size <= 4 * max_points
        assert a.step[0] == b.step[0] == 0 and a.step[-1] == b.step[-1] == 20_099
        assert a.value.max() == b.value.max() and a.value.min() == b.value.min()
