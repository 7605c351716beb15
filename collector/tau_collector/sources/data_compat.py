"""Old and new summary forms to one: which series a value belongs to, the number a scalar holds, and the
tensors of histograms, images and text as TensorBoard's plugins read them.

A tag's time series is classified by its *first* value in the run (writers put the metadata on
the first event only), by TensorBoard's rules (rustboard ``data_compat.rs``, ``initial_metadata``),
in order of precedence:

1. metadata that sets a data class is authoritative: ``DATA_CLASS_SCALAR`` is a scalar series
   whatever its plugin name (empty included), any other class is not;
2. a ``simple_value`` (tensorboardX, torch, TF1) is a scalar;
3. metadata whose plugin is ``scalars`` (TF2 ``tf.summary.scalar``, ``tensorboard.summary.Writer``)
   is a scalar;
4. anything else is not.

A value of a scalar series is read from ``simple_value``, or from a rank-0 ``tensor``: its number
comes from ``tensor_content`` (little-endian, precedence as in TensorFlow's ``make_ndarray``) or
else from the typed repeated field, which must hold exactly one value:

======  ==========  ==============  =================================================
dtype   name        repeated field  note
======  ==========  ==============  =================================================
1       float       float_val       ``<f``
2       double      double_val      ``<d``
3       int32       int_val         ``<i``
4       uint8       int_val         ``<B``
5       int16       int_val         ``<h``
6       int8        int_val         ``<b``
9       int64       int64_val       ``<q``
10      bool        bool_val        ``<?``, 1.0 or 0.0
14      bfloat16    half_val        uint16 bit pattern = high half of a float32
17      uint16      int_val         ``<H``
19      half        half_val        uint16 bit pattern of an IEEE binary16 (``<e``)
22      uint32      uint32_val      ``<I``
23      uint64      uint64_val      ``<Q``
======  ==========  ==============  =================================================

(rustboard reads float only; TensorBoard's Python reader takes every dtype ``make_ndarray``
knows, as we do.) Other dtypes are ``bad_value`` problems. Images, histograms, audio, text,
tensors of other series and non-rank-0 tensors are not scalars: the scalar path counts them by
:func:`dropped_bucket`.

Histograms, images and text are read as TensorBoard's ``data_compat.py`` migrates them and its plugins
then read the tensor (``make_ndarray``, whose rules :func:`tensor_values` keeps: ``tensor_content``
first, else the typed field, whose one value fills a larger shape):

- a histogram (:func:`histogram_buckets`) is a ``[k, 3]`` tensor of ``(left, right, count)``; an old
  ``histo`` (``HistogramProto``: torch, tensorboardX, TF1) migrates to float32 buckets without its empty
  end buckets, its outer edges ``min`` and ``max``;
- an image event (:func:`image_values`) is a rank-1 string tensor ``[width, height, image…]`` (decimal
  strings, then encoded images, any number); an old ``Summary.Image`` migrates to one image;
- a text event (:func:`text_values`) is a string tensor of any shape, UTF-8.

Nothing a tensor claims sizes an allocation: its shape, repeated fields and old-style buckets are
counted against ``max_values`` before any value is read (:class:`ValueError` beyond it).
"""

from __future__ import annotations

import re
import struct

import numpy as np
from google.protobuf.message import DecodeError

from tau_collector.sources.protobuf_wire import fields
from tau_collector.sources.tensorboard_proto.event_pb2 import HistogramProto, SummaryImage

__all__ = [
    "DATA_CLASS_SCALAR",
    "HISTOGRAMS",
    "IMAGES",
    "SCALARS",
    "TEXT",
    "dropped_bucket",
    "histogram_buckets",
    "image_values",
    "series_kind",
    "tensor_scalar",
    "tensor_values",
    "text_values",
    "varint_value",
]

SCALARS = "scalars"
HISTOGRAMS = "histograms"
IMAGES = "images"
TEXT = "text"
DATA_CLASS_UNKNOWN = 0
DATA_CLASS_SCALAR = 1

# A tensor value's plugin -> the ``dropped`` bucket it is counted in; any other plugin is "tensor".
_DROPPED_PLUGIN = {IMAGES: "image", HISTOGRAMS: "histogram", "audio": "audio", TEXT: "text"}
# Old-style values TensorBoard migrates to tensors of a plugin; the plugin their tag gets in the run.
_MIGRATED_PLUGIN = {"simple_value": SCALARS, "histo": HISTOGRAMS, "image": IMAGES, "audio": "audio"}
_DROPPED_KIND = {"histo": "histogram", "obsolete_old_style_histogram": "histogram", "image": "image",
                 "audio": "audio"}
