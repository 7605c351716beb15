"""Byte-exact reproduction of Go's ``encoding/json`` output for the values TauGrid encodes.

TauGrid's MetricEvent identity and canonical NDJSON are produced by Go, so a Python writer
must match its float formatting (ES6 shortest form), string escaping (optional HTML escaping,
U+2028/2029 always escaped, invalid UTF-8 replaced) and RFC3339Nano times to the byte.
"""

from __future__ import annotations

import base64
import codecs
import math
import re
from collections.abc import Callable
from functools import lru_cache

import orjson

__all__ = [
    "GoJSONError",
    "encode_float",
    "encode_string",
    "encode_string_map",
    "format_time",
    "parse_time",
    "MIN_TIME_NS",
    "MAX_TIME_NS",
    "ZERO_TIME_NS",
    "GoMap",
    "RawJSON",
    "decode_go_utf8",
    "dumps_fast",
    "go_number",
    "go_quote",
    "marshal",
    "unix_seconds_to_ns",
]


class GoJSONError(ValueError):
    """A value that Go's encoder would refuse (NaN, ±Inf, a time outside years 0..9999)."""


# ---------------------------------------------------------------------------------------
# float64: strconv.AppendFloat(f, 'f' or 'e', -1, 64) as chosen by encoding/json's floatEncoder


def encode_float(value: float) -> str:
    """Encode a float64 exactly as Go's ``json.Marshal`` does (ES6 number-to-string)."""
    text = repr(value)  # shortest round-trip digits, the same digits Go's shortest mode picks
    if "e" not in text and text[-1] != "n" and text[-1] != "f":
        # repr is positional only for 1e-4 <= |v| < 1e16, inside Go's positional range.
        if text.endswith(".0"):
            return text[:-2]
        return text
    if value != value or value in (math.inf, -math.inf):
        raise GoJSONError(f"json: unsupported value: {value!r}")
    magnitude = abs(value)
    if magnitude < 1e-6 or magnitude >= 1e21:
        return _exponent_form(text)
    if magnitude < 1e-4:
        # repr wrote "[-]D[.DDD]e-0N" (N = 5 or 6) with no trailing zeros: Go writes it positionally.
        mantissa, _, exponent = text.partition("e")
        sign = "-" if mantissa[0] == "-" else ""
        return f"{sign}0.{'0' * (-int(exponent) - 1)}{mantissa.lstrip('-').replace('.', '')}"
    return _plain_form(text)


def _split_repr(text: str) -> tuple[str, str, int]:
    """Split a Python float repr into (sign, digits without leading zeros, decimal exponent).

    The value equals ``sign 0.DIGITS × 10**exponent``.
    """
    sign = ""
    if text[0] == "-":
        sign, text = "-", text[1:]
    exp = 0
    if "e" in text:
        text, exp_text = text.split("e")
        exp = int(exp_text)
    if "." in text:
        whole, frac = text.split(".")
    else:
        whole, frac = text, ""
    digits = (whole + frac).lstrip("0")
    # position of the decimal point relative to the start of `whole + frac`
    point = len(whole) + exp
    leading_zeros = len(whole + frac) - len((whole + frac).lstrip("0"))
    point -= leading_zeros
    digits = digits.rstrip("0") or "0"
    return sign, digits, point


def _exponent_form(text: str) -> str:
    sign, digits, point = _split_repr(text)
    exponent = point - 1
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    exp_sign = "-" if exponent < 0 else "+"
    # Go pads the exponent to two digits ("e-07") and encoding/json then strips the pad for
    # negative exponents only; positive exponents here are always >= 21.
    return f"{sign}{mantissa}e{exp_sign}{abs(exponent)}"


def _plain_form(text: str) -> str:
    sign, digits, point = _split_repr(text)
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{sign}{digits}{'0' * (point - len(digits))}"
    return f"{sign}{digits[:point]}.{digits[point:]}"


# ---------------------------------------------------------------------------------------
# strings: encodeState.string with or without HTML escaping

_HEX = "0123456789abcdef"
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_char(ch: str) -> str:
    short = _SHORT_ESCAPES.get(ch)
    if short is not None:
        return short
    code = ord(ch)
    if 0xD800 <= code <= 0xDFFF:  # a lone surrogate is not valid UTF-8: Go writes U+FFFD
        return "\\ufffd"
    return "\\u" + _HEX[code >> 12] + _HEX[(code >> 8) & 0xF] + _HEX[(code >> 4) & 0xF] + _HEX[code & 0xF]


# Characters that need escaping: quote, backslash, C0 controls, U+2028/2029, lone surrogates.
_NEEDS_ESCAPE = re.compile('["\\\\\x00-\x1f\u2028\u2029\ud800-\udfff]')
_NEEDS_ESCAPE_HTML = re.compile('["\\\\\x00-\x1f<>&\u2028\u2029\ud800-\udfff]')


def _escape_match(match: re.Match[str]) -> str:
    return _escape_char(match.group())


