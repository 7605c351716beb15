"""Views to share in headless Chromium: the address holds the view, a copied link opens it again, a mangled
address still opens a page, and a view exported as one HTML file draws its curves with the network blocked."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Browser, Page

from fixtures.browser import open_ready, screenshot
from fixtures.portal import PortalServer

LOSS = 'section.stellar-chart[data-metric="train/loss"]'
VIEW_KEYS = "({targets: s.targets, smoothing: s.smoothing, logY: s.logY, xAxis: s.xAxis, aggregate: s.aggregate, " \
            "band: s.band, search: s.search, pins: s.pins, zoom: s.zoom})"


def url(server: PortalServer, path: str) -> str:
    sep = "&" if "?" in path else "?"
    return f"{server.base_url}{path}{sep}token={server.token}"


def view_of(page: Page) -> dict:
    return page.evaluate(f"() => {{ const s = window.__stellar; return {VIEW_KEYS}; }}")


def traces(page: Page, metric: str) -> list[dict]:
    return page.evaluate(
        """(metric) => {
            const gd = document.querySelector(`section.stellar-chart[data-metric="${metric}"] .stellar-plot`);
            return gd.data.map((t) => ({role: t.meta.role, run: t.meta.runId || null, n: t.x.length,
                                        x: Array.from(t.x, (v) => (v instanceof Date ? v.getTime() : v)),
                                        y: Array.from(t.y)}));
        }""",
        metric,
    )


def zoom(page: Page, window: list[int]) -> None:
    plot = f"document.querySelector('{LOSS} .stellar-plot')"
    page.evaluate(f"(w) => Plotly.relayout({plot}, {{'xaxis.range': w}})", window)


def set_a_view(page: Page, server: PortalServer) -> None:
    """Two runs compared, a metric pinned, a search, smoothing, log y, and a zoom on the loss chart."""
    open_ready(page, url(server, "/stellar?target=run-a&target=run-b&project=proj"))
    page.locator("#stellar-smoothing").fill("0.6")
    page.locator("#stellar-log-y").check()
    page.click('section.stellar-chart[data-metric="eval/acc"] .stellar-pin')
    page.fill("#stellar-search", "loss|acc")
    page.wait_for_function("() => window.__stellar.search === 'loss|acc'")
    zoom(page, [100, 200])
    page.wait_for_selector(f'{LOSS}[data-fetches="2"][data-state="ready"]')


def test_a_copied_link_opens_the_same_view_in_a_new_page(page: Page, chromium: Browser, portal_server: PortalServer):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    set_a_view(page, portal_server)
    page.click("#stellar-copy-link")
    page.wait_for_selector("#stellar-copy-done:has-text('copied')")
    link = page.evaluate("() => navigator.clipboard.readText()")
    page.wait_for_function("(link) => window.location.href === link", arg=link)  # the address bar is the link
    query = parse_qs(urlsplit(link).query)
    assert "token" not in query
    assert query["target"] == ["run-a", "run-b"] and query["pin"] == ["eval/acc"] and query["smooth"] == ["0.6"]
    assert query["zoom.train/loss"] == ["100..200"]
    before = view_of(page)

    # A colleague: another browser context (no cookie, no remembered axis), the link plus their token.
    other = chromium.new_context(viewport={"width": 1400, "height": 1000})
    try:
        fresh = other.new_page()
        open_ready(fresh, f"{link}&token={portal_server.token}")
        fresh.wait_for_selector(f'{LOSS}[data-fetches="2"][data-state="ready"]')
        assert view_of(fresh) == before
        assert fresh.locator("#stellar-smoothing").input_value() == "0.6"
        assert fresh.locator("#stellar-log-y").is_checked()
        assert fresh.locator("#stellar-search").input_value() == "loss|acc"
        # the pinned chart leads, in the Pinned section; the zoomed chart shows (and read) its window
        assert fresh.locator(".stellar-section").first.get_attribute("data-section") == "Pinned"
        assert fresh.locator(LOSS).get_attribute("data-view") == "step:100..200"
        raw = [t for t in traces(fresh, "train/loss") if t["role"] == "raw"]
        assert [t["run"] for t in raw] == ["run-a", "run-b"]
        assert fresh.evaluate(f"() => document.querySelector('{LOSS} .stellar-plot').layout.xaxis.range") == [100, 200]
        assert fresh.evaluate(f"() => document.querySelector('{LOSS} .stellar-plot').layout.yaxis.type") == "log"
        assert fresh.locator("#stellar-address-notices").count() == 0
        screenshot(fresh, "shared-view")
    finally:
        other.close()


def test_resetting_the_zoom_and_other_changes_follow_in_the_address_and_back_returns(
        page: Page, portal_server: PortalServer):
    open_ready(page, url(portal_server, "/stellar/runs?project=proj"))
    listing = page.url
    open_ready(page, url(portal_server, "/stellar?target=run-a&project=proj&x=step"))
    gd = f"document.querySelector('{LOSS} .stellar-plot')"
    page.evaluate(f"() => Plotly.relayout({gd}, {{'xaxis.range': [100, 200]}})")
    page.wait_for_selector(f'{LOSS}[data-fetches="2"]')
    page.wait_for_url("**zoom.train%2Floss=100..200**")
    page.evaluate(f"() => Plotly.relayout({gd}, {{'xaxis.autorange': true}})")
    page.wait_for_selector(f'{LOSS}[data-fetches="3"][data-view="full"]')
    page.wait_for_function("() => !window.location.search.includes('zoom.')")
    for value in ("0.1", "0.2", "0.3"):  # faster than the address is written: the last one is kept
        page.locator("#stellar-smoothing").fill(value)
    page.wait_for_url("**smooth=0.3**")
    page.go_back()  # changes replace the address: one step back is the page before
    page.wait_for_selector("#stellar[data-state=ready]")
    assert page.url.split("?")[0] == listing.split("?")[0]
    page.go_forward()
    page.wait_for_selector("#stellar[data-state=ready]")
    assert page.evaluate("() => window.__stellar.smoothing") == 0.3


def test_a_mangled_address_opens_the_page_and_says_what_it_ignored(page: Page, portal_server: PortalServer):
    long = "x" * 3000
    open_ready(page, url(portal_server, f"/stellar?target=run-a&project=proj&smooth=lots&x=sideways&agg=sum"
                                        f"&zoom.train/loss=9..1&frobnicate=1&q={long}&pin=no/such/metric"))
    notices = page.locator("#stellar-address-notices li").all_inner_texts()
    assert len(notices) == 6
    for word in ("smooth", "x=", "agg", "zoom.train/loss", "frobnicate", "longer than"):
        assert any(word in n for n in notices), (word, notices)
    assert page.locator(LOSS).get_attribute("data-state") == "ready"
    assert int(page.locator(LOSS).get_attribute("data-points")) > 0
    # the address is rewritten to what is drawn: the bad parameters are gone
    assert "frobnicate" not in page.url and "lots" not in page.url and "pin=no%2Fsuch%2Fmetric" in page.url


def test_an_unknown_run_in_a_shared_link_is_reported_beside_the_known_one(page: Page, portal_server: PortalServer):
    open_ready(page, url(portal_server, "/stellar?target=run-a&target=no-such-run&project=proj"))
    assert "no-such-run" in page.locator("#stellar-errors").inner_text()
    assert page.locator(LOSS).get_attribute("data-state") == "ready"


def test_the_listing_keeps_its_view_and_names_unknown_parameters(page: Page, portal_server: PortalServer):
    open_ready(page, url(portal_server, "/stellar/runs?q=page&sort=run_id&dir=up&nonsense=1"))
    assert len(page.locator("#stellar-address-notices li").all_inner_texts()) == 2
    assert page.locator("#stellar-search").input_value() == "page"
    assert "nonsense" not in page.url and "q=page" in page.url


def export_file(page: Page, tmp_path: Path) -> Path:
    with page.expect_download() as info:
        page.click("#stellar-export")
    path = tmp_path / info.value.suggested_filename
    info.value.save_as(path)
    return path


def open_offline(chromium: Browser, path: Path) -> tuple[Page, list[str]]:
    """The file in a context with the network off and every request but the file itself refused."""
    context = chromium.new_context(viewport={"width": 1400, "height": 1000}, offline=True)
    refused: list[str] = []

    def block(route):
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    context.route("**/*", block)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.goto(path.as_uri())
    pg.wait_for_selector("#stellar[data-state=ready]", timeout=30_000)
    return pg, refused + errors


def test_an_exported_view_draws_the_same_curves_offline(page: Page, chromium: Browser, portal_server: PortalServer,
                                                        tmp_path: Path):
    set_a_view(page, portal_server)
    page.select_option("#stellar-aggregate", "mean")
    page.wait_for_function(f"() => document.querySelector('{LOSS} .stellar-plot')"
                           ".data.some((t) => t.meta.role === 'band-upper')")
    page.select_option("#stellar-aggregate", "")
    page.wait_for_selector(f'{LOSS}[data-view="full"][data-state="ready"]')  # the new view dropped the zoom
    zoom(page, [100, 200])
    page.wait_for_selector(f'{LOSS}[data-view="step:100..200"][data-state="ready"]')
    drawn = {m: traces(page, m) for m in ("train/loss", "eval/acc")}
    path = export_file(page, tmp_path)
    html = path.read_text(encoding="utf-8")
    assert "http://" not in html.split("<script>")[0].split('id="stellar-config"')[0]  # no link to load anything

    offline, problems = open_offline(chromium, path)
    try:
        offline.wait_for_selector(f'{LOSS}[data-view="step:100..200"][data-state="ready"]')
        assert problems == []
        for metric, before in drawn.items():
            assert traces(offline, metric) == before, metric
        assert offline.locator("section.stellar-run").count() == 2
        assert "run-a" in offline.locator("#stellar-title").inner_text()
        assert offline.locator("#stellar-exported").get_attribute("data-exported-at")
        assert offline.evaluate("() => window.__stellar.smoothing") == 0.6
        source = offline.locator("#stellar-export-source").get_attribute("href")
        assert source.startswith(portal_server.base_url) and "token" not in source and "pin=eval%2Facc" in source
        assert offline.locator("#stellar-copy-link").count() == 0
        screenshot(offline, "exported-view")
    finally:
        offline.context.close()


@pytest.mark.parametrize("view", [
    "/stellar?target=run-a&target=run-b&project=proj&smooth=0.6&agg=mean&band=std&zoom.train%2Floss=100..200",
    "/stellar?target=run-a&project=proj&x=metric:eval/acc&zoom.train%2Floss=100..200",
], ids=["compare-mean-zoomed", "metric-x-axis"])
def test_the_python_export_draws_what_the_page_draws_offline(page: Page, chromium: Browser, view: str,
                                                             portal_server: PortalServer, tmp_path: Path):
    from taunotebook.export_view import export_view

    open_ready(page, url(portal_server, view))
    page.wait_for_selector(f'{LOSS}[data-fetches="2"][data-state="ready"]')
    asked = page.evaluate("() => window.__stellar.requests.find((r) => r.path.endsWith('/series')).query.max_points")
    drawn = {m: traces(page, m) for m in ("train/loss", "eval/acc")}
    assert any(t["role"] == "band-upper" for t in drawn["train/loss"]) == ("agg=mean" in view)
    status = page.locator(LOSS).inner_text()

    html, _ = export_view(url(portal_server, view), max_points=int(asked))
    path = tmp_path / "view.html"
    path.write_text(html, encoding="utf-8")
    offline, problems = open_offline(chromium, path)
    try:
        offline.wait_for_selector(f'{LOSS}[data-fetches="2"][data-state="ready"]')
        assert problems == []
        for metric, before in drawn.items():
            assert traces(offline, metric) == before, metric
        assert offline.locator(LOSS).inner_text() == status  # the same counts said in words
        assert offline.locator("section.stellar-run").count() == view.count("target=")
    finally:
        offline.context.close()
