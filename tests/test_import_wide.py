"""A wide history (hundreds of metrics a line) imported: every point kept, the run clustered by metric."""

from __future__ import annotations

import orjson

from tau_collector.expstore.read.reader import StoreReader
from tau_collector.sources.read_limits import Limits
from taunotebook.importer import import_paths

WIDTH, STEPS = 400, 60


def _history(path):
    names = [f"blocks.{i:03d}/grad_norm" for i in range(WIDTH)]
    with open(path, "wb") as fh:
        for step in range(STEPS):
            row = {"_step": step, "_timestamp": 1_790_000_000 + step}
            row.update((name, i * 1000.0 + step) for i, name in enumerate(names))
            fh.write(orjson.dumps(row) + b"\n")


def test_a_wide_import_keeps_every_point_and_clusters_the_run_by_metric(tmp_path):
    history = tmp_path / "wide.jsonl"
    _history(history)
    # small batches: many files of every metric, then one clustering pass when the run is read
    summary = import_paths([str(history)], tmp_path / "store", limits=Limits(batch_bytes=64 * 1024))
    assert (summary.metrics, summary.points) == (WIDTH, WIDTH * STEPS)
    # the clustering runs in a child the import did not wait for
    assert summary.clustering is not None and summary.clustering.wait(timeout=120) == 0
    reader = StoreReader(tmp_path / "store")
    (run,) = reader.runs()
    conn = reader.store.connection()
    files = conn.execute("SELECT f.file_id, m.first_metric, m.last_metric FROM metric_files f "
                         "LEFT JOIN metric_file_metrics m USING (file_id) ORDER BY f.rowid").fetchall()
    assert len(files) == 1 and files[0][0].startswith("clustered-")  # 24,000 rows fit one clustered file
    assert files[0][1:] == ("blocks.000/grad_norm", f"blocks.{WIDTH - 1:03d}/grad_norm")
    assert conn.execute("SELECT row_count, min_step, max_step FROM metric_files").fetchone() == (WIDTH * STEPS, 0,
                                                                                             STEPS - 1)
    rows = reader.rows(run.run_id, "blocks.123/grad_norm")
    assert rows.step.tolist() == list(range(STEPS))
    assert rows.value.tolist() == [123_000.0 + s for s in range(STEPS)]
    (s,) = [s for s in reader.metric_summaries(run.run_id) if s.metric_name == "blocks.123/grad_norm"]
    assert (s.count, s.latest_step, s.latest_value, s.latest_file_id) == (STEPS, STEPS - 1, 123_059.0, files[0][0])
    # a second import of the same bytes changes nothing
    again = import_paths([str(history)], tmp_path / "store", limits=Limits(batch_bytes=64 * 1024))
    assert again.unchanged == 1 and again.clustering is None  # nothing imported: no child
    assert conn.execute("SELECT COUNT(*) FROM metric_files").fetchone()[0] == 1