# The repeated vocabulary (metric names, ids, tag keys and values) fits a few thousand entries; a
# long-running collector also meets an endless stream of distinct strings (line numbers, paths), and a
# larger cache only held ~25 MB of those (measured at 65,536 entries each) without being faster.
@lru_cache(maxsize=4096)
def _encode_plain(value: str) -> str:
    return '"' + _NEEDS_ESCAPE.sub(_escape_match, value) + '"'


@lru_cache(maxsize=4096)
def _encode_html(value: str) -> str:
    return '"' + _NEEDS_ESCAPE_HTML.sub(_escape_match, value) + '"'


def encode_string(value: str, *, escape_html: bool = False) -> str:
    """Encode a string as Go's encoder does; ``escape_html`` mirrors ``SetEscapeHTML``."""
    return _encode_html(value) if escape_html else _encode_plain(value)


def encode_string_map(mapping: dict[str, str], *, escape_html: bool = False) -> str:
    """Encode a ``map[string]string``: keys sorted bytewise, compact."""
    enc = _encode_html if escape_html else _encode_plain
    # Code-point order equals UTF-8 byte order for valid strings.
    return "{" + ",".join(enc(k) + ":" + enc(mapping[k]) for k in sorted(mapping)) + "}"


def decode_go_utf8(raw: bytes) -> str:
    """Decode bytes as Go does: every byte of an invalid sequence becomes U+FFFD."""
    return raw.decode("utf-8", errors="tau-go-replace")


def _go_replace(error: UnicodeError) -> tuple[str, int]:
    assert isinstance(error, UnicodeDecodeError)
    return "\ufffd", error.start + 1


codecs.register_error("tau-go-replace", _go_replace)


# ---------------------------------------------------------------------------------------
# time.Time as RFC3339Nano, held as integer nanoseconds since the Unix epoch (UTC)

_NS = 1_000_000_000
# Go's time.Time.MarshalJSON accepts years 0..9999 only.
MIN_TIME_NS = -62_167_219_200 * _NS  # 0000-01-01T00:00:00Z
MAX_TIME_NS = 253_402_300_800 * _NS - 1  # 9999-12-31T23:59:59.999999999Z
ZERO_TIME_NS = -62_135_596_800 * _NS  # Go's zero time.Time, 0001-01-01T00:00:00Z


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """Proleptic Gregorian (year, month, day) from days since 1970-01-01 (Hinnant's algorithm)."""
    days += 719_468
    era = days // 146_097
    doe = days - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    year = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return (year + 1 if month <= 2 else year), month, day


def _days_from_civil(year: int, month: int, day: int) -> int:
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    mp = month - 3 if month > 2 else month + 9
    doy = (153 * mp + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146_097 + doe - 719_468


@lru_cache(maxsize=4096)
def format_date_second(seconds: int) -> str:
    days, secs = divmod(seconds, 86_400)
    year, month, day = _civil_from_days(days)
    hour, rem = divmod(secs, 3600)
    minute, second = divmod(rem, 60)
    return f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}"


def format_time(ns: int) -> str:
    """RFC3339Nano in UTC as Go's ``time.Time.MarshalJSON`` writes it (without quotes)."""
    if ns < MIN_TIME_NS or ns > MAX_TIME_NS:
        raise GoJSONError("Time.MarshalJSON: year outside of range [0,9999]")
    seconds, frac = divmod(ns, _NS)
    text = format_date_second(seconds)
    if frac:
        text += "." + f"{frac:09d}".rstrip("0")
    return text + "Z"


_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))\Z"
)


def parse_time(text: str) -> int:
    """Parse an RFC3339 / RFC3339Nano timestamp into UTC nanoseconds since the epoch.

    Accepts any offset (the result is converted to UTC) and up to nine fraction digits.
    """
    match = _RFC3339.match(text)
    if match is None:
        raise GoJSONError(f"parsing time {text!r} as RFC3339: cannot parse")
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    if not (1 <= month <= 12):
        raise GoJSONError(f"parsing time {text!r}: month out of range")
    days_in_month = [31, 29 if (year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)) else 28,
                     31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
    if not (1 <= day <= days_in_month):
        raise GoJSONError(f"parsing time {text!r}: day out of range")
    if hour > 23 or minute > 59 or second > 59:
        raise GoJSONError(f"parsing time {text!r}: time out of range")
    frac = match.group(7) or ""
    ns = int(frac.ljust(9, "0")) if frac else 0
    offset = 0
    if match.group(9):
        oh, om = int(match.group(10)), int(match.group(11))
        if oh > 23 or om > 59:
            raise GoJSONError(f"parsing time {text!r}: time zone offset out of range")
        offset = (oh * 3600 + om * 60) * (1 if match.group(9) == "+" else -1)
    seconds = _days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset
    return seconds * _NS + ns


def unix_seconds_to_ns(seconds: float) -> int:
    """TauGrid's history time rule: ``time.UnixMicro(int64(seconds * 1e6))`` as nanoseconds."""
    return int(seconds * 1_000_000) * 1000


# ---------------------------------------------------------------------------------------
# json.Marshal / json.MarshalIndent of the structs and maps TauGrid writes to disk


