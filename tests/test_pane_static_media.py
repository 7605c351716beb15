"""The loss pane's saved picture keeps the run's media: against a real Portal over a store imported from a
tensorboardX logdir (``add_histogram``, ``add_image(s)``, ``add_text``), the static output holds each histogram tag
drawn (bands and the histogram at the step), the images at the step as ``data:`` URIs whose bytes are the stored
images, and the text at the step; and a budget bounds what it keeps, saying in words what it left out."""

from __future__ import annotations

import base64
import hashlib
import html
import io
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from tensorboard.compat.proto import event_pb2

from fixtures.pane import make_pane, wait_until
from fixtures.portal import TOKEN, serve
from fixtures.tb_writers import pictures, tf_image_value, write_events, write_tensorboardx_media
from taunotebook import pane_static_media
from taunotebook.client import PortalClient
from taunotebook.client.media_models import MediaTag
from taunotebook.importer import import_paths
from taunotebook.pane_static_media import (
    MAX_IMAGES_PER_TAG,
    StaticHistogram,
    StaticMedia,
    histogram_png,
    media_html,
)


@pytest.fixture(scope="module")
def imported(tbx_media_store) -> tuple[Path, str]:
    """The shared store imported from tensorboardX's event file (tests/fixtures/media_store.py)."""
    return tbx_media_store


@pytest.fixture(scope="module")
def portal(imported) -> Iterator[PortalClient]:
    store, _ = imported
    with serve(store) as server, PortalClient(f"http://127.0.0.1:{server.port}", TOKEN, retries=0) as c:
        yield c


def stored_image(store: Path, digest: str) -> bytes:
    hex_digest = digest.removeprefix("sha256:")
    return (store / "artifacts" / "sha256" / hex_digest[:2] / hex_digest).read_bytes()


