"""The step cursor's image lookups (a tag's images near a step, an image by digest) search the artifacts table by
an index: none of their statements reads every artifact of the run (100,000 for 10 image tags × 10,000 steps)."""

from __future__ import annotations

from fixtures.tb_writers import write_tensorboardx_media
from tau_collector.expstore import StoreReader
from taunotebook.importer import import_paths


def test_images_near_and_an_image_by_digest_search_an_index_never_scan_the_artifacts(tmp_path):
    write_tensorboardx_media(tmp_path / "logs" / "run", steps=range(0, 40, 10))
    (run_id,) = import_paths([str(tmp_path / "logs")], tmp_path / "store", clustering="off").run_ids
    reader = StoreReader(tmp_path / "store")
    conn = reader.store.connection()
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        at = reader.images_near(run_id, "sample", 14)
        assert at is not None and at.step == 10
        assert reader.image(run_id, at.images[0].digest) == at.images[0]
    finally:
        conn.set_trace_callback(None)
    lookups = [s for s in statements if "FROM artifacts" in s]
    assert len(lookups) >= 2, statements
    for sql in lookups:
        plan = " | ".join(row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + sql))
        # searched by more than the run (an index on run_id alone still reads every artifact of the run)
        assert "SCAN artifacts" not in plan and "(run_id=? AND " in plan, (sql, plan)
