"""A distribution's buckets on the wire: every distinct number encoded once gives the bytes of encoding each."""

from __future__ import annotations

import math

import numpy as np
import orjson

from tau_collector.reads.media_rows import HistogramSeries
from tau_collector.taugrid.gojson import encode_float
from taunotebook.portal.wire.media import histograms_json


def _each(steps) -> str:
    """The buckets encoded number by number, as the Portal wrote them before."""
    def number(v: float) -> str:
        return encode_float(v) if math.isfinite(v) else "null"

    return "[" + ",".join("[" + ",".join("[" + ",".join(map(number, row)) + "]" for row in step.tolist()) + "]"
                          for step in steps) + "]"


def test_buckets_encode_to_the_bytes_of_encoding_each_number():
    rng = np.random.default_rng(29)
    edges = np.linspace(-3, 3, 65)
    steps = [np.column_stack([edges[:-1], edges[1:], rng.integers(0, 50, 64).astype(float)]) for _ in range(20)]
    steps.append(np.array([[-math.inf, -0.0, 0.0], [0.0, math.inf, math.nan], [1e-7, 1e21, 123456.789]]))
    steps.append(np.zeros((0, 3)))
    steps.append(rng.normal(size=(5, 3)))
    series = HistogramSeries("w", np.arange(len(steps)), np.zeros(len(steps)), np.zeros((len(steps), 3)), steps,
                             len(steps), False, (5000,))
    text = histograms_json({}, "r", series)["buckets"].text
    assert text == _each(steps)
    assert "[[null,-0,0],[0,null,null],[1e-7,1e+21,123456.789]]" in text  # -0 is not 0, told apart by bits
    decoded = orjson.loads(text)
    assert decoded[21] == [] and len(decoded[0]) == 64


def test_no_buckets_read_is_null():
    series = HistogramSeries("w", np.arange(2), np.zeros(2), np.zeros((2, 3)), None, 2, False, (5000,))
    assert histograms_json({}, "r", series)["buckets"] is None
