"""A merge's per-row text column (``tags``) joined from its files' parts straight into merged order.

A merge of 12,000 rows holds ~3.3 MB of tags (every row's tags differ: the history file, path and line are
tags), and the sidecar's whole process tree has 80 MB (issue 30 §1). Concatenating the files' tags and then
taking them in merged order held them three times at once (each file's part, the concatenation, the taken copy).
:func:`joined_texts` builds the same rows, byte for byte, without the concatenation: the merged row bounds come from
the rows' lengths alone, then each file's rows are copied to their places in the result and the file's part is
released at once. The result is one ``numpy.empty`` buffer (its own mapping: ``process_memory`` keeps large
blocks out of the heap), whose pages become resident as rows are copied in, while the parts already joined are
given back: what the join holds is about one copy of the tags, not three.
"""

from __future__ import annotations

import numpy as np

from tau_collector.expstore.format.parquet_encoder import PlainTexts

__all__ = ["joined_texts"]

# A file's rows go to their places a stretch at a time (rows that stay next to each other in merged order: a
# metric's steps of one file) when the stretches are this long on average; shorter, they are scattered by numpy
# through a byte index built a block of ``_BLOCK_BYTES`` at a time (8 index bytes a byte: bounded, as in
# ``PlainTexts.take``).
_RUN_ROWS = 8
_BLOCK_BYTES = 1 << 17


def joined_texts(parts: list, name: str, order: np.ndarray) -> PlainTexts:
    """Column ``name`` (:class:`PlainTexts`) of ``parts`` (file columns as :func:`.compaction.read_parts` returns
    them) concatenated, with its rows taken at ``order`` (a permutation of all their rows) -- what
    ``PlainTexts.take`` of the concatenation returns, byte for byte. ``parts`` is consumed: each entry is set to
    None once its rows are in the result (the caller has taken what else it needs from them)."""
    order = np.asarray(order, dtype=np.int64)
    rows = len(order)
    lengths = np.empty(rows, dtype=np.int64)
    at = 0
    for part in parts:
        bounds = part[name].bounds
        np.subtract(bounds[1:], bounds[:-1], out=lengths[at:at + len(bounds) - 1])
        at += len(bounds) - 1
    if at != rows:
        raise ValueError(f"column {name}: the parts hold {at} rows, the order {rows}")
    out_bounds = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(lengths[order], out=out_bounds[1:])
    del lengths
    place = np.empty(rows, dtype=np.int64)  # each input row's row in the result
    place[order] = np.arange(rows, dtype=np.int64)
    data = np.empty(int(out_bounds[-1]), dtype=np.uint8)
    at = 0
    for index in range(len(parts)):
        texts = parts[index][name]
        parts[index] = None  # the part's other columns go now, its texts when copied
        count = len(texts.bounds) - 1
        _copy_rows(data, out_bounds, texts, place[at:at + count])
        at += count
        del texts
    return PlainTexts(data, out_bounds)


def _copy_rows(data: np.ndarray, out_bounds: np.ndarray, texts: PlainTexts, place: np.ndarray) -> None:
    """Row ``i`` of ``texts`` to row ``place[i]`` of ``data`` (cut by ``out_bounds``)."""
    count = len(place)
    if not count:
        return
    source = texts.bounds
    cuts = np.flatnonzero(place[1:] != place[:-1] + 1) + 1  # where a stretch of consecutive places ends
    if (len(cuts) + 1) * _RUN_ROWS <= count:
        firsts = [0, *cuts.tolist()]
        lasts = [*cuts.tolist(), count]
        for low, high, to in zip(source[firsts].tolist(), source[lasts].tolist(),
                                 out_bounds[place[firsts]].tolist(), strict=True):
            data[to:to + high - low] = texts.data[low:high]
        return
    first = 0
    while first < count:
        last = int(np.searchsorted(source, source[first] + _BLOCK_BYTES, side="right")) - 1
        last = min(count, max(last, first + 1))
        starts = source[first:last]
        sizes = source[first + 1:last + 1] - starts
        offsets = starts - source[first]  # where each row starts in the block's source bytes
        target = (np.repeat(out_bounds[place[first:last]] - offsets, sizes)
                  + np.arange(int(source[last] - source[first]), dtype=np.int64))
        data[target] = texts.data[source[first]:source[last]]
        first = last
