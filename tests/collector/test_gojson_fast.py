"""``dumps_fast``: orjson's bytes where they are Go's, ``marshal`` where they would not be."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tau_collector.taugrid.gojson import GoJSONError, GoMap, RawJSON, dumps_fast, go_number, marshal


def _go(value):
    """The value with every float as dumps_fast needs it."""
    if isinstance(value, float):
        return go_number(value)
    if isinstance(value, dict):
        return {k: _go(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_go(v) for v in value]
    return value


finite = st.floats(allow_nan=False, allow_infinity=False)
scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | finite | st.text()
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)


@settings(max_examples=500, deadline=None)
@given(values)
def test_any_value_is_written_as_go_writes_it(value):
    assert dumps_fast(_go(value)) == marshal(value, escape_html=False) + b"\n"


@pytest.mark.parametrize("value", [1.0, -0.0, 0.0, 1e-7, 9.99e-6, 1e-5, 0.1, 1e15 + 0.5, 1e16, 1.5e16, 1e21,
                                   2.0**53, 2.0**53 + 2, 123456789012345678901.0, -3.25, 5e-324, 1.7976931348623157e308])
def test_the_float_edges(value):
    assert dumps_fast([go_number(value)]) == marshal([value]) + b"\n"


def test_strings_go_escapes_and_orjson_does_not_are_escaped():
    text = "a\u2028b\u2029c<&>\x01\x7f\ud800"
    assert dumps_fast({"t": text}) == marshal({"t": text}, escape_html=False) + b"\n"


def test_what_orjson_cannot_write_as_go_goes_to_marshal():
    value = {"map": GoMap(b=1, a=2), "raw": RawJSON('{"x":1}'), "n": go_number(-0.0)}
    assert dumps_fast(value) == b'{"map":{"a":2,"b":1},"raw":{"x":1},"n":-0}\n'


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_are_refused_as_go_refuses_them(value):
    with pytest.raises(GoJSONError, match="unsupported value"):
        go_number(value)
