"""A run's histograms, images and text over HTTP (our ``/media``, ``/histograms``, ``/histograms/at``, ``/images``,
``/images/{hex}``, ``/text``): event files written by tensorboardX and imported by ``taunotebook import``, answers
compared with the store reader's values, image bytes with their caching headers and thumbnails, and every bad
input answered in words as every read of a run answers it."""

from __future__ import annotations

import base64
import hashlib
import io
import math
from pathlib import Path

import httpx
import numpy as np
import pytest

from fixtures.config_store import RunsOnlyReader
from fixtures.portal import TOKEN, serve
from fixtures.tb_writers import MEDIA_T0, pictures, write_tensorboardx_media
from tau_collector.expstore import StoreReader
from tau_collector.expstore.store import ExpStore
from tau_collector.expstore.write.artifacts import record_artifacts, store_artifact_bytes
from tau_collector.reads import ArtifactRow
from taunotebook.importer import import_paths
from taunotebook.portal.context import Portal
from taunotebook.portal.dispatch import respond
from taunotebook.portal.params import Query
from taunotebook.portal.routes import data_routes
from taunotebook.portal.sources import Sources
from taunotebook.portal.views.media import THUMBNAIL_SIDE

from .expected import envelope

V2 = "/api/v2/stellar"
STEPS = range(0, 12)
NOTE = "note/text_summary"  # tensorboardX names a text tag so, as TensorBoard shows it
BIG = (240, 320)  # height, width: larger than a thumbnail


