"""``taunotebook export-view`` carries the runs' media: against a real Portal over a store imported from a tensorboardX
logdir, the file holds each histogram tag's bands and its histogram at the step (the reads the page's card makes,
keyed as it keys them), the images at the step as ``data:`` URIs whose bytes are the stored images, and the text; a
budget bounds the images and the file says in words what it left out and where the rest is."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from tensorboard.compat.proto import event_pb2

from fixtures.portal import TOKEN, serve
from fixtures.tb_writers import pictures, tf_image_value, write_events
from taunotebook import cli
from taunotebook.export_view import MAX_EXPORT_IMAGES_PER_TAG, ExportError, export_view, read_key
from taunotebook.importer import import_paths


def config_of(html: str) -> dict:
    raw = re.search(r'<script type="application/json" id="stellar-config">(.*?)</script>', html, re.S).group(1)
    return json.loads(raw)


@pytest.fixture(scope="module")
def imported(tbx_media_store) -> tuple[Path, str]:
    """The shared store imported from tensorboardX's event file (tests/fixtures/media_store.py)."""
    return tbx_media_store


@pytest.fixture(scope="module")
def portal(imported) -> Iterator[str]:
    with serve(imported[0]) as server:
        yield f"http://127.0.0.1:{server.port}"


def stored_image(store: Path, digest: str) -> bytes:
    hex_digest = digest.removeprefix("sha256:")
    return (store / "artifacts" / "sha256" / hex_digest[:2] / hex_digest).read_bytes()


def test_the_export_carries_histograms_images_and_text_at_the_tags_last_step(portal, imported):
    store, run_id = imported
    html, notes = export_view(f"{portal}/stellar?target={run_id}&project=proj&token={TOKEN}")
    offline = config_of(html)["offline"]
    responses = offline["responses"]
    assert {"histograms/weights", "histograms/raw", "images/sample", "images/batch", "text/note/text_summary"} \
        <= set(offline["media"])
    base = f"api/v2/stellar/runs/{run_id}"
    # A histogram: the bands over every step (no buckets) and the range reads the card makes for the step's histogram.
    bands = responses[read_key(f"{base}/histograms", [("tag", "weights"), ("buckets", "false")])]
    assert bands["steps"] == [0, 10, 20] and bands["buckets"] is None and len(bands["summary"][0]) == 3 + 9
    # The card reads the view's gap around the step (20 is one of the bands' steps: the gap is [20, 20]) keeping it.
    at = responses[read_key(f"{base}/histograms", [("tag", "weights"), ("step_min", "20"), ("step_max", "20"),
                                                   ("max_steps", "8"), ("keep", "20")])]
    assert at["steps"] == [20] and len(at["buckets"][0]) > 1
    # That answer holds the step: none of the two bounded reads an unstored step in a wide gap takes.
    assert read_key(f"{base}/histograms", [("tag", "weights"), ("step_min", "20"), ("step_max", "20"),
                                           ("max_steps", "1")]) not in responses
    # Images: data: URIs holding the stored bytes; the full image's link is the Portal's.
    sample = responses[read_key(f"{base}/images", [("tag", "sample"), ("step", "20")])]
    (image,) = sample["images"]
    prefix = "data:image/png;base64,"
    assert image["thumbnail_url"].startswith(prefix)
    assert base64.b64decode(image["thumbnail_url"][len(prefix):]) == stored_image(store, image["digest"])
    assert image["url"].startswith(f"{portal}/api/v2/stellar/runs/{run_id}/images/")
    assert "omitted" not in sample
    # Text at the step.
    text = responses[read_key(f"{base}/text", [("tag", "note/text_summary"), ("step", "20")])]
    assert text["text"] == ["step **20**: naïve ✓"]
    assert notes == [] and "Left out" not in offline["mediaNote"]
    assert "<script src" not in html and "<link" not in html  # still one file that loads nothing


def test_the_links_step_and_search_choose_what_is_carried(portal, imported):
    _, run_id = imported
    html, _ = export_view(f"{portal}/stellar?target={run_id}&project=proj&step=12&q=sample&token={TOKEN}")
    offline = config_of(html)["offline"]
    assert offline["media"] == ["images/sample"]
    answer = offline["responses"][read_key(f"api/v2/stellar/runs/{run_id}/images", [("tag", "sample"),
                                                                                    ("step", "12")])]
    assert (answer["requested_step"], answer["step"]) == (12, 10)  # the nearest stored step
    html, _ = export_view(f"{portal}/stellar?target={run_id}&project=proj&token={TOKEN}", max_media=0)
    assert config_of(html)["offline"]["media"] == []


