"""Writes smoothing.json: TensorBoard's smoothing computed in Python, the table js/test/smoothing.test.js checks.

Written from TensorBoard's description of its scalar smoothing (a debiased exponential moving average that
passes non-finite values through, leaves a constant series as is, and skips debiasing at weight 1), and
independent of the JavaScript under test. ``python js/test/reference/make_reference.py`` rewrites the table;
``--check`` fails if the committed one differs (tests/test_js_reference.py runs that).
"""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path

TABLE = Path(__file__).resolve().parent / "smoothing.json"
WEIGHTS = [0.0, 0.001, 0.3, 0.6, 0.9, 0.99, 0.999, 1.0]


def tensorboard_smoothing(values: list[float], weight: float) -> list[float]:
    is_constant = bool(values) and all(v == values[0] for v in values)
    last, num_accum, out = 0.0, 0, []
    for v in values:
        if is_constant or not math.isfinite(v):
            out.append(v)
            continue
        last = last * weight + (1 - weight) * v
        num_accum += 1
        out.append(last / (1.0 if weight == 1 else 1 - weight**num_accum))
    return out


def series() -> dict[str, list[float]]:
    rng = random.Random(13)
    nan, inf = math.nan, math.inf
    return {
        "empty": [],
        "single": [3.5],
        "constant": [0.25] * 6,
        "constant_then_nan": [1.0, 1.0, nan, 1.0],
        "starts_with_nan": [nan, 1.0, 2.0, 3.0],
        "infinities": [1.0, inf, 2.0, -inf, 3.0],
        "negative_zero": [0.0, -0.0, 0.0],
        "wide_range": [1e-12, 1e12, -1e12, 3.0, 1e-300],
        "decay": [2 * math.exp(-i / 10) + 0.1 * math.sin(i) for i in range(60)],
        "noise": [rng.gauss(1.0, 0.5) for _ in range(200)],
    }


def encode(v: float) -> float | str:
    return v if math.isfinite(v) else ("NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity"))


def table() -> dict:
    cases = []
    for name, values in series().items():
        for weight in WEIGHTS:
            cases.append({"name": name, "weight": weight, "values": [encode(v) for v in values],
                          "smoothed": [encode(v) for v in tensorboard_smoothing(values, weight)]})
    return {"about": "TensorBoard's scalar smoothing, computed by js/test/reference/make_reference.py",
            "cases": cases}


def render() -> str:
    t = table()  # one case a line: diffs stay readable
    cases = ",\n".join(json.dumps(c) for c in t["cases"])
    return f'{{"about": {json.dumps(t["about"])},\n"cases": [\n{cases}\n]}}\n'


if __name__ == "__main__":
    if sys.argv[1:] == ["--check"]:
        sys.exit(0 if TABLE.read_text(encoding="utf-8") == render() else f"{TABLE} is out of date: rerun {__file__}")
    TABLE.write_text(render(), encoding="utf-8")
