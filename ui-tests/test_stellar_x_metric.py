"""A metric as the x axis on the Stellar run page, in headless Chromium against a real Portal: picking ``tokens``
moves the points to their token counts (joined by step, the last value carried forward), titles the axis, and
says how many points had no token count yet."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page

from fixtures.browser import open_ready, screenshot
from fixtures.portal import TOKEN, event, serve
from tau_collector.expstore import open_store
from tau_collector.expstore.write.writer import MetricWriter

TOKENS_PER_STEP = 512


@pytest.fixture(scope="module")
def tokens_portal(tmp_path_factory) -> Iterator[str]:
    """run-t: ``train/loss`` at steps 0..99 (value 100 - step), ``tokens`` every 10 steps from step 10
    (value ``512 * step``): steps 0..9 have no token count, the others carry the last one. run-u (twice the
    batch): ``train/loss`` at steps 0..49, ``tokens`` at every step (value ``1024 * step``)."""
    root: Path = tmp_path_factory.mktemp("xmetric") / "store"
    store = open_store(root, create=True)
    writer = MetricWriter(store)
    tags = {"tau_workspace": "default"}
    loss = [event("run-t", "train/loss", s, 100.0 - s, tags=tags) for s in range(100)]
    tokens = [event("run-t", "tokens", s, float(TOKENS_PER_STEP * s), tags=tags) for s in range(10, 100, 10)]
    writer.write_chunk("t-1", loss + tokens, [], request_hash="h")
    writer.write_chunk("u-1", [event("run-u", "train/loss", s, 50.0 - s, tags=tags) for s in range(50)]
                       + [event("run-u", "tokens", s, 2.0 * TOKENS_PER_STEP * s, tags=tags) for s in range(50)],
                       [], request_hash="h")
    store.close()
    with serve(root) as server:
        yield f"http://127.0.0.1:{server.port}/stellar?target=run-t&project=proj&token={TOKEN}"


def test_compared_runs_as_a_band_are_aligned_on_the_metric(page: Page, tokens_portal: str):
    open_ready(page, tokens_portal.replace("target=run-t", "target=run-t&target=run-u"))
    page.locator("#stellar-x-axis").select_option("metric:tokens")
    page.locator("#stellar-aggregate").select_option("mean")
    page.wait_for_function("""() => {
        const gd = document.querySelector('section[data-metric="train/loss"] .stellar-plot');
        return gd.layout.xaxis.title.text === 'tokens' && gd.data.some((t) => t.meta.role === 'aggregate');
    }""")
    center = page.evaluate("""() => {
        const t = document.querySelector('section[data-metric="train/loss"] .stellar-plot')
                  .data.find((d) => d.meta.role === 'aggregate');
        return {x: Array.from(t.x), y: Array.from(t.y), text: Array.from(t.text)};
    }""")
    # Aligned on tokens, not steps: run-u's step 10 (10,240 tokens) meets run-t's steps 20..29 (10,240 tokens,
    # the last of them wins), so the mean there is (50 - 10 + 100 - 29) / 2.
    at = center["x"].index(2 * TOKENS_PER_STEP * 10)
    assert center["y"][at] == pytest.approx((40 + 71) / 2)
    assert center["text"][at].startswith("2 of 2 runs")
    assert max(center["x"]) == 2 * TOKENS_PER_STEP * 49  # run-u goes further in tokens: counted alone there
    assert center["text"][-1].startswith("1 of 2 runs")
    page.locator("#stellar-aggregate").select_option("")
    page.locator("#stellar-x-axis").select_option("step")


def raw_trace(page: Page, metric: str) -> dict:
    return page.evaluate(
        """(metric) => {
            const gd = document.querySelector(`section.stellar-chart[data-metric="${metric}"] .stellar-plot`);
            const t = gd.data.find((d) => d.meta.role === "raw");
            return {x: Array.from(t.x), y: Array.from(t.y), steps: Array.from(t.customdata),
                    title: gd.layout.xaxis.title.text};
        }""",
        metric,
    )


def test_picking_a_metric_as_x_moves_the_points_and_titles_the_axis(page: Page, tokens_portal: str):
    open_ready(page, tokens_portal)
    before = raw_trace(page, "train/loss")
    assert before["title"] == "step" and before["x"][:3] == [0, 1, 2]

    assert page.locator('#stellar-x-axis option[value="metric:tokens"]').count() == 1
    page.locator("#stellar-x-axis").select_option("metric:tokens")
    page.wait_for_function("""() => document.querySelector('section[data-metric="train/loss"] .stellar-plot')
                                      .layout.xaxis.title.text === 'tokens'""")
    after = raw_trace(page, "train/loss")
    section = page.locator('section.stellar-chart[data-metric="train/loss"]')

    # Steps 0..9 have no token count yet: not drawn, and said so. Step s ≥ 10 takes the count at its decade.
    assert after["steps"] == list(range(10, 100))
    assert after["x"] == [TOKENS_PER_STEP * (s // 10 * 10) for s in range(10, 100)]
    assert after["y"] == [100.0 - s for s in range(10, 100)]
    assert "10 points without tokens not drawn" in section.inner_text()
    assert section.get_attribute("data-axis") == "metric:tokens"
    # The x metric was read with the same point budget as the line (one more series read per run).
    reads = page.evaluate("""() => window.__stellar.requests
                               .filter((r) => r.path.endsWith('/series') && r.query.metric === 'tokens')""")
    assert reads and all(int(r["query"]["max_points"]) >= 200 for r in reads)
    screenshot(page, "x-axis-tokens")

    # Smoothing still works on the metric axis: the smoothed line has the raw line's x.
    page.locator("#stellar-smoothing").fill("0.6")
    page.wait_for_function("""() => document.querySelector('section[data-metric="train/loss"] .stellar-plot')
                                      .data.some((t) => t.meta.role === 'smoothed')""")
    smoothed = page.evaluate("""() => Array.from(
        document.querySelector('section[data-metric="train/loss"] .stellar-plot')
                .data.find((t) => t.meta.role === 'smoothed').x)""")
    assert smoothed == after["x"]

    # Zoom on the tokens axis: the steps whose tokens lie in the window are read again (19..50, one step either
    # side), with the x value carried into the window (tokens at step 10) read too: step 19 still has its x.
    page.evaluate("""() => document.querySelector('section[data-metric="train/loss"] .stellar-plot')
                     .emit('plotly_relayout', {'xaxis.range[0]': 10240, 'xaxis.range[1]': 20480})""")
    page.wait_for_function("""() => document.querySelector('section[data-metric="train/loss"]')
                                      .dataset.view === 'metric:tokens:10240..20480'""")
    zoomed = raw_trace(page, "train/loss")
    assert zoomed["steps"] == list(range(19, 51))
    assert zoomed["x"][0] == TOKENS_PER_STEP * 10 and zoomed["x"][-1] == TOKENS_PER_STEP * 50
    assert "without tokens" not in section.inner_text()

    open_ready(page, tokens_portal)  # the choice is kept across reloads, like the time axes
    assert page.locator("#stellar-x-axis").input_value() == "metric:tokens"
    page.locator("#stellar-x-axis").select_option("step")  # leave the browser's choice as the other tests expect