# A data class other than scalar on a series TensorBoard would otherwise call scalars.
_NOT_SCALAR = "tensor"


def series_kind(value, kind: str | None) -> str:
    """What a tag's first value makes its series: ``"scalars"``, or another plugin name (the bucket
    its values are dropped in; ``""`` when the value names none)."""
    if value.HasField("metadata"):
        metadata = value.metadata
        if metadata.data_class != DATA_CLASS_UNKNOWN:
            if metadata.data_class == DATA_CLASS_SCALAR:
                return SCALARS
            plugin = metadata.plugin_data.plugin_name
            return _NOT_SCALAR if plugin == SCALARS else plugin
        if kind != "simple_value":
            return metadata.plugin_data.plugin_name
    return _MIGRATED_PLUGIN.get(kind, "") if kind is not None else ""


def dropped_bucket(kind: str, plugin: str) -> str:
    """The ``dropped`` count a non-scalar value adds to."""
    if kind == "tensor":
        return _DROPPED_PLUGIN.get(plugin, "tensor")
    return _DROPPED_KIND.get(kind, kind)


_DT_BFLOAT16 = 14
_DT_HALF = 19
# dtype -> (repeated field, little-endian struct format of one element in tensor_content)
_DTYPES: dict[int, tuple[str, str]] = {
    1: ("float_val", "<f"),
    2: ("double_val", "<d"),
    3: ("int_val", "<i"),
    4: ("int_val", "<B"),
    5: ("int_val", "<h"),
    6: ("int_val", "<b"),
    9: ("int64_val", "<q"),
    10: ("bool_val", "<?"),
    _DT_BFLOAT16: ("half_val", "<H"),
    17: ("int_val", "<H"),
    _DT_HALF: ("half_val", "<H"),
    22: ("uint32_val", "<I"),
    23: ("uint64_val", "<Q"),
}
_FLOAT32 = struct.Struct("<f")
_HALF = struct.Struct("<e")


def _from_half_bits(dtype: int, bits: int) -> float:
    bits &= 0xFFFF
    if dtype == _DT_BFLOAT16:
        # bfloat16 is the high 16 bits of a float32.
        return _FLOAT32.unpack((bits << 16).to_bytes(4, "little"))[0]
    return _HALF.unpack(bits.to_bytes(2, "little"))[0]


def tensor_scalar(tensor) -> float:
    """The number in a rank-0 tensor; ValueError says why there is none."""
    dtype = tensor.dtype
    spec = _DTYPES.get(dtype)
    if spec is None:
        raise ValueError(f"dtype {dtype} is not a float, int or bool dtype")
    repeated, fmt = spec
    content = tensor.tensor_content
    if content:
        size = struct.calcsize(fmt)
        if len(content) != size:
            raise ValueError(f"tensor_content has {len(content)} bytes, a dtype-{dtype} scalar has {size}")
        number = struct.unpack(fmt, content)[0]
    else:
        values = getattr(tensor, repeated)
        if len(values) != 1:
            raise ValueError(f"{repeated} holds {len(values)} values for a rank-0 tensor")
        number = values[0]
    if repeated == "half_val":
        return _from_half_bits(dtype, int(number))
    return float(number)


_DT_STRING = 7
_MAX_RANK = 64  # TensorFlow's own limit is 254; no summary comes near either
_DIMENSION = re.compile(rb"-?[0-9]{1,19}")  # an image's width or height: an int64 in decimal


def _histogram_buckets_claimed(data: bytes) -> int:
    """How many buckets a ``HistogramProto`` holds (the longer of ``bucket`` and ``bucket_limit``), counted from
    the wire format, packed or not, without reading them. :class:`ValueError` for a message not well formed."""
    counts = {6: 0, 7: 0}  # bucket_limit, bucket
    for number, wire, field in fields(memoryview(data)):
        if number in counts:
            counts[number] += len(field) // 8 if wire == 2 else 1
    return max(counts.values())


