"""The compare page grown up, in headless Chromium against the real Portal: the "only what differs" toggle, the
parameter-importance panel (the parameter that drives the loss first), and runs of two projects on one page.

The store is the sweep of tests/fixtures/sweep_store.py (project ``sweeps``: ``lr`` drives the loss, ``batch`` is
32 in all) plus one run, ``other-1``, of project ``other``, written by the real writer.
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Page

from fixtures.browser import open_ready, screenshot
from fixtures.portal import TOKEN, PortalServer, serve
from fixtures.sweep_store import BASE_NS, build_sweep_store
from tau_collector.expstore import open_store
from tau_collector.expstore.write.writer import MetricWriter
from tau_collector.projection.metric_event import new_metric_event


@pytest.fixture(scope="module")
def two_projects(tmp_path_factory) -> Iterator[PortalServer]:
    root = build_sweep_store(tmp_path_factory.mktemp("compare") / "store", trials=12)
    store = open_store(root, writable=True)
    MetricWriter(store).write_chunk("other", [
        new_metric_event(project="other", experiment_id="exp-o", run_group_id="go", run_id="other-1",
                         metric_name="loss", step=s, wall_time=BASE_NS + s * 10**6, value=1.0 / (s + 1),
                         exported_at=BASE_NS, source="history", tags={}) for s in range(5)], [], request_hash="h")
    store.close()
    with serve(root) as server:
        yield PortalServer(f"http://127.0.0.1:{server.port}", TOKEN, root)


def config_text(page: Page, run: str) -> str:
    return page.locator(f'section.stellar-run[data-run-id="{run}"] dd.stellar-config').inner_text()


def test_toggle_importance_and_two_projects(page: Page, two_projects: PortalServer):
    url = (f"{two_projects.base_url}/stellar?target=trial-000&compare=trial-001,trial-002,other/other-1"
           f"&token={two_projects.token}")
    open_ready(page, url)
    # Runs of two projects: each card says its project.
    projects = page.locator("section.stellar-run").evaluate_all("(s) => s.map((c) => c.dataset.project)")
    assert projects == ["sweeps", "sweeps", "sweeps", "other"]
    assert page.locator('section.stellar-run[data-run-id="other-1"] .stellar-run-project').inner_text() == "other"
    assert page.locator("section.stellar-chart").count() >= 1

    # The toggle: batch (32 in every run) is listed, then only the keys that differ.
    assert "batch=32" in config_text(page, "trial-000")
    page.locator("#stellar-config-diff").check()
    shown = config_text(page, "trial-000")
    assert "batch" not in shown and "lr=0.1" in shown and "optimizer.name=adam" in shown
    assert page.evaluate("window.__stellar.onlyDiffering") is True
    page.locator("#stellar-config-diff").uncheck()
    assert "batch=32" in config_text(page, "trial-000")

    # Importance of the loss's final value over the compared runs' experiments: lr first.
    page.select_option("#stellar-importance-metric", "loss")
    page.wait_for_function("() => document.getElementById('stellar-importance').dataset.state === 'ready' && "
                           "window.__stellar.importance.metric === 'loss'", timeout=30_000)
    page.wait_for_selector("#stellar-importance-table tbody tr", timeout=30_000)
    rows = page.locator("#stellar-importance-table tbody tr").evaluate_all("(r) => r.map((t) => t.dataset.parameter)")
    assert rows[0] == "lr" and "batch" in rows
    assert "12 of 13 runs have a final value" in page.locator("#stellar-importance-result").inner_text()
    screenshot(page, "compare-importance")

    # The view is in the address: a copied link opens the same toggle, metric and value.
    page.locator("#stellar-config-diff").check()
    page.select_option("#stellar-importance-reduction", "best")
    page.wait_for_function("() => window.location.search.includes('reduction=best')", timeout=10_000)
    query = parse_qs(urlsplit(page.url).query)
    assert query["diff"] == ["1"] and query["importance"] == ["loss"] and query["reduction"] == ["best"]
    assert "other/other-1" in query["target"]
    open_ready(page, f"{page.url}&token={two_projects.token}")
    assert page.locator("#stellar-config-diff").is_checked()
    assert page.locator("#stellar-importance-metric").input_value() == "loss"
    assert page.locator("#stellar-importance-reduction").input_value() == "best"
    assert "batch" not in config_text(page, "trial-000")
