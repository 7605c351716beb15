"""The run and compare page's Media section in headless Chromium against the real Portal (docs/media.md): histogram,
image and text cards drawn from a store that ``taunotebook import`` made of tensorboardX's own event files
(``add_histogram``, ``add_image(s)``, ``add_text``), and the one step cursor that moves every card.

A third run, ``gamma``, is what ``tf.summary`` writes (TensorBoard's own writer): three images per event and text
tensors of rank 0 to 3. The runs log at steps 0, 100, 200 and 300, so a typed 234 shows step 200, labelled as the
nearest to 234.
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Page

from fixtures.browser import open_ready, screenshot, scroll_to
from fixtures.portal import TOKEN, PortalServer, serve
from fixtures.tb_writers import write_tensorboardx_media, write_tf_media
from taunotebook.importer import import_paths

STEPS = (0, 100, 200, 300)


@pytest.fixture(scope="module")
def media_portal(tmp_path_factory) -> Iterator[tuple[PortalServer, list[str]]]:
    base = tmp_path_factory.mktemp("media-ui")
    for name in ("alpha", "beta"):
        write_tensorboardx_media(base / "logs" / name, STEPS)
    write_tf_media(base / "logs" / "gamma", STEPS)  # tf.summary's: several images per event, text of rank 0 to 3
    summary = import_paths([str(base / "logs")], base / "store", clustering="off")
    run_ids = sorted(summary.run_ids)
    assert len(run_ids) == 3, summary
    with serve(base / "store") as server:
        yield PortalServer(f"http://127.0.0.1:{server.port}", TOKEN, base / "store"), run_ids


def card(page: Page, kind: str, tag: str):
    return page.locator(f'section.media-card[data-kind="{kind}"][data-tag="{tag}"]')


def wait_card(page: Page, kind: str, tag: str, *, state: str = "ready") -> None:
    scroll_to(page, f'[data-card="{kind}/{tag}"]')  # the slot, or the card that replaced it
    page.wait_for_selector(f'section.media-card[data-card="{kind}/{tag}"][data-state="{state}"]', timeout=30_000)


def wait_step(page: Page, tag: str, step: int) -> None:
    """Until every panel of the card of ``tag`` shows ``step`` (scrolled into view: a card off screen follows the
    cursor when it is seen)."""
    scroll_to(page, f'section.media-card[data-tag="{tag}"]')
    page.wait_for_function(
        """([tag, step]) => {
            const panels = [...document.querySelectorAll(`section.media-card[data-tag="${tag}"] .media-panel`)];
            return panels.length > 0 && panels.every((p) => p.dataset.step === step);
        }""", arg=[tag, str(step)], timeout=30_000)


def test_the_run_page_draws_distribution_bands_and_images_and_a_typed_step_moves_them(page: Page, media_portal):
    server, (run, _other, _tf) = media_portal
    open_ready(page, f"{server.base_url}/stellar?target={run}&token={server.token}")
    page.wait_for_selector("#stellar-media[data-state=ready]", timeout=30_000)
    heads = page.locator("#stellar-media .stellar-section-title").all_inner_texts()
    assert heads == ["Histograms", "Images", "Text"]
    counts = page.locator("#stellar-media .stellar-section-count").all_inner_texts()
    assert counts == ["4 histogram tags", "2 image tags", "1 text tag"]

    # The weights' distribution: TensorBoard's four nested bands (each a lower edge and a filled upper edge) and the
    # median, over the four steps; with no cursor yet, the histogram of the last step is overlaid.
    wait_card(page, "histograms", "weights")
    bands = page.evaluate(
        """() => {
            const gd = document.querySelector('section.media-card[data-tag="weights"] .media-plot');
            return gd.data.map((t) => ({role: t.meta.role, fill: t.fill || null, x: Array.from(t.x)}));
        }""")
    assert [b["role"] for b in bands] == ["band-low", "band-high"] * 4 + ["median"]
    assert all(b["fill"] == "tonexty" for b in bands if b["role"] == "band-high")
    assert bands[-1]["x"] == list(STEPS)
    # plotly drew the bands' fills in the SVG.
    assert card(page, "histograms", "weights").locator(".media-plot .scatterlayer .trace .fills path").count() >= 4
    assert card(page, "histograms", "weights").locator(".media-overlay").get_attribute("data-traces") == "1"
    assert card(page, "histograms", "weights").locator(".media-step").inner_text() == "step 300"
    # The same tag as a steps × values heat map, its buckets read when first shown.
    card(page, "histograms", "ints").locator("select.media-view").select_option("heatmap")
    wait_card(page, "histograms", "ints")
    heat = page.evaluate(
        """() => {
            const gd = document.querySelector('section.media-card[data-tag="ints"] .media-plot');
            return gd.data.map((t) => ({type: t.type, rows: t.z.length, bins: t.z[0].length}));
        }""")
    assert heat == [{"type": "heatmap", "rows": len(STEPS), "bins": 64}]
    assert card(page, "histograms", "ints").locator(".media-plot .heatmaplayer image").count() == 1

    # Typing a step moves the image card to the nearest stored step, labelled, and the address keeps the step.
    page.locator("#stellar-media-step").fill("234")
    page.locator("#stellar-media-step").press("Enter")
    wait_card(page, "images", "sample")
    sample = card(page, "images", "sample")
    wait_step(page, "sample", 200)
    assert sample.locator(".media-step").inner_text() == "step 200 (nearest to 234)"
    thumb = sample.locator("img.media-thumb")
    assert thumb.count() == 1
    page.wait_for_function(
        """() => { const img = document.querySelector('section.media-card[data-tag="sample"] img.media-thumb');
                   return img && img.complete && img.naturalWidth > 0; }""", timeout=30_000)
    href = sample.locator("a.media-image-link").get_attribute("href")
    assert f"/api/v2/stellar/runs/{run}/images/" in href
    page.wait_for_function("() => new URLSearchParams(location.search).get('step') === '234'", timeout=10_000)
    # tensorboardX's add_images logs its batch as one grid: one image at that step.
    wait_card(page, "images", "batch")
    wait_step(page, "batch", 200)
    assert card(page, "images", "batch").locator("img.media-thumb").count() == 1
    # The histogram card followed the cursor too.
    wait_step(page, "weights", 200)
    # The text at that step, as text.
    wait_card(page, "text", "note/text_summary")
    assert "step **200**" in card(page, "text", "note/text_summary").locator(".media-body").inner_text()

    # A step that is not one is refused in words beside the box; the cards stay.
    page.locator("#stellar-media-step").fill("12x")
    page.locator("#stellar-media-step").press("Enter")
    assert "not a whole step" in page.locator("#stellar-media-step-why").inner_text()
    assert sample.locator(".media-panel").get_attribute("data-step") == "200"
    screenshot(page, "stellar-media-run")


def test_steps_typed_in_quick_succession_end_on_the_last_with_no_error(page: Page, media_portal):
    """A move shows the image and text cards first and the histogram cards once the cursor rests; a newer move
    aborts what the one before still reads: typed 134 then, a frame later, 234 -- every card ends at step 200, none
    shows an error, and the page says the last move is done (its histogram cards shown)."""
    server, (run, _other, _tf) = media_portal
    open_ready(page, f"{server.base_url}/stellar?target={run}&token={server.token}")
    page.wait_for_selector("#stellar-media[data-state=ready]", timeout=30_000)
    for kind, tag in (("histograms", "weights"), ("images", "sample")):
        wait_card(page, kind, tag)
    scroll_to(page, 'section.media-card[data-kind="histograms"][data-tag="weights"]')
    page.evaluate(
        """async () => {
            const input = document.getElementById("stellar-media-step");
            const type = (value) => { input.value = value;
                input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true })); };
            type("134");
            await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
            type("234");
        }""")
    page.wait_for_selector("#stellar[data-media-move=done]", timeout=30_000)
    wait_step(page, "weights", 200)
    assert card(page, "histograms", "weights").locator(".media-step").first.inner_text() == "step 200 (nearest to 234)"
    wait_step(page, "sample", 200)
    assert page.locator("#stellar-media .media-error:not([hidden])").count() == 0
    assert page.locator('#stellar-media .media-panel[data-state="error"]').count() == 0
    page.wait_for_function("() => new URLSearchParams(location.search).get('step') === '234'", timeout=10_000)


def test_a_live_runs_new_steps_widen_the_sliders_and_its_end_stops_the_reads(page: Page, media_portal):
    """The run is shown live (its state ``running``) and its first ``…/media`` answer stops at step 100; the next
    answers hold the whole run: the image card's slider widens to 300 and the histogram card reads its series
    again. Once the run's state is terminal the page reads ``…/media`` once more and then no more."""
    server, (run, _other, _tf) = media_portal
    reads = {"run": 0, "media": 0}
    live = {"on": True}

    def is_run(url: str) -> bool:
        return urlsplit(url).path.endswith(f"/api/v2/stellar/runs/{run}")

    def is_media(url: str) -> bool:
        return urlsplit(url).path.endswith(f"/api/v2/stellar/runs/{run}/media")

    def run_route(route) -> None:
        reads["run"] += 1
        body = route.fetch().json()
        if live["on"]:
            body["run"]["state"] = "running"
        route.fulfill(json=body)

    def media_route(route) -> None:
        reads["media"] += 1
        body = route.fetch().json()
        if reads["media"] == 1:  # the page's first read: the run had logged up to step 100
            for tag in body["tags"]:
                tag["step_max"] = min(tag["step_max"], 100)
        route.fulfill(json=body)

    page.route(is_run, run_route)
    page.route(is_media, media_route)
    open_ready(page, f"{server.base_url}/stellar?target={run}&token={server.token}")
    page.wait_for_selector("#stellar[data-media-live=following]", timeout=30_000)
    wait_card(page, "histograms", "weights")
    wait_card(page, "images", "sample")
    slider = card(page, "images", "sample").locator("input.media-slider")
    assert slider.get_attribute("max") == "100"
    # The next poll (5 s) holds the whole run: the slider widens; with no cursor the card follows the last step.
    page.wait_for_function(
        """() => document.querySelector('section.media-card[data-tag="sample"] input.media-slider')
                 ?.getAttribute('max') === '300'""", timeout=30_000)
    wait_step(page, "sample", 300)
    page.wait_for_function(
        """() => Number(document.querySelector('section.media-card[data-tag="weights"]')?.dataset.refreshed) >= 1""",
        timeout=30_000)
    wait_step(page, "weights", 300)
    # The run ends: one more read, then the page stops reading.
    live["on"] = False
    page.wait_for_selector("#stellar[data-media-live=ended]", timeout=30_000)
    ended_at = dict(reads)
    page.wait_for_timeout(6_000)  # longer than a poll: nothing more is read
    assert reads == ended_at


