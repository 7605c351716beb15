"""The loss pane's media reads (:mod:`taunotebook.pane_media`) over a recording client: only the cards on screen
are read, at the cursor's step (else their tag's latest), each answer sent once, image bytes once per digest, the
Portal's words for a failed read, and nothing more asked of a Portal without the routes."""

from __future__ import annotations

from taunotebook.client import NotFoundError, PortalError
from taunotebook.client.media_models import Histograms, ImageRef, ImagesAt, MediaTag, MediaTags, TextAt
from taunotebook.client.models import Metadata
from taunotebook.pane_media import MEDIA_SECONDS, PaneMedia, card_key, parse_card

META = Metadata.from_json({})
DIGEST = "sha256:" + "ab" * 32


class Client:
    """Answers the media reads from a few steps, and records each call."""

    def __init__(self, *, images_step: int = 2, fail_text: bool = False, no_routes: bool = False) -> None:
        self.calls: list[tuple] = []
        self.tags = [MediaTag("histograms", "w", 3, 0, 2), MediaTag("images", "sample", 3, 0, images_step),
                     MediaTag("text", "note", 3, 0, 2)]
        self.fail_text = fail_text
        self.no_routes = no_routes

    def media_tags(self, run_id, **kw):
        self.calls.append(("media_tags",))
        if self.no_routes:
            raise NotFoundError(404, "NOT_FOUND", "route was not found", "not_found", False)
        return MediaTags(META, run_id, tuple(self.tags))

    def histograms(self, run_id, tag, *, max_steps, keep, **kw):
        self.calls.append(("histograms", tag, tuple(keep)))
        return Histograms(META, run_id, tag, 3, False, (0, 5000, 10000), (0, 1, 2), (1.0, 2.0, 3.0),
                          ((3.0, 0.0, 1.0, 0.0, 0.5, float("nan")),) * 3, (((0.0, 1.0, 3.0),),) * 3)

    def images_near(self, run_id, tag, step, **kw):
        self.calls.append(("images_near", tag, step))
        return ImagesAt(META, run_id, tag, step, min(step, 2), (ImageRef(0, DIGEST, "u", "t", "image/png", 6, 5, "cat"),))

    def image_bytes(self, run_id, digest, *, thumbnail, **kw):
        self.calls.append(("image_bytes", digest))
        return b"\x89PNG"

    def text_at(self, run_id, tag, step, **kw):
        self.calls.append(("text_at", tag, step))
        if self.fail_text:
            raise PortalError(404, "NOT_FOUND", f"text tag {tag!r} has no value near step {step}", "not_found", False)
        return TextAt(META, run_id, tag, step, min(step, 2), 2.0, (), ("hello",))


class Page:
    def __init__(self) -> None:
        self.traits: list[dict] = []
        self.messages: list[tuple[dict, list[bytes]]] = []

    def publish(self, **traits) -> None:
        self.traits.append(traits)

    def send(self, header: dict, data: list[bytes]) -> None:
        self.messages.append((header, data))

    def media(self, kind: str | None = None) -> list[dict]:
        return [h for h, _ in self.messages if h["type"] == "media" and kind in (None, h["kind"])]


def poll(media: PaneMedia, page: Page, now: float, ended: bool = False) -> None:
    media.poll(now, project=None, ended=ended, publish=page.publish, send=page.send)


def test_card_keys_name_a_kind_and_a_tag_with_slashes():
    assert card_key("histograms", "layer/1/w") == "histograms/layer/1/w"
    assert parse_card("histograms/layer/1/w") == ("histograms", "layer/1/w")
    assert parse_card("audio/x") is None and parse_card("images/") is None and parse_card(3) is None


