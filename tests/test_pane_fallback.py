"""The loss pane's static output (picture and line of text) for front ends where its live view cannot load:
the rasterizer, the picture, the bundle, and the poller keeping it current."""

from __future__ import annotations

import base64
import io
import math
import struct
import zlib

import pytest
from PIL import Image

from fixtures.pane import make_pane, wait_until
from taunotebook.client import PortalClient
from taunotebook.pane import LossPane
from taunotebook.pane_picture import (
    CELL_W,
    MAX_PLOTS,
    RUN_COLORS,
    TITLE_H,
    Snapshot,
    assign_run_colors,
    format_value,
    picture_png,
    plot_box,
    text_line,
)
from taunotebook.pane_poller import FALLBACK_SECONDS
from taunotebook.raster import Canvas, hex_rgb

WHITE = (255, 255, 255)


def decode(png: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(png))
    image.load()
    return image.convert("RGB")


def colored(image: Image.Image, box: tuple[int, int, int, int], rgb: tuple[int, int, int]) -> list[tuple[int, int]]:
    x0, y0, x1, y1 = box
    return [(x, y) for y in range(y0, y1) for x in range(x0, x1) if image.getpixel((x, y)) == rgb]


# -- the rasterizer


def test_a_canvas_encodes_a_valid_png_with_its_pixels():
    canvas = Canvas(20, 10, [WHITE, (255, 0, 0)])
    canvas.line(0, 0, 19, 9, 1)
    canvas.rect(0, 9, 3, 10, 1)
    png = canvas.png()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    # Every chunk's CRC is right (Pillow checks them too, below).
    pos = 8
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos:pos + 4])
        kind, data = png[pos + 4:pos + 8], png[pos + 8:pos + 8 + length]
        assert struct.unpack(">I", png[pos + 8 + length:pos + 12 + length])[0] == zlib.crc32(kind + data)
        pos += 12 + length
    image = decode(png)
    assert image.size == (20, 10)
    assert image.getpixel((0, 0)) == (255, 0, 0) and image.getpixel((19, 9)) == (255, 0, 0)
    assert image.getpixel((10, 4)) == (255, 0, 0) or image.getpixel((10, 5)) == (255, 0, 0)
    assert image.getpixel((19, 0)) == WHITE
    assert image.getpixel((1, 9)) == (255, 0, 0)


def test_text_is_drawn_and_cut_to_its_width():
    canvas = Canvas(60, 10, [WHITE, (0, 0, 0)])
    assert canvas.text(0, 0, "loss", 1) == 24
    assert any(canvas.get(x, y) for x in range(24) for y in range(7))
    assert not any(canvas.get(x, y) for x in range(24, 60) for y in range(10))
    wide = Canvas(60, 10, [WHITE, (0, 0, 0)])
    assert wide.text(0, 0, "a very long metric name", 1, max_width=30) <= 30


def test_a_canvas_refuses_sizes_and_palettes_out_of_bounds():
    with pytest.raises(ValueError, match="1..8192 pixels a side"):
        Canvas(0, 10, [WHITE])
    with pytest.raises(ValueError, match="1..8192 pixels a side"):
        Canvas(10, 10**6, [WHITE])
    with pytest.raises(ValueError, match="1..256 colours"):
        Canvas(10, 10, [WHITE] * 257)


# -- the picture


def test_run_colours_and_numbers_follow_the_pages_rules():
    # js/test/palette.test.js pins the same assignment: two runs never share a colour while colours are left.
    colors = assign_run_colors([f"run-{i}" for i in range(9)])
    assert sorted(colors.values()) == list(range(9))
    assert format_value(12000) == "12,000"
    assert format_value(0.123456789) == "0.123457"
    assert format_value(1.23456e-7) == "1.2346e-07"
    assert format_value(float("nan")) == "NaN" and format_value(None) == "–"