def test_a_click_on_the_loss_curve_moves_the_cards_and_the_search_filters_tags(page: Page, media_portal):
    server, (run, _other, _tf) = media_portal
    open_ready(page, f"{server.base_url}/stellar?target={run}&token={server.token}")
    page.wait_for_selector("#stellar-media[data-state=ready]", timeout=30_000)
    wait_card(page, "images", "sample")
    # Everything above the chart drawn (the run card's job lines come last), so the chart stays where it is.
    page.wait_for_selector("#stellar[data-job=loaded][data-annotations=loaded]", timeout=30_000)
    chart = page.locator('section.stellar-chart[data-metric="loss"]')
    chart.scroll_into_view_if_needed()
    page.wait_for_selector('section.stellar-chart[data-metric="loss"][data-state="ready"]', timeout=30_000)
    point = page.evaluate(
        """() => {
            const gd = document.querySelector('section.stellar-chart[data-metric="loss"] .stellar-plot');
            const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
            const rect = gd.getBoundingClientRect();
            const i = gd.data.findIndex((t) => t.meta && t.meta.role === "raw");
            const k = Array.from(gd.data[i].customdata).indexOf(100);
            return {x: rect.left + xa._offset + xa.l2p(gd.data[i].x[k]),
                    y: rect.top + ya._offset + ya.l2p(gd.data[i].y[k])};
        }""")
    page.mouse.move(point["x"] - 20, point["y"] - 20)
    page.mouse.move(point["x"], point["y"], steps=5)
    # plotly's click is of the point hovered: wait until the hover label says step 100.
    chart.locator(".hoverlayer .hovertext").filter(has_text="step 100").wait_for(timeout=10_000)
    page.mouse.click(point["x"], point["y"])
    page.wait_for_function("() => window.__stellar.step === 100", timeout=10_000)
    assert page.locator("#stellar-media-step").input_value() == "100"
    scroll_to(page, 'section.media-card[data-kind="images"][data-tag="sample"]')
    wait_step(page, "sample", 100)
    assert card(page, "images", "sample").locator(".media-step").inner_text() == "step 100"

    # The page's search filters the media tags as it filters metrics.
    page.locator("#stellar-search").fill("^weights$")
    page.wait_for_function(
        "() => document.querySelectorAll('#stellar-media .stellar-section').length === 1", timeout=10_000)
    assert page.locator("#stellar-media .stellar-section-count").inner_text() == "1 of 4 histogram tags"


