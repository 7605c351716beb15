"""A run's artifacts over HTTP (our addition): the listing says where each file is, a download streams it, a file a
job deleted is listed as gone, and bad requests get the envelopes every read of a run gets."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import httpx
import pytest

from fixtures.portal import TOKEN, serve
from fixtures.tb_writers import write_torch_media
from tau_collector.expstore.store import ExpStore
from tau_collector.expstore.write.artifacts import record_artifacts
from tau_collector.expstore.write.source_files import source_file_row
from tau_collector.reads import ArtifactRow
from taunotebook.importer import import_paths

from .expected import envelope

V2 = "/api/v2/stellar"


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> tuple[httpx.Client, Path, dict]:
    root = tmp_path_factory.mktemp("artifacts")
    event_file = write_torch_media(root / "logs" / "run", steps=range(3))
    import_paths([str(root / "logs")], root / "store", clustering="off")
    # What a sidecar registers: files where the job wrote them; the job deletes one afterwards.
    kept, deleted = root / "job" / "kept.jsonl", root / "job" / "deleted.jsonl"
    kept.parent.mkdir()
    for path in (kept, deleted):
        path.write_text(json.dumps({"_step": 0, "_timestamp": 1.5, "loss": 1.0}) + "\n")
    store = ExpStore(root / "store", writable=True)
    record_artifacts(store, [source_file_row("run", str(p), p.name, "metrics-jsonl", closed=True)
                             for p in (kept, deleted)]
                     + [ArtifactRow("run", "checkpoint", "az://bucket/ckpt-1", "ckpt-1", step=1),
                        ArtifactRow("run", "metrics-jsonl", "../outside.jsonl", "outside.jsonl")])
    store.close()
    deleted.unlink()
    (root / "outside.jsonl").write_text("not the store's\n")
    with serve(root / "store") as server, httpx.Client(base_url=f"http://127.0.0.1:{server.port}",
                                                       headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        yield client, root, {"event_file": event_file, "kept": kept}


def _listing(client: httpx.Client, **params) -> dict:
    r = client.get(f"{V2}/runs/run/artifacts", params=params)
    assert r.status_code == 200, r.text
    return r.json()


def test_the_listing_says_where_each_file_is(served):
    client, _, files = served
    rows = {a["name"]: a for a in _listing(client)["artifacts"]}
    assert rows["kept.jsonl"]["file"] == "present" and rows["kept.jsonl"]["uri"] == str(files["kept"])
    assert rows["deleted.jsonl"]["file"] == "gone"
    assert rows["ckpt-1"]["file"] == "remote"
    assert rows["outside.jsonl"]["file"] == "gone"  # a store-relative uri never leaves the store
    events = next(a for a in rows.values() if a["type"] == "tensorboard")
    assert events["file"] == "present" and events["size_bytes"] == files["event_file"].stat().st_size
    assert {a["type"] for a in rows.values()} >= {"image", "tensorboard", "metrics-jsonl", "checkpoint"}


def test_the_listing_pages_by_after_and_filters_by_type(served):
    client, _, _ = served
    every = [a["artifact_id"] for a in _listing(client, limit=1000)["artifacts"]]
    paged, after = [], None
    while True:
        body = _listing(client, limit=4, **({"after": after} if after else {}))
        paged += [a["artifact_id"] for a in body["artifacts"]]
        after = body.get("next_after")
        if not after:
            break
    assert paged == every
    images = _listing(client, type="image")["artifacts"]
    assert images and {a["type"] for a in images} == {"image"} and all(a["file"] == "present" for a in images)


def test_a_download_streams_the_files_bytes_with_its_digest(served):
    client, _, files = served
    rows = {a["name"]: a for a in _listing(client)["artifacts"]}
    events = next(a for a in rows.values() if a["type"] == "tensorboard")
    with client.stream("GET", f"{V2}/runs/run/artifacts/{events['artifact_id']}") as r:
        assert r.status_code == 200
        data = b"".join(r.iter_bytes())
        assert r.headers["etag"] == f'"{events["digest"]}"'
        assert r.headers["content-length"] == str(len(data))
    assert data == files["event_file"].read_bytes()
    image = _listing(client, type="image")["artifacts"][0]
    r = client.get(f"{V2}/runs/run/artifacts/{image['artifact_id']}")
    assert r.headers["content-type"] == "image/png"
    assert "sha256:" + hashlib.sha256(r.content).hexdigest() == image["digest"]


def _error(r: httpx.Response) -> tuple[int, str, str]:
    body = r.json()
    assert body == envelope(body["error"]["code"], body["error"]["message"], r.status_code)
    return r.status_code, body["error"]["code"], body["error"]["message"]


def test_a_gone_or_remote_file_is_a_404_saying_why(served):
    client, _, _ = served
    rows = {a["name"]: a for a in _listing(client)["artifacts"]}
    status, code, message = _error(client.get(f"{V2}/runs/run/artifacts/{rows['deleted.jsonl']['artifact_id']}"))
    assert (status, code) == (404, "NOT_FOUND") and "deleted after it was registered" in message
    status, _, message = _error(client.get(f"{V2}/runs/run/artifacts/{rows['ckpt-1']['artifact_id']}"))
    assert status == 404 and "az://bucket/ckpt-1" in message


@pytest.mark.parametrize(("path", "params", "expected"), [
    ("/runs/nope/artifacts", {}, (404, "NOT_FOUND")),
    ("/runs/run/artifacts/artifact-0000", {}, (404, "NOT_FOUND")),
    ("/runs/run/artifacts/%2E%2E", {}, (400, "INVALID_PATH")),
    ("/runs/%2E%2E/artifacts", {}, (400, "INVALID_PATH")),
    ("/runs/run/artifacts", {"limit": "0"}, (400, "INVALID_ARGUMENT")),
    ("/runs/run/artifacts", {"limit": "99999999999999999999"}, (400, "INVALID_ARGUMENT")),
    ("/runs/run/artifacts", {"after": ".."}, (400, "INVALID_PATH")),
    ("/runs/run/artifacts", {"workspace": "other"}, (403, "WORKSPACE_FORBIDDEN")),
    ("/runs/run/artifacts/x", {"workspace": "other"}, (403, "WORKSPACE_FORBIDDEN")),
    ("/runs/run/artifacts", {"source": "nope"}, (400, "INVALID_SOURCE")),
])
def test_bad_requests_get_the_envelopes_of_every_run_read(served, path, params, expected):
    client, _, _ = served
    assert _error(client.get(V2 + path, params=params))[:2] == expected


def test_without_the_token_nothing_is_listed_or_downloaded(served):
    client, _, _ = served
    base = str(client.base_url)
    assert httpx.get(f"{base}{V2}/runs/run/artifacts").status_code == 401
    assert httpx.get(f"{base}{V2}/runs/run/artifacts/anything").status_code == 401


def test_the_client_lists_and_downloads_a_runs_artifacts(served, tmp_path):
    from taunotebook.client import NotFoundError, PortalClient

    client, _, files = served
    with PortalClient(str(client.base_url), token=TOKEN) as portal:
        listed = list(portal.iter_artifacts("run"))
        assert [a.artifact_id for a in listed] == [a["artifact_id"] for a in _listing(client, limit=1000)["artifacts"]]
        events = next(a for a in listed if a.type == "tensorboard")
        assert events.downloadable and events.size_bytes == files["event_file"].stat().st_size
        written = portal.download_artifact("run", events.artifact_id, tmp_path / "copy")
        assert written == events.size_bytes and (tmp_path / "copy").read_bytes() == files["event_file"].read_bytes()
        gone = next(a for a in listed if a.name == "deleted.jsonl")
        assert not gone.downloadable
        with pytest.raises(NotFoundError, match="deleted after it was registered"):
            portal.download_artifact("run", gone.artifact_id, tmp_path / "never")
        assert [a.type for a in portal.artifacts("run", type="image", limit=2).artifacts] == ["image", "image"]
        assert [a.artifact_id for a in portal.run_handle("run").artifacts()] == [a.artifact_id for a in listed]