def _write_big_run(logdir: Path) -> None:
    """A run logging one large image and a 2x2 text table per step, with tensorboardX."""
    from tensorboardX import SummaryWriter

    writer = SummaryWriter(str(logdir), max_queue=1000, flush_secs=3600)
    for step in (0, 10, 20):
        writer.add_image("big", pictures(1, *BIG, seed=step)[0], step, walltime=MEDIA_T0 + step, dataformats="HWC")
        writer.add_text("table", f"| a | b |\n|---|---|\n| {step} | x |", step, walltime=MEDIA_T0 + step)
        writer.add_scalar("loss", 1.0, step, walltime=MEDIA_T0 + step)
    writer.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("media-routes")
    write_tensorboardx_media(root / "logs" / "run", steps=STEPS)
    _write_big_run(root / "logs" / "big")
    import_paths([str(root / "logs")], root / "store", clustering="off")
    store = ExpStore(root / "store", writable=True)
    # A stored "image" whose bytes are no image (a writer's bug): its thumbnail is refused in words.
    digest, rel, size = store_artifact_bytes(store, b"not an image at all")
    record_artifacts(store, [ArtifactRow("big", "image", rel, "broken", step=5, digest=digest, size_bytes=size,
                                         content_type="image/png", rank=0, tags={"width": 999, "height": 999})])
    # One whose bytes would run as a document: served as bytes to download, never as itself.
    svg, rel, size = store_artifact_bytes(store, b"<svg xmlns='http://www.w3.org/2000/svg'><script>x</script></svg>")
    record_artifacts(store, [ArtifactRow("big", "image", rel, "vector", step=5, digest=svg, size_bytes=size,
                                         content_type="image/svg+xml", rank=0)])
    # Five images in one event, registered in reverse: listed in their event's order.
    record_artifacts(store, [ArtifactRow("big", "image", rel, "many", step=7, digest=svg, size_bytes=size,
                                         content_type="image/svg+xml", rank=rank, artifact_id=f"many-{9 - rank}")
                             for rank in range(5)])
    store.close()
    reader = StoreReader(ExpStore(root / "store"))
    with serve(root / "store") as server, httpx.Client(base_url=f"http://127.0.0.1:{server.port}",
                                                       headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        yield client, reader, {"broken": digest, "svg": svg, "store": root / "store"}


def _get(client: httpx.Client, path: str, **params) -> dict:
    r = client.get(V2 + path, params=params)
    assert r.status_code == 200, r.text
    return r.json()


def _error(r: httpx.Response) -> tuple[int, str, str]:
    body = r.json()
    assert body == envelope(body["error"]["code"], body["error"]["message"], r.status_code)
    return r.status_code, body["error"]["code"], body["error"]["message"]


def _nulls(values) -> list:
    return [None if not math.isfinite(v) else v for v in values]


# -- the answers, against the store reader's ---------------------------------------------------------------------


def test_media_lists_the_runs_tags_as_the_reader_does(served):
    client, reader, _ = served
    body = _get(client, "/runs/run/media")
    assert set(body) == {"metadata", "run_id", "tags", "unavailable"} and body["unavailable"] is None
    assert body["tags"] == [{"kind": t.kind, "tag": t.tag, "count": t.count, "step_min": t.step_min,
                             "step_max": t.step_max} for t in reader.media_tags("run")]
    kinds = {(t["kind"], t["tag"]) for t in body["tags"]}
    assert {("histograms", "weights"), ("images", "batch"), ("images", "sample"), ("text", NOTE)} <= kinds
    weights = next(t for t in body["tags"] if t["tag"] == "weights")
    assert (weights["count"], weights["step_min"], weights["step_max"]) == (len(STEPS), 0, STEPS[-1])


def test_histograms_over_the_whole_run_are_the_readers(served):
    client, reader, _ = served
    body = _get(client, "/runs/run/histograms", tag="weights")
    expected = reader.histograms("run", "weights")
    assert body["steps"] == list(STEPS) == expected.steps.tolist()
    assert (body["total"], body["reduced"]) == (len(STEPS), False)
    assert body["basis_points"] == list(expected.basis_points)
    assert body["wall_times"] == pytest.approx([MEDIA_T0 + s for s in STEPS])
    assert body["summary"] == [_nulls(row) for row in expected.summary.tolist()]
    assert body["buckets"] == [[_nulls(b) for b in step.tolist()] for step in expected.buckets]
    assert body["summary"][3][0] == 1000  # count: add_histogram of 1000 values


def test_a_reduced_histogram_keeps_the_asked_steps_and_buckets_false_reads_summaries(served):
    client, reader, _ = served
    body = _get(client, "/runs/run/histograms", tag="weights", max_steps="3", keep="7,5", buckets="false")
    expected = reader.histograms("run", "weights", max_steps=3, keep=(7, 5), buckets=False)
    assert body["steps"] == expected.steps.tolist() and {5, 7} <= set(body["steps"])
    assert body["reduced"] is True and body["total"] == len(STEPS) and body["buckets"] is None
    ranged = _get(client, "/runs/run/histograms", tag="weights", step_min="3", step_max="4")
    assert ranged["steps"] == [3, 4] and ranged["total"] == 2
    assert _get(client, "/runs/run/histograms", tag="weights", step_min="100")["steps"] == []


def test_a_histogram_read_lists_the_runs_tags_only_for_an_empty_answer(served):
    """A run's tag list costs what the run holds (every tag's files, every image row; after each change of a live
    store, again): a read of one tag that has values does without it, a tag without any is a 404 as before."""
    import orjson

    _, reader, _ = served
    listed = []

    class Listing(StoreReader):
        def media_tags(self, run_id):
            listed.append(run_id)
            return super().media_tags(run_id)

    routes = data_routes(Portal(Sources(Listing(reader.store))))
    found = respond(routes, f"{V2}/runs/run/histograms", "GET", Query([("tag", "weights"), ("buckets", "false")]))
    assert found.status_code == 200 and orjson.loads(found.body)["steps"] == list(STEPS)
    assert listed == []
    missing = respond(routes, f"{V2}/runs/run/histograms", "GET", Query([("tag", "nope")]))
    assert missing.status_code == 404 and "no histogram tag 'nope'" in orjson.loads(missing.body)["error"]["message"]
    outside = respond(routes, f"{V2}/runs/run/histograms", "GET", Query([("tag", "weights"), ("step_min", "100")]))
    assert outside.status_code == 200 and orjson.loads(outside.body)["steps"] == []
    assert listed == ["run", "run"]


def test_a_histogram_at_one_step_is_exactly_that_step(served):
    client, reader, _ = served
    body = _get(client, "/runs/run/histograms/at", tag="raw", step="4")
    expected = reader.histogram_at("run", "raw", 4)
    assert body["steps"] == [4] and body["buckets"] == [[_nulls(b) for b in expected.buckets[0].tolist()]]
    assert body["summary"][0][0] == 7  # add_histogram_raw(num=7)
    status, code, message = _error(client.get(f"{V2}/runs/run/histograms/at", params={"tag": "raw", "step": "99"}))
    assert (status, code) == (404, "NOT_FOUND") and "'raw' at step 99" in message


def test_images_at_the_nearest_step_are_every_image_of_it(served):
    client, reader, _ = served
    body = _get(client, "/runs/run/images", tag="batch", step="6")
    expected = reader.images_near("run", "batch", 6)
    assert (body["requested_step"], body["step"]) == (6, 6)
    assert [i["digest"] for i in body["images"]] == [r.digest for r in expected.images]
    # add_images of 4 pictures is one grid image, as TensorBoard shows it; every image of the step is listed.
    assert [i["index"] for i in body["images"]] == list(range(len(expected.images)))
    first = body["images"][0]
    hexdigest = first["digest"].removeprefix("sha256:")
    assert first["url"] == f"{V2}/runs/run/images/{hexdigest}" and first["thumbnail_url"] == first["url"] + "?thumbnail=1"
    assert first["content_type"] == "image/png" and first["size_bytes"] > 0
    beyond = _get(client, "/runs/run/images", tag="sample", step=str(2**63 - 1))
    assert (beyond["requested_step"], beyond["step"]) == (2**63 - 1, STEPS[-1])
    big = _get(client, "/runs/big/images", tag="big", step="15")
    assert big["step"] == 10  # 10 and 20 are as near: the earlier
    assert (big["images"][0]["width"], big["images"][0]["height"]) == (BIG[1], BIG[0])


def test_images_of_a_step_are_in_their_events_order_and_a_bound_is_said(served, monkeypatch):
    from tau_collector.expstore.read import media_reads

    client, _, _ = served
    body = _get(client, "/runs/big/images", tag="many", step="7")
    assert [i["index"] for i in body["images"]] == [0, 1, 2, 3, 4] and body["metadata"]["partial"] is False
    monkeypatch.setattr(media_reads, "MAX_IMAGES_AT", 3)
    body = _get(client, "/runs/big/images", tag="many", step="7")
    assert [i["index"] for i in body["images"]] == [0, 1, 2] and body["metadata"]["partial"] is True
    assert "holds more images than an answer lists: the first 3" in body["metadata"]["availability"]["reasons"][0]


def test_image_bytes_are_served_with_caching_headers_and_304(served):
    client, _, _ = served
    image = _get(client, "/runs/run/images", tag="sample", step="2")["images"][0]
    r = client.get(image["url"])
    assert r.status_code == 200 and r.headers["content-type"] == "image/png"
    assert "sha256:" + hashlib.sha256(r.content).hexdigest() == image["digest"]
    assert r.headers["etag"] == f'"{image["digest"]}"'
    assert r.headers["cache-control"] == "private, max-age=31536000, immutable"
    assert r.headers["x-content-type-options"] == "nosniff"
    again = client.get(image["url"], headers={"If-None-Match": r.headers["etag"]})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == r.headers["etag"]
    assert client.get(image["url"], headers={"If-None-Match": '"sha256:other"'}).status_code == 200
    # A picture already within a thumbnail's size is its own thumbnail.
    thumb = client.get(image["thumbnail_url"])
    assert thumb.status_code == 200 and thumb.content == r.content and thumb.headers["etag"] != r.headers["etag"]


def test_small_images_ride_in_the_answer_when_asked_within_their_bounds(served, monkeypatch):
    """``inline_thumbnails=true``: an image that is its own thumbnail and small carries its bytes as a data: URI
    (the page's cursor then needs no second request); a large image, an SVG, one over either bound: null."""
    from taunotebook.portal.views import media as media_view

    client, _, _ = served
    plain = _get(client, "/runs/run/images", tag="sample", step="2")
    assert all("thumbnail_data" not in i for i in plain["images"])  # only when asked: other clients' answers as before
    image = _get(client, "/runs/run/images", tag="sample", step="2", inline_thumbnails="true")["images"][0]
    data = client.get(image["url"]).content
    assert 0 < len(data) <= media_view.MAX_INLINE_THUMBNAIL_BYTES and image["width"] <= THUMBNAIL_SIDE
    assert image["thumbnail_data"] == "data:image/png;base64," + base64.b64encode(data).decode("ascii")
    assert {k: v for k, v in image.items() if k != "thumbnail_data"} == plain["images"][0]
    big = _get(client, "/runs/big/images", tag="big", step="20", inline_thumbnails="1")
    assert big["images"][0]["thumbnail_data"] is None  # larger than a thumbnail: its thumbnail_url serves one
    svg = _get(client, "/runs/big/images", tag="many", step="7", inline_thumbnails="true")
    assert [i["thumbnail_data"] for i in svg["images"]] == [None] * len(svg["images"])  # never a type that runs
    monkeypatch.setattr(media_view, "MAX_INLINE_THUMBNAIL_BYTES", len(data) - 1)
    assert _get(client, "/runs/run/images", tag="sample", step="2",
                inline_thumbnails="true")["images"][0]["thumbnail_data"] is None
    monkeypatch.undo()
    monkeypatch.setattr(media_view, "MAX_INLINE_BYTES", len(data) - 1)  # the answer's budget
    assert _get(client, "/runs/run/images", tag="sample", step="2",
                inline_thumbnails="true")["images"][0]["thumbnail_data"] is None
    r = client.get(V2 + "/runs/run/images", params={"tag": "sample", "step": "2", "inline_thumbnails": "maybe"})
    assert _error(r) == (400, "INVALID_ARGUMENT", "inline_thumbnails must be true or false")


def test_a_thumbnail_is_a_small_png_of_a_large_image(served):
    from PIL import Image

    client, _, _ = served
    image = _get(client, "/runs/big/images", tag="big", step="20")["images"][0]
    r = client.get(image["thumbnail_url"])
    assert r.status_code == 200 and r.headers["content-type"] == "image/png"
    assert r.headers["cache-control"] == "private, max-age=31536000, immutable"
    with Image.open(io.BytesIO(r.content)) as thumb:
        assert thumb.format == "PNG" and max(thumb.size) == THUMBNAIL_SIDE
        assert thumb.size == (THUMBNAIL_SIDE, THUMBNAIL_SIDE * BIG[0] // BIG[1])
        full = Image.open(io.BytesIO(client.get(image["url"]).content)).resize(thumb.size)
        # The same picture, smaller: close to the full image scaled down.
        assert np.abs(np.asarray(thumb, dtype=float) - np.asarray(full, dtype=float)).mean() < 40
    assert client.get(image["thumbnail_url"], headers={"If-None-Match": r.headers["etag"]}).status_code == 304


def test_an_image_that_cannot_be_decoded_has_no_thumbnail_in_words(served):
    client, _, files = served
    hexdigest = files["broken"].removeprefix("sha256:")
    assert client.get(f"{V2}/runs/big/images/{hexdigest}").content == b"not an image at all"
    status, code, message = _error(client.get(f"{V2}/runs/big/images/{hexdigest}", params={"thumbnail": "1"}))
    assert (status, code) == (422, "UNDECODABLE_IMAGE") and "not an image" in message
    assert str(files["store"]) not in message


def test_an_image_type_a_browser_would_run_is_served_as_bytes(served):
    client, _, files = served
    r = client.get(f"{V2}/runs/big/images/{files['svg'].removeprefix('sha256:')}")
    assert r.status_code == 200 and r.headers["content-type"] == "application/octet-stream"
    assert "sandbox" in r.headers["content-security-policy"]


def test_text_at_the_nearest_step_is_the_readers(served):
    client, reader, _ = served
    body = _get(client, "/runs/run/text", tag=NOTE, step="3")
    expected = reader.text_at("run", NOTE, 3)
    assert body["step"] == 3 and body["text"] == list(expected.text) == ["step **3**: naïve ✓"]
    assert body["shape"] == list(expected.shape) and body["wall_time"] == pytest.approx(MEDIA_T0 + 3)
    table = _get(client, "/runs/big/text", tag="table/text_summary", step="-5")
    assert (table["requested_step"], table["step"]) == (-5, 0) and "| 0 | x |" in table["text"][0]


# -- bad input: the answers every read of a run gives, and the media routes' own ------------------------------------


@pytest.mark.parametrize(("path", "params", "expected", "words"), [
    ("/runs/run/histograms", {}, (400, "INVALID_ARGUMENT"), "tag is required"),
    ("/runs/run/histograms", {"tag": "nope"}, (404, "NOT_FOUND"), "no histogram tag 'nope'"),
    ("/runs/run/histograms", {"tag": NOTE}, (404, "NOT_FOUND"), "no histogram tag"),  # a text tag
    ("/runs/run/histograms", {"tag": "../../../etc/passwd"}, (404, "NOT_FOUND"), "no histogram tag"),
    ("/runs/run/histograms", {"tag": "weights", "step_min": str(2**63)}, (400, "INVALID_ARGUMENT"),
     "step_min must be an integer"),
    ("/runs/run/histograms", {"tag": "weights", "step_max": "1e3"}, (400, "INVALID_ARGUMENT"),
     "step_max must be an integer"),
    ("/runs/run/histograms", {"tag": "weights", "step_min": "5", "step_max": "4"}, (400, "INVALID_ARGUMENT"),
     "step_min must be <= step_max"),
    ("/runs/run/histograms", {"tag": "weights", "max_steps": "0"}, (400, "INVALID_ARGUMENT"), "max_steps"),
    ("/runs/run/histograms", {"tag": "weights", "max_steps": "10001"}, (400, "INVALID_ARGUMENT"), "max_steps"),
    ("/runs/run/histograms", {"tag": "weights", "max_steps": "9" * 30}, (400, "INVALID_ARGUMENT"), "max_steps"),
    ("/runs/run/histograms", {"tag": "weights", "keep": ",".join(map(str, range(65)))}, (400, "INVALID_ARGUMENT"),
     "keep must name at most 64"),
    ("/runs/run/histograms", {"tag": "weights", "keep": "1,x"}, (400, "INVALID_ARGUMENT"), "keep must be an integer"),
    ("/runs/run/histograms", {"tag": "weights", "keep": str(-(2**63) - 1)}, (400, "INVALID_ARGUMENT"), "keep"),
    ("/runs/run/histograms", {"tag": "weights", "buckets": "maybe"}, (400, "INVALID_ARGUMENT"), "buckets"),
    ("/runs/run/histograms/at", {"tag": "weights"}, (400, "INVALID_ARGUMENT"), "step is required"),
    ("/runs/run/histograms/at", {"tag": "weights", "step": str(2**63)}, (400, "INVALID_ARGUMENT"),
     "step must be an integer"),
    ("/runs/run/histograms/at", {"tag": "nope", "step": "1"}, (404, "NOT_FOUND"), "no histogram 'nope'"),
    ("/runs/run/images", {"step": "1"}, (400, "INVALID_ARGUMENT"), "tag is required"),
    ("/runs/run/images", {"tag": "sample", "step": "٣"}, (400, "INVALID_ARGUMENT"), "step must be an integer"),
    ("/runs/run/images", {"tag": "sample", "step": str(-(2**63) - 1)}, (400, "INVALID_ARGUMENT"), "step"),
    ("/runs/run/images", {"tag": "../sample", "step": "1"}, (404, "NOT_FOUND"), "no image tag"),
    ("/runs/run/images", {"tag": "weights", "step": "1"}, (404, "NOT_FOUND"), "no image tag"),
    ("/runs/run/text", {"tag": NOTE}, (400, "INVALID_ARGUMENT"), "step is required"),
    ("/runs/run/text", {"tag": "nope", "step": "1"}, (404, "NOT_FOUND"), "no text tag 'nope'"),
    ("/runs/run/text", {"tag": NOTE, "step": "99999999999999999999"}, (400, "INVALID_ARGUMENT"), "step"),
    ("/runs/run/images/" + "0" * 64, {}, (404, "NOT_FOUND"), "holds no image"),
    ("/runs/run/images/not-hex", {}, (404, "NOT_FOUND"), "holds no image"),
    ("/runs/run/images/" + "A" * 64, {}, (404, "NOT_FOUND"), "holds no image"),
    ("/runs/run/images/%2E%2E", {}, (400, "INVALID_PATH"), "path identifier is invalid"),
    ("/runs/run/images/..%2F..%2Fetc", {}, (400, "INVALID_PATH"), "path identifier is invalid"),
    ("/runs/run/images/" + "0" * 64, {"thumbnail": "yes"}, (400, "INVALID_ARGUMENT"), "thumbnail"),
    ("/runs/nope/media", {}, (404, "NOT_FOUND"), ""),
    ("/runs/nope/histograms", {"tag": "weights"}, (404, "NOT_FOUND"), ""),
    ("/runs/%2E%2E/media", {}, (400, "INVALID_PATH"), ""),
    ("/runs/run/media", {"workspace": "other"}, (403, "WORKSPACE_FORBIDDEN"), ""),
    ("/runs/run/images", {"tag": "sample", "step": "1", "workspace": "other"}, (403, "WORKSPACE_FORBIDDEN"), ""),
    ("/runs/run/text", {"tag": NOTE, "step": "1", "source": "nope"}, (400, "INVALID_SOURCE"), ""),
])
def test_bad_requests_are_answered_in_words(served, path, params, expected, words):
    client, _, _ = served
    status, code, message = _error(client.get(V2 + path, params=params))
    assert (status, code) == expected and words in message, message


def test_an_image_of_another_run_is_not_served_through_this_one(served):
    client, _, _ = served
    image = _get(client, "/runs/big/images", tag="big", step="0")["images"][0]
    hexdigest = image["digest"].removeprefix("sha256:")
    assert _error(client.get(f"{V2}/runs/run/images/{hexdigest}"))[:2] == (404, "NOT_FOUND")


def test_without_the_token_nothing_is_answered(served):
    client, _, _ = served
    base = str(client.base_url)
    for path in ("media", "histograms?tag=weights", "histograms/at?tag=weights&step=1", "images?tag=sample&step=1",
                 "images/" + "0" * 64, "text?tag=note%2Ftext_summary&step=1"):
        assert httpx.get(f"{base}{V2}/runs/run/{path}").status_code == 401, path


def test_a_source_without_media_says_so(served):
    _, reader, _ = served
    api = Portal(Sources(RunsOnlyReader(reader)))
    routes = data_routes(api)
    response = respond(routes, f"{V2}/runs/run/media", "GET", Query([]))
    assert response.status_code == 200
    import orjson

    body = orjson.loads(response.body)
    assert body["tags"] == [] and "live with the run's store" in body["unavailable"]
    assert body["metadata"]["availability"]["state"] == "unavailable"
    for path, query in (("histograms", [("tag", "weights")]), ("text", [("tag", NOTE), ("step", "1")]),
                        ("images", [("tag", "sample"), ("step", "1")]), ("images/" + "0" * 64, [])):
        response = respond(routes, f"{V2}/runs/run/{path}", "GET", Query(query))
        assert response.status_code == 404, path
        assert "live with the run's store" in orjson.loads(response.body)["error"]["message"]


def _rfc3339(seconds: float) -> str:
    from tau_collector.taugrid.gojson import format_time

    return format_time(round(seconds * 1e6) * 1000)  # microseconds, as the store keeps times


def test_a_run_that_logs_only_media_is_listed_and_its_media_answer(tmp_path):
    """A job logging only histograms and images (no scalar): the import registers the run as points would."""
    from tensorboardX import SummaryWriter

    writer = SummaryWriter(str(tmp_path / "logs" / "media_only"), max_queue=1000, flush_secs=3600)
    for step in (0, 5, 9):
        writer.add_histogram("weights", np.arange(50.0) + step, step, walltime=MEDIA_T0 + step)
        writer.add_image("sample", pictures(1, 8, 8, seed=step)[0], step, walltime=MEDIA_T0 + step,
                         dataformats="HWC")
    writer.close()
    summary = import_paths([str(tmp_path / "logs")], tmp_path / "store", project="p", experiment="e", group="g",
                           clustering="off")
    assert summary.run_ids == ["media_only"] and summary.metrics == 0
    with serve(tmp_path / "store") as server, httpx.Client(base_url=f"http://127.0.0.1:{server.port}",
                                                           headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        run = _get(client, "/runs/media_only")["run"]
        assert (run["project"], run["experiment_id"], run["run_group_id"]) == ("p", "e", "g")
        assert (run["state"], run["tags"], run["metric_names"]) == ("completed", {"import.kind": "tensorboard"}, [])
        assert (run["started_at"], run["completed_at"]) == (_rfc3339(MEDIA_T0), _rfc3339(MEDIA_T0 + 9))  # its media's
        listed = _get(client, "/experiments/e/runs")
        assert [r["run_id"] for r in listed["runs"]] == ["media_only"]
        media = _get(client, "/runs/media_only/media")
        assert {(t["kind"], t["tag"], t["count"], t["step_min"], t["step_max"]) for t in media["tags"]} == {
            ("histograms", "weights", 3, 0, 9), ("images", "sample", 3, 0, 9)}
        assert _get(client, "/runs/media_only/histograms", tag="weights")["steps"] == [0, 5, 9]


def test_the_routes_are_in_the_openapi_document(served):
    client, _, _ = served
    paths = client.get("/openapi.json").json()["paths"]
    for route in ("media", "histograms", "histograms/at", "images", "images/{digest}", "text"):
        assert f"{V2}/runs/{{run_id}}/{route}" in paths
    params = {p["name"]: p for p in paths[f"{V2}/runs/{{run_id}}/histograms"]["get"]["parameters"]}
    assert params["max_steps"]["schema"] == {"type": "integer", "minimum": 1, "maximum": 10000, "default": 500}


@pytest.mark.parametrize(("route", "path_parameters", "query"), [
    ("media", {"run_id": "run"}, {}),
    ("histograms", {"run_id": "run"}, {"tag": "weights", "max_steps": 4, "keep": "3"}),
    ("histograms", {"run_id": "run"}, {"tag": "constant", "buckets": "false"}),
    ("histograms/at", {"run_id": "run"}, {"tag": "raw", "step": 2}),
    ("images", {"run_id": "run"}, {"tag": "batch", "step": 2}),
    ("images", {"run_id": "big"}, {"tag": "broken", "step": 2}),
    ("text", {"run_id": "big"}, {"tag": "table/text_summary", "step": 10}),
])
def test_the_answers_match_the_document(served, route, path_parameters, query):
    import schemathesis
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    client, _, _ = served
    base_url = str(client.base_url).rstrip("/")
    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json")
    case = schema[f"{V2}/runs/{{run_id}}/{route}"]["GET"].Case(path_parameters=path_parameters, query=query)
    response = case.call(base_url=base_url, headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200, response.text
    case.validate_response(response, checks=[status_code_conformance, content_type_conformance,
                                             response_schema_conformance])


def test_the_client_reads_the_same_answers(served):
    from taunotebook.client import NotFoundError, PortalClient

    client, reader, _ = served
    with PortalClient(str(client.base_url), token=TOKEN) as portal:
        assert [t.tag for t in portal.media_tags("run").tags] == [t.tag for t in reader.media_tags("run")]
        series = portal.histograms("run", "weights", max_steps=3, keep=[7], buckets=False)
        assert series.steps == tuple(reader.histograms("run", "weights", max_steps=3, keep=(7,)).steps.tolist())
        assert series.buckets is None and 7 in series.steps
        assert portal.histogram_at("run", "raw", 2).steps == (2,)
        images = portal.images_near("run", "sample", 4)
        data = portal.image_bytes("run", images.images[0].digest, thumbnail=False)
        assert "sha256:" + hashlib.sha256(data).hexdigest() == images.images[0].digest
        assert portal.text_at("run", NOTE, 4).text == ("step **4**: naïve ✓",)
        with pytest.raises(NotFoundError, match="no text tag"):
            portal.text_at("run", "nope", 1)
        with pytest.raises(NotFoundError, match="holds no image"):
            portal.image_bytes("run", "0" * 64, thumbnail=True)