def _parse(message, data: bytes, max_values: int):
    """The ``HistogramProto`` or ``SummaryImage`` in a value's bytes; :class:`ValueError` says why there is none.
    A histogram's buckets are counted against ``max_values`` (three values a bucket) before it is parsed."""
    try:
        # A bucket takes eight bytes at least: a message too short to hold more than the limit is not counted.
        if message is HistogramProto and 3 * (len(data) // 8) > max_values:
            buckets = _histogram_buckets_claimed(data)
            if 3 * buckets > max_values:
                raise ValueError(f"histogram holds {buckets} buckets, over the limit of {max_values // 3} "
                                 "(--max-tensor-values counts three values a bucket)")
        return message.FromString(data)
    except DecodeError as exc:
        raise ValueError(f"not a {message.__name__} ({exc})") from None


def _shape(tensor, max_values: int) -> tuple[tuple[int, ...], int]:
    """A tensor's shape and number of elements, refused past ``max_values`` before anything is read."""
    dims = tensor.tensor_shape.dim
    if len(dims) > _MAX_RANK:
        raise ValueError(f"tensor has rank {len(dims)}, over {_MAX_RANK}")
    shape = tuple(dim.size for dim in dims)
    count = 1
    for size in shape:
        if size < 0:
            raise ValueError(f"tensor shape {list(shape)} has an unknown (negative) dimension")
        count *= size
    if count > max_values:
        raise ValueError(f"tensor shape {list(shape)} holds {count} values, over the limit of {max_values} "
                         "(--max-tensor-values)")
    return shape, count


def _numbers(tensor, count: int, max_values: int) -> np.ndarray:
    """The ``count`` numbers of a numeric tensor as float64, in row-major order (``make_ndarray``'s rules)."""
    dtype = tensor.dtype
    spec = _DTYPES.get(dtype)
    if spec is None:
        raise ValueError(f"dtype {dtype} is not a float, int or bool dtype")
    repeated, fmt = spec
    half = repeated == "half_val"
    content = tensor.tensor_content
    if content:
        size = struct.calcsize(fmt)
        if len(content) != count * size:
            raise ValueError(f"tensor_content has {len(content)} bytes, {count} dtype-{dtype} values take "
                             f"{count * size}")
        raw = np.frombuffer(content, dtype=np.dtype(fmt))
    else:
        field = getattr(tensor, repeated)
        held = len(field)
        if held > max_values:
            raise ValueError(f"{repeated} holds {held} values, over the limit of {max_values} (--max-tensor-values)")
        if held != count and held != 1:
            raise ValueError(f"{repeated} holds {held} values for a tensor of {count}")
        raw = np.fromiter(field, dtype=np.uint16 if half else np.dtype(fmt), count=held)
        if held == 1 and count != 1:
            raw = np.repeat(raw, count)  # make_ndarray fills the shape with a lone value (count <= max_values)
    if half:
        bits = raw.astype(np.uint16)
        if dtype == _DT_BFLOAT16:
            return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        return bits.view(np.float16).astype(np.float64)
    return raw.astype(np.float64)


def _strings(tensor, count: int, max_values: int) -> list[bytes]:
    """The ``count`` strings of a string tensor in row-major order (``make_ndarray``'s rules)."""
    if tensor.dtype != _DT_STRING:
        raise ValueError(f"dtype {tensor.dtype} is not the string dtype ({_DT_STRING})")
    field = tensor.string_val
    held = len(field)
    if held > max_values:
        raise ValueError(f"string_val holds {held} strings, over the limit of {max_values} (--max-tensor-values)")
    if held == 1 and count != 1:
        return [field[0]] * count  # one object, ``count`` references (count <= max_values)
    if held != count:
        raise ValueError(f"string_val holds {held} strings for a tensor of {count}")
    return list(field)


def tensor_values(tensor, max_values: int) -> tuple[tuple[int, ...], np.ndarray | list[bytes]]:
    """A tensor's shape and its values in row-major order: float64 numbers, or ``bytes`` for a string tensor.

    :class:`ValueError` says why there are none (a shape or field over ``max_values``, values that do not
    fill the shape, an unknown dtype)."""
    shape, count = _shape(tensor, max_values)
    if tensor.dtype == _DT_STRING:
        return shape, _strings(tensor, count, max_values)
    return shape, _numbers(tensor, count, max_values)


def histogram_buckets(value, kind: str, max_values: int) -> np.ndarray:
    """A histogram value's ``[k, 3]`` float64 buckets ``(left, right, count)``, exactly the numbers
    TensorBoard's histograms plugin reads (an old ``histo``'s are float32, as its migration makes them)."""
    if kind == "histo":
        data = value.histo
        parsed = _histogram_wire(data)
        if parsed is None:  # a layout the wire reader does not take: protobuf reads it (and says what is wrong)
            histo = _parse(HistogramProto, data, max_values)
            low, high = histo.min, histo.max
            counts = np.fromiter(histo.bucket, dtype=np.float64, count=len(histo.bucket))
            limits = np.fromiter(histo.bucket_limit, dtype=np.float64, count=len(histo.bucket_limit))
        else:
            low, high, limits, counts = parsed
            if 3 * max(len(limits), len(counts)) > max_values:
                raise ValueError(f"histogram holds {max(len(limits), len(counts))} buckets, over the limit of "
                                 f"{max_values // 3} (--max-tensor-values counts three values a bucket)")
        n = len(counts)
        filled = (counts > 0).nonzero()[0]  # flatnonzero's answer without its two Python calls
        if not filled.size:
            return np.zeros((0, 3), dtype=np.float64)
        start, end = int(filled[0]), int(filled[-1])
        if len(limits) < end:
            raise ValueError(f"histogram has {n} buckets but only {len(limits)} bucket limits")
        inner = limits[start:end]
        # Through float32, as the migration makes them: each double cast on assignment (as astype casts it).
        buckets = np.empty((end - start + 1, 3), dtype=np.float32)
        buckets[0, 0] = low
        buckets[1:, 0] = inner
        buckets[:-1, 1] = inner
        buckets[-1, 1] = high
        buckets[:, 2] = counts[start:end + 1]
        return buckets.astype(np.float64)
    shape, values = tensor_values(value.tensor, max_values)
    if len(shape) != 2 or shape[1] != 3:
        raise ValueError(f"a histogram tensor has shape [k, 3], this one {list(shape)}")
    if isinstance(values, list):
        raise ValueError("a histogram tensor holds numbers, this one strings")
    return values.reshape(shape)


_DOUBLE = struct.Struct("<d")
_HISTO_SINGULAR = {0x09: 0, 0x11: 1}  # min, max (fixed64); num, sum, sum_squares (0x19, 0x21, 0x29) are not read
_HISTO_SKIPPED = frozenset((0x19, 0x21, 0x29))
_HISTO_PACKED = {0x32: 0, 0x3A: 1}  # bucket_limit, bucket (packed doubles)
_HISTO_UNPACKED = {0x31: 0, 0x39: 1}  # the same, one double a field


def canonical_histogram(data: bytes | memoryview) -> tuple[float, float, int, int, int, int] | None:
    """A ``HistogramProto`` in the layout writers give it -- each field once, in field order, both repeated fields
    packed -- as (min, max, bucket_limit's offset and count, bucket's offset and count); None for any other
    (:func:`_histogram_wire` then reads it field by field)."""
    canonical = _HISTO_CANONICAL.match(data)
    if canonical is None:
        return None
    low, high, varint = canonical.groups()
    limits_at = canonical.end()
    limits_size = varint_value(varint)
    counts = _HISTO_COUNTS.match(data, limits_at + limits_size)
    if counts is None or limits_size % 8:
        return None
    counts_at = counts.end()
    counts_size = varint_value(counts.group(1))
    if counts_at + counts_size != len(data) or counts_size % 8:
        return None
    return (_DOUBLE.unpack(low)[0] if low is not None else 0.0, _DOUBLE.unpack(high)[0] if high is not None else 0.0,
            limits_at, limits_size // 8, counts_at, counts_size // 8)


def _histogram_wire(data: bytes) -> tuple[float, float, np.ndarray, np.ndarray] | None:
    """A ``HistogramProto``'s (min, max, bucket_limit, bucket) read from its wire format as protobuf reads them
    (the last of a repeated singular field wins, repeated fields' packed and unpacked pieces join in order),
    with the doubles as views of ``data``: the reading a histogram takes without an object per bucket. None
    for anything else (another field, a length past the end, a packed field
    not of whole doubles): protobuf then reads it, or says why it cannot."""
    layout = canonical_histogram(data)
    if layout is not None:
        low, high, limits_at, limits_n, counts_at, counts_n = layout
        return (low, high, np.frombuffer(data, dtype="<f8", count=limits_n, offset=limits_at),
                np.frombuffer(data, dtype="<f8", count=counts_n, offset=counts_at))
    singular = [0.0, 0.0]
    pieces: tuple[list, list] = ([], [])
    pos, end = 0, len(data)
    unpack = _DOUBLE.unpack_from
    while pos < end:
        key = data[pos]
        pos += 1
        if key in _HISTO_PACKED:
            if pos >= end:
                return None
            length = shift = 0
            while True:  # the length's varint (at most four bytes: 256 MiB)
                if pos >= end or shift > 21:
                    return None
                byte = data[pos]
                pos += 1
                length |= (byte & 0x7F) << shift
                shift += 7
                if byte < 0x80:
                    break
            if length % 8 or pos + length > end:
                return None
            pieces[_HISTO_PACKED[key]].append((pos, length // 8))
            pos += length
        elif pos + 8 > end:
            return None
        elif key in _HISTO_SINGULAR:
            singular[_HISTO_SINGULAR[key]] = unpack(data, pos)[0]
            pos += 8
        elif key in _HISTO_SKIPPED:
            pos += 8
        elif key in _HISTO_UNPACKED:
            pieces[_HISTO_UNPACKED[key]].append((pos, 1))
            pos += 8
        else:
            return None
    limits, counts = (_doubles(data, found) for found in pieces)
    return singular[0], singular[1], limits, counts


# min, max, num, sum, sum_squares (each optional: proto3 leaves out a zero), then bucket_limit's packed doubles and
# bucket's, each with a varint length of at most four bytes; the limits' bytes are matched by length after.
_HISTO_CANONICAL = re.compile(rb"(?:\x09(.{8}))?(?:\x11(.{8}))?(?:\x19.{8})?(?:\x21.{8})?(?:\x29.{8})?"
                              rb"\x32([\x80-\xff]{0,3}[\x00-\x7f])", re.S)
_HISTO_COUNTS = re.compile(rb"\x3a([\x80-\xff]{0,3}[\x00-\x7f])")


def varint_value(varint: bytes) -> int:
    """A protobuf varint's value (its bytes, as matched)."""
    size = shift = 0
    for byte in varint:
        size |= (byte & 0x7F) << shift
        shift += 7
    return size


def _doubles(data: bytes, pieces: list[tuple[int, int]]) -> np.ndarray:
    if len(pieces) == 1:
        start, count = pieces[0]
        return np.frombuffer(data, dtype="<f8", count=count, offset=start)
    if not pieces:
        return np.zeros(0, dtype=np.float64)
    return np.concatenate([np.frombuffer(data, dtype="<f8", count=c, offset=s) for s, c in pieces])


def _dimension(text: bytes, what: str) -> int:
    if _DIMENSION.fullmatch(text) is None:
        raise ValueError(f"the image {what} {text[:40]!r} is not a decimal integer")
    return int(text)


def image_values(value, kind: str, max_values: int) -> tuple[int, int, list[bytes]]:
    """An image value's width, height and encoded images (any number: ``tf.summary.image`` writes up to
    ``max_outputs`` of a batch in one value; an old ``Summary.Image`` holds one)."""
    if kind == "image":
        image = _parse(SummaryImage, value.image, max_values)
        return image.width, image.height, [image.encoded_image_string]
    shape, values = tensor_values(value.tensor, max_values)
    if not isinstance(values, list):
        raise ValueError(f"an image tensor holds strings, this one dtype {value.tensor.dtype}")
    if len(shape) != 1 or shape[0] < 2:
        raise ValueError(f"an image tensor has shape [2 + images] (width, height, images), this one {list(shape)}")
    return _dimension(values[0], "width"), _dimension(values[1], "height"), values[2:]


def text_values(value, max_values: int) -> tuple[tuple[int, ...], list[str]]:
    """A text value's shape and its strings in row-major order (invalid UTF-8 replaced by U+FFFD)."""
    shape, values = tensor_values(value.tensor, max_values)
    if not isinstance(values, list):
        raise ValueError(f"a text tensor holds strings, this one dtype {value.tensor.dtype}")
    decoded: dict[bytes, str] = {}  # a lone string filling a shape is decoded once
    return shape, [decoded[raw] if raw in decoded else decoded.setdefault(raw, raw.decode("utf-8", errors="replace"))
                   for raw in values]