def test_the_tags_are_published_once_and_no_card_is_read_until_it_is_on_screen():
    client, page = Client(), Page()
    media = PaneMedia(client, None, "r")
    poll(media, page, 0.0)
    assert page.traits == [{"media": {"tags": [
        {"kind": "histograms", "tag": "w", "count": 3, "step_min": 0, "step_max": 2},
        {"kind": "images", "tag": "sample", "count": 3, "step_min": 0, "step_max": 2},
        {"kind": "text", "tag": "note", "count": 3, "step_min": 0, "step_max": 2}], "unavailable": None}}]
    assert client.calls == [("media_tags",)] and page.messages == []
    poll(media, page, 0.1)  # within MEDIA_SECONDS: not read again
    poll(media, page, MEDIA_SECONDS + 0.1)  # read again, unchanged: not sent again
    assert client.calls == [("media_tags",), ("media_tags",)] and len(page.traits) == 1


def test_cards_on_screen_show_the_latest_step_then_the_cursors_each_answer_sent_once():
    client, page = Client(), Page()
    media = PaneMedia(client, None, "r")
    media.set_visible(["images/sample", "text/note", "images/unknown", "bogus"])
    poll(media, page, 0.0)
    assert ("images_near", "sample", 2) in client.calls and ("text_at", "note", 2) in client.calls
    image = [(h, d) for h, d in page.messages if h["type"] == "image"]
    assert [(h["digest"], d) for h, d in image] == [(DIGEST, [b"\x89PNG"])]
    (listing,) = page.media("images")
    assert listing["requested_step"] == 2 and listing["images"][0]["caption"] == "cat"
    assert page.messages.index(image[0]) < page.messages.index((listing, []))  # the bytes before the listing
    before = len(client.calls)
    poll(media, page, 0.1)  # nothing changed: nothing read, nothing sent
    assert len(client.calls) == before
    media.set_step(1)
    poll(media, page, 0.2)
    assert ("images_near", "sample", 1) in client.calls and ("text_at", "note", 1) in client.calls
    assert client.calls.count(("image_bytes", DIGEST)) == 1  # the page holds these bytes already
    assert [m["requested_step"] for m in page.media("text")] == [2, 1]
    media.resend()  # a page reloaded: everything on screen again, bytes included
    poll(media, page, 0.3)
    assert client.calls.count(("image_bytes", DIGEST)) == 2 and len(page.media("text")) == 3


def test_a_histogram_card_reads_the_range_keeping_the_cursors_step_and_nan_goes_as_null():
    client, page = Client(), Page()
    media = PaneMedia(client, None, "r")
    media.set_visible(["histograms/w"])
    poll(media, page, 0.0)
    media.set_step(1)
    poll(media, page, 0.1)
    assert [c for c in client.calls if c[0] == "histograms"] == [("histograms", "w", ()), ("histograms", "w", (1,))]
    (sent,) = page.media("histograms")  # the second answer equals the first: not sent again
    assert sent["steps"] == [0, 1, 2] and sent["summary"][0][-1] is None and sent["buckets"][0] == [[0.0, 1.0, 3.0]]


def test_a_card_following_the_latest_step_reads_again_as_its_tag_grows():
    client, page = Client(), Page()
    media = PaneMedia(client, None, "r")
    media.set_visible(["images/sample"])
    poll(media, page, 0.0)
    client.tags[1] = MediaTag("images", "sample", 4, 0, 3)
    poll(media, page, MEDIA_SECONDS)
    assert [c for c in client.calls if c[0] == "images_near"] == [("images_near", "sample", 2),
                                                                  ("images_near", "sample", 3)]


def test_a_failed_read_sends_the_portals_words_and_is_tried_again():
    client, page = Client(fail_text=True), Page()
    media = PaneMedia(client, None, "r")
    media.set_visible(["text/note"])
    poll(media, page, 0.0)
    (sent,) = page.media("text")
    assert sent["error"] == "the Portal answered 404 NOT_FOUND: text tag 'note' has no value near step 2"
    poll(media, page, 0.1)
    assert client.calls.count(("text_at", "note", 2)) == 2 and len(page.media("text")) == 1  # the same words once


