"""One-pass ``collect``'s faster paths make the bytes the plain paths make: NDJSON joined in blocks, the
manifest's base64 payload (pybase64) and digests, and the expstore sink's request hash taken from
``chunk_digest`` instead of re-hashing the NDJSON."""

from __future__ import annotations

import base64
import hashlib
import json
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tau_collector.projection.columns import float_texts, project_scalar_columns, time_texts
from tau_collector.projection.metric_event import decode_canonical_ndjson
from tau_collector.projection.pipeline import Pipeline
from tau_collector.projection.projector import ProjectionConfig, Projector
from tau_collector.sinks.base import Chunk
from tau_collector.sinks.expstore import _non_finite_digest, chunk_request_hash
from tau_collector.sources.event_columns import ScalarColumns
from tau_collector.sources.records import HistoryRow
from tau_collector.spool.manifest import Manifest, SourceRange
from tau_collector.taugrid.gojson import MAX_TIME_NS, MIN_TIME_NS, encode_float, format_time, marshal

from .expstore.events import non_finite

CONFIG = ProjectionConfig(project="p<&>", experiment_id="e", run_group_id="g", run_id="r", exported_at=1_000,
                          tags={"k": "v\u2028"}, namespace="ns")
FILE = dict(history_path="dir/h.jsonl", metric_file_id="history-0", metric_file_path="/abs/h.jsonl")
T0 = 1_790_000_000.0

values = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(min_value=-(2**70), max_value=2**70),
                   st.none(), st.text(max_size=3))
rows_strategy = st.lists(
    st.tuples(st.integers(min_value=0, max_value=2**40), st.floats(min_value=0, max_value=4e9),
              st.dictionaries(st.sampled_from(["loss", "acc", "a/b", "_x", " lr ", "x<y"]), values, max_size=4)),
    max_size=40)


EDGES = [0.0, -0.0, 1.0, -42.0, 1e-6, 1e-5, 1e-4, 9.999999999999999e-6, 9.99999999999999e-7, 1e16, 1e21,
         9.999999999999999e15, 9.999999999999998e20, 5e-324, 1.7976931348623157e308, 123456789012345680.0,
         2.5e-06, 0.1 + 0.2]


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.floats(allow_nan=False, allow_infinity=False)
                       | st.floats(width=32, allow_nan=False, allow_infinity=False)
                       | st.sampled_from(EDGES), max_size=50))
def test_a_columns_float_texts_are_go_s(values):
    assert float_texts(np.array(values, dtype=np.float64)) == [encode_float(v) for v in values]


def test_float_texts_across_every_magnitude():
    rng = np.random.default_rng(7)
    values = rng.standard_normal(20_000) * 10.0 ** rng.integers(-30, 30, 20_000)
    values = np.concatenate([values, values.astype(np.float32).astype(np.float64), EDGES, np.negative(EDGES)])
    assert float_texts(values) == [encode_float(v) for v in values.tolist()]


