"""The Stellar run page of a run of 2,000 metrics in headless Chromium: charts in sections, a search box, and no
read for a chart nobody looks at (a chart is fetched when its section is open and it scrolls into view).

The run is written by the real writer (``tests/fixtures/wide_run.py``); the Portal serving it records every
request, so the test counts the per-metric reads the page made at the Portal itself, not only in the page's own log.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page

from fixtures.browser import open_ready, screenshot
from fixtures.portal import TOKEN
from fixtures.servers import ServerThread
from fixtures.wide_run import RequestLog, write_rows, write_wide_run
from tau_collector.expstore import open_store
from taunotebook.portal.app import create_app

WIDTH = 2000
RUN = "stellar-wide"


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("stellar-wide") / "store"
    open_store(path, create=True).close()
    write_wide_run(path, RUN, WIDTH, 10)
    write_rows(path, "stellar-wide-b", ["loss", "eval/acc", "grad_norm/layer.0000"], range(10), finished=True)
    return path


@pytest.fixture(scope="module")
def portal(store: Path) -> Iterator[tuple[str, RequestLog]]:
    log = RequestLog(create_app(store, token=TOKEN))
    with ServerThread(log) as server:
        yield f"http://127.0.0.1:{server.port}", log


def charts_state(page: Page) -> dict:
    return page.evaluate("""() => ({
        sections: [...document.querySelectorAll('section.stellar-section')].map((s) => [s.dataset.section,
            s.querySelector('.stellar-section-count').textContent, s.dataset.open === 'true']),
        charts: [...document.querySelectorAll('section.stellar-chart')].map((c) => [c.dataset.metric, c.dataset.state]),
        fetched: [...new Set(window.__stellar.requests.filter((r) => r.path.endsWith('/series'))
            .map((r) => r.query.metric))],
        plots: document.querySelectorAll('.stellar-plot.js-plotly-plot').length,
        nodes: document.querySelectorAll('*').length,
    })""")


def on_screen(page: Page) -> list[str]:
    return page.evaluate("""() => [...document.querySelectorAll('section.stellar-chart')].filter((c) => {
        const r = c.getBoundingClientRect();
        return r.bottom > 0 && r.top < window.innerHeight;
    }).map((c) => c.dataset.metric)""")


def test_a_2000_metric_run_page_fetches_only_the_charts_in_view(page: Page, portal):
    base, log = portal
    log.clear()
    open_ready(page, f"{base}/stellar?target={RUN}&project=proj&token={TOKEN}")
    state = charts_state(page)
    assert state["sections"] == [["Loss", "2 metrics", True], ["act", "199 metrics", False],
                                 ["eval", "1 metric", True], ["grad_norm", "1,793 metrics", False],
                                 ["train", "1 metric", True], ["system", "4 metrics", False]]
    # A chart exists for each metric of an open section; only those in view were fetched, at the page and the
    # Portal alike.
    assert [c[0] for c in state["charts"]] == ["loss", "eval/loss", "eval/acc", "train/lr"]
    seen = on_screen(page)
    ready = [m for m, s in state["charts"] if s == "ready"]
    assert "loss" in ready and set(state["fetched"]) == set(ready)
    assert set(ready) <= set(seen) | set(state["fetched"]) and len(ready) < len(state["charts"]), state["charts"]
    assert log.metrics_read(RUN) == set(ready), "the Portal served reads for charts nobody looks at"
    assert state["nodes"] < 4000
    screenshot(page, "stellar-wide-sections")

    # The system metrics start collapsed; opened, scrolling down fetches what comes into view, and nothing else.
    page.locator('section.stellar-section[data-section=system] .stellar-section-head').click()
    page.wait_for_selector('section.stellar-section[data-section=system][data-open=true]')
    page.locator('section.stellar-chart[data-metric="system/rss_mb"]').scroll_into_view_if_needed()
    page.wait_for_selector('section.stellar-chart[data-metric="system/rss_mb"][data-state=ready]', timeout=30_000)
    served = log.metrics_read(RUN)  # before the page's own list: a chart may start its read in between
    state = charts_state(page)
    assert "system/rss_mb" in state["fetched"]
    assert served <= set(state["fetched"]) <= {m for m, _ in state["charts"]}

    # Opening the 1,793-metric section makes one page of charts; they fetch as they come into view.
    page.locator('section.stellar-section[data-section=grad_norm] .stellar-section-head').click()
    page.wait_for_selector('section.stellar-section[data-section=grad_norm][data-open=true]')
    more = page.locator('section.stellar-section[data-section=grad_norm] .stellar-more')
    assert more.text_content() == "Show 24 more (1,769 not shown)"
    page.locator('section.stellar-chart[data-metric="grad_norm/layer.0000"]').scroll_into_view_if_needed()
    page.wait_for_selector('section.stellar-chart[data-metric="grad_norm/layer.0000"][data-state=ready]',
                           timeout=30_000)
    served = log.metrics_read(RUN)
    state = charts_state(page)
    grad = [m for m, _ in state["charts"] if m.startswith("grad_norm/")]
    assert len(grad) == 24
    fetched_grad = [m for m in state["fetched"] if m.startswith("grad_norm/")]
    assert 1 <= len(fetched_grad) < 24, fetched_grad
    assert served <= set(state["fetched"]) <= {m for m, _ in state["charts"]}
    screenshot(page, "stellar-wide-open-section")

    # Search: a regex over the names; the matching charts in their sections, fetched as they show.
    page.locator("#stellar-search").fill("layer\\.00(0[5-9])$")
    page.wait_for_function("() => document.getElementById('stellar-search-note').textContent"
                           ".startsWith('10 of 2,000')", timeout=10_000)
    state = charts_state(page)
    assert state["sections"] == [["act", "5 of 199 metrics", True], ["grad_norm", "5 of 1,793 metrics", True]]
    page.wait_for_selector('section.stellar-chart[data-metric="act/layer.0005"][data-state=ready]', timeout=30_000)
    page.locator("#stellar-search").fill("layer.00[")
    page.wait_for_function("() => document.getElementById('stellar-search-note').dataset.mode === 'substring'",
                           timeout=10_000)
    assert page.locator("#stellar-search-note").text_content() == \
        "0 of 2,000 metrics match (not a valid regex: matched as text)"
    assert page.locator("section.stellar-section").count() == 0
    screenshot(page, "stellar-wide-search")
    assert not page.console_errors  # type: ignore[attr-defined]


def test_the_compare_page_of_a_wide_run_fetches_only_the_charts_in_view(page: Page, portal):
    base, log = portal
    log.clear()
    open_ready(page, f"{base}/stellar?target={RUN}&compare=stellar-wide-b&project=proj&token={TOKEN}")
    state = charts_state(page)
    ready = {m for m, s in state["charts"] if s == "ready"}
    assert "loss" in ready
    # Each chart in view read both runs; the other run's lone grad_norm chart sits in a collapsed section.
    assert log.metrics_read(RUN) == ready and log.metrics_read("stellar-wide-b") <= ready
    assert "grad_norm/layer.0000" not in log.metrics_read()
    traces = page.evaluate("""() => document.querySelector('section.stellar-chart[data-metric=loss] .stellar-plot')
        .data.filter((t) => t.meta.role === 'raw').map((t) => t.meta.runId)""")
    assert traces == [RUN, "stellar-wide-b"]