class GoMap(dict):
    """A ``map[string]T``: encoded with its keys sorted, unlike a struct (a plain ``dict``)."""


class RawJSON:
    """Already-encoded JSON spliced in as is (``json.RawMessage``), e.g. points encoded in bulk."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def marshal(value: object, *, indent: str | None = None, depth: int = 0, escape_html: bool = True) -> bytes:
    """``json.Marshal`` (``indent=None``) or ``json.MarshalIndent(v, "", indent)``.

    Plain dicts are structs (their order is the field order); :class:`GoMap` are maps; ``bytes``
    are base64 like ``[]byte``; strings are HTML-escaped as Marshal does by default. ``depth``
    encodes a value nested that deep in an indented document; ``escape_html=False`` is an
    ``Encoder`` with ``SetEscapeHTML(false)`` (what TauGrid's HTTP handlers write).
    """
    out: list[str] = []
    _marshal_into(value, out, indent, depth, _encode_html if escape_html else _encode_plain)
    return "".join(out).encode("utf-8")


def _marshal_into(value: object, out: list[str], indent: str | None, depth: int,
                  string: Callable[[str], str]) -> None:
    if isinstance(value, str):
        out.append(string(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        out.append(encode_float(value))
    elif isinstance(value, RawJSON):
        out.append(value.text)
    elif isinstance(value, (bytes, bytearray, memoryview)):
        out.append('"' + base64.b64encode(bytes(value)).decode("ascii") + '"')
    elif isinstance(value, dict):
        items = sorted(value.items()) if isinstance(value, GoMap) else list(value.items())
        if not items:
            out.append("{}")
            return
        out.append("{")
        for index, (key, item) in enumerate(items):
            if index:
                out.append(",")
            if indent is not None:
                out.append("\n" + indent * (depth + 1))
            out.append(string(key))
            out.append(": " if indent is not None else ":")
            _marshal_into(item, out, indent, depth + 1, string)
        if indent is not None:
            out.append("\n" + indent * depth)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[]")
            return
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            if indent is not None:
                out.append("\n" + indent * (depth + 1))
            _marshal_into(item, out, indent, depth + 1, string)
        if indent is not None:
            out.append("\n" + indent * depth)
        out.append("]")
    else:
        raise TypeError(f"cannot marshal {type(value).__name__}")


# ---------------------------------------------------------------------------------------
# The same bytes from orjson (C) where they agree: large answers (the runs table) without Python per value


class _GoSpelled(float):
    """A float whose Go spelling orjson does not write: it sends the whole value to :func:`marshal`."""


_INT_EXACT = 2.0**53


def go_number(value: float) -> int | float:
    """``value`` as :func:`dumps_fast` must receive it to write Go's spelling: an int for a whole number
    (Go writes ``1``, orjson ``1.0``), the float itself where orjson's digits are Go's (non-whole, 1e-5 to 1e16,
    measured), else a marker that makes :func:`dumps_fast` use :func:`marshal`. Non-finite: Go's error."""
    if value != value or value in (math.inf, -math.inf):
        raise GoJSONError(f"json: unsupported value: {value!r}")
    magnitude = abs(value)
    if value.is_integer():
        if magnitude < _INT_EXACT and (value != 0 or math.copysign(1.0, value) > 0):
            return int(value)
        return _GoSpelled(value)  # -0 and whole numbers past 2^53 (Go writes shortest digits, then zeros)
    if 1e-5 <= magnitude < 1e16:
        return value
    return _GoSpelled(value)


def _refuse(value: object) -> object:
    raise TypeError(type(value).__name__)


def dumps_fast(value: object) -> bytes:
    """``marshal(value, escape_html=False) + b"\\n"`` (Go's ``json.Encoder`` with ``SetEscapeHTML(false)``),
    written by orjson when it writes the same bytes.

    Every float in ``value`` must have passed :func:`go_number` (orjson spells the rest otherwise). Anything
    orjson does not write as Go does -- :class:`GoMap` (sorted keys), :class:`RawJSON`, subclasses, lone
    surrogates, floats :func:`go_number` marked -- sends the whole value to :func:`marshal`; U+2028/2029,
    which Go always escapes, are escaped in orjson's output (they only occur inside strings).
    """
    try:
        out = orjson.dumps(value, default=_refuse,
                           option=orjson.OPT_APPEND_NEWLINE | orjson.OPT_PASSTHROUGH_SUBCLASS)
    except orjson.JSONEncodeError:
        return marshal(value, escape_html=False) + b"\n"
    if b"\xe2\x80\xa8" in out or b"\xe2\x80\xa9" in out:
        out = out.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
    return out


def go_quote(value: str) -> str:
    """Go's ``strconv.Quote`` (``%q``): printable characters kept, the rest escaped as Go escapes them."""
    out = ['"']
    for ch in value:
        code = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch.isprintable() and not 0xD800 <= code <= 0xDFFF:
            out.append(ch)
        elif ch in "\a\b\f\n\r\t\v":
            out.append({"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
                        "\v": "\\v"}[ch])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif 0xD800 <= code <= 0xDFFF:
            out.append("\\ufffd")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)
