"""Run artifacts: content-addressed bytes under ``artifacts/``, rows in TauGrid's ``artifacts`` table."""

from __future__ import annotations

import hashlib

import pytest

from tau_collector.expstore import open_store, read_artifacts, record_artifacts, store_artifact_bytes
from tau_collector.expstore.write.artifacts import artifact_path_for_digest, local_path_of
from tau_collector.reads.rows import ArtifactRow


@pytest.fixture
def store(tmp_path):
    s = open_store(tmp_path / "store", create=True)
    yield s
    s.close()


def test_bytes_are_kept_once_per_digest(store):
    d1, rel1, n1 = store_artifact_bytes(store, b"png-bytes")
    d2, rel2, _ = store_artifact_bytes(store, b"png-bytes")
    assert d1 == d2 == "sha256:" + hashlib.sha256(b"png-bytes").hexdigest()
    assert rel1 == rel2 and n1 == 9
    assert store.absolute(rel1).read_bytes() == b"png-bytes"
    files = [p for p in (store.root / "artifacts").rglob("*") if p.is_file()]
    assert len(files) == 1  # no temporary file left beside it


def test_rows_register_once_and_page_in_step_order(store):
    rows = [ArtifactRow(run_id="r1", type="image", uri=f"artifacts/x{i}", name="samples", step=i,
                        digest=None, size_bytes=i, content_type="image/png", caption=f"c{i}")
            for i in (5, 1, 3)]
    assert record_artifacts(store, rows) == 3
    record_artifacts(store, rows[:1])  # again: replaced, not added
    got = read_artifacts(store, "r1")
    assert [r.step for r in got] == [1, 3, 5]
    assert got[0].caption == "c1" and got[0].content_type == "image/png" and got[0].created_at
    page = read_artifacts(store, "r1", limit=2)
    rest = read_artifacts(store, "r1", after_id=page[-1].artifact_id)
    assert [r.step for r in page + rest] == [1, 3, 5]
    assert [r.step for r in read_artifacts(store, "r1", step_min=2, step_max=4)] == [3]
    assert read_artifacts(store, "r1", type="checkpoint") == []
    assert read_artifacts(store, "other") == []


def test_bad_digest_and_limit_are_refused(store):
    with pytest.raises(ValueError, match="sha256:<64"):
        artifact_path_for_digest("sha256:../../etc/passwd")
    with pytest.raises(ValueError, match="limit must be positive"):
        read_artifacts(store, "r1", limit=0)


def test_local_path_of(store, tmp_path):
    kept = ArtifactRow(run_id="r", type="image", uri="artifacts/sha256/ab/abc", name="n")
    assert local_path_of(store, kept) == store.root / "artifacts/sha256/ab/abc"
    outside = ArtifactRow(run_id="r", type="checkpoint", uri=f"file://{tmp_path}/ckpt-10.pt", name="n")
    assert local_path_of(store, outside) == tmp_path / "ckpt-10.pt"
    remote = ArtifactRow(run_id="r", type="checkpoint", uri="az://bucket/ckpt", name="n")
    assert local_path_of(store, remote) is None
