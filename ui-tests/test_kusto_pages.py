"""The Stellar pages opened with ``?source=kusto`` in headless Chromium: every read they make names the source.

The Portal holds an empty store and reads ADX through the stand-in cluster (the one part not real), so a
page that dropped the source would find nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Page

from fixtures.browser import open_ready, screenshot
from fixtures.kusto import reader_for
from fixtures.kusto_events import event, fixture_events, marker
from fixtures.servers import ServerThread
from services.kusto_cluster import KustoCluster
from tau_collector.expstore import open_store
from tau_collector.projection.metric_event import encode_ndjson_many, replace
from taunotebook.portal.app import create_app

TOKEN = "kusto-pages-token-0123456789"


@pytest.fixture(scope="module")
def kusto_portal(tmp_path_factory) -> Iterator[str]:
    store = Path(tmp_path_factory.mktemp("kusto-pages")) / "store"
    open_store(store, create=True).close()
    with KustoCluster() as cluster:
        events = [replace(e, workspace_id="default", tags={**e.tags, "tau_workspace": "default"})
                  for e in fixture_events() if e.workspace_id == "ws-a"]
        events += [event("seed-3", "train/loss", s, 2.0 - s / 100, workspace="default") for s in range(50)]
        events += [marker("seed-3", "failed", -1.0, at_step=50, workspace="default")]
        cluster.ingest_ndjson(encode_ndjson_many(events))
        reader = reader_for(cluster, workspace="default")
        with ServerThread(create_app(store, token=TOKEN, kusto=reader)) as server:
            yield f"http://127.0.0.1:{server.port}"
        reader.connection.close()
        assert cluster.errors == []


def _sources(page: Page) -> list[str | None]:
    return page.evaluate("() => window.__stellar.requests.map((r) => r.query.source ?? null)")


def test_a_kusto_run_page_reads_kusto_throughout(page: Page, kusto_portal: str):
    open_ready(page, f"{kusto_portal}/stellar?target=seed-1&source=kusto&compare=seed-3&token={TOKEN}")
    loss = page.locator('section.stellar-chart[data-metric="train/loss"]')
    assert loss.get_attribute("data-state") == "ready" and loss.get_attribute("data-traces") == "2"
    assert int(loss.get_attribute("data-points")) > 0
    card = page.locator('section.stellar-run[data-run-id="seed-3"]').inner_text()
    assert "failed" in card
    sources = _sources(page)
    assert len(sources) >= 6 and set(sources) == {"kusto"}, sources
    assert page.console_errors == []
    screenshot(page, "kusto-run-page")


def test_without_the_source_the_store_has_no_such_run(page: Page, kusto_portal: str):
    open_ready(page, f"{kusto_portal}/stellar?target=seed-1&token={TOKEN}", state="error")
    assert "not found" in page.locator("#stellar").inner_text().lower()
    page.console_errors.clear()  # the 404 the page reports in words


def test_the_kusto_listing_links_and_compares_with_the_source(page: Page, kusto_portal: str):
    open_ready(page, f"{kusto_portal}/stellar/runs?source=kusto&token={TOKEN}")
    row = page.locator('tr.stellar-run-row[data-run-id="seed-1"]')
    assert row.locator(".stellar-state").inner_text() == "succeeded"
    href = row.locator("a").first.get_attribute("href")
    assert parse_qs(urlsplit(href).query)["source"] == ["kusto"]
    assert set(_sources(page)) == {"kusto"}
    page.locator('tr.stellar-run-row[data-run-id="seed-1"] input[type=checkbox]').check()
    page.locator('tr.stellar-run-row[data-run-id="seed-2"] input[type=checkbox]').check()
    page.locator("#stellar-compare").click()
    page.wait_for_selector("#stellar[data-state=ready]")
    opened = parse_qs(urlsplit(page.url).query)
    assert opened["source"] == ["kusto"] and sorted(opened["target"]) == ["seed-1", "seed-2"]
    assert page.locator('section.stellar-chart[data-metric="train/loss"]').get_attribute("data-traces") == "2"
    assert set(_sources(page)) == {"kusto"}
    screenshot(page, "kusto-listing")


def test_a_kusto_run_page_says_in_words_where_its_media_live(page: Page, kusto_portal: str):
    open_ready(page, f"{kusto_portal}/stellar?target=seed-1&source=kusto&compare=seed-3&token={TOKEN}")
    page.wait_for_selector("#stellar[data-media]", state="attached", timeout=30_000)
    notes = page.locator("#stellar-media .media-unavailable")
    assert notes.count() == 2  # one per compared run
    assert "live with the run's store" in notes.first.inner_text()
    assert notes.first.inner_text().startswith("seed-1: ")
    # No tags: no cards and no step box.
    assert page.locator("#stellar-media .media-card, #stellar-media .media-slot, #stellar-media-step").count() == 0
    assert page.console_errors == []
