"""The v2 series answer cache: identical reads share one encoded answer only while the store is unchanged."""

from __future__ import annotations

import orjson

from fixtures.portal import event
from tau_collector.expstore import StoreReader, open_store
from tau_collector.expstore.write.writer import MetricWriter
from taunotebook.portal.answer_cache import MAX_ANSWER_BYTES, MAX_ANSWERS
from taunotebook.portal.context import Portal
from taunotebook.portal.dispatch import respond
from taunotebook.portal.params import Query
from taunotebook.portal.routes import data_routes
from taunotebook.portal.sources import Sources


def _series(api: Portal, run: str, **params) -> tuple[int, dict]:
    q = Query([("target", run), ("metric", "loss"), *((k, str(v)) for k, v in params.items())])
    response = respond(data_routes(api), f"/api/v2/stellar/runs/{run}/series", "GET", q)
    return response.status_code, orjson.loads(response.body)


def test_a_write_is_seen_by_the_next_identical_read(tmp_path):
    store = open_store(tmp_path / "s", create=True)
    writer = MetricWriter(store)
    writer.write_chunk("c0", [event("live", "loss", s, float(s)) for s in range(10)], [], request_hash="c0")
    api = Portal(Sources(StoreReader(tmp_path / "s")))
    status, first = _series(api, "live", start_step=5)
    assert status == 200 and [p["step"] for p in first["points"]] == [5, 6, 7, 8, 9]
    assert _series(api, "live", start_step=5)[1]["points"] == first["points"]  # the kept answer
    writer.write_chunk("c1", [event("live", "loss", s, float(s)) for s in range(10, 13)]
                       + [event("live", "loss", 9, 99.0, wall_ns=2_000_000_000_000_000_000)], [], request_hash="c1")
    after = _series(api, "live", start_step=5)[1]
    assert [p["step"] for p in after["points"]] == [5, 6, 7, 8, 9, 10, 11, 12]
    assert after["points"][4]["value"] == 99  # last wins, the rewrite is seen
    store.close()


def test_errors_are_not_kept_and_the_cache_is_bounded(tmp_path):
    store = open_store(tmp_path / "s", create=True)
    writer = MetricWriter(store)
    writer.write_chunk("c0", [event("r", "loss", s, 1.0) for s in range(20)], [], request_hash="c0")
    api = Portal(Sources(StoreReader(tmp_path / "s")))
    assert _series(api, "r", start_step="x")[0] == 400
    assert _series(api, "nope")[0] == 404
    assert api.answers._answers == {}
    for i in range(MAX_ANSWERS + 20):
        status, body = _series(api, "r", start_step=i % 20, max_points=100 + i)
        assert status == 200 and body["points"][0]["step"] == i % 20
    assert len(api.answers._answers) <= MAX_ANSWERS
    assert all(len(b) <= MAX_ANSWER_BYTES for b in api.answers._answers.values())
    store.close()
