"""The saved picture's media while runs live: a run that logs media every step re-reads them at most every
``REFRESH_SECONDS`` (not at every redraw of the curves), at once when the cursor moves or a tag appears, and once when
the runs end; a fake reader counts the reads and the clock is passed in."""

from __future__ import annotations

from types import SimpleNamespace

from taunotebook.client import PortalClient
from taunotebook.client.media_models import MediaTag
from taunotebook.pane_static_media import REFRESH_SECONDS, StaticMedia


class _Reader:
    """A Portal stand-in for text tags: answers the text at the step asked, counting the reads."""

    def __init__(self) -> None:
        self.reads = 0

    def text_at(self, run, tag, step, *, project=None, source=None):
        self.reads += 1
        return SimpleNamespace(step=step, text=(f"{run} {tag} {step}",))


def _tags(last: int, *names: str) -> dict:
    return {("text", n): MediaTag(kind="text", tag=n, count=last + 1, step_min=0, step_max=last) for n in names}


def test_growth_while_live_is_read_at_most_every_refresh_seconds_and_once_at_the_end():
    reader = _Reader()
    media = StaticMedia(reader, None, "a")  # type: ignore[arg-type]
    step = 0
    reads_at = []
    for now in range(0, 65, 5):  # the curves' picture is redrawn every 5 s; the run logs text every step
        step += 50
        before = reader.reads
        picture = media.current(_tags(step, "note"), None, None, now=float(now), live=True)
        if reader.reads > before:
            reads_at.append(now)
    assert reads_at == [0, 30, 60]
    assert picture.text[0].step == 650 and media.settled_key(media.key, 64.0, True) == media.key
    # Growth since the last read is kept back while live, and read once the runs ended (then no more).
    held = media.current(_tags(step + 5, "note"), None, None, now=61.0, live=True)
    assert held.text[0].step == 650 and reader.reads == 3
    final = media.current(_tags(step + 5, "note"), None, None, now=62.0, live=False)
    assert final.text[0].step == 655 and reader.reads == 4
    media.current(_tags(step + 5, "note"), None, None, now=63.0, live=False)
    assert reader.reads == 4


def test_a_moved_cursor_a_new_tag_or_a_compared_run_is_read_at_once_while_live():
    reader = _Reader()
    media = StaticMedia(reader, None, "a")  # type: ignore[arg-type]
    media.current(_tags(10, "note"), None, None, now=0.0, live=True)
    assert reader.reads == 1
    media.current(_tags(11, "note"), 5, None, now=1.0, live=True)  # the cursor moved
    assert reader.reads == 2
    picture = media.current(_tags(12, "note", "other"), 5, None, now=2.0, live=True)  # a tag appeared
    assert reader.reads == 4 and [t.tag for t in picture.text] == ["note", "other"]
    picture = media.current(_tags(12, "note", "other"), 5, None, now=3.0, live=True,
                            compared={"b": _tags(3, "note")})  # a compared run's tags arrived
    assert reader.reads == 7 and [t.run for t in picture.text] == ["a", "b", "a"]
    media.current(_tags(40, "note", "other"), 5, None, now=4.0, live=True, compared={"b": _tags(30, "note")})
    assert reader.reads == 7  # grew only: kept back
    media.current(_tags(40, "note", "other"), 5, None, now=4.0 + REFRESH_SECONDS, live=True,
                  compared={"b": _tags(30, "note")})
    assert reader.reads == 10


def test_the_poller_keeps_the_picture_s_media_key_while_its_runs_only_grow():
    from taunotebook.pane_poller import Poller, _RunView

    class _Out:
        def publish(self, **traits):
            return True

        def send(self, header, buffers):
            return True

        def fallback(self, snapshot):
            return True

    poller = Poller(_Out(), PortalClient("http://127.0.0.1:9", retries=0), True, run_id="a")
    reader = _Reader()
    poller.static_media.client = reader  # type: ignore[assignment]
    poller.views["a"] = _RunView(state="running", names=["loss"])
    poller.media.runs["a"].tags = _tags(10, "note")
    first = poller.static_media.settled_key(poller._media_key(), 0.0, poller._live())
    assert poller._static_media().text[0].step == 10 and reader.reads == 1
    poller.media.runs["a"].tags = _tags(11, "note")  # one more step logged
    assert poller._static_media().text[0].step == 10 and reader.reads == 1  # not read again while it lives
    assert poller.static_media.settled_key(poller._media_key(), 1.0, poller._live()) == poller.static_media.key
    assert first != poller._media_key()
    poller.views["a"].state = "succeeded"  # the run ended: its last media read once
    assert poller._static_media().text[0].step == 11 and reader.reads == 2
    poller.stop()