def test_a_portal_without_the_media_routes_is_asked_once():
    client, page = Client(no_routes=True), Page()
    media = PaneMedia(client, None, "r")
    media.set_visible(["text/note"])
    for t in range(3):
        poll(media, page, t * MEDIA_SECONDS)
    assert client.calls == [("media_tags",)] and page.traits == [] and page.messages == []


def test_an_ended_run_reads_its_tags_once_more_and_then_never():
    client, page = Client(), Page()
    media = PaneMedia(client, None, "r")
    poll(media, page, 0.0)
    poll(media, page, 0.1, ended=True)
    for t in range(1, 4):
        poll(media, page, t * MEDIA_SECONDS, ended=True)
    assert client.calls == [("media_tags",), ("media_tags",)]


def test_a_run_whose_media_are_elsewhere_is_said_so_once_and_not_asked_again():
    client, page = Client(), Page()
    client.media_tags = lambda run_id, **kw: (client.calls.append(("media_tags",)), MediaTags(
        META, run_id, (), "this run is served from Kusto: its media live with the run's store"))[1]
    media = PaneMedia(client, None, "r")
    for t in range(3):
        poll(media, page, t * MEDIA_SECONDS)
    assert client.calls == [("media_tags",)]
    assert page.traits == [{"media": {"tags": [], "unavailable":
                                      "this run is served from Kusto: its media live with the run's store"}}]


