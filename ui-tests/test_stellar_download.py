"""The run page's download control in headless Chromium: a series as CSV or JSON, whole or the zoomed window."""

from __future__ import annotations

import json

from playwright.sync_api import Page

from fixtures.browser import open_ready
from fixtures.portal import BASE_NS, LOSS_POINTS, PortalServer


def url(server: PortalServer, path: str) -> str:
    return f"{server.base_url}{path}&token={server.token}"


def download(page: Page, run_id: str) -> tuple[str, str]:
    """(suggested file name, text) of the file the run's download link saves."""
    with page.expect_download() as info:
        page.click(f'#stellar-download a[data-run="{run_id}"]')
    saved = info.value
    return saved.suggested_filename, open(saved.path(), encoding="utf-8").read()


def test_the_download_saves_every_stored_point_as_csv_with_non_finite_values_spelled_out(
        page: Page, portal_server: PortalServer):
    open_ready(page, url(portal_server, "/stellar?target=run-b&project=proj"))
    page.fill("#stellar-download-metric", "train/loss")
    name, text = download(page, "run-b")
    assert name == "run-b-train_loss.csv"
    lines = text.splitlines()
    assert lines[0] == "step,wall_time,value" and len(lines) == 11
    assert [line.split(",")[2] for line in lines[1:]] == ["0", "0.1", "0.2", "NaN", "0.4", "0.55", "0.6", "Infinity",
                                                          "0.8", "0.9"]
    assert lines[2].split(",")[1] == repr((BASE_NS + 1_000_000) // 1000 / 1e6)


def test_the_visible_window_after_a_zoom_downloads_as_json_with_every_step_of_it(
        page: Page, portal_server: PortalServer):
    open_ready(page, url(portal_server, "/stellar?target=run-a&project=proj"))
    page.fill("#stellar-download-metric", "train/loss")
    page.select_option("#stellar-download-format", "json")
    _, whole = download(page, "run-a")
    assert len(json.loads(whole)["rows"]) == LOSS_POINTS  # unchecked: every stored point

    page.evaluate("""() => Plotly.relayout(document.querySelector('section[data-metric="train/loss"] .stellar-plot'),
                                           {'xaxis.range': [5000, 6000]})""")
    page.wait_for_selector('section[data-metric="train/loss"][data-fetches="2"][data-state="ready"]')
    page.check("#stellar-download-visible")
    name, text = download(page, "run-a")
    body = json.loads(text)
    assert name == "run-a-train_loss.json"
    assert (body["start_step"], body["end_step"]) == (5000, 6000)
    assert [row[0] for row in body["rows"]] == list(range(5000, 6001))


def test_the_metric_box_suggests_matching_names_and_an_unknown_name_gives_no_link(
        page: Page, portal_server: PortalServer):
    open_ready(page, url(portal_server, "/stellar?target=run-b&project=proj"))
    page.fill("#stellar-download-metric", "LOSS")
    options = page.eval_on_selector_all("#stellar-download-metrics option", "(os) => os.map((o) => o.value)")
    assert options and all("loss" in o.lower() for o in options)
    page.fill("#stellar-download-metric", "no/such/metric")
    assert page.eval_on_selector_all("#stellar-download-metrics option", "(os) => os.length") == 0
    link = page.locator('#stellar-download a[data-run="run-b"]')
    assert link.get_attribute("href") is None and link.get_attribute("aria-disabled") == "true"
    assert "no/such/metric" in link.get_attribute("title")
    page.fill("#stellar-download-metric", "train/loss")
    assert "train%2Floss" in link.get_attribute("href") or "train/loss" in link.get_attribute("href")
