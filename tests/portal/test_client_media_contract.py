"""``PortalClient``'s media reads against the media route contract, over a recorded transport: the query each
sends, the answer each decodes, and the bad input each refuses before any request (naming the parameter)."""

from __future__ import annotations

import json
import math

import httpx
import pytest

from taunotebook.client import Histograms, ImagesAt, InternalError, MediaTags, NotFoundError, PortalClient, TextAt

V2 = "/api/v2/stellar/runs/r%2F1"
HEX = "ab" * 32
META = {"generated_at": "2026-12-03T10:00:00Z", "provenance": {"requested_source": "local",
        "served_sources": ["local"]}, "freshness": {"state": "fresh"}, "availability": {"state": "complete"}}
ANSWERS = {
    "/media": {"metadata": META, "run_id": "r/1", "unavailable": None, "tags": [
        {"kind": "histograms", "tag": "w", "count": 3, "step_min": 0, "step_max": 2},
        {"kind": "images", "tag": "sample", "count": 3, "step_min": 0, "step_max": 2}]},
    "/histograms": {"metadata": META, "run_id": "r/1", "tag": "w", "total": 3, "reduced": False,
                    "basis_points": [0, 5000, 10000], "steps": [0, 1, 2], "wall_times": [1.5, 2.5, 3.5],
                    "summary": [[3, 0, 1, 0, 0.5, 1], [3, 0, 1, 0, 0.5, 1], [3, 0, 1, 0, None, 1]],
                    "buckets": [[[0, 1, 3]], [[0, 1, 3]], [["-Infinity", 1, 3]]]},
    "/images": {"metadata": META, "run_id": "r/1", "tag": "sample", "requested_step": 5, "step": 2, "images": [
        {"index": 0, "digest": f"sha256:{HEX}", "content_type": "image/png", "width": None, "height": 5,
         "caption": "a cat", "size_bytes": 99, "url": f"{V2}/images/{HEX}", "thumbnail_url": f"{V2}/images/{HEX}?thumbnail=1",
         "new_field": 1}]},
    "/text": {"metadata": META, "run_id": "r/1", "tag": "note", "requested_step": 1, "step": 1, "wall_time": 2.5,
              "shape": [2], "text": ["a", "b"]},
}


@pytest.fixture
def recorded():
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        path = request.url.raw_path.decode().split("?")[0]
        assert path.startswith(V2), path
        route = path[len(V2):]
        if route == f"/images/{HEX}":
            return httpx.Response(200, content=b"\x89PNG...", headers={"content-type": "image/png"})
        if route == "/images/" + "cd" * 32:
            return httpx.Response(200, content=b"<html>", headers={"content-type": "text/html"})
        if route == "/histograms/at" and request.url.params["step"] == "7":
            body = {"error": {"code": "NOT_FOUND", "message": "histogram tag 'w' has no value at step 7",
                              "classification": "not_found", "retryable": False}}
            return httpx.Response(404, json=body)
        key = "/histograms" if route == "/histograms/at" else route
        return httpx.Response(200, json=ANSWERS[key])

    client = PortalClient("http://portal.test", token="t", project="p", source="local",
                          transport=httpx.MockTransport(answer), retries=0)
    yield client, seen
    client.close()


def _query(request: httpx.Request) -> dict[str, str]:
    return dict(request.url.params)


def test_media_tags_decode_each_tag_and_name_the_project_and_source(recorded):
    client, seen = recorded
    media = client.media_tags("r/1")
    assert isinstance(media, MediaTags) and media.unavailable is None
    assert [(t.kind, t.tag, t.count, t.step_max) for t in media.tags] == [("histograms", "w", 3, 2),
                                                                          ("images", "sample", 3, 2)]
    assert [t.tag for t in media.of("images")] == ["sample"]
    assert _query(seen[-1]) == {"source": "local", "project": "p"}
    with pytest.raises(ValueError, match="kind must be one of"):
        media.of("audio")