def data_images(page: str, tag: str) -> list[tuple[str, bytes]]:
    """(digest, bytes) of each ``data:`` image of image tag ``tag`` in the static HTML."""
    block = re.search(rf'<div data-kind="images" data-tag="{re.escape(tag)}".*?</div>(?:<figure.*?</figure>)*', page)
    assert block, page[:2000]
    found = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"[^>]*data-digest="([^"]+)"', block.group(0))
    return [(digest, base64.b64decode(data)) for data, digest in found]


def test_the_saved_picture_keeps_histograms_images_and_text_at_the_latest_step_then_at_the_cursor(portal, imported):
    store, run_id = imported
    pane, _rec = make_pane(run_id, portal)
    try:
        wait_until(lambda: not pane.polling and pane._snapshot.media is not None, "the final picture with media")
        bundle = pane.static_bundle()
        page = bundle["text/html"]
        assert 'data-tau-pane-static-media="1"' in page and "media at each tag&#x27;s latest step" in page
        # Histograms: each drawn as a PNG (bands over the steps, the histogram at the step).
        for tag in ("weights", "raw", "constant", "ints"):
            assert re.search(rf'<figure data-kind="histograms" data-tag="{tag}" data-step="20"', page), tag
        # Images: the bytes of the stored images (6×5 and 8×6 pictures are their own thumbnails).
        (sample,) = data_images(page, "sample")
        assert sample[1] == stored_image(store, sample[0]) and sample[1][:4] == b"\x89PNG"
        (batch,) = data_images(page, "batch")  # add_images writes one grid
        assert batch[1] == stored_image(store, batch[0])
        # Text: the string at the step, as text.
        assert html.escape("step **20**: naïve ✓") in page
        assert bundle["text/plain"].endswith("media tags at their latest steps")
        assert "Left out of the saved picture" not in page  # within the budget
        # The cursor moves: the picture follows (read again, drawn again).
        pane.media_step = 10
        wait_until(lambda: pane._snapshot.media is not None and pane._snapshot.media.step == 10, "the picture at 10")
        page = pane.static_bundle()["text/html"]
        (moved,) = data_images(page, "sample")
        assert moved[0] != sample[0] and moved[1] == stored_image(store, moved[0])
        assert html.escape("step **10**: naïve ✓") in page and "media at step 10 (the step cursor)" in page
    finally:
        pane.close()


def test_a_histogram_is_drawn_as_bands_and_the_histogram_at_its_step(portal, imported):
    _, run_id = imported
    tags = {(t.kind, t.tag): t for t in portal.media_tags(run_id).tags}
    picture = StaticMedia(portal, None, run_id).read({("histograms", "weights"): tags[("histograms", "weights")]}, 12,
                                                     None)
    (hist,) = picture.histograms
    assert hist.steps == (0, 10, 20) and hist.step == 10  # the stored step nearest the cursor
    image = Image.open(io.BytesIO(histogram_png(hist, 12))).convert("RGB")
    colors = {tuple(int(c) for c in px) for px in np.asarray(image).reshape(-1, 3)}
    palette = pane_static_media._palette(pane_static_media._COLOR)
    assert {palette[7], palette[-1]} <= colors  # the outermost and innermost band shades
    assert palette[pane_static_media.OVERLAY_FILL] in colors and palette[pane_static_media.LINE] in colors


def test_the_budget_bounds_the_images_and_says_what_it_left_out(tmp_path, monkeypatch):
    # tf.summary.image's events (12 pictures in one event) through TensorBoard's own writer, and 6 more tags.
    events = []
    for step in (0, 5):
        event = event_pb2.Event(wall_time=1_790_000_000.0 + step, step=step)
        event.summary.value.append(tf_image_value("batch", pictures(12, 8, 8, step), max_outputs=12))
        for i in range(6):
            event.summary.value.append(tf_image_value(f"extra_{i}", pictures(1, 4, 4, 50 + i + step)))
        event.summary.value.add(tag="loss", simple_value=1.0)
        events.append(event)
    write_events(tmp_path / "logs" / "many", events)
    (run_id,) = import_paths([str(tmp_path / "logs")], tmp_path / "store", project="p", clustering="off").run_ids
    with serve(tmp_path / "store") as server, \
            PortalClient(f"http://127.0.0.1:{server.port}", TOKEN, retries=0) as client:
        tags = {(t.kind, t.tag): t for t in client.media_tags(run_id).tags}
        picture = StaticMedia(client, None, run_id).read(tags, None, None)
        assert len(picture.images) == pane_static_media.MAX_IMAGE_TAGS
        batch = next(g for g in picture.images if g.tag == "batch")
        assert (len(batch.images), batch.total) == (MAX_IMAGES_PER_TAG, 12)
        page = media_html(picture, "http://portal/stellar?target=" + run_id)
        assert f"{12 - MAX_IMAGES_PER_TAG} images of batch at step 5 ({12 - MAX_IMAGES_PER_TAG} past 4 a tag)" in page
        assert "3 image tags (extra_3, extra_4, extra_5)" in page
        assert f'<a href="http://portal/stellar?target={run_id}"' in page and "open the run in Stellar" in page
        # The bytes' budget: room for two of the batch's images, none for the others.
        first = client.image_bytes(run_id, client.images_near(run_id, "batch", 5).images[0].digest)
        budget = 2 * len(first) + 10
        monkeypatch.setattr(pane_static_media, "MAX_IMAGE_BYTES", budget)
        tight = StaticMedia(client, None, run_id).read({("images", "batch"): tags[("images", "batch")]}, None, None)
        kept = tight.images[0].images
        assert 1 <= len(kept) < MAX_IMAGES_PER_TAG and sum(len(i.data) for i in kept) <= budget
        over = MAX_IMAGES_PER_TAG - len(kept)
        assert tight.left_out == (f"{12 - len(kept)} images of batch at step 5 ({12 - MAX_IMAGES_PER_TAG} past 4 a tag; "
                                  f"{over} over the budget of {budget} bytes or unreadable)",)


def test_an_unreadable_tag_is_said_in_words_and_the_others_are_kept(portal, imported):
    _, run_id = imported
    tags = {(t.kind, t.tag): t for t in portal.media_tags(run_id).tags}
    tags[("text", "gone")] = MediaTag(kind="text", tag="gone", count=1, step_min=0, step_max=0)
    picture = StaticMedia(portal, None, run_id).read(tags, None, None)
    assert any(e.startswith("text gone: ") for e in picture.errors)
    assert [t.tag for t in picture.text] == ["note/text_summary"] or picture.text
    assert "could not be read: text gone" in media_html(picture)


def test_a_histogram_without_values_is_drawn_in_words():
    hist = StaticHistogram(tag="empty", steps=(), basis_points=(), summary=(), step=None, buckets=None)
    image = Image.open(io.BytesIO(histogram_png(hist, None)))
    assert image.size == (600, 150)
    assert hashlib.sha256(np.asarray(image).tobytes()).hexdigest()  # it decodes


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> Iterator[tuple[PortalClient, str, str]]:
    """A store of two runs written by tensorboardX (the primary at steps 0, 10, 20; the compared one at 0 and 5)."""
    root = tmp_path_factory.mktemp("two-media-runs")
    write_tensorboardx_media(root / "logs" / "a", [0, 10, 20])
    write_tensorboardx_media(root / "logs" / "b", [0, 5])
    run_ids = import_paths([str(root / "logs")], root / "store", project="proj", clustering="off").run_ids
    with serve(root / "store") as server, PortalClient(f"http://127.0.0.1:{server.port}", TOKEN, retries=0) as c:
        steps = {r: max(t.step_max for t in c.media_tags(r).tags) for r in run_ids}
        primary, compared = sorted(run_ids, key=lambda r: -steps[r])
        assert (steps[primary], steps[compared]) == (20, 5)
        yield c, primary, compared


def _tags(client: PortalClient, run_id: str) -> dict:
    return {(t.kind, t.tag): t for t in client.media_tags(run_id).tags}


def test_a_comparing_picture_keeps_each_compared_run_s_media_beside_the_primary_s(two_runs):
    client, a, b = two_runs
    picture = StaticMedia(client, None, a).read(_tags(client, a), None, None, compared={b: _tags(client, b)})
    assert picture.runs == (a, b)
    for groups in (picture.histograms, picture.images, picture.text):
        by_tag: dict[str, list[str]] = {}
        for g in groups:
            by_tag.setdefault(g.tag, []).append(g.run)
        assert by_tag and all(runs == [a, b] for runs in by_tag.values()), by_tag  # each tag: both runs, in order
    assert {g.step for g in picture.images if g.run == b} == {5} and {g.step for g in picture.images if g.run == a} == {20}
    page = media_html(picture)
    assert f'data-tag="sample" data-step="5" data-run="{b}"' in page and f"run {html.escape(b)}" in page
    assert f'<figure data-kind="histograms" data-tag="weights" data-step="5" data-run="{b}"' in page
    assert pane_static_media.media_words(picture).endswith("media tags of 2 runs at their latest steps")


def test_the_image_budget_is_shared_by_the_runs_and_what_it_left_out_names_the_run(two_runs, monkeypatch):
    client, a, b = two_runs
    primary = StaticMedia(client, None, a).read(_tags(client, a), None, None)
    room = sum(len(i.data) for g in primary.images for i in g.images)
    monkeypatch.setattr(pane_static_media, "MAX_IMAGE_BYTES", room)  # the primary's images fill it
    picture = StaticMedia(client, None, a).read(_tags(client, a), None, None, compared={b: _tags(client, b)})
    assert sum(len(i.data) for g in picture.images for i in g.images) <= room
    assert all(g.images for g in picture.images if g.run == a) and not any(g.images for g in picture.images if g.run == b)
    assert any(w.startswith("1 image of sample of run ") and b in w and "over the budget" in w
               for w in picture.left_out), picture.left_out
    assert "Left out of the saved picture" in media_html(picture)


def test_runs_past_the_limit_are_left_out_in_words(two_runs, monkeypatch):
    client, a, b = two_runs
    monkeypatch.setattr(pane_static_media, "MAX_RUNS", 1)
    picture = StaticMedia(client, None, a).read(_tags(client, a), None, None, compared={b: _tags(client, b)})
    assert picture.runs == (a,) and {g.run for g in picture.images} == {a}
    assert picture.left_out[0] == f"the media of 1 compared run ({b})"


def test_a_comparing_pane_s_saved_picture_keeps_the_compared_run_s_media(two_runs):
    client, a, b = two_runs
    pane, _rec = make_pane(a, client, compare=[b])
    try:
        wait_until(lambda: not pane.polling and pane._snapshot.media is not None
                   and pane._snapshot.media.runs == (a, b), "the final picture with both runs' media")
        page = pane.static_bundle()["text/html"]
        assert f'data-tag="sample" data-step="20" data-run="{a}"' in page
        assert f'data-tag="sample" data-step="5" data-run="{b}"' in page
    finally:
        pane.close()
