"""Several writer processes and a reader share one store: nothing is lost, doubled or locked out."""

from __future__ import annotations

import multiprocessing

import numpy as np

from tau_collector.expstore import StoreReader, open_store
from tau_collector.expstore.maintain.compaction import CompactionPolicy
from tau_collector.expstore.write.writer import MetricWriter

from .events import event

CHUNKS = 40
CHUNK_POINTS = 50


def _writer_process(root: str, writer_index: int, errors) -> None:
    try:
        store = open_store(root, create=True)
        # Compaction on, with small thresholds, so writers also swap files under each other's feet.
        writer = MetricWriter(store, compaction=CompactionPolicy(min_files=8, grace_seconds=60))
        for c in range(CHUNKS):
            base = writer_index * 1_000_000 + c * CHUNK_POINTS
            events = [event(base + i, float(base + i)) for i in range(CHUNK_POINTS)]
            events.append(event(c, float(writer_index), run=f"own-{writer_index}"))
            writer.write_chunk(f"w{writer_index}-c{c}", events, [], request_hash="h")
            # Every other chunk is delivered twice, as a spool does after a crash.
            if c % 2:
                writer.write_chunk(f"w{writer_index}-c{c}", events, [], request_hash="h")
    except BaseException as exc:
        errors.put(f"writer {writer_index}: {exc!r}")


def _check_consistent(steps: np.ndarray, values: np.ndarray) -> None:
    assert np.array_equal(values, steps.astype(np.float64))
    assert np.all(np.diff(steps) > 0)
    # Only whole chunks are ever visible: steps come in complete blocks of CHUNK_POINTS.
    assert steps.size % CHUNK_POINTS == 0
    assert np.all(steps[::CHUNK_POINTS] % CHUNK_POINTS == 0)


def test_two_writer_processes_and_a_reader(tmp_path):
    root = str(tmp_path / "store")
    open_store(root, create=True).close()
    ctx = multiprocessing.get_context("spawn")
    errors = ctx.Queue()
    writers = [ctx.Process(target=_writer_process, args=(root, i, errors)) for i in range(2)]
    for p in writers:
        p.start()
    reader = StoreReader(root)
    reads = 0
    while any(p.is_alive() for p in writers) or reads == 0:
        rows = reader.rows("seed-1", "train/loss")
        _check_consistent(rows.step, rows.value)
        series = reader.series("seed-1", "train/loss", max_points=40)
        assert series.returned_points <= 40
        reads += 1
    for p in writers:
        p.join(timeout=120)
        assert p.exitcode == 0
    assert errors.empty(), errors.get()
    rows = reader.rows("seed-1", "train/loss")
    expected = np.concatenate([np.arange(w * 1_000_000, w * 1_000_000 + CHUNKS * CHUNK_POINTS) for w in range(2)])
    assert np.array_equal(rows.step, expected)
    _check_consistent(rows.step, rows.value)
    (summary,) = reader.metric_summaries("seed-1")
    assert summary.count == 2 * CHUNKS * CHUNK_POINTS  # redeliveries and compaction never double count
    for w in range(2):
        assert reader.rows(f"own-{w}", "train/loss").step.tolist() == list(range(CHUNKS))
    conn = open_store(root).connection()
    assert conn.execute("SELECT COUNT(*) FROM idempotency_keys").fetchone()[0] == 2 * CHUNKS
    files = conn.execute("SELECT COUNT(*) FROM metric_files WHERE run_id = 'seed-1'").fetchone()[0]
    assert files < 2 * CHUNKS  # the writers compacted while the reader read


def _write_in_child(writer: MetricWriter) -> None:
    writer.write_chunk("child", [event(1, 2.0)], [], request_hash="h")


def test_a_forked_child_opens_its_own_connection(tmp_path):
    store = open_store(tmp_path / "store", create=True)
    writer = MetricWriter(store)
    writer.write_chunk("parent", [event(0, 1.0)], [], request_hash="h")  # the parent's handle is open
    child = multiprocessing.get_context("fork").Process(target=_write_in_child, args=(writer,))
    child.start()
    child.join(timeout=60)
    assert child.exitcode == 0
    writer.write_chunk("parent-again", [event(2, 3.0)], [], request_hash="h")
    assert StoreReader(store).rows("seed-1", "train/loss").value.tolist() == [1.0, 2.0, 3.0]