def test_histograms_send_the_range_the_reduction_and_the_kept_steps(recorded):
    client, seen = recorded
    h = client.histograms("r/1", "w", step_min=0, step_max=2**63 - 1, max_steps=200, keep=[1, 2], buckets=False)
    assert isinstance(h, Histograms)
    assert _query(seen[-1]) == {"source": "local", "project": "p", "tag": "w", "step_min": "0",
                                "step_max": str(2**63 - 1), "max_steps": "200", "keep": "1,2", "buckets": "false"}
    assert h.steps == (0, 1, 2) and h.wall_times == (1.5, 2.5, 3.5)
    assert h.summary[0] == (3.0, 0.0, 1.0, 0.0, 0.5, 1.0) and math.isnan(h.summary[2][4])
    assert h.buckets[2][0][0] == -math.inf


def test_histogram_at_asks_for_one_step_and_a_missing_step_is_the_portals_404(recorded):
    client, seen = recorded
    assert client.histogram_at("r/1", "w", 2).steps == (0, 1, 2)
    assert _query(seen[-1])["step"] == "2"
    with pytest.raises(NotFoundError, match="no value at step 7"):
        client.histogram_at("r/1", "w", 7)


def test_images_near_list_every_image_and_image_bytes_fetch_the_thumbnail(recorded):
    client, seen = recorded
    near = client.images_near("r/1", "sample", 5)
    assert isinstance(near, ImagesAt) and (near.requested_step, near.step) == (5, 2)
    (image,) = near.images
    assert (image.width, image.height, image.caption, image.extra) == (None, 5, "a cat", {"new_field": 1})
    assert client.image_bytes("r/1", image.digest) == b"\x89PNG..."
    assert _query(seen[-1]) == {"source": "local", "project": "p", "thumbnail": "1"}
    assert client.image_bytes("r/1", HEX, thumbnail=False) == b"\x89PNG..."
    assert "thumbnail" not in _query(seen[-1])
    assert client.image_bytes("r/1", "cd" * 32, thumbnail=False) == b"<html>"  # a stored file is served as stored
    with pytest.raises(InternalError, match="not a PNG"):
        client.image_bytes("r/1", "cd" * 32)


def test_text_at_keeps_the_shape_and_the_strings(recorded):
    client, _ = recorded
    text = client.text_at("r/1", "note", 1)
    assert isinstance(text, TextAt) and text.shape == (2,) and text.text == ("a", "b") and text.wall_time == 2.5


@pytest.mark.parametrize(("call", "message"), [
    (lambda c: c.histograms("r", "w", max_steps=0), "max_steps must be a whole number in 1..10000"),
    (lambda c: c.histograms("r", "w", max_steps=10001), "max_steps must be a whole number in 1..10000"),
    (lambda c: c.histograms("r", "w", step_min=2**63), "step_min=9223372036854775808 is outside int64"),
    (lambda c: c.histograms("r", "", keep=[1]), "tag must be a non-empty string"),
    (lambda c: c.images_near("r", "s", True), "step must be a whole number"),
    (lambda c: c.text_at("r", "s", 1.5), "step must be a whole number"),
    (lambda c: c.histograms("r", "w", keep=["1"]), r"keep\[\] must be a whole number"),
    (lambda c: c.image_bytes("r", "../etc/passwd"), "digest must be an image's sha256"),
    (lambda c: c.media_tags(""), "run_id must be a non-empty string"),
])
def test_bad_input_is_refused_before_any_request_naming_the_parameter(recorded, call, message):
    client, seen = recorded
    with pytest.raises((ValueError, TypeError), match=message):
        call(client)
    assert seen == []


def test_a_portal_without_the_routes_answers_route_not_found():
    body = json.dumps({"error": {"code": "NOT_FOUND", "message": "route was not found", "classification": "not_found",
                                 "retryable": False}})
    client = PortalClient("http://portal.test", transport=httpx.MockTransport(
        lambda r: httpx.Response(404, content=body, headers={"content-type": "application/json"})), retries=0)
    with pytest.raises(NotFoundError, match="route was not found"):
        client.media_tags("r")
