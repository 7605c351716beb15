"""The loss pane's media against a real Portal over a store imported from tensorboardX (``add_histogram``,
``add_image``, ``add_text``): the ``media`` trait lists the tags, and only the cards the browser reports on screen
are read and sent, at the step cursor, for the pane's run and each compared run; a full image's stored bytes when the
page's link asks."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.pane import make_pane, wait_until
from fixtures.portal import TOKEN, serve
from fixtures.tb_writers import write_tensorboardx_media
from taunotebook.client import PortalClient
from taunotebook.importer import import_paths


@pytest.fixture(scope="module")
def portal(tbx_media_store) -> Iterator[PortalClient]:
    store, _ = tbx_media_store
    with serve(store) as server, PortalClient(f"http://127.0.0.1:{server.port}", TOKEN, retries=0) as c:
        yield c


def test_the_pane_lists_the_tags_and_reads_only_the_cards_on_screen(portal, tbx_media_store):
    _, run_id = tbx_media_store
    pane, rec = make_pane(run_id, portal)
    try:
        wait_until(lambda: pane.media.get("tags"), "the media trait")
        kinds = {(t["kind"], t["tag"]) for t in pane.media["tags"]}
        assert ("images", "sample") in kinds and ("histograms", "weights") in kinds
        assert rec.media == []  # no card on screen: nothing read
        pane.set_state({"media_visible": ["images/sample", "histograms/raw"]})
        listing = wait_until(lambda: [m for m in rec.media if m["type"] == "media" and m["kind"] == "images"],
                             "the image card's listing")[0]
        assert listing["requested_step"] == 20 and listing["step"] == 20  # no cursor: the latest step
        (image,) = [m for m in rec.media if m["type"] == "image"]
        assert image["digest"] == listing["images"][0]["digest"] and image["data"][:4] == b"\x89PNG"
        hist = wait_until(lambda: [m for m in rec.media if m["type"] == "media" and m["kind"] == "histograms"],
                          "the histogram card")[0]
        assert hist["tag"] == "raw" and hist["steps"] == [0, 10, 20] and len(hist["buckets"]) == 3
        assert not any(m.get("tag") in ("batch", "weights", "note/text_summary") for m in rec.media)
        pane.set_state({"media_step": 12})
        moved = wait_until(lambda: [m for m in rec.media if m["type"] == "media" and m["kind"] == "images"
                                    and m["requested_step"] == 12], "the image card at the cursor")[0]
        assert moved["step"] == 10
        digests = [m["digest"] for m in rec.media if m["type"] == "image"]
        assert len(digests) == len(set(digests))  # each image's bytes once
        assert all(len(d) == len("sha256:") + len(hashlib.sha256().hexdigest()) for d in digests)
    finally:
        pane.close()


def test_the_cursor_set_from_python_moves_the_cards(portal, tbx_media_store):
    _, run_id = tbx_media_store
    pane, rec = make_pane(run_id, portal)
    try:
        pane.media_visible = ["text/note/text_summary"]
        wait_until(lambda: [m for m in rec.media if m["kind"] == "text" and m.get("step") == 20], "the latest text")
        pane.media_step = 3
        (moved,) = wait_until(lambda: [m for m in rec.media if m["kind"] == "text" and m["requested_step"] == 3],
                              "the text at the cursor")
        assert moved["step"] == 0 and moved["text"] == ["step **0**: naïve ✓"]
    finally:
        pane.close()


@pytest.fixture(scope="module")
def compared_portal(tmp_path_factory) -> Iterator[PortalClient]:
    """A Portal over runs ``run`` (steps 0, 10, 20) and ``other`` (steps 0, 15, 30), both with media."""
    root: Path = tmp_path_factory.mktemp("pane-media-compare")
    write_tensorboardx_media(root / "logs" / "run", [0, 10, 20])
    write_tensorboardx_media(root / "logs" / "other", [0, 15, 30])
    run_ids = import_paths([str(root / "logs")], root / "store", project="proj", clustering="off").run_ids
    assert sorted(run_ids) == ["other", "run"]
    with serve(root / "store") as server, PortalClient(f"http://127.0.0.1:{server.port}", TOKEN, retries=0) as c:
        yield c


def test_a_compared_run_is_read_beside_the_panes_at_the_one_cursor_step_and_its_full_image_on_request(
        compared_portal):
    pane, rec = make_pane("run", compared_portal, compare=["other"])
    try:
        wait_until(lambda: pane.media.get("compared", {}).get("other", {}).get("tags"), "the compared run's tags")
        assert {t["step_max"] for t in pane.media["compared"]["other"]["tags"]} == {30}
        pane.set_state({"media_visible": ["images/sample"], "media_step": 10})

        def at_cursor() -> dict:
            return {m["run"]: m for m in rec.media if m["type"] == "media" and m["requested_step"] == 10}

        both = wait_until(lambda: at_cursor() if len(at_cursor()) == 2 else None, "both runs' images at step 10")
        assert both["run"]["step"] == 10 and both["other"]["step"] == 15  # each run's stored step nearest 10
        digest = both["other"]["images"][0]["digest"]
        thumbs = [m for m in rec.media if m["type"] == "image" and m["digest"] == digest]
        assert [m["thumbnail"] for m in thumbs] == [True]
        pane._handle_custom_msg({"type": "image-full", "run": "other", "digest": digest}, [])  # the page's link
        (full,) = wait_until(lambda: [m for m in rec.media if m["type"] == "image" and m["thumbnail"] is False],
                             "the full image")
        assert full["run"] == "other" and full["content_type"] == "image/png"
        assert "sha256:" + hashlib.sha256(full["data"]).hexdigest() == digest  # the stored bytes themselves
    finally:
        pane.close()
