"""``PortalClient``'s media reads against the real Portal over a store that ``taunotebook import`` made from a
tensorboardX logdir (``add_histogram``, ``add_image(s)``, ``add_text``): what each read answers, decoded."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest

from fixtures.media_store import MEDIA_STEPS
from fixtures.portal import TOKEN, serve
from taunotebook.client import NotFoundError, PortalClient

STEPS = list(MEDIA_STEPS)


@pytest.fixture(scope="module")
def client(tbx_media_store) -> Iterator[PortalClient]:
    store, _ = tbx_media_store
    with serve(store) as server, PortalClient(f"http://127.0.0.1:{server.port}", TOKEN, retries=0) as c:
        yield c


def test_the_runs_media_tags_with_their_counts_and_steps(client, tbx_media_store):
    _, run_id = tbx_media_store
    media = client.media_tags(run_id)
    assert media.unavailable is None and media.run_id == run_id
    tags = {(t.kind, t.tag): (t.count, t.step_min, t.step_max) for t in media.tags}
    assert tags == {("histograms", n): (3, 0, 20) for n in ("weights", "constant", "ints", "raw")} | {
        ("images", "sample"): (3, 0, 20), ("images", "batch"): (3, 0, 20), ("text", "note/text_summary"): (3, 0, 20)}


def test_a_histogram_over_its_steps_and_at_one_step(client, tbx_media_store):
    _, run_id = tbx_media_store
    h = client.histograms(run_id, "raw")
    assert h.steps == tuple(STEPS) and h.total == 3 and not h.reduced
    assert len(h.summary) == 3 and h.summary[0][0] == 7.0  # the raw histogram's count
    assert h.buckets is not None and sum(b[2] for b in h.buckets[1]) == 7.0
    at = client.histogram_at(run_id, "raw", 10)
    assert at.steps == (10,) and at.buckets[0] == h.buckets[1]
    bands = client.histograms(run_id, "weights", step_min=10, buckets=False)
    assert bands.steps == (10, 20) and bands.buckets is None
    with pytest.raises(NotFoundError):
        client.histogram_at(run_id, "raw", 11)
    with pytest.raises(NotFoundError):
        client.histograms(run_id, "no such tag")


def test_images_near_a_step_and_their_bytes(client, tbx_media_store):
    _, run_id = tbx_media_store
    near = client.images_near(run_id, "batch", 14)
    assert (near.requested_step, near.step) == (14, 10) and len(near.images) >= 1
    sample = client.images_near(run_id, "sample", 16)
    assert sample.step == 20
    (image,) = sample.images
    full = client.image_bytes(run_id, image.digest, thumbnail=False)
    assert image.content_type == "image/png" and "sha256:" + hashlib.sha256(full).hexdigest() == image.digest
    assert client.image_bytes(run_id, image.digest)[:8] == b"\x89PNG\r\n\x1a\n"  # the thumbnail
    with pytest.raises(NotFoundError):
        client.image_bytes(run_id, "0" * 64)


def test_text_at_the_nearest_step(client, tbx_media_store):
    _, run_id = tbx_media_store
    text = client.text_at(run_id, "note/text_summary", 999)
    assert text.step == 20 and text.text == ("step **20**: naïve ✓",)
