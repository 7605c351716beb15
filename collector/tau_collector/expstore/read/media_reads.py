"""Reading a run's histograms, images and text back: tags with counts, a histogram tag reduced to what is drawn,
one step exactly, text and images at the step nearest a requested one.

Histograms and text come from the run's ``media_files`` (:mod:`..format.media_files`): only the files of the
tag asked for whose step range meets the request are opened, and of a delivery's file of every tag only the
row groups holding the tag (``media_tag_groups``; a file of the first layout holds one tag and is read
whole); only the columns needed are decoded (a
distribution reads the summary columns, never the buckets; the buckets are decoded for the steps drawn
only), and row groups outside the range are skipped by their step statistics. A value stored twice (a
chunk delivered again after a crash) is one row, and two values at one step (a restarted job) show the
later one: of a step's rows, the last in write order (the tag's files in the order of their ``media_files``
rows, which media compaction keeps; never by their steps).
Images are rows of TauGrid's ``artifacts`` table (type ``image``). A store written before media were kept
has no ``media_files`` table: its tags are none. Bounded: an answer holds at most :data:`MAX_STEPS` steps
and :data:`MAX_ANSWER_VALUES` bucket values; a bigger ask is a :class:`ValueError` saying what to ask instead.
"""

from __future__ import annotations

import numpy as np
import orjson

from tau_collector.expstore.format.media_files import BASIS_POINTS, HISTOGRAM_SUMMARY_COLUMNS, decode_buckets
from tau_collector.expstore.store import ExpStore
from tau_collector.expstore.write.media import (
    image_rows_at,
    image_steps_around,
    image_tag_rows,
    media_file_paths,
    media_tag_rows,
)
from tau_collector.reads.blocking import may_block
from tau_collector.reads.media_rows import HistogramSeries, ImagesAt, MediaTag, TextAt

__all__ = ["MAX_ANSWER_VALUES", "MAX_IMAGES_AT", "MAX_STEPS", "MAX_TEXT_BYTES", "histogram_series", "images_near",
           "media_tags", "text_at"]

MAX_STEPS = 10_000  # steps one histogram answer may hold (a view draws a few hundred)
MAX_ANSWER_VALUES = 4_000_000  # bucket values (left, right, count) one answer may decode: 32 MB
MAX_TEXT_BYTES = 16 * 1024 * 1024  # the encoded strings of one text step an answer may decode
MAX_IMAGES_AT = 10_000  # images of one tag and step an answer lists (an event may hold up to --max-tensor-values)
_I64 = (-(2**63), 2**63 - 1)
_RETRIES = 3  # listings a read makes when a compaction swaps a file out under it
HISTOGRAMS, TEXT = "histograms", "text"


def media_tags(store: ExpStore, run_id: str) -> list[MediaTag]:
    """Every histogram, image and text tag of the run with its count and step range, by kind then tag."""
    tags = []
    rows = media_tag_rows(store, run_id)
    for kind, tag, count, low, high, shared in rows:
        if shared:  # entries whose steps meet (a chunk delivered twice, frames read again): count each value once
            count = len(_rows(store, run_id, kind, tag, low, high, ["step"])[0])
        tags.append(MediaTag(kind, tag, int(count), int(low), int(high)))
    for name, count, low, high in image_tag_rows(store, run_id):
        tags.append(MediaTag("images", name, int(count), int(low), int(high)))
    return sorted(tags, key=lambda t: (t.kind, t.tag))


