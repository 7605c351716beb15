"""The sidecar's compaction merges without pyarrow, into what pyarrow's merge made of the same files."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest

from tau_collector.cli import main as collector_main
from tau_collector.expstore import StoreReader, open_store
from tau_collector.expstore.format.parquet_reader import ForeignParquetError, read_metric_file
from tau_collector.expstore.maintain import compaction
from tau_collector.expstore.maintain.compaction import CompactionPolicy, compact_all
from tau_collector.expstore.write.writer import MetricWriter

from .events import BASE_NS, event, new_store, non_finite


def _odd(step: int, value: float, **kw):
    """An event with what the plain path never sees together: no wall time, a unit, a split, its own tags."""
    e = event(step, value, **kw)
    e.wall_time = None
    e.unit = "s"
    e.split = "eval"
    e.source = "tensorboard"
    return e


def _mixed_store(tmp_path):
    store, writer = new_store(tmp_path)
    for c in range(6):
        events = [event(c * 7 + i, float(i) * 0.5, metric=f"m{(c + i) % 3}", tags={"jsonl.line": str(c * 10 + i)})
                  for i in range(12)]
        events.append(event(3, float(c), wall_ns=BASE_NS))  # step 3 re-sent at one wall time: last file wins
        if c % 2:
            events.append(_odd(100 + c, -1.0, metric="a/odd"))
        writer.write_chunk(f"c{c}", events, [non_finite(50 + c, float("inf"))], request_hash="h")
    return store


def _files(store):
    return store.connection().execute(
        "SELECT rowid, file_id, path, project, run_group_id, min_step, max_step, row_count FROM metric_files "
        "WHERE run_id = 'seed-1' ORDER BY rowid").fetchall()


def test_the_merge_without_pyarrow_equals_the_pyarrow_merge_of_the_same_files(tmp_path):
    ours = _mixed_store(tmp_path / "a")
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    theirs = open_store(tmp_path / "b" / "store", writable=True)
    mine = compaction._merge(ours, "seed-1", _files(ours), pyarrow_fallback=False)
    reference = compaction._merge_with_pyarrow(theirs, "seed-1", _files(theirs))
    path = ours.connection().execute("SELECT path FROM metric_files").fetchone()[0]
    ref_path = theirs.connection().execute("SELECT path FROM metric_files").fetchone()[0]
    got, want = pq.read_table(ours.absolute(path)), pq.read_table(theirs.absolute(ref_path))
    assert got.schema.equals(want.schema)
    assert got.equals(want)
    assert mine.row_count == reference.row_count == want.num_rows
    # Same row groups (cut at metric boundaries), so a reader of one metric skips the same groups.
    got_meta, want_meta = pq.ParquetFile(ours.absolute(path)).metadata, pq.ParquetFile(theirs.absolute(ref_path)).metadata
    assert [got_meta.row_group(g).num_rows for g in range(got_meta.num_row_groups)] == [
        want_meta.row_group(g).num_rows for g in range(want_meta.num_row_groups)]
    # The index rows and the reads are the same too.
    index = "SELECT row_count, min_step, max_step FROM metric_files"
    assert ours.connection().execute(index).fetchall() == theirs.connection().execute(index).fetchall()
    metrics = "SELECT first_metric, last_metric FROM metric_file_metrics"
    assert ours.connection().execute(metrics).fetchall() == theirs.connection().execute(metrics).fetchall()
    for metric in ("m0", "m1", "m2", "a/odd", "train/loss"):
        a, b = StoreReader(ours).rows("seed-1", metric), StoreReader(theirs).rows("seed-1", metric)
        assert a.step.tolist() == b.step.tolist() and a.wall_time.tolist() == b.wall_time.tolist(), metric
        assert np.array_equal(a.value, b.value, equal_nan=True), metric


def test_a_file_of_another_parquet_writer_is_foreign_and_left_to_a_compaction_with_pyarrow(tmp_path, capsys):
    store = _mixed_store(tmp_path)
    files = _files(store)
    # Rewrite the third file as pyarrow does (Snappy): not of the subset the reader reads.
    table = pq.read_table(store.absolute(files[2][2]))
    pq.write_table(table, store.absolute(files[2][2]), compression="snappy")
    with pytest.raises(ForeignParquetError, match="codec"):
        read_metric_file(store.absolute(files[2][2]))
    before = StoreReader(store).rows("seed-1", "train/loss")
    policy = CompactionPolicy(min_files=1, grace_seconds=0)
    assert compact_all(store, "seed-1", policy=policy, pyarrow_fallback=False) == 2  # the files before it, after it
    left = [f[1] for f in _files(store)]
    assert len(left) == 3 and files[2][1] in left
    after = StoreReader(store).rows("seed-1", "train/loss")
    assert after.step.tolist() == before.step.tolist() and after.value.tolist() == before.value.tolist()
    # Out of the sidecar, with pyarrow: everything.
    assert collector_main(["store", "compact", "--store", str(store.root), "--run", "seed-1"]) == 0
    assert json.loads(capsys.readouterr().out) == {"run_id": "seed-1", "merges": 1}
    assert len(_files(store)) == 1


_THREAD = """
import sys
from tau_collector.expstore import open_store
from tau_collector.expstore.maintain.compaction import CompactionPolicy
from tau_collector.expstore.maintain.compaction_thread import CompactionThread
store = open_store(sys.argv[1], writable=True)
thread = CompactionThread(store, CompactionPolicy(min_files=2, grace_seconds=0))
assert thread.request(["seed-1"])
thread.close()
files = store.connection().execute("SELECT file_id FROM metric_files").fetchall()
print(len(files), files[0][0].startswith("compacted-"), "pyarrow" in sys.modules, "pandas" in sys.modules)
"""


def test_the_sidecars_compaction_merges_in_a_thread_without_importing_pyarrow(tmp_path):
    _mixed_store(tmp_path)
    out = subprocess.run([sys.executable, "-c", _THREAD, str(tmp_path / "store")], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == ["1", "True", "False", "False"], out.stderr


def test_the_writer_with_background_compaction_starts_the_thread_after_a_delivery(tmp_path):
    store = open_store(tmp_path / "store", create=True)
    writer = MetricWriter(store, compaction=CompactionPolicy(min_files=3, grace_seconds=0),
                          background_compaction=True)
    for c in range(5):
        writer.write_chunk(f"c{c}", [event(c, 1.0)], [], request_hash="h")
    writer.close()  # waits for the thread
    rows = store.connection().execute("SELECT file_id FROM metric_files ORDER BY rowid").fetchall()
    assert rows[0][0].startswith("compacted-") and len(rows) < 5
    assert StoreReader(store).rows("seed-1", "train/loss").step.tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("compression", ["gzip", "none"])
def test_the_reader_reads_pyarrows_plain_and_dictionary_pages_of_the_schema_as_pyarrow_does(tmp_path, compression):
    """Beyond our encoder's shape: pyarrow's bit-packed dictionary indices, dictionary-encoded tags, nulls."""
    store = _mixed_store(tmp_path)
    table = pq.read_table(store.absolute(_files(store)[1][2]))
    path = tmp_path / "pyarrow.parquet"
    pq.write_table(table, path, compression=compression, use_dictionary=True, data_page_version="1.0",
                   row_group_size=7)
    rows, columns = read_metric_file(path)
    assert rows == table.num_rows
    for name in ("step", "wall_time", "value"):
        want = table.column(name).cast("int64" if name == "wall_time" else table.column(name).type)
        valid = np.asarray(want.is_valid())
        got = columns[name]
        assert (got.valid if got.valid is not None else np.ones(rows, bool)).tolist() == valid.tolist(), name
        assert got.values[valid].tolist() == np.asarray(want.drop_null()).tolist(), name
    for name in ("project", "metric_name", "unit", "source", "split"):
        got = columns[name]
        assert [got.values[c] if c >= 0 else None for c in got.codes.tolist()] == table.column(name).to_pylist(), name
    assert columns["tags"].rows() == table.column("tags").to_pylist()