@settings(max_examples=200, deadline=None)
@given(us=st.lists(st.integers(min_value=MIN_TIME_NS // 1000, max_value=MAX_TIME_NS // 1000)
                   | st.integers(min_value=0, max_value=3 * 10**6).map(lambda n: n + int(T0) * 10**6), max_size=30))
def test_a_columns_time_texts_are_go_s(us):
    """Times in microseconds, over all of the years 0-9999 (in nanoseconds those after 2262 are past int64)."""
    assert time_texts(np.array(us, dtype=np.int64)) == [format_time(t * 1000) for t in us]


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_scalar_columns_after_2262_are_the_lines_and_points_of_the_row_path(seed):
    """Wall times whose nanoseconds leave int64 (2262 to 9999) and steps to 2^63-1, both paths alike."""
    rng = np.random.default_rng(seed)
    n = 20
    wall = np.sort(rng.uniform(9_300_000_000.0, 253_402_000_000.0, n))
    cols = ScalarColumns(names=["train/loss"], metric=np.zeros(n, np.int32),
                         step=np.sort(rng.integers(2**62, 2**63 - 1, n, dtype=np.int64)), wall_time=wall,
                         value=rng.standard_normal(n), record=np.arange(1, n + 1, dtype=np.int64),
                         offset=np.arange(n, dtype=np.int64) * 40)
    cols.step[-1] = 2**63 - 1
    out, errors, points = project_scalar_columns(Projector(CONFIG, with_events=False, **FILE), cols, joined=True,
                                                 points=True)
    assert errors == []
    rows = [HistoryRow({"_step": int(s), "_timestamp": float(w), "train/loss": float(v)}, int(r), int(o))
            for s, w, v, r, o in zip(cols.step, cols.wall_time, cols.value, cols.record, cols.offset, strict=True)]
    assert b"".join(out.ndjson) == _plain_lines(rows)
    by_rows, _ = Projector(CONFIG, with_events=False, **FILE).project_rows(rows, points=True)
    assert points.wall_us.tolist() == [w // 1000 for w in by_rows.points.walls] == [int(w * 1e6) for w in wall]
    assert points.step.tolist() == cols.step.tolist()


def _plain_lines(rows: list[HistoryRow]) -> bytes:
    """The lines as the row path makes them one by one (no blocks)."""
    projected, _ = Projector(CONFIG, with_events=False, **FILE).project_rows(rows)
    return b"".join(projected.lines)


@settings(max_examples=150, deadline=None)
@given(rows=rows_strategy, repeat=st.sampled_from([1, 30, 300]))
def test_rows_joined_in_blocks_are_the_lines_made_one_by_one(rows, repeat):
    # ``repeat`` carries a batch past the 1024-row block boundary more than once.
    history = [HistoryRow({"_step": step, "_timestamp": ts, **fields}, n + 1, n * 10)
               for n, (step, ts, fields) in enumerate(rows * repeat)]
    projected, _ = Projector(CONFIG, with_events=False, **FILE).project_rows(history, joined=True)
    assert projected.lines == []
    assert b"".join(projected.ndjson) == _plain_lines(history)
    assert projected.line_count == _plain_lines(history).count(b"\n")


@settings(max_examples=80, deadline=None)
@given(n=st.integers(min_value=0, max_value=9000), seed=st.integers(min_value=0, max_value=2**32 - 1),
       odd=st.booleans())
def test_scalar_columns_joined_are_the_lines_of_the_row_path(n, seed, odd):
    rng = np.random.default_rng(seed)
    names = ["train/loss", "eval/acc", "_hidden", "lr"]
    value = rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n)
    if odd and n:
        value[rng.integers(0, n, 3)] = math.nan  # non-finite values: observations, not lines
    cols = ScalarColumns(names=names, metric=rng.integers(0, 4, n).astype(np.int32),
                         step=np.arange(n, dtype=np.int64) // 3, wall_time=T0 + rng.random(n) * 1e6,
                         value=value, record=np.arange(1, n + 1, dtype=np.int64),
                         offset=np.arange(n, dtype=np.int64) * 40)
    out, errors, _ = project_scalar_columns(Projector(CONFIG, with_events=False, **FILE), cols, joined=True)
    assert errors == []
    rows = [HistoryRow({"_step": int(s), "_timestamp": float(w), names[int(m)]: float(v)}, int(r), int(o))
            for m, s, w, v, r, o in zip(cols.metric, cols.step, cols.wall_time, cols.value, cols.record,
                                        cols.offset, strict=True)]
    assert b"".join(out.ndjson) == _plain_lines(rows)


def test_the_pipeline_hands_the_blocks_over_once(tmp_path):
    from tau_collector.sources.base import Batch, Position, SourceInput

    rows = [HistoryRow({"_step": s, "_timestamp": T0 + s, "loss": 1.0 / (s + 1), "acc": s / 7}, s + 1, s * 50)
            for s in range(3000)]
    source_input = SourceInput(path=FILE["history_path"], metric_file_id=FILE["metric_file_id"],
                               metric_file_path=FILE["metric_file_path"])

    class _Source:
        kind, step_field, time_field = "history", "_step", "_timestamp"

    batch = Batch(input=source_input, start=Position(), end=Position(150_000, 3000), rows=rows)
    projected = Pipeline(CONFIG).project(_Source(), batch)
    blocks = projected.take_ndjson()
    assert len(blocks) > 1 and projected.take_ndjson() == []
    assert b"".join(blocks) == _plain_lines(rows)
    assert projected.event_count == 6000


def _manifest(ndjson: bytes, **extra) -> Manifest:
    return Manifest(config_identity="c" * 64, kind="history", sequence=7, source_path="/h.jsonl",
                    source_file_id="1:2", ndjson=ndjson, event_count=3, end_offset=10, end_lines=2,
                    prefix_sha256="a" * 64, **extra).seal()


def _stdlib_manifest(manifest: Manifest) -> tuple[bytes, str]:
    """The manifest file and its digest with the whole payload through the standard library's base64."""
    payload = base64.b64encode(manifest.ndjson)
    head, tail = manifest._frame(manifest.manifest_digest, "  ")
    compact_head, compact_tail = manifest._frame("", None)
    return head + payload + tail + b"\n", hashlib.sha256(compact_head + payload + compact_tail).hexdigest()


@settings(max_examples=25, deadline=None)
@given(cut=st.sampled_from([0, 1, 2, 3, 4, 5]), seed=st.binary(min_size=1, max_size=64),
       around=st.sampled_from([0, 3 << 20, 2 * (3 << 20)]), more=st.booleans())
def test_manifest_bytes_and_digests_are_the_standard_librarys(cut, seed, around, more):
    # Sizes on both sides of the payload pieces' boundaries (multiples of 3 MiB), any remainder mod 3.
    size = max(1, around + cut - 3)
    ndjson = (hashlib.sha512(seed).digest() * (size // 64 + 1))[:size]
    ranges = (SourceRange("/g.jsonl", "1:3", 0, 5, 0, 1, "", "b" * 64),) if more else ()
    manifest = _manifest(ndjson, more_sources=ranges)
    raw, digest = _stdlib_manifest(manifest)
    assert manifest.chunk_digest == hashlib.sha256(ndjson).hexdigest()
    assert manifest.manifest_digest == digest
    assert manifest.to_bytes() == raw
    doc = json.loads(raw)
    assert base64.b64decode(doc["ndjson"]) == ndjson
    doc["manifest_digest"] = ""
    assert hashlib.sha256(marshal(doc)).hexdigest() == digest


def _old_request_hash(chunk: Chunk) -> str:
    """The request hash as it was: the NDJSON hashed again."""
    return hashlib.sha256(hashlib.sha256(chunk.ndjson).hexdigest().encode() + b"\n"
                          + _non_finite_digest(chunk.non_finite).encode()).hexdigest()


@settings(max_examples=100, deadline=None)
@given(ndjson=st.binary(max_size=300), kind=st.sampled_from(["history", "terminal"]),
       nf=st.lists(st.sampled_from([math.nan, math.inf, -math.inf]), max_size=3))
def test_request_hash_from_chunk_digest_is_the_hash_of_the_ndjson(ndjson, kind, nf):
    rows = tuple(non_finite(step, v) for step, v in enumerate(nf))
    chunk = Chunk(5, kind, hashlib.sha256(ndjson).hexdigest(), ndjson, 1, rows)
    assert chunk_request_hash(chunk) == _old_request_hash(chunk)


def test_a_non_finite_chunks_key_is_not_taken_for_a_digest():
    # Non-finite chunks carry their key where a digest would be, and no NDJSON: a store that recorded
    # the old request hash must see the same one again.
    chunk = Chunk(0, "non_finite", "f" * 64, b"", 0, (non_finite(1, math.nan),))
    assert chunk_request_hash(chunk) == _old_request_hash(chunk)


def test_a_chunk_without_a_digest_is_hashed():
    ndjson = b'{"x":1}\n'
    chunk = Chunk(0, "history", "", ndjson, 1)
    assert chunk_request_hash(chunk) == _old_request_hash(chunk)


def test_collected_chunks_decode_and_carry_their_digest(tmp_path):
    rows = [HistoryRow({"_step": s, "_timestamp": T0 + s, "loss": 0.5 / (s + 1)}, s + 1, s) for s in range(2100)]
    projected, _ = Projector(CONFIG, with_events=False, **FILE).project_rows(rows, joined=True)
    manifest = _manifest(b"".join(projected.ndjson))
    assert len(decode_canonical_ndjson(manifest.ndjson)) == 2100
    assert Manifest.from_bytes(manifest.to_bytes(), "m").manifest_digest == manifest.manifest_digest