def test_the_picture_draws_the_curve_where_its_points_are():
    steps = list(range(101))
    snap = Snapshot(run_id="r", state="running", runs=("r",), metrics=("loss",), total_metrics=1,
                    series={("r", "loss"): (steps, [float(s) for s in steps])}, latest={"loss": (100.0, 100)})
    image = decode(picture_png(snap))
    assert image.size == (CELL_W, image.size[1])
    x0, y0, x1, y1 = plot_box(0, TITLE_H)
    rgb = hex_rgb(RUN_COLORS[assign_run_colors(["r"])["r"]])
    # A straight line from the bottom left (step 0, value 0) to the top right (step 100, value 100).
    assert image.getpixel((x0, y1 - 1)) == rgb
    assert image.getpixel((x1 - 1, y0)) == rgb
    mid = ((x0 + x1 - 1) // 2, (y0 + y1 - 1) // 2)
    assert any(image.getpixel((mid[0], y)) == rgb for y in range(mid[1] - 2, mid[1] + 3))
    # Nothing of the run's colour above the line's left half or below its right half.
    assert not colored(image, (x0, y0, x0 + (x1 - x0) // 4, y0 + (y1 - y0) // 2), rgb)
    assert not colored(image, (x1 - (x1 - x0) // 4, y0 + (y1 - y0) // 2 + 2, x1, y1), rgb)
    # The name and the latest value are written in the cell's head row.
    assert colored(image, (0, TITLE_H, CELL_W, y0 - 2), (34, 34, 34))
    assert colored(image, (CELL_W // 2, TITLE_H, CELL_W, y0 - 2), (110, 110, 110))


def test_a_non_finite_value_breaks_the_line_and_compared_runs_have_their_colours():
    steps = list(range(10))
    values = [1.0] * 10
    values[5] = float("nan")
    snap = Snapshot(run_id="a", runs=("a", "b"), metrics=("loss",), total_metrics=1,
                    series={("a", "loss"): (steps, values), ("b", "loss"): (steps, [2.0] * 10)})
    image = decode(picture_png(snap))
    x0, y0, x1, y1 = plot_box(0, TITLE_H)
    slots = assign_run_colors(["a", "b"])
    a, b = hex_rgb(RUN_COLORS[slots["a"]]), hex_rgb(RUN_COLORS[slots["b"]])
    assert a != b
    assert image.getpixel((x0, y1 - 1)) == a  # a at the bottom (1.0), b at the top (2.0)
    assert image.getpixel((x0, y0)) == b
    gap = [x for x in range(x0, x1) if image.getpixel((x, y1 - 1)) != a]
    px = lambda s: x0 + round(s * (x1 - 1 - x0) / 9)  # noqa: E731
    assert px(5) in gap and px(4) not in gap and px(6) not in gap


def test_a_wide_run_draws_the_first_metrics_and_counts_the_others():
    names = tuple(f"grad_norm/layer.{i}" for i in range(8))
    series = {("r", n): ([0, 1], [0.0, 1.0]) for n in names}
    snap = Snapshot(run_id="r", state="running", runs=("r",), metrics=names, total_metrics=10_000, series=series)
    assert snap.shown == names[:MAX_PLOTS] and snap.more == 10_000 - MAX_PLOTS
    image = decode(picture_png(snap))
    assert image.size[0] <= 3 * CELL_W and image.size[1] <= TITLE_H + 2 * 170 + 20  # bounded, whatever the run
    line = text_line(snap)
    assert line.startswith("loss pane · run r · running · grad_norm/layer.0 –")
    assert line.endswith("and 9,996 more metrics")


def test_the_line_names_the_run_its_state_and_latest_values():
    snap = Snapshot(run_id="r", state="failed", status="OOM", metrics=("loss", "acc"), total_metrics=2,
                    latest={"loss": (0.25, 420), "acc": (None, None)})
    assert text_line(snap) == "loss pane · run r · failed · OOM · loss 0.25 (step 420) · acc –"
    empty = Snapshot(run_id="r")
    assert text_line(empty) == "loss pane · run r · state unknown"
    assert decode(picture_png(empty)).size[0] == CELL_W


# -- the pane's static output


def test_the_static_bundle_is_html_png_and_text_and_marked_for_the_live_view():
    pane = LossPane("run-a", portal="http://127.0.0.1:9", start=False)
    try:
        bundle = pane.static_bundle()
        assert set(bundle) == {"text/html", "image/png", "text/plain"}
        assert len(pane.pane_id) == 32 and pane.static_display_id == f"tau-pane-{pane.pane_id}"
        assert f'data-tau-pane-static="{pane.pane_id}"' in bundle["text/html"]
        assert f'src="data:image/png;base64,{bundle["image/png"]}"' in bundle["text/html"]
        decode(base64.b64decode(bundle["image/png"]))
        assert bundle["text/plain"] == "loss pane · run run-a · state unknown"
        assert "loss pane · run run-a · state unknown" in bundle["text/html"]
        widget = pane._repr_mimebundle_()
        data = widget[0] if isinstance(widget, tuple) else widget
        assert data["text/plain"] == "LossPane(run_id='run-a')"
        assert "application/vnd.jupyter.widget-view+json" in data
    finally:
        pane.close()


def test_the_poller_keeps_the_static_output_current_and_final(portal_server):
    with PortalClient(portal_server.base_url, portal_server.token, retries=0) as client:
        pane, _rec = make_pane("run-a", client)
        try:
            wait_until(lambda: not pane.polling, "polling to stop after a succeeded run")
            snap = pane._snapshot
            assert snap.state == "succeeded"
            assert snap.metrics == ("train/loss", "eval/acc")  # the default visible set: loss-like first
            # The points the live view draws (reduced to the pane's width), not a read of its own.
            steps, _values = snap.series[("run-a", "train/loss")]
            assert len(steps) <= 4 * pane.width and steps[-1] == 19_999
            assert snap.latest["eval/acc"] == (0.98, 490)
            line = pane.static_bundle()["text/plain"]
            assert line.startswith("loss pane · run run-a · succeeded · train/loss ")
            assert "eval/acc 0.98 (step 490)" in line
        finally:
            pane.close()


class _Out:
    def __init__(self) -> None:
        self.snapshots: list[Snapshot] = []

    def publish(self, **traits) -> bool:
        return True

    def send(self, header, buffers) -> bool:
        return True

    def fallback(self, snapshot) -> bool:
        self.snapshots.append(snapshot)
        return True


def test_the_picture_is_redrawn_on_a_change_of_state_at_once_and_otherwise_at_most_every_few_seconds():
    from taunotebook.pane_poller import Poller, _Held, _RunView

    out = _Out()
    poller = Poller(out, PortalClient("http://127.0.0.1:9", retries=0), True, run_id="r")
    poller.views["r"] = _RunView(state="running", names=["loss"])
    poller.shown = ["loss"]
    held = poller.held[("r", "loss")] = _Held()
    held.reset([0, 1], [1.0, 0.5])
    poller._fallback(final=False)
    assert len(out.snapshots) == 1
    poller._fallback(final=False)  # nothing changed
    assert len(out.snapshots) == 1
    held.append(array_q([2]), array_d([0.25]))
    poller._fallback(final=False)  # changed, but drawn a moment ago
    assert len(out.snapshots) == 1
    poller.static.drawn_at -= FALLBACK_SECONDS
    poller._fallback(final=False)
    assert len(out.snapshots) == 2 and list(out.snapshots[-1].series[("r", "loss")][0]) == [0, 1, 2]
    held.append(array_q([3]), array_d([0.2]))
    poller.views["r"].state = "succeeded"
    poller._fallback(final=False)  # the state changed: at once
    assert len(out.snapshots) == 3 and out.snapshots[-1].state == "succeeded"
    held.append(array_q([4]), array_d([0.1]))
    poller._fallback(final=True)  # polling stops: the final picture at once
    assert len(out.snapshots) == 4 and math.isclose(out.snapshots[-1].series[("r", "loss")][1][-1], 0.1)
    poller.stop()


def array_q(values):
    from array import array

    return array("q", values)


def array_d(values):
    from array import array

    return array("d", values)


def test_a_lone_point_is_drawn_as_a_mark():
    snap = Snapshot(run_id="r", runs=("r",), metrics=("loss",), total_metrics=1,
                    series={("r", "loss"): ([0], [2.0])})
    image = decode(picture_png(snap))
    x0, y0, x1, y1 = plot_box(0, TITLE_H)
    rgb = hex_rgb(RUN_COLORS[assign_run_colors(["r"])["r"]])
    assert len(colored(image, (x0, y0, x1, y1), rgb)) == 9  # 3×3, at the middle of the plot