def test_the_compare_page_shows_both_runs_side_by_side_at_the_shared_step(page: Page, media_portal):
    server, (run, other, _tf) = media_portal
    open_ready(page, f"{server.base_url}/stellar?target={run}&compare={other}&step=120&token={server.token}")
    page.wait_for_selector("#stellar-media[data-state=ready]", timeout=30_000)
    assert page.locator("#stellar-media-step").input_value() == "120"
    wait_card(page, "images", "sample")
    panels = card(page, "images", "sample").locator(".media-panel")
    shown = panels.evaluate_all("(ps) => ps.map((p) => [p.dataset.run, p.dataset.step])")
    assert shown == [[run, "100"], [other, "100"]]
    assert card(page, "images", "sample").locator(".media-step").all_inner_texts() == ["step 100 (nearest to 120)"] * 2
    # Each run's own image: the two runs logged different pictures.
    # These small pictures ride in the answers (inline_thumbnails); each links to its own run's stored bytes.
    srcs = card(page, "images", "sample").locator("img.media-thumb").evaluate_all("(imgs) => imgs.map((i) => i.src)")
    assert len(srcs) == 2 and all(s.startswith("data:image/png;base64,") for s in srcs)
    links = card(page, "images", "sample").locator("a.media-image-link").evaluate_all("(a) => a.map((x) => x.href)")
    assert f"/runs/{run}/images/" in links[0] and f"/runs/{other}/images/" in links[1]
    # The histogram at the step overlaid, one outline per run, and each run's bands beside the other's.
    wait_card(page, "histograms", "weights")
    weights = card(page, "histograms", "weights")
    assert weights.locator(".media-overlay").get_attribute("data-traces") == "2"
    assert weights.locator(".media-panel").evaluate_all("(ps) => ps.map((p) => p.dataset.traces)") == ["9", "9"]
    # Moving one card's slider moves every card of both runs, and the address.
    slider = card(page, "images", "sample").locator("input.media-slider")
    slider.evaluate("(s) => { s.value = '290'; s.dispatchEvent(new Event('input', {bubbles: true})); }")
    wait_step(page, "weights", 300)
    query = parse_qs(urlsplit(page.url).query)
    assert query["step"] == ["290"]
    screenshot(page, "stellar-media-compare")