def test_a_budget_of_images_is_kept_and_what_it_left_out_is_said_with_the_live_link(tmp_path, capsys):
    # tf.summary.image's events (20 pictures in one event) through TensorBoard's own writer.
    event = event_pb2.Event(wall_time=1_790_000_000.0, step=3)
    event.summary.value.append(tf_image_value("batch", pictures(20, 8, 8, 1), max_outputs=20))
    event.summary.value.add(tag="loss", simple_value=1.0)
    write_events(tmp_path / "logs" / "many", [event])
    (run_id,) = import_paths([str(tmp_path / "logs")], tmp_path / "store", project="p", clustering="off").run_ids
    with serve(tmp_path / "store") as server:
        url = f"http://127.0.0.1:{server.port}/stellar?target={run_id}&project=p&token={TOKEN}"
        html, notes = export_view(url)
        offline = config_of(html)["offline"]
        answer = offline["responses"][read_key(f"api/v2/stellar/runs/{run_id}/images", [("tag", "batch"),
                                                                                         ("step", "3")])]
        assert len(answer["images"]) == MAX_EXPORT_IMAGES_PER_TAG
        left = 20 - MAX_EXPORT_IMAGES_PER_TAG
        words = f"{left} more images of batch at step 3 are not in this export ({left} past 16 a tag)"
        assert answer["omitted"] == f"{words}: the live page has every one."
        assert notes == [f"{words} ({run_id})"] and words in offline["mediaNote"]
        assert offline["link"].startswith(f"http://127.0.0.1:{server.port}/stellar?target={run_id}")
        # The bytes' budget: room for 3 thumbnails.
        size = len(base64.b64decode(answer["images"][0]["thumbnail_url"].split(",", 1)[1]))
        html, notes = export_view(url, max_image_bytes=3 * size + 2)
        answer = config_of(html)["offline"]["responses"][read_key(f"api/v2/stellar/runs/{run_id}/images",
                                                                  [("tag", "batch"), ("step", "3")])]
        assert len(answer["images"]) == 3
        assert "(4 past 16 a tag; 13 over the export's " in answer["omitted"] and "--max-image-bytes" in notes[0]
        out = tmp_path / "v.html"
        assert cli.main(["export-view", url, "-o", str(out), "--max-image-bytes", "0"]) == 0
        assert "20 more images of batch" in capsys.readouterr().err
    with pytest.raises(ExportError, match="max_image_bytes must be 0 or more"):
        export_view(url, max_image_bytes=-1)


def test_the_export_makes_the_histogram_cards_reads_of_an_unstored_step_in_a_wide_gap():
    """As histogram_card.js's histogramNear: the gap read keeping the step, then (its answer reduced and without
    the step) the first step at or after it and the last at or before it, bounded by the gap."""
    from taunotebook.export_view import _near_reads

    class Reader:
        def __init__(self, answer):
            self.answer, self.asked = answer, []

        def get(self, path, query):
            self.asked.append(query)
            return self.answer

    wide = Reader({"steps": [0, 20, 40, 60, 80, 100, 120, 140], "reduced": True})
    further = _near_reads(wide, "h", "w", 37, [0, 200], [("project", "p")])
    assert wide.asked == [[("tag", "w"), ("step_min", "0"), ("step_max", "200"), ("max_steps", "8"), ("keep", "37"),
                           ("project", "p")]]
    assert further == [[("tag", "w"), ("step_min", "37"), ("step_max", "200"), ("max_steps", "1"), ("project", "p")],
                       [("tag", "w"), ("step_min", "0"), ("step_max", "37"), ("max_steps", "2"), ("project", "p")]]
    # The step stored, or the whole gap answered: nothing more; past the last step the gap is open on that side.
    assert _near_reads(Reader({"steps": [30, 37], "reduced": True}), "h", "w", 37, [0, 200], []) == []
    whole = Reader({"steps": [210], "reduced": False})
    assert _near_reads(whole, "h", "w", 250, [0, 200], []) == []
    assert whole.asked == [[("tag", "w"), ("step_min", "200"), ("max_steps", "8"), ("keep", "250")]]
