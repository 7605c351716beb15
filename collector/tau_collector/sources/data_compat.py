"""Old and new summary forms to one scalar: which values are scalars, and the number each holds.

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
tensors of other series and non-rank-0 tensors are dropped and counted by :func:`dropped_bucket`.
"""

from __future__ import annotations

import struct

__all__ = ["DATA_CLASS_SCALAR", "SCALARS", "dropped_bucket", "series_kind", "tensor_scalar"]

SCALARS = "scalars"
DATA_CLASS_UNKNOWN = 0
DATA_CLASS_SCALAR = 1

# A tensor value's plugin -> the ``dropped`` bucket it is counted in; any other plugin is "tensor".
_DROPPED_PLUGIN = {"images": "image", "histograms": "histogram", "audio": "audio", "text": "text"}
# Old-style values TensorBoard migrates to tensors of a plugin; the plugin their tag gets in the run.
_MIGRATED_PLUGIN = {"simple_value": SCALARS, "histo": "histograms", "image": "images", "audio": "audio"}
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
