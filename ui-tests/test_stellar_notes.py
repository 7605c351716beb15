"""Notes and tags on the Stellar run page in headless Chromium: added there, kept by the Portal, there after a
reload; and a page of another origin cannot write."""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import Page, expect

from fixtures.browser import open_ready, screenshot
from fixtures.portal import TOKEN, build_store, serve
from tau_collector.expstore import StoreReader


@pytest.fixture(scope="module")
def writable_portal(tmp_path_factory):
    """A Portal of its own over a store of its own (the shared one is read by every other UI test)."""
    root = build_store(tmp_path_factory.mktemp("notes-ui") / "store")
    with serve(root) as server:
        yield f"http://127.0.0.1:{server.port}", root


def test_a_note_and_a_tag_added_on_the_run_page_are_there_after_a_reload(page: Page, writable_portal):
    base, root = writable_portal
    open_ready(page, f"{base}/stellar/runs/run-b?project=proj&token={TOKEN}")
    card = page.locator('section.stellar-annotations[data-run-id="run-b"]')
    expect(card.locator(".stellar-note-input")).to_be_visible(timeout=30_000)

    card.locator(".stellar-note-input").fill("lr warmup too short: diverged at 5k")
    card.locator(".stellar-note-add").click()
    expect(card.locator(".stellar-note-item .stellar-note-text")).to_have_text(["lr warmup too short: diverged at 5k"])
    card.locator(".stellar-tag-input").fill("verdict=rerun")
    card.locator(".stellar-tag-add").click()
    expect(card.locator('.stellar-tag[data-key="verdict"]')).to_have_text("verdict=rerun×")

    page.reload()
    page.wait_for_selector("#stellar[data-annotations=loaded]", timeout=30_000)
    card = page.locator('section.stellar-annotations[data-run-id="run-b"]')
    expect(card.locator(".stellar-note-item .stellar-note-text")).to_have_text(["lr warmup too short: diverged at 5k"])
    expect(card.locator(".stellar-note-author")).to_have_count(1)
    expect(card.locator('.stellar-tag[data-key="verdict"]')).to_contain_text("verdict=rerun")
    # The collector's tag is shown, not removable.
    expect(card.locator('.stellar-tag[data-key="note"] .stellar-tag-remove')).to_have_count(1)
    screenshot(page, "stellar-run-notes-and-tags")

    reader = StoreReader(root)
    assert [n.text for n in reader.notes("run-b")] == ["lr warmup too short: diverged at 5k"]
    assert reader.run("run-b").tags["verdict"] == "rerun"

    # Removing the tag from the page, and the runs table showing and filtering by what was written.
    card.locator('.stellar-tag[data-key="verdict"] .stellar-tag-remove').click()
    expect(card.locator('.stellar-tag[data-key="verdict"]')).to_have_count(0)
    open_ready(page, f"{base}/stellar/runs")
    page.locator("#stellar-filter-note").fill("DIVERGED")
    expect(page.locator("#stellar")).to_have_attribute("data-listed", "1", timeout=30_000)
    expect(page.locator("td.stellar-run-cell a")).to_have_text(["run-b"])


def test_a_page_of_another_origin_cannot_write(page: Page, writable_portal):
    base, root = writable_portal
    open_ready(page, f"{base}/stellar/runs/run-a?project=proj&token={TOKEN}")  # the page cookie is set
    # From another origin (a second loopback name is another origin), with the cookie the browser holds:
    other = base.replace("127.0.0.1", "localhost")
    page.goto(f"{other}/openapi.json")
    status = page.evaluate(
        """async (url) => {
            try {
                const r = await fetch(url, {method: "POST", credentials: "include",
                    headers: {"Content-Type": "text/plain"}, body: JSON.stringify({text: "csrf"})});
                return r.status;
            } catch (err) { return "blocked: " + err.message; }
        }""",
        f"{base}/api/v2/stellar/runs/run-a/notes",
    )
    assert status != 201, status
    assert StoreReader(root).notes("run-a") == []
    # And the same request with the page's headers is refused by the Portal, not just by the browser's CORS.
    r = httpx.post(f"{base}/api/v2/stellar/runs/run-a/notes", json={"text": "csrf"},
                   headers={"Authorization": f"Bearer {TOKEN}", "X-Tau-Token": TOKEN, "Origin": "http://evil.example"})
    assert r.status_code == 403