def test_every_image_of_a_step_and_a_text_table_of_tf_summary(page: Page, media_portal):
    server, (_run, _other, tf_run) = media_portal
    open_ready(page, f"{server.base_url}/stellar?target={tf_run}&step=100&token={server.token}")
    page.wait_for_selector("#stellar-media[data-state=ready]", timeout=30_000)
    wait_card(page, "images", "inputs")
    assert card(page, "images", "inputs").locator("img.media-thumb").count() == 3  # every image of the event
    assert card(page, "images", "inputs").locator(".media-panel").get_attribute("data-step") == "100"
    wait_card(page, "text", "table")
    table = card(page, "text", "table").locator("table.media-text-table")
    assert table.locator("tr").evaluate_all("(rows) => rows.map((r) => r.innerText.split(/\\s+/))") == [
        ["a", "b"], ["ç", "100"]]
    wait_card(page, "text", "cube")
    assert card(page, "text", "cube").locator("th").all_inner_texts() == ["[0, 0]", "[0, 1]", "[1, 0]", "[1, 1]"]


def test_a_run_without_media_shows_no_media_section(page: Page, portal_server):
    open_ready(page, f"{portal_server.base_url}/stellar?target=run-a&token={portal_server.token}")
    page.wait_for_selector("#stellar[data-media]", state="attached", timeout=30_000)
    assert page.locator("#stellar").get_attribute("data-media") == "none"
    assert page.locator("#stellar-media").is_hidden()
    assert page.locator("#stellar-media .media-slot, #stellar-media .media-card").count() == 0


