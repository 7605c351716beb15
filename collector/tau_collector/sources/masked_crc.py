"""TFRecord's masked CRC32C: the checksum every frame carries for its length and its payload.

``masked(c) = ((c >> 15 | c << 17) + 0xa282ead8) mod 2**32``: masking keeps the CRC of data that
itself holds CRCs from being trivial. TensorFlow ``lib/hash/crc32c.h``; rustboard ``masked_crc.rs``.
"""

from __future__ import annotations

import numpy as np
from crc32c import crc32c

__all__ = ["MASK_DELTA", "crc32c", "mask", "masked_crc32c", "unmask_array"]

MASK_DELTA = 0xA282EAD8
_U32 = 0xFFFFFFFF


def mask(crc: int) -> int:
    """The masked form of a CRC32C value."""
    return (((crc >> 15) | (crc << 17)) + MASK_DELTA) & _U32


def masked_crc32c(data: bytes | bytearray | memoryview) -> int:
    """The masked CRC32C of ``data``, as a frame stores it."""
    return mask(crc32c(data))


def unmask_array(stored: np.ndarray) -> np.ndarray:
    """The CRC32C values behind stored masked CRCs (uint64 arrays of u32 values)."""
    rotated = (stored - MASK_DELTA) & _U32
    return ((rotated >> 17) | (rotated << 15)) & _U32