class ComparedClient(Client):
    """Two runs: ``r`` (the primary) and ``b`` (compared), ``b``'s tags reaching step 5 and without the text tag;
    each call records its run."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.run_calls: list[tuple] = []
        self.b_tags = [MediaTag("histograms", "w", 6, 0, 5), MediaTag("images", "sample", 6, 0, 5)]

    def media_tags(self, run_id, **kw):
        self.run_calls.append((run_id, "media_tags"))
        if run_id == "b":
            return MediaTags(META, run_id, tuple(self.b_tags))
        return super().media_tags(run_id, **kw)

    def histograms(self, run_id, tag, **kw):
        self.run_calls.append((run_id, "histograms", tag))
        return super().histograms(run_id, tag, **kw)

    def images_near(self, run_id, tag, step, **kw):
        self.run_calls.append((run_id, "images_near", tag, step))
        near = super().images_near(run_id, tag, step, **kw)
        if run_id != "b":
            return near
        image = ImageRef(0, "sha256:" + "cd" * 32, "u", "t", "image/jpeg", 6, 5, "dog")
        return ImagesAt(META, run_id, tag, step, min(step, 5), (image,))

    def image_bytes(self, run_id, digest, *, thumbnail, **kw):
        self.run_calls.append((run_id, "image_bytes", digest, thumbnail))
        return b"\x89PNG" if thumbnail else b"FULL" + digest.encode()

    def text_at(self, run_id, tag, step, **kw):
        self.run_calls.append((run_id, "text_at", tag, step))
        return super().text_at(run_id, tag, step, **kw)


def test_compared_runs_tags_are_published_beside_the_primarys_each_run_read_once_per_period():
    client, page = ComparedClient(), Page()
    media = PaneMedia(client, None, "r")
    media.poll(0.0, project="p", ended=False, publish=page.publish, send=page.send, compared=[("b", False)])
    (traits,) = page.traits
    assert [t["tag"] for t in traits["media"]["tags"]] == ["w", "sample", "note"]
    assert traits["media"]["compared"] == {"b": {"tags": [
        {"kind": "histograms", "tag": "w", "count": 6, "step_min": 0, "step_max": 5},
        {"kind": "images", "tag": "sample", "count": 6, "step_min": 0, "step_max": 5}], "unavailable": None}}
    media.poll(0.5, project="p", ended=False, publish=page.publish, send=page.send, compared=[("b", True)])
    assert [c for c in client.run_calls if c[1] == "media_tags"] == [("r", "media_tags"), ("b", "media_tags"),
                                                                     ("b", "media_tags")]  # b ended: read once more
    media.poll(MEDIA_SECONDS + 1, project="p", ended=False, publish=page.publish, send=page.send,
               compared=[("b", True)])
    assert [c for c in client.run_calls if c[1] == "media_tags"][3:] == [("r", "media_tags")]  # b's are final


def test_a_card_on_screen_is_read_for_every_run_that_has_its_tag_at_the_one_cursor_step():
    client, page = ComparedClient(), Page()
    media = PaneMedia(client, None, "r")
    media.set_visible(["images/sample", "text/note"])
    media.poll(0.0, project=None, ended=False, publish=page.publish, send=page.send, compared=[("b", False)])
    # No cursor: every run reads the tag's latest step over the runs (5), each answering its nearest.
    images = [c for c in client.run_calls if c[1] == "images_near"]
    assert images == [("r", "images_near", "sample", 5), ("b", "images_near", "sample", 5)]
    assert [c for c in client.run_calls if c[1] == "text_at"] == [("r", "text_at", "note", 2)]  # b has no text tag
    listings = {m["run"]: m for m in page.media("images")}
    assert listings["r"]["step"] == 2 and listings["b"]["step"] == 5 and listings["b"]["images"][0]["caption"] == "dog"
    assert {m["requested_step"] for m in page.media("images")} == {5}
    media.set_step(3)
    media.poll(0.1, project=None, ended=False, publish=page.publish, send=page.send, compared=[("b", False)])
    assert [c for c in client.run_calls if c[1] == "images_near"][2:] == [("r", "images_near", "sample", 3),
                                                                          ("b", "images_near", "sample", 3)]
    thumbs = [c for c in client.run_calls if c[1] == "image_bytes"]
    assert len(thumbs) == 2 and all(c[3] for c in thumbs)  # one thumbnail per digest, never the full bytes unasked


def test_a_run_no_longer_compared_is_forgotten_and_not_read():
    client, page = ComparedClient(), Page()
    media = PaneMedia(client, None, "r")
    media.set_visible(["histograms/w"])
    media.poll(0.0, project=None, ended=False, publish=page.publish, send=page.send, compared=[("b", False)])
    assert {m["run"] for m in page.media("histograms")} == {"r", "b"}
    client.run_calls.clear()
    media.poll(MEDIA_SECONDS, project=None, ended=False, publish=page.publish, send=page.send)
    assert {c[0] for c in client.run_calls} == {"r"}
    assert "compared" not in page.traits[-1]["media"]


def test_the_full_image_link_reads_the_stored_bytes_of_a_listed_image_only():
    client, page = ComparedClient(), Page()
    media = PaneMedia(client, None, "r")
    media.set_visible(["images/sample"])
    media.poll(0.0, project=None, ended=False, publish=page.publish, send=page.send, compared=[("b", False)])
    b_digest = "sha256:" + "cd" * 32
    media.request_full("b", b_digest)
    media.request_full("b", b_digest)  # asked twice before the poll: read once
    media.request_full("r", b_digest)  # not an image of r's listings
    media.request_full(3, None)  # not a request at all: ignored
    media.poll(0.1, project=None, ended=False, publish=page.publish, send=page.send, compared=[("b", False)])
    full = [(h, d) for h, d in page.messages if h["type"] == "image" and not h["thumbnail"]]
    assert [c for c in client.run_calls if c[1] == "image_bytes" and not c[3]] == [("b", "image_bytes", b_digest, False)]
    (ok, ok_data), (refused, refused_data) = full
    assert ok["run"] == "b" and ok["digest"] == b_digest and ok["content_type"] == "image/jpeg"
    assert ok_data == [b"FULL" + b_digest.encode()] and ok["n"] == len(ok_data[0])
    assert refused["run"] == "r" and "is not one this pane listed" in refused["error"] and refused_data == []