def _read(store: ExpStore, entry: tuple[str, tuple[int, int] | None], tag: str, columns: list[str],
          steps: tuple[int, int]):
    """The ``columns`` of one file's rows of ``tag`` with ``steps[0] <= step <= steps[1]``, as a pyarrow table: of a
    delivery or compacted file, only the row groups holding the tag are read; a file of the first layout, whole."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    path, groups = entry
    if groups is None:
        return _storage(pq.read_table(store.absolute(path), columns=columns,
                                      filters=[("step", ">=", steps[0]), ("step", "<=", steps[1])]))
    table = pq.ParquetFile(store.absolute(path)).read_row_groups(range(groups[0], groups[1] + 1),
                                                                 columns=list(dict.fromkeys(["tag", *columns])))
    step = table.column("step")
    within = pc.and_(pc.greater_equal(step, steps[0]), pc.less_equal(step, steps[1]))
    return _storage(table.filter(pc.and_(pc.equal(table.column("tag"), tag), within)).select(columns))


def _storage(table):
    """``table`` with extension-typed columns (pyarrow reads a JSON column as ``arrow.json`` one way and as a
    string the other) as their storage, and a ``buckets`` column of JSON text (stores written before the binary
    cells) as binary cells, so every file's part has one schema and a cell's encoding survives concatenation."""
    import pyarrow as pa

    for i, field in enumerate(table.schema):
        if isinstance(field.type, pa.BaseExtensionType):
            column = table.column(i)
            table = table.set_column(i, field.name, pa.chunked_array([c.storage for c in column.chunks],
                                                                     type=field.type.storage_type))
    at = table.schema.get_field_index("buckets")
    if at >= 0 and (pa.types.is_string(table.schema.field(at).type)
                    or pa.types.is_large_string(table.schema.field(at).type)):
        cells = [None if text is None else decode_buckets(text).astype("<f8").tobytes()
                 for text in table.column(at).to_pylist()]
        table = table.set_column(at, "buckets", pa.array(cells, type=pa.binary()))
    return table


def _tables(store: ExpStore, run_id: str, kind: str, tag: str, low: int, high: int, columns: list[str]) -> list:
    """Each file's rows of the tag in ``[low, high]`` (:func:`_read`), in write order. A file gone between the
    listing and its read (a media compaction swapped it out) lists again: the replacement holds its rows."""
    for attempt in range(_RETRIES):
        files = media_file_paths(store, run_id, kind, tag, low, high)
        if files:
            may_block()
        try:
            return [_read(store, entry, tag, columns, (low, high)) for entry in files]
        except FileNotFoundError:
            if attempt == _RETRIES - 1:
                raise
    return []


def _rows(store: ExpStore, run_id: str, kind: str, tag: str, low: int, high: int, columns: list[str]):
    """(steps, a pyarrow table of the other ``columns``, row for row) of a tag's rows with ``low <= step <= high``,
    one per step, sorted by step: of the rows a step has (a chunk delivered again, a restarted job), the last in
    write order (a value stored twice is the same value; of two values, the later shows). Vectorised: a stable
    sort of the steps, and the last row of each."""
    import pyarrow as pa

    wanted = ["step", *[c for c in columns if c != "step"]]
    parts = _tables(store, run_id, kind, tag, low, high, wanted)
    if not parts:
        return np.zeros(0, dtype=np.int64), None
    table = pa.concat_tables(parts, promote_options="permissive") if len(parts) > 1 else parts[0]
    steps = table.column("step").to_numpy().astype(np.int64, copy=False)
    order = np.argsort(steps, kind="stable")  # stable: the rows of one step stay in write order
    ordered = steps[order]
    last = np.ones(len(order), dtype=bool)
    last[:-1] = ordered[1:] != ordered[:-1]
    if last.all() and np.array_equal(order, np.arange(len(order))):
        return steps, table.select(wanted[1:])  # sorted, one row a step: as read
    keep = order[last]
    return steps[keep], table.take(pa.array(keep)).select(wanted[1:])


def _check_range(step_min: int | None, step_max: int | None) -> tuple[int, int]:
    low = _I64[0] if step_min is None else step_min
    high = _I64[1] if step_max is None else step_max
    for name, value in (("step_min", low), ("step_max", high)):
        if not _I64[0] <= value <= _I64[1]:
            raise ValueError(f"{name} {value} is outside int64")
    return low, high


def _pick(steps: np.ndarray, max_steps: int, keep: tuple[int, ...]) -> np.ndarray:
    """Indices of at most ``max_steps`` of ``steps`` (sorted) spread evenly over them, with every step of ``keep``
    that is there (never dropped: the cursor's step is always drawn)."""
    n = len(steps)
    if n <= max_steps:
        return np.arange(n)
    kept = np.flatnonzero(np.isin(steps, np.array(keep, dtype=np.int64))) if keep else np.zeros(0, dtype=np.int64)
    budget = max(max_steps - len(kept), 0)
    spread = np.unique(np.linspace(0, n - 1, budget).round().astype(np.int64)) if budget else kept[:0]
    chosen = np.union1d(spread, kept)
    while len(chosen) > max(max_steps, len(kept)):  # rounding may meet a kept step: drop spread ones
        spare = np.setdiff1d(chosen, kept)
        chosen = np.setdiff1d(chosen, spare[len(spare) // 2:len(spare) // 2 + len(chosen) - max_steps])
    return chosen


def histogram_series(store: ExpStore, run_id: str, tag: str, *, step_min: int | None = None,
                     step_max: int | None = None, max_steps: int = 500, keep: tuple[int, ...] = (),
                     buckets: bool = True) -> HistogramSeries:
    """The histograms of ``tag`` with ``step_min <= step <= step_max``, reduced to at most ``max_steps`` steps
    spread over the range, never dropping a step of ``keep``; ``buckets=False`` reads the summaries only (the
    distribution bands)."""
    if not 1 <= max_steps <= MAX_STEPS:
        raise ValueError(f"max_steps must be between 1 and {MAX_STEPS}, got {max_steps}")
    low, high = _check_range(step_min, step_max)
    steps, table = _rows(store, run_id, HISTOGRAMS, tag, low, high,
                         ["wall_time", *HISTOGRAM_SUMMARY_COLUMNS, *(["buckets"] if buckets else [])])
    total = len(steps)
    chosen = _pick(steps, max_steps, tuple(s for s in keep if low <= s <= high))
    shown = steps[chosen]
    if table is None:
        summary = np.zeros((0, len(HISTOGRAM_SUMMARY_COLUMNS)), dtype=np.float64)
        wall = np.zeros(0, dtype=np.float64)
        picked = None
    else:
        import pyarrow as pa

        picked = table.take(pa.array(chosen)) if len(chosen) < total else table
        summary = np.column_stack([picked.column(c).to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
                                   for c in HISTOGRAM_SUMMARY_COLUMNS]).reshape(-1, len(HISTOGRAM_SUMMARY_COLUMNS))
        wall = picked.column("wall_time").to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
    decoded = None
    if buckets:
        values = 0.0
        decoded = []
        for text in ([] if picked is None else picked.column("buckets").to_pylist()):
            values += len(text) / 8  # a JSON number takes a few bytes: bound before decoding
            if values > MAX_ANSWER_VALUES:
                raise ValueError(f"histogram {tag!r}: {len(chosen)} steps hold more than {MAX_ANSWER_VALUES} bucket "
                                 "values; ask for fewer steps (max_steps) or a narrower step range")
            decoded.append(decode_buckets(text))
    return HistogramSeries(tag, shown, wall, summary, decoded, total, len(shown) < total, BASIS_POINTS)


def _nearest(steps: np.ndarray, step: int) -> int:
    """Index of the step nearest ``step`` (the earlier on a tie)."""
    i = int(np.searchsorted(steps, step))
    if i == len(steps) or (i > 0 and step - steps[i - 1] <= steps[i] - step):
        return i - 1
    return i


def text_at(store: ExpStore, run_id: str, tag: str, step: int) -> TextAt | None:
    """The text of ``tag`` at the stored step nearest ``step``; None when the tag has none."""
    _check_range(step, step)
    steps, _ = _rows(store, run_id, TEXT, tag, *_I64, ["wall_time"])
    if not len(steps):
        return None
    at = int(steps[_nearest(steps, step)])
    found, row = _rows(store, run_id, TEXT, tag, at, at, ["wall_time", "shape", "text"])
    if not len(found):
        return None  # the step's files were swapped out and back between the two reads: nothing to show
    text, shape = row.column("text")[0].as_py(), row.column("shape")[0].as_py()
    if len(text) > MAX_TEXT_BYTES:
        raise ValueError(f"text {tag!r} at step {at} is {len(text)} bytes, over the {MAX_TEXT_BYTES} an answer holds")
    return TextAt(tag, at, float(row.column("wall_time")[0].as_py()), tuple(orjson.loads(text)),
                  tuple(orjson.loads(shape)))


def images_near(store: ExpStore, run_id: str, tag: str, step: int) -> ImagesAt | None:
    """Every image of ``tag`` at the stored step nearest ``step`` (the earlier on a tie), at most
    :data:`MAX_IMAGES_AT` (``more`` says the step holds more); None when it has none."""
    _check_range(step, step)
    found = image_steps_around(store, run_id, tag, step)
    if not found:
        return None
    at = min(found, key=lambda s: (abs(s - step), s))
    rows = image_rows_at(store, run_id, tag, at, MAX_IMAGES_AT + 1)
    return ImagesAt(tag, at, tuple(rows[:MAX_IMAGES_AT]), more=len(rows) > MAX_IMAGES_AT)
