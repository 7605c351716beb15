"""The runs table (/stellar/runs), its parallel coordinates and the compare page's names, in headless Chromium.

Against the real Portal over a sweep written by the real writer (tests/fixtures/sweep_store.py): twelve trials
of experiment ``sweep`` (``lr`` 0.1/0.03/0.01/0.001, ``optimizer.name`` adam/sgd, ``seed`` 0-2, ``batch``
32 in all) and two runs of ``baseline`` without a config; and a second store of 1,000 trials.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Page

from fixtures.browser import ARTIFACTS, CHROMIUM_ARGS, chromium_path, open_ready, screenshot
from fixtures.portal import TOKEN, PortalServer, serve
from fixtures.sweep_store import LRS, build_sweep_store, final_loss, trial_config, trial_id
from taunotebook.portal.views import run_table

TRIALS = 12
MANY = 1000


def _serve(root) -> Iterator[PortalServer]:
    with serve(root) as server:
        yield PortalServer(f"http://127.0.0.1:{server.port}", TOKEN, root)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Iterator[PortalServer]:
    yield from _serve(build_sweep_store(tmp_path_factory.mktemp("sweep") / "store", trials=TRIALS))


def table_url(server: PortalServer, query: str = "") -> str:
    return f"{server.base_url}/stellar/runs?{query}{'&' if query else ''}token={server.token}"


def listed(page: Page) -> list[str]:
    """The run ids of the rows drawn, top to bottom."""
    return page.locator("tr.stellar-run-row").evaluate_all("(rows) => rows.map((r) => r.dataset.runId)")


def wait_listed(page: Page, n: int) -> None:
    page.wait_for_function("(n) => document.getElementById('stellar').dataset.listed === String(n)", arg=n,
                           timeout=10_000)


def columns(page: Page) -> list[str]:
    return page.locator("#stellar-run-table thead th[data-column]").evaluate_all(
        "(ths) => ths.map((th) => th.dataset.column)")


def legend_names(page: Page) -> list[str]:
    return page.locator('section.stellar-chart[data-metric="loss"] .legend .legendtext').evaluate_all(
        "(texts) => texts.map((t) => t.textContent)")


def axis_headings(page: Page) -> list[str]:
    return page.locator("#stellar-parallel-plot .axis-heading").evaluate_all(
        "(texts) => texts.map((t) => t.textContent)")


def address(page: Page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


# -- filter -----------------------------------------------------------------------------------------


def test_search_and_filters_narrow_the_table_and_stay_in_the_address(page: Page, sweep: PortalServer):
    open_ready(page, table_url(sweep))
    assert page.locator("#stellar-count").inner_text() == "14 runs"
    assert sorted(listed(page)) == sorted(["ref-0", "ref-1", *(trial_id(i) for i in range(TRIALS))])

    page.locator("#stellar-search").fill("trial-01")
    wait_listed(page, 2)
    assert sorted(listed(page)) == ["trial-010", "trial-011"]
    assert page.locator("#stellar-count").inner_text() == "2 runs of 14"

    page.locator("#stellar-search").fill("")
    page.locator("#stellar-filter-experiment").select_option("baseline")
    wait_listed(page, 2)
    assert sorted(listed(page)) == ["ref-0", "ref-1"]
    page.locator("#stellar-filter-experiment").select_option("")
    page.locator("#stellar-filter-state").select_option("running")  # no tau/run_status marker: still running
    wait_listed(page, 2)
    assert sorted(listed(page)) == ["ref-0", "ref-1"]
    page.locator("#stellar-filter-state").select_option("")

    # Config values: lr >= 0.03 and adam are trials 0, 4 and 8 (lr 0.1, even trials).
    page.locator("#stellar-filter-config").fill("lr>=0.03, optimizer.name=adam")
    wait_listed(page, 3)
    assert sorted(listed(page)) == ["trial-000", "trial-004", "trial-008"]
    assert address(page)["config"] == ["lr>=0.03, optimizer.name=adam"]
    # The address is the view: reloading it lists the same runs.
    page.reload()
    page.wait_for_selector("#stellar[data-state=ready]")
    assert sorted(listed(page)) == ["trial-000", "trial-004", "trial-008"]

    # A filter the page cannot read is said in words, next to the box.
    page.locator("#stellar-filter-config").fill("lr>fast")
    error = page.locator("#stellar-config-error")
    error.wait_for(state="visible")
    assert error.inner_text() == 'Config filter: "lr>fast" (at character 1): > compares numbers, and fast is not one'
    assert page.locator("#stellar-filter-config").get_attribute("aria-invalid") == "true"
    assert page.console_errors == []


# -- sort -------------------------------------------------------------------------------------------


def test_sorting_by_the_metrics_latest_value_and_by_a_config_column(page: Page, sweep: PortalServer):
    open_ready(page, table_url(sweep, "experiment=sweep"))
    latest = {trial_id(i): final_loss(i) for i in range(TRIALS)}

    page.locator('th[data-column="metric:latest"] button').click()
    page.wait_for_selector('th[data-column="metric:latest"][aria-sort=ascending]')
    assert listed(page) == sorted(latest, key=latest.get)
    page.locator('th[data-column="metric:latest"] button').click()
    page.wait_for_selector('th[data-column="metric:latest"][aria-sort=descending]')
    assert listed(page) == sorted(latest, key=latest.get, reverse=True)
    assert address(page)["sort"] == ["metric:latest"] and address(page)["dir"] == ["desc"]

    page.locator('th[data-column="config:lr"] button').click()
    page.wait_for_selector('th[data-column="config:lr"][aria-sort=ascending]')
    lrs = [trial_config(int(run.split("-")[1]))["lr"] for run in listed(page)]
    assert lrs == sorted(lrs) and lrs[0] == min(LRS)
    cells = page.locator("tr.stellar-run-row").first.locator("td").all_inner_texts()
    assert "0.001" in cells
    screenshot(page, "runs-table-sorted")


# -- the hyperparameter columns ---------------------------------------------------------------------


def test_only_the_hyperparameters_that_vary_are_columns_and_the_constant_ones_can_be_shown(page: Page,
                                                                                         sweep: PortalServer):
    open_ready(page, table_url(sweep))
    config_columns = [c for c in columns(page) if c.startswith("config:")]
    assert config_columns == ["config:lr", "config:optimizer.name", "config:seed"]
    constant = page.locator("#stellar-constant")
    assert constant.inner_text() == "Same in all 12 runs with a config: batch=32"

    page.locator("#stellar-show-constant").check()
    page.wait_for_selector('th[data-column="config:batch"].stellar-constant')
    assert constant.is_hidden() and address(page)["constant"] == ["1"]
    page.locator("#stellar-show-constant").uncheck()
    page.wait_for_selector('th[data-column="config:batch"]', state="detached")

    # The columns follow the runs listed: among lr=0.1's trials (0, 4, 8: all adam) only the seed varies.
    page.locator("#stellar-filter-config").fill("lr=0.1")
    wait_listed(page, 3)
    assert [c for c in columns(page) if c.startswith("config:")] == ["config:seed"]
    assert page.locator("#stellar").get_attribute("data-varying") == "seed"
    assert constant.inner_text().startswith("Same in all 3 runs with a config: batch=32, lr=0.1, optimizer.name=adam")


def test_grouping_by_experiment_folds_a_group_away(page: Page, sweep: PortalServer):
    open_ready(page, table_url(sweep))
    page.locator("#stellar-group-by").select_option("experiment")
    groups = page.locator("tr.stellar-group-row")
    groups.first.wait_for()
    assert groups.all_inner_texts() == ["▾ baseline · 2 runs", "▾ sweep · 12 runs"]
    page.locator('tr.stellar-group-row[data-group="sweep"] button').click()
    page.wait_for_selector('tr.stellar-group-row[data-group="sweep"] button[aria-expanded=false]')
    assert sorted(listed(page)) == ["ref-0", "ref-1"]
    assert address(page)["group_by"] == ["experiment"]


# -- compare ----------------------------------------------------------------------------------------


def test_selected_runs_open_the_compare_page_which_names_them_by_what_differs(page: Page, sweep: PortalServer):
    open_ready(page, table_url(sweep, "experiment=sweep"))
    for run in ("trial-000", "trial-001", "trial-005"):
        page.locator(f'tr[data-run-id="{run}"] input[type=checkbox]').check()
    button = page.locator("#stellar-compare")
    assert button.inner_text() == "Compare 3 runs"
    button.click()
    page.wait_for_url("**/stellar?target=*")
    page.wait_for_selector("#stellar[data-state=ready]", timeout=30_000)

    # trial-000: lr 0.1 adam seed 0; trial-001: lr 0.03 sgd seed 1; trial-005: lr 0.03 sgd seed 2.
    labels = page.locator("section.stellar-run").evaluate_all(
        "(cards) => Object.fromEntries(cards.map((c) => [c.dataset.runId, c.dataset.label]))")
    assert labels == {"trial-000": "lr=0.1, name=adam, seed=0", "trial-001": "lr=0.03, name=sgd, seed=1",
                      "trial-005": "lr=0.03, name=sgd, seed=2"}
    assert sorted(legend_names(page)) == sorted(labels.values())
    # The differing fields are in bold on each card; batch (the same in all) is listed after them.
    card = page.locator('section.stellar-run[data-run-id="trial-000"]')
    assert card.locator(".stellar-differs").all_inner_texts() == ["lr=0.1", "optimizer.name=adam", "seed=0"]
    assert card.locator(".stellar-config").inner_text().endswith("batch=32")
    # tau/run_status is the state on the card, not a chart.
    charts = page.locator("section.stellar-chart").evaluate_all("(els) => els.map((e) => e.dataset.metric)")
    assert sorted(charts) == ["accuracy", "loss"]
    assert page.console_errors == []
    screenshot(page, "compare-named-by-config")


def test_runs_without_configs_keep_their_ids_on_the_compare_page(page: Page, sweep: PortalServer):
    open_ready(page, f"{sweep.base_url}/stellar?target=ref-0&compare=ref-1&token={sweep.token}")
    assert sorted(legend_names(page)) == ["ref-0", "ref-1"]


@pytest.mark.parametrize(("status", "code", "message"), [
    (500, "INTERNAL", "the store could not be read"),
    (404, "NOT_FOUND", "route was not found"),  # TauGrid's Portal: no page data
])
def test_when_the_configs_cannot_be_read_the_compare_page_names_runs_by_id(page: Page, sweep: PortalServer,
                                                                         status: int, code: str, message: str):
    envelope = {"error": {"code": code, "message": message, "classification": "internal", "retryable": False}}
    page.route(re.compile(r".*/stellar/data/runs\?.*"),
               lambda route: route.fulfill(status=status, content_type="application/json", body=json.dumps(envelope)))
    open_ready(page, f"{sweep.base_url}/stellar?target=trial-000&compare=trial-001&token={sweep.token}")
    assert sorted(legend_names(page)) == ["trial-000", "trial-001"]
    note = page.locator("#stellar-configs-failed")
    if status == 500:
        assert note.inner_text() == ("The runs' configurations could not be read (the store could not be read): "
                                     "they are named by their ids.")
    else:
        assert note.count() == 0


# -- 1,000 runs -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def many(tmp_path_factory) -> Iterator[PortalServer]:
    yield from _serve(build_sweep_store(tmp_path_factory.mktemp("many") / "store", trials=MANY))


def test_a_thousand_runs_are_drawn_a_window_at_a_time(page: Page, many: PortalServer):
    open_ready(page, table_url(many))
    total = MANY + 2
    assert page.locator("#stellar-count").inner_text() == f"{total:,} runs"
    drawn = len(listed(page))
    assert 0 < drawn < 100, "only the rows in view (and a margin) are in the page"

    # Sort by the metric (the whole table re-sorted and re-windowed), then scroll to the end.
    page.locator('th[data-column="metric:latest"] button').click()
    page.wait_for_selector('th[data-column="metric:latest"][aria-sort=ascending]')
    sort_ms = page.evaluate("() => window.__stellar.timings.refreshMs")
    page.locator("#stellar-table-scroll").evaluate("(el) => { el.scrollTop = el.scrollHeight; }")
    page.wait_for_function("(n) => window.__stellar.tableStats.window[1] === n", arg=total, timeout=10_000)
    bottom = listed(page)
    assert len(bottom) < 100
    # Ascending by the latest loss: ref-1's 2.0 is above every trial's final loss (at most 1.9).
    assert max(final_loss(i) for i in range(MANY)) < 2.0 and bottom[-1] == "ref-1"
    # A search over 1,000 runs narrows the window's source, not the page.
    page.locator("#stellar-search").fill("trial-99")
    wait_listed(page, 10)
    timings = page.evaluate("() => window.__stellar.timings")
    figures = {"runs": total, "rows_drawn": drawn, "fetch_ms": round(timings["fetchMs"], 1),
               "first_draw_ms": round(timings["firstDrawMs"], 1), "sort_ms": round(sort_ms, 1),
               "search_ms": round(timings["refreshMs"], 1)}
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "runs-table-1000.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(f"runs table, {total} runs: {figures}")
    assert page.console_errors == []


def test_more_runs_than_one_read_holds_are_all_reached_through_the_portals_windows(page: Page, many: PortalServer,
                                                                                   monkeypatch):
    # One read holds 300 rows here (5,000 in use): the 1,002 runs make the table a server-side view.
    monkeypatch.setattr(run_table, "RUNS_LIMIT", 300)
    open_ready(page, table_url(many))
    total = MANY + 2
    assert page.locator("#stellar-count").inner_text() == f"{total:,} runs"
    assert page.locator("#stellar").get_attribute("data-remote") == "1"
    assert "the Portal searches, filters, sorts" in page.locator("#stellar-remote").inner_text()
    assert page.locator("#stellar-group-by").is_disabled()
    assert page.locator("#stellar-parallel-toggle").is_disabled()
    first = listed(page)
    assert 0 < len(first) < 100

    # Scroll to the very end: the windows below the first read are asked for and drawn (no run is hidden).
    page.locator("#stellar-table-scroll").evaluate("(el) => { el.scrollTop = el.scrollHeight; }")
    page.wait_for_function("(n) => window.__stellar.tableStats.window[1] === n", arg=total, timeout=10_000)
    page.wait_for_function("() => !document.querySelector('tr.stellar-pending-row')", timeout=10_000)
    bottom = listed(page)
    assert bottom and not set(bottom) & set(first)
    windows = [r["query"] for r in page.evaluate("() => window.__stellar.requests")
               if r["path"].endswith("stellar/data/runs") and "offset" in r["query"]]
    assert windows and max(int(q["offset"]) for q in windows) >= 900
    assert all(int(q["limit"]) == 300 for q in windows)

    # The Portal sorts every run by the metric: ascending, ref-1's 2.0 is the last of all 1,002.
    page.locator('th[data-column="metric:latest"] button').click()
    page.wait_for_selector('th[data-column="metric:latest"][aria-sort=ascending]')
    page.locator("#stellar-table-scroll").evaluate("(el) => { el.scrollTop = el.scrollHeight; }")
    page.wait_for_function("(n) => window.__stellar.tableStats.window[1] === n", arg=total, timeout=10_000)
    page.wait_for_function("() => !document.querySelector('tr.stellar-pending-row')", timeout=10_000)
    assert listed(page)[-1] == "ref-1"
    assert address(page)["sort"] == ["metric:latest"]

    # The Portal searches all of them too, and counts what it keeps.
    page.locator("#stellar-search").fill("trial-99")
    wait_listed(page, 10)
    page.wait_for_function("() => document.querySelectorAll('tr.stellar-run-row').length === 10", timeout=10_000)
    assert sorted(listed(page)) == [trial_id(990 + i) for i in range(10)]
    assert page.locator("#stellar-count").inner_text() == "10 runs"
    assert page.console_errors == []


# -- parallel coordinates ---------------------------------------------------------------------------


def test_parallel_coordinates_draw_a_line_per_run_and_brushing_an_axis_narrows_the_table(page: Page,
                                                                                      sweep: PortalServer):
    open_ready(page, table_url(sweep, "view=parallel"))
    box = page.locator("#stellar-parallel")
    page.wait_for_selector("#stellar-parallel[data-state=ready]", timeout=30_000)
    # lr, optimizer.name and seed vary; the loss is the last axis. ref-0 and ref-1 have no lr: said, not drawn.
    assert box.get_attribute("data-axes") == "4" and box.get_attribute("data-lines") == str(TRIALS)
    assert page.locator("#stellar-parallel-note").inner_text() == \
        "2 runs not drawn: ref-0 (no value of lr), ref-1 (no value of lr)."
    assert axis_headings(page) == ["lr (log)", "optimizer.name", "seed", "loss (final)"]
    screenshot(page, "parallel-coordinates")

    # A real drag along the top of the lr axis (0.1 at its top, 0.001 at its bottom) keeps lr=0.1's trials.
    lr_axis = page.locator("#stellar-parallel-plot .axis-brush rect.background").first.bounding_box()
    x = lr_axis["x"] + lr_axis["width"] / 2
    page.mouse.move(x, lr_axis["y"] + 1)
    page.mouse.down()
    page.mouse.move(x, lr_axis["y"] + lr_axis["height"] * 0.1, steps=5)
    page.mouse.up()
    page.wait_for_selector("#stellar-parallel[data-brushed='3']", timeout=10_000)
    wait_listed(page, 3)
    assert sorted(listed(page)) == ["trial-000", "trial-004", "trial-008"]
    assert page.locator("#stellar-brushed").inner_text().startswith("3 runs within the brushed ranges")
    # Each listed row links to its run.
    href = page.locator('tr[data-run-id="trial-004"] a').get_attribute("href")
    assert "target=trial-004" in href

    page.locator("#stellar-parallel-clear").click()
    wait_listed(page, TRIALS + 2)
    assert page.locator("#stellar-brushed").is_hidden()

    # Hovering a line names its run (lr=0.1 runs from the lr axis's top to adam, the optimizer axis's
    # bottom); a click then opens it.
    backgrounds = page.locator("#stellar-parallel-plot .axis-brush rect.background")
    lr_axis, opt_axis = backgrounds.nth(0).bounding_box(), backgrounds.nth(1).bounding_box()
    x0, x1 = lr_axis["x"] + lr_axis["width"] / 2, opt_axis["x"] + opt_axis["width"] / 2
    y0, y1 = lr_axis["y"], opt_axis["y"] + opt_axis["height"]
    # Slide along the lines' path as a hand would, until one is under the pointer (they are 1-2 px wide).
    tip = page.locator("#stellar-parallel-tip")
    for f in range(5, 60):
        point = (x0 + f / 100 * (x1 - x0), y0 + f / 100 * (y1 - y0))
        page.mouse.move(*point)
        if tip.is_visible():
            break
    assert tip.is_visible(), "hovering the lr=0.1 lines named no run"
    hovered = box.get_attribute("data-hovered")
    assert hovered in {"trial-000", "trial-004", "trial-008"}
    assert tip.inner_text().startswith(f"{hovered} · lr=0.1, name=adam, seed=") and tip.inner_text().endswith(
        "— click to open")
    page.mouse.click(*point)
    page.wait_for_url(f"**/stellar?target={hovered}*")
    page.wait_for_selector("#stellar[data-state=ready]", timeout=30_000)
    page.go_back()
    page.wait_for_selector("#stellar-parallel[data-state=ready]", timeout=30_000)

    # "best value" of the loss: the minimum, drawn brightest.
    page.locator("#stellar-parallel-value").select_option("best")
    page.wait_for_function("() => [...document.querySelectorAll('#stellar-parallel-plot .axis-heading')]"
                           ".some((t) => t.textContent === 'loss (min)')", timeout=10_000)
    assert axis_headings(page) == ["lr (log)", "optimizer.name", "seed", "loss (min)"]
    assert page.console_errors == []


def test_parallel_coordinates_follow_the_table_filters(page: Page, sweep: PortalServer):
    open_ready(page, table_url(sweep, "view=parallel&config=optimizer.name%3Dadam"))
    page.wait_for_selector("#stellar-parallel[data-state=ready]", timeout=30_000)
    box = page.locator("#stellar-parallel")
    # adam trials (even) have lr 0.1 or 0.01 and seeds 0-2: optimizer.name no longer varies.
    assert box.get_attribute("data-lines") == str(TRIALS // 2) and box.get_attribute("data-axes") == "3"
    page.locator("#stellar-parallel-toggle").click()
    box.wait_for(state="hidden")
    assert "view" not in address(page)


def test_without_webgl_the_parallel_coordinates_say_so_and_the_table_still_works(chromium, sweep: PortalServer):
    browser = chromium.browser_type.launch(executable_path=chromium_path(), args=[*CHROMIUM_ARGS, "--disable-webgl"])
    try:
        page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        open_ready(page, table_url(sweep, "view=parallel"))
        box = page.locator("#stellar-parallel")
        page.wait_for_selector("#stellar-parallel[data-state=error]", timeout=30_000)
        assert "drawn with WebGL, which this browser does not offer to the page" in box.inner_text()
        page.locator("#stellar-search").fill("trial-01")
        wait_listed(page, 2)
    finally:
        browser.close()


def test_a_single_runs_card_lists_its_configuration(page: Page, sweep: PortalServer):
    open_ready(page, f"{sweep.base_url}/stellar?target=trial-002&token={sweep.token}")
    card = page.locator('section.stellar-run[data-run-id="trial-002"]')
    # Alone, nothing differs: the run keeps its id, and its card lists every field.
    assert card.get_attribute("data-label") == "trial-002"
    assert card.locator(".stellar-config").inner_text() == "batch=32, lr=0.01, optimizer.name=adam, seed=2"
    assert card.locator(".stellar-differs").count() == 0