def test_an_exported_compare_view_draws_its_media_offline(chromium, media_portal, tmp_path):
    """``taunotebook export-view`` of a compare link, opened with the network off: the histogram card's bands and
    overlay drawn by the page's own cards, the images from ``data:`` URIs, the text, and the export's words."""
    from taunotebook.export_view import export_view

    server, (alpha, beta, _tf) = media_portal
    html, notes = export_view(f"{server.base_url}/stellar?target={alpha}&compare={beta}&token={server.token}")
    assert notes == []
    path = tmp_path / "compare.html"
    path.write_text(html, encoding="utf-8")
    context = chromium.new_context(viewport={"width": 1400, "height": 1400}, offline=True)
    refused: list[str] = []

    def block(route):
        if route.request.url.startswith(("file:", "data:")):
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    context.route("**/*", block)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(path.as_uri())
        page.wait_for_selector("#stellar-media[data-state=ready]", timeout=30_000)
        note = page.locator("#stellar-media-export-note").inner_text()
        assert note.startswith("This export carries each media tag at one step") and "the live page" in note
        wait_card(page, "histograms", "weights")
        roles = page.evaluate("""() => [...document.querySelectorAll(
            'section.media-card[data-tag="weights"] .media-plot')].map((gd) => gd.data.map((t) => t.meta.role))""")
        assert roles == [["band-low", "band-high"] * 4 + ["median"]] * 2  # a panel per run
        assert card(page, "histograms", "weights").locator(".media-overlay").get_attribute("data-traces") == "2"
        wait_card(page, "images", "sample")
        page.wait_for_function(
            """() => { const imgs = [...document.querySelectorAll('section.media-card[data-tag="sample"] img')];
                       return imgs.length === 2 && imgs.every((i) => i.src.startsWith('data:image/png;base64,')
                                                                    && i.complete && i.naturalWidth > 0); }""",
            timeout=30_000)
        wait_card(page, "text", "note/text_summary")
        bodies = card(page, "text", "note/text_summary").locator(".media-body").all_inner_texts()
        assert len(bodies) == 2 and all("step **300**" in b for b in bodies)
        # Another step: the export carries the last one, shown and labelled as the nearest it has.
        page.locator("#stellar-media-step").fill("100")
        page.locator("#stellar-media-step").press("Enter")
        wait_step(page, "sample", 300)
        page.wait_for_function("""() => document.querySelector('section.media-card[data-tag="sample"] .media-step')
                                  .textContent === 'step 300 (nearest to 100)'""", timeout=30_000)
        screenshot(page, "exported-view-media")
        assert refused == [] and errors == []
    finally:
        context.close()


def test_the_pages_export_button_carries_the_media_cards_it_drew(page: Page, chromium, media_portal, tmp_path):
    """"Export HTML" on a run page whose image and histogram cards were drawn: the file shows them offline, the
    images from ``data:`` URIs."""
    server, (alpha, _beta, _tf) = media_portal
    page.set_viewport_size({"width": 1400, "height": 3000})  # every card on screen: each is drawn
    open_ready(page, f"{server.base_url}/stellar?target={alpha}&token={server.token}")
    page.wait_for_selector("#stellar-media[data-state=ready]", timeout=30_000)
    for kind, tag in (("histograms", "weights"), ("images", "sample"), ("text", "note/text_summary")):
        wait_card(page, kind, tag)
    with page.expect_download() as info:
        page.click("#stellar-export")
    path = tmp_path / info.value.suggested_filename
    info.value.save_as(path)
    context = chromium.new_context(viewport={"width": 1400, "height": 3000}, offline=True)
    refused: list[str] = []
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(("file:", "data:"))
                  else (refused.append(route.request.url), route.abort()))
    offline = context.new_page()
    try:
        offline.goto(path.as_uri())
        offline.wait_for_selector("#stellar-media[data-state=ready]", timeout=30_000)
        assert "This export carries the media cards" in offline.locator("#stellar-media-export-note").inner_text()
        wait_card(offline, "histograms", "weights")
        wait_card(offline, "images", "sample")
        offline.wait_for_function(
            """() => { const img = document.querySelector('section.media-card[data-tag="sample"] img');
                       return img && img.src.startsWith('data:image/png;base64,') && img.naturalWidth > 0; }""",
            timeout=30_000)
        wait_card(offline, "text", "note/text_summary")
        assert "step **300**" in card(offline, "text", "note/text_summary").locator(".media-body").inner_text()
        assert refused == []
    finally:
        context.close()
