"""Go's encoding/json output, reproduced: floats, strings, times."""

import math

import pytest

from tau_collector.taugrid.gojson import (
    MAX_TIME_NS,
    MIN_TIME_NS,
    GoJSONError,
    decode_go_utf8,
    encode_float,
    encode_string,
    encode_string_map,
    format_time,
    parse_time,
    unix_seconds_to_ns,
)

# (value, what Go's json.Marshal writes) — the ES6 number-to-string rule.
FLOATS = [
    (42.0, "42"),
    (0.125, "0.125"),
    (1e-7, "1e-7"),
    (1.5e-7, "1.5e-7"),
    (1e21, "1e+21"),
    (1.5e300, "1.5e+300"),
    (1e20, "100000000000000000000"),
    (123456789012345680.0, "123456789012345680"),
    (-0.0, "-0"),
    (0.0, "0"),
    (5e-324, "5e-324"),
    (1.7976931348623157e308, "1.7976931348623157e+308"),
    (0.000001, "0.000001"),
    (0.0000012345, "0.0000012345"),
    (9.99999e-7, "9.99999e-7"),
    (-2.5e-5, "-0.000025"),
    (1e16, "10000000000000000"),
    (999999999999999900000.0, "999999999999999900000"),
    (0.1 + 0.2, "0.30000000000000004"),
    (-1.0, "-1"),
    (float(2**53), "9007199254740992"),
]


@pytest.mark.parametrize(("value", "expected"), FLOATS)
def test_float_encoding_matches_go(value, expected):
    assert encode_float(value) == expected


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_floats_are_refused_like_go(value):
    with pytest.raises(GoJSONError, match="unsupported value"):
        encode_float(value)


@pytest.mark.parametrize(
    ("ns", "expected"),
    [
        (0, "1970-01-01T00:00:00Z"),
        (1, "1970-01-01T00:00:00.000000001Z"),
        (-1, "1969-12-31T23:59:59.999999999Z"),
        (1_790_274_612_250_000_000, "2026-09-24T18:30:12.25Z"),
        (1_789_842_612_123_456_789, "2026-09-19T18:30:12.123456789Z"),
        (1_789_842_612_120_000_000, "2026-09-19T18:30:12.12Z"),
        (951_782_400 * 10**9, "2000-02-29T00:00:00Z"),
        (MIN_TIME_NS, "0000-01-01T00:00:00Z"),
        (MAX_TIME_NS, "9999-12-31T23:59:59.999999999Z"),
    ],
)
def test_time_encoding_is_rfc3339nano_utc_with_trimmed_fraction(ns, expected):
    assert format_time(ns) == expected
    assert parse_time(expected) == ns


@pytest.mark.parametrize("ns", [MIN_TIME_NS - 1, MAX_TIME_NS + 1])
def test_times_outside_years_0_to_9999_are_refused_with_gos_message(ns):
    with pytest.raises(GoJSONError, match=r"year outside of range \[0,9999\]"):
        format_time(ns)


def test_time_parsing_converts_offsets_to_utc_and_keeps_nanoseconds():
    assert format_time(parse_time("2026-09-18T20:30:12.123456789+02:00")) == "2026-09-18T18:30:12.123456789Z"
    assert format_time(parse_time("2026-09-18T18:30:12-00:30")) == "2026-09-18T19:00:12Z"


@pytest.mark.parametrize("text", ["2026-09-18", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z", "yesterday"])
def test_bad_times_are_refused(text):
    with pytest.raises(GoJSONError, match="parsing time"):
        parse_time(text)


def test_history_seconds_are_truncated_to_microseconds_like_time_unix_micro():
    assert unix_seconds_to_ns(1790274612.25) == 1_790_274_612_250_000_000
    assert unix_seconds_to_ns(1.0000009) == 1_000_000_000
    assert unix_seconds_to_ns(-1.5) == -1_500_000_000


@pytest.mark.parametrize(
    ("text", "plain", "html"),
    [
        ("plain", '"plain"', '"plain"'),
        ("<ok> & done", '"<ok> & done"', '"\\u003cok\\u003e \\u0026 done"'),
        ('q"b\\s', '"q\\"b\\\\s"', '"q\\"b\\\\s"'),
        ("\n\r\t\b\f", '"\\n\\r\\t\\b\\f"', '"\\n\\r\\t\\b\\f"'),
        ("\x00\x01\x1f\x7f", '"\\u0000\\u0001\\u001f\x7f"', '"\\u0000\\u0001\\u001f\x7f"'),
        ("a\u2028b\u2029c", '"a\\u2028b\\u2029c"', '"a\\u2028b\\u2029c"'),
        ("héllo ✓ 𝄞", '"héllo ✓ 𝄞"', '"héllo ✓ 𝄞"'),
        ("lone \ud800", '"lone \\ufffd"', '"lone \\ufffd"'),
    ],
)
def test_string_escaping_matches_go(text, plain, html):
    assert encode_string(text) == plain
    assert encode_string(text, escape_html=True) == html


def test_maps_are_encoded_with_keys_sorted_bytewise():
    assert encode_string_map({"zebra": "1", "Alpha": "2", "alpha": "3", "é": "4"}) == (
        '{"Alpha":"2","alpha":"3","zebra":"1","é":"4"}'
    )


def test_invalid_utf8_decodes_to_one_replacement_per_byte_like_go():
    assert decode_go_utf8(b"ok\xe2\x82x\xff") == "ok\ufffd\ufffdx\ufffd"
