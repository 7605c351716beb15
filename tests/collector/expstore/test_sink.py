"""The expstore sink delivers spool chunks idempotently into a store."""

from __future__ import annotations

import hashlib
import math

import pytest

from tau_collector.expstore import StoreReader
from tau_collector.projection.metric_event import encode_ndjson_many
from tau_collector.sinks.base import Chunk, SinkError
from tau_collector.sinks.expstore import ExpstoreSink, chunk_idempotency_key

from .events import event, non_finite


def _chunk(events, sequence=1, nf=()) -> Chunk:
    ndjson = encode_ndjson_many(events)
    return Chunk(sequence=sequence, kind="history", chunk_digest=hashlib.sha256(ndjson).hexdigest(),
                 ndjson=ndjson, event_count=len(events), non_finite=tuple(nf))


def test_deliver_writes_the_events_and_the_non_finite_rows(tmp_path):
    sink = ExpstoreSink(tmp_path / "store")
    sink.deliver(_chunk([event(0, 1.0), event(2, 0.5)], nf=[non_finite(1, math.nan)]))
    rows = StoreReader(sink.store).rows("seed-1", "train/loss")
    assert rows.step.tolist() == [0, 1, 2]
    assert math.isnan(rows.value[1])


def test_redelivered_chunk_is_a_no_op(tmp_path):
    sink = ExpstoreSink(tmp_path / "store")
    chunk = _chunk([event(0, 1.0)])
    sink.deliver(chunk)
    sink.deliver(chunk)
    ExpstoreSink(tmp_path / "store").deliver(chunk)  # after a collector restart too
    (s,) = StoreReader(sink.store).metric_summaries("seed-1")
    assert s.count == 1


def test_identical_ndjson_from_two_sources_does_not_collide(tmp_path):
    chunk = _chunk([event(0, 1.0)])
    assert chunk_idempotency_key(chunk, "source-a") != chunk_idempotency_key(chunk, "source-b")
    assert chunk_idempotency_key(chunk, "source-a").startswith("collector-chunk-" + chunk.chunk_digest)


def test_chunks_differing_only_in_non_finite_rows_get_different_keys(tmp_path):
    sink = ExpstoreSink(tmp_path / "store")
    sink.deliver(_chunk([], sequence=3, nf=[non_finite(1, math.nan)]))
    sink.deliver(_chunk([], sequence=4, nf=[non_finite(2, math.inf)]))
    assert StoreReader(sink.store).rows("seed-1", "train/loss").step.tolist() == [1, 2]


def test_empty_chunk_is_acknowledged_without_writing(tmp_path):
    sink = ExpstoreSink(tmp_path / "store")
    sink.deliver(_chunk([]))
    conn = sink.store.connection()
    assert conn.execute("SELECT COUNT(*) FROM idempotency_keys").fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(*) FROM metric_files").fetchone()[0] == 0


def test_non_canonical_chunk_is_a_fatal_error(tmp_path):
    sink = ExpstoreSink(tmp_path / "store")
    bad = b'{"step": 1}\n'
    with pytest.raises(SinkError) as info:
        sink.deliver(Chunk(1, "history", hashlib.sha256(bad).hexdigest(), bad, 1))
    assert not info.value.retryable


def test_identity_is_the_absolute_store_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sink = ExpstoreSink("relative-store")
    assert sink.identity() == str(tmp_path / "relative-store")
    assert ExpstoreSink.name == "expstore"


def test_terminal_marker_chunk_completes_the_run(tmp_path):
    sink = ExpstoreSink(tmp_path / "store")
    sink.deliver(_chunk([event(0, 1.0)]))
    sink.deliver(_chunk([event(0, -1.0, metric="tau/run_status", tags={"tau.status.state": "failed"})], sequence=2))
    run = StoreReader(sink.store).run("seed-1")
    assert run.state == "failed"
    assert run.tags["tau.status.state"] == "failed"


def _non_finite_chunk(sequence: int, step: int) -> Chunk:
    """As the collector delivers a spool's non-finite file: its name (a content key) where a digest goes."""
    return Chunk(sequence, "non_finite", f"{step:064x}", b"", 0, (non_finite(step, math.nan),))


def _recorded(sink, chunk: Chunk) -> bool:
    key = chunk_idempotency_key(chunk, sink._source_id)
    return sink.store.connection().execute("SELECT 1 FROM idempotency_keys WHERE key = ?", (key,)).fetchone() is not None


def test_a_spools_non_finite_keys_are_pruned_with_its_chunk_keys(tmp_path):
    """A spool's non-finite observations are keyed by the spool and come with the sequence of the history chunk
    they were spooled with: past the replay horizon their keys go too, and the newest is still a no-op."""
    from tau_collector.expstore.write.idempotency import STREAM_WINDOW

    sink = ExpstoreSink(tmp_path / "store", source_id="spool-a")
    last = 3 * STREAM_WINDOW
    for s in range(1, last + 1):
        sink.deliver(_non_finite_chunk(s, 2 * s + 1))
        sink.deliver(_chunk([event(2 * s, 1.0)], sequence=s))
    assert not _recorded(sink, _non_finite_chunk(1, 3))
    assert _recorded(sink, _non_finite_chunk(last, 2 * last + 1))
    keys = sink.store.connection().execute("SELECT COUNT(*) FROM idempotency_keys").fetchone()[0]
    assert keys == 2 * (STREAM_WINDOW + 1)
    # A start after a kill before the checkpoint replays the newest non-finite file (under the checkpoint's
    # sequence: the same, or one more if the checkpoint was written) and the pending chunk: no-ops.
    sink.deliver(_non_finite_chunk(last + 1, 2 * last + 1))
    sink.deliver(_chunk([event(2 * last, 1.0)], sequence=last))
    (s,) = StoreReader(sink.store).metric_summaries("seed-1")
    assert s.non_finite_count == last and s.count == 2 * last


def test_non_finite_keys_without_a_sequence_are_kept(tmp_path):
    sink = ExpstoreSink(tmp_path / "store", source_id="import")
    for s in range(1, 40):
        sink.deliver(_non_finite_chunk(0, s))  # an import's: no spool sequence
    assert _recorded(sink, _non_finite_chunk(0, 1))
