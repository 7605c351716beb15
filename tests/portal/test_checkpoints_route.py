"""A run's checkpoints over HTTP (our ``/runs/{run_id}/checkpoints``) and through ``PortalClient``: shape, step
order, retries, the bad-input answers every run read gives, and a source without an artifacts table."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from fixtures.config_store import RunsOnlyReader
from fixtures.portal import TOKEN, event, serve
from tau_collector.expstore import StoreReader, open_store, record_run_events
from tau_collector.expstore.write.artifacts import record_artifacts
from tau_collector.expstore.write.writer import MetricWriter
from tau_collector.reads import RunEvent
from tau_collector.reads.rows import ArtifactRow
from taunotebook.client import Checkpoint, ClientError, NotFoundError, PortalClient, RunCheckpoints
from taunotebook.portal.context import Portal
from taunotebook.portal.dispatch import respond
from taunotebook.portal.params import Query
from taunotebook.portal.routes import data_routes
from taunotebook.portal.sources import Sources

from .expected import envelope

V2 = "/api/v2/stellar"
WS = {"tau_workspace": "default"}
DIGEST = "sha256:" + "ab" * 32


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("ckpt") / "store"
    s = open_store(root, create=True)
    writer = MetricWriter(s)
    writer.write_chunk("c-1", [event("train-1", "train/loss", i, 1.0 / (i + 1), tags=WS) for i in range(0, 400, 10)],
                       [], request_hash="h")
    writer.write_chunk("c-2", [event("plain-1", "train/loss", 0, 1.0, tags=WS)], [], request_hash="h")
    writer.write_chunk("c-3", [event("hidden-1", "train/loss", 0, 1.0, tags={"tau_workspace": "other"})], [],
                       request_hash="h")
    record_artifacts(s, [
        ArtifactRow("train-1", "checkpoint", "/ckpt/ckpt-300.pt", "/ckpt/ckpt-300.pt", step=300, digest=DIGEST,
                    size_bytes=3000, created_at="2026-12-03T10:03:00Z", tags={"kind": "file"}),
        ArtifactRow("train-1", "checkpoint", "/ckpt/ckpt-100.pt", "/ckpt/ckpt-100.pt", step=100, digest=DIGEST,
                    size_bytes=1000, created_at="2026-12-03T10:01:00Z", tags={"kind": "file"}),
        ArtifactRow("train-1", "checkpoint", "/ckpt/ckpt-200.pt", "/ckpt/ckpt-200.pt", step=200, digest=DIGEST,
                    size_bytes=2000, created_at="2026-12-03T10:02:00Z", tags={"kind": "file", "deleted": True}),
        ArtifactRow("train-1", "checkpoint", "/ckpt/last.pt", "/ckpt/last.pt", digest=DIGEST, size_bytes=5,
                    created_at="2026-12-03T10:04:00Z"),
        ArtifactRow("train-1", "image", "artifacts/x", "sample", step=100),  # not a checkpoint
    ])
    record_run_events(s, [RunEvent("train-1", "2026-12-03T10:03:30Z", "retry", "tau-collector-wrap", "warning",
                                   "retry 1/2 after the trainer exited with code 1; resuming from /ckpt/ckpt-300.pt "
                                   "(step 300)", {"attempt": 1, "max_retries": 2, "exit_code": 1, "step": 300,
                                                  "resume_from": "/ckpt/ckpt-300.pt"})])
    s.close()
    return root


@pytest.fixture(scope="module")
def http(store) -> Iterator[httpx.Client]:
    with serve(store) as server, httpx.Client(base_url=f"http://127.0.0.1:{server.port}",
                                              headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        yield client


def test_the_route_lists_checkpoints_in_step_order_with_the_retries(http):
    r = http.get(f"{V2}/runs/train-1/checkpoints")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["run_id"] == "train-1" and body["metadata"]["availability"] == {"state": "available"}
    assert [(c["step"], c["uri"], c["size_bytes"], c["deleted"]) for c in body["checkpoints"]] == [
        (None, "/ckpt/last.pt", 5, False), (100, "/ckpt/ckpt-100.pt", 1000, False),
        (200, "/ckpt/ckpt-200.pt", 2000, True), (300, "/ckpt/ckpt-300.pt", 3000, False)]
    assert body["checkpoints"][1] == {"step": 100, "uri": "/ckpt/ckpt-100.pt", "name": "/ckpt/ckpt-100.pt",
                                      "digest": DIGEST, "size_bytes": 1000, "created_at": "2026-12-03T10:01:00Z",
                                      "deleted": False}
    assert body["retries"] == [{"step": 300, "time": "2026-12-03T10:03:30Z", "attempt": 1, "max_retries": 2,
                                "exit_code": 1, "resume_from": "/ckpt/ckpt-300.pt",
                                "message": "retry 1/2 after the trainer exited with code 1; resuming from "
                                           "/ckpt/ckpt-300.pt (step 300)"}]


def test_a_run_without_checkpoints_answers_empty_lists(http):
    body = http.get(f"{V2}/runs/plain-1/checkpoints").json()
    assert (body["checkpoints"], body["retries"]) == ([], [])


@pytest.mark.parametrize(("path", "params", "headers", "expected"), [
    ("/runs/nope/checkpoints", {}, None, (404, "NOT_FOUND")),
    ("/runs/hidden-1/checkpoints", {}, None, (404, "NOT_FOUND")),  # another workspace's run
    ("/runs/train-1/checkpoints", {"project": "other"}, None, (404, "NOT_FOUND")),
    ("/runs/Train%201/checkpoints", {}, None, (400, "INVALID_ARGUMENT")),
    ("/runs/%2E%2E/checkpoints", {}, None, (400, "INVALID_PATH")),
    ("/runs/train-1/checkpoints", {"source": "nope"}, None, (400, "INVALID_SOURCE")),
    ("/runs/train-1/checkpoints", {"workspace": "other"}, None, (403, "WORKSPACE_FORBIDDEN")),
    ("/runs/train-1/checkpoints", {"target": "someone-else"}, None, (404, "NOT_FOUND")),
    ("/runs/train-1/checkpoints", {}, {"Authorization": "Bearer wrong"}, (401, "UNAUTHORIZED")),
])
def test_bad_requests_are_answered_as_every_run_read_answers_them(http, path, params, headers, expected):
    r = http.get(V2 + path, params=params, headers=headers)
    body = r.json()
    assert (r.status_code, body["error"]["code"]) == expected
    assert body == envelope(body["error"]["code"], body["error"]["message"], r.status_code)


def test_the_route_is_in_the_openapi_document(http):
    doc = http.get("/openapi.json").json()
    op = doc["paths"][f"{V2}/runs/{{run_id}}/checkpoints"]["get"]
    assert op["operationId"] == "getRunCheckpoints"
    assert doc["components"]["schemas"]["RunCheckpoints"]["required"] == ["metadata", "run_id", "checkpoints",
                                                                          "retries"]


def test_a_source_without_artifacts_says_so(store):
    api = Portal(Sources(RunsOnlyReader(StoreReader(store))))
    response = respond(data_routes(api), f"{V2}/runs/train-1/checkpoints", "GET", Query([]))
    body = json.loads(response.body)
    assert response.status_code == 200 and (body["checkpoints"], body["retries"]) == ([], [])
    assert body["metadata"]["availability"] == {"state": "unavailable",
                                                "reasons": ["the local source carries no checkpoints"]}


# -- the client ---------------------------------------------------------------------------------------------


@pytest.fixture
def client(http) -> Iterator[PortalClient]:
    with PortalClient(str(http.base_url), TOKEN, retries=0) as c:
        yield c


def test_client_checkpoints_and_the_nearest_at_or_before_a_step(client):
    answer = client.checkpoints("train-1")
    assert isinstance(answer, RunCheckpoints)
    assert [c.step for c in answer.checkpoints] == [None, 100, 200, 300]
    assert [r.step for r in answer.retries] == [300]
    assert client.checkpoint("train-1", 300).uri == "/ckpt/ckpt-300.pt"
    assert client.checkpoint("train-1", 299).step == 100  # 200 was deleted
    nearest = client.checkpoint("train-1", 10**9)
    assert isinstance(nearest, Checkpoint) and (nearest.step, nearest.size_bytes, nearest.digest) == (300, 3000,
                                                                                                      DIGEST)


def test_client_checkpoint_errors_say_why(client):
    with pytest.raises(LookupError, match=r"run train-1 has no checkpoint at or before step 99: its first is at "
                                          r"step 100"):
        client.checkpoint("train-1", 99)
    with pytest.raises(LookupError, match=r"run plain-1 has no checkpoints \(none registered"):
        client.checkpoint("plain-1", 5)
    with pytest.raises(NotFoundError):
        client.checkpoints("nope")
    with pytest.raises(ClientError) as info:
        client.checkpoints("train-1", source="bogus")
    assert info.value.code == "INVALID_SOURCE"
    with pytest.raises(TypeError, match="step must be a whole number"):
        client.checkpoint("train-1", "300")


def test_the_pane_gets_the_runs_checkpoints_for_its_markers(http):
    from fixtures.pane import make_pane, wait_until

    client = PortalClient(str(http.base_url), TOKEN, retries=0)
    pane, _ = make_pane("train-1", client)
    try:
        marks = wait_until(lambda: pane.checkpoints.get("checkpoints") and pane.checkpoints, "the checkpoints trait")
        assert [(c["step"], c["uri"], c["size_bytes"], c["deleted"]) for c in marks["checkpoints"]] == [
            (None, "/ckpt/last.pt", 5, False), (100, "/ckpt/ckpt-100.pt", 1000, False),
            (200, "/ckpt/ckpt-200.pt", 2000, True), (300, "/ckpt/ckpt-300.pt", 3000, False)]
        assert marks["retries"] == [{"step": 300, "attempt": 1, "max_retries": 2, "resume_from": "/ckpt/ckpt-300.pt"}]
    finally:
        pane.close()
        client.close()
