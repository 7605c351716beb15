"""The loss pane on a run of 1,000 metrics, in a real JupyterLab and headless Chromium: sections by name prefix
(loss first, big sections collapsed, counts in the headers), the search box (regex, else substring), pinning,
the searchable list, and lazy plots: only the metrics on screen get a plot, and only those are in the
``visible`` trait the kernel polls by.

The run is written by the real writer (``tests/fixtures/wide_run.py``), served by a Portal the test starts, and drawn by
:class:`taunotebook.pane.LossPane` in the kernel of a ``jupyter lab`` the test starts. Screenshots go to
``artifacts/ui/``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page

from fixtures.browser import screenshot
from fixtures.jupyter import JupyterServer, cell_running, execute, open_notebook, run_cell, start_jupyter
from fixtures.pane_ui import PANE, new_store, require_pane_bundle
from fixtures.portal import TOKEN
from fixtures.servers import ServerThread
from fixtures.wide_run import RequestLog, wide_metric_names, write_rows, write_wide_run
from taunotebook.portal.app import create_app

WIDTH = 1000
RUN = "ui-wide"
NOTEBOOK = {
    "cells": [
        {"cell_type": "code", "execution_count": None, "id": "c0", "metadata": {}, "outputs": [],
         "source": 'from taunotebook.pane import LossPane\n\npane = LossPane("{{RUN_ID}}", portal="{{PORTAL_URL}}",'
                   ' project="proj")\npane'},
        {"cell_type": "code", "execution_count": None, "id": "c1", "metadata": {}, "outputs": [],
         "source": "pane  # the same pane shown again: a second view of the same traits"},
    ],
    "metadata": {"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
                 "language_info": {"name": "python"}},
    "nbformat": 4, "nbformat_minor": 5,
}


@pytest.fixture(scope="module", autouse=True)
def pane_built() -> None:
    require_pane_bundle()


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    path = new_store(tmp_path_factory, "wide-store")
    write_wide_run(path, RUN, WIDTH, 20)
    return path


@pytest.fixture(scope="module")
def requests_log(store: Path) -> RequestLog:
    return RequestLog(create_app(store, token=TOKEN))


@pytest.fixture(scope="module")
def portal(requests_log: RequestLog) -> Iterator[str]:
    with ServerThread(requests_log) as server:
        yield f"http://127.0.0.1:{server.port}"


@pytest.fixture(scope="module")
def lab(tmp_path_factory, store: Path, portal: str) -> Iterator[JupyterServer]:
    home = tmp_path_factory.mktemp("lab-wide")
    yield from start_jupyter(home, {"TAU_PORTAL_TOKEN": TOKEN, "TAU_PORTAL_URL": portal, "TAU_STORE": str(store)})


def kernel_traits(page: Page) -> dict:
    """The pane's browser-set traits as the kernel holds them (what it polls by, what the notebook keeps)."""
    out = page.evaluate("""async () => {
        const k = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
        const f = k.requestExecute({ code: "import json as _j; print(_j.dumps({'visible': pane.visible, "
            + "'pinned': pane.pinned, 'filter': pane.filter, 'sections': pane.sections}))",
            store_history: false });
        let out = "";
        f.onIOPub = (msg) => { if (msg.header.msg_type === "stream") out += msg.content.text; };
        await f.done;
        return out;
    }""")
    return json.loads(out)


def browser_state(page: Page, view: int = 0) -> dict:
    return page.evaluate("""(view) => {
        const pane = document.querySelectorAll('.jp-OutputArea-output .tau-pane')[view];
        const slots = [...pane.querySelectorAll('.tau-pane-metric')];
        return {
            sections: [...pane.querySelectorAll('.tau-pane-section')].map((s) => [
                s.dataset.section, s.querySelector('.tau-pane-section-title').textContent,
                s.querySelector('.tau-pane-section-count').textContent, s.dataset.open === 'true']),
            slots: slots.map((s) => s.dataset.metric),
            // a slot with a plot (drawn once its first points come): what the pane asks the kernel for
            plotted: slots.filter((s) => s.querySelector('.tau-pane-plot')).map((s) => s.dataset.metric),
            plots: pane.querySelectorAll('.tau-pane-plot').length,
            nodes: pane.querySelectorAll('*').length,
            note: pane.querySelector('.tau-pane-filter-note').textContent,
            count: pane.querySelector('.tau-pane-count').textContent,
        };
    }""", view)


def wait_settled(page: Page, view: int = 0) -> None:
    """Until every open slot on screen has its plot and the model's visible list says exactly those."""
    page.wait_for_function("""(view) => {
        const pane = document.querySelectorAll('.jp-OutputArea-output .tau-pane')[view];
        return pane && pane.querySelector('.tau-pane-metric .js-plotly-plot .main-svg');
    }""", arg=view, timeout=120_000)
    page.wait_for_timeout(400)  # an IntersectionObserver round and a frame: not a speed assumption


def visible_in_kernel(page: Page, expected: set[str]) -> dict:
    """The kernel's traits once its visible list is ``expected`` (the browser's change reaches it in order)."""
    for _ in range(60):
        traits = kernel_traits(page)
        if set(traits["visible"]) == expected:
            return traits
        page.wait_for_timeout(250)
    raise AssertionError(f"the kernel's visible list {sorted(traits['visible'])} is not the plotted {sorted(expected)}")


def test_a_1000_metric_run_shows_sections_and_plots_only_what_is_on_screen(lab: JupyterServer, page: Page,
                                                                           portal: str, requests_log: RequestLog):
    (lab.root_dir / "wide.ipynb").write_text(json.dumps(NOTEBOOK).replace("{{RUN_ID}}", RUN)
                                             .replace("{{PORTAL_URL}}", portal), encoding="utf-8")
    open_notebook(page, lab, "wide.ipynb")
    run_cell(page, 0)
    page.wait_for_function("() => { const p = document.querySelector("
                           "'.jp-OutputArea-output .tau-pane-metric[data-metric=loss]');"
                           " return p && Number(p.dataset.points) === 20; }", timeout=180_000)
    wait_settled(page)
    state = browser_state(page)
    # Loss first; then sections by name, each saying how many it holds; big ones collapsed; system last.
    assert state["sections"] == [
        ["Loss", "Loss", "2 metrics", True],
        ["act", "act", "99 metrics", False],
        ["eval", "eval", "1 metric", True],
        ["grad_norm", "grad_norm", "893 metrics", False],
        ["train", "train", "1 metric", True],
        ["system", "system", "4 metrics", False],  # the sidecar's system metrics: collapsed until opened
    ]
    assert state["count"] == "1,000 metrics"
    assert state["slots"] == ["loss", "eval/loss", "eval/acc", "train/lr"]  # a collapsed section: only its header
    assert 1 <= state["plots"] <= 8 and state["plots"] == len(state["plotted"])
    assert state["plotted"][:2] == ["loss", "eval/loss"]
    assert state["nodes"] < 3000, f"{state['nodes']} DOM nodes in a pane of 1,000 metrics"
    traits = visible_in_kernel(page, set(state["plotted"]))
    assert traits["sections"] == {} and traits["pinned"] == [] and traits["filter"] == ""
    # The kernel read only what is drawn (and, before the page said what that is, its default set of 8).
    asked = requests_log.metrics_asked(RUN)
    assert "loss" in asked and len(asked) <= 8 + len(state["plotted"]), sorted(asked)
    screenshot(page, "pane-wide-sections")

    # Open the 893-metric section: one page of slots, the rest behind "Show more"; plots only on screen.
    page.locator(f"{PANE} .tau-pane-section[data-section=grad_norm] .tau-pane-section-head").click()
    page.wait_for_selector(f"{PANE} .tau-pane-section[data-section=grad_norm][data-open=true]")
    more = page.locator(f"{PANE} .tau-pane-section[data-section=grad_norm] .tau-pane-more")
    assert more.text_content() == "Show 12 more (881 not shown)"
    last = page.locator(f"{PANE} .tau-pane-metric[data-metric='grad_norm/layer.0011']")
    last.scroll_into_view_if_needed()
    page.wait_for_selector(f"{PANE} .tau-pane-metric[data-metric='grad_norm/layer.0011'] .js-plotly-plot",
                           timeout=60_000)
    wait_settled(page)
    state = browser_state(page)
    assert len(state["slots"]) == 4 + 12
    assert "grad_norm/layer.0011" in state["plotted"] and "loss" not in state["plotted"], state["plotted"]
    assert state["plots"] <= 12, f"{state['plots']} plots: more than a screen holds"
    traits = visible_in_kernel(page, set(state["plotted"]))
    assert traits["sections"] == {"grad_norm": True}
    screenshot(page, "pane-wide-open-section")
    # Back to the top: the grad_norm plots are dropped and leave the visible list.
    page.locator(f"{PANE} .tau-pane-metric[data-metric=loss]").scroll_into_view_if_needed()
    page.wait_for_selector(f"{PANE} .tau-pane-metric[data-metric=loss] .js-plotly-plot", timeout=60_000)
    page.wait_for_function("() => !document.querySelector("
                           "\".tau-pane-metric[data-metric='grad_norm/layer.0011'] .js-plotly-plot\")",
                           timeout=30_000)
    wait_settled(page)
    state = browser_state(page)
    assert "grad_norm/layer.0011" not in state["plotted"]
    visible_in_kernel(page, set(state["plotted"]))

    # Search: a case-insensitive regex over the names; the count of matches beside the box.
    page.locator(f"{PANE} input[aria-label='search metrics']").fill("LAYER\\.000[0-2]$")
    page.wait_for_function("() => document.querySelector('.tau-pane-filter-note').textContent.startsWith('6 of')",
                           timeout=30_000)
    wait_settled(page)
    state = browser_state(page)
    assert state["note"] == "6 of 1,000 metrics match"
    assert state["sections"] == [["act", "act", "3 of 99 metrics", True],
                                 ["grad_norm", "grad_norm", "3 of 893 metrics", True]]
    assert state["slots"] == ["act/layer.0000", "act/layer.0001", "act/layer.0002", "grad_norm/layer.0000",
                              "grad_norm/layer.0001", "grad_norm/layer.0002"]
    assert kernel_traits(page)["filter"] == "LAYER\\.000[0-2]$"
    screenshot(page, "pane-wide-search")
    # Not a valid regex: matched as text, and said so.
    page.locator(f"{PANE} input[aria-label='search metrics']").fill("rss_mb[")
    page.wait_for_function("() => document.querySelector('.tau-pane-filter-note').dataset.mode === 'substring'",
                           timeout=30_000)
    assert browser_state(page)["note"] == "0 of 1,000 metrics match (not a valid regex: matched as text)"
    page.locator(f"{PANE} input[aria-label='search metrics']").fill("Rss_")
    page.wait_for_function("() => document.querySelector('.tau-pane-filter-note').textContent.startsWith('1 of')",
                           timeout=30_000)
    assert browser_state(page)["slots"] == ["system/rss_mb"]

    # The searchable list: pin a metric deep in a collapsed section without opening it.
    page.locator(f"{PANE} .tau-pane-list-toggle").click()
    page.locator(f"{PANE} input[aria-label='search metrics']").fill("grad_norm/layer.05")
    page.wait_for_function("() => document.querySelector('.tau-pane-list').dataset.matches === '100'",
                           timeout=30_000)
    rows = page.locator(f"{PANE} .tau-pane-list li")
    assert rows.count() == 100 and rows.nth(0).get_attribute("data-metric") == "grad_norm/layer.0500"
    page.locator(f"{PANE} .tau-pane-list li[data-metric='grad_norm/layer.0512'] .tau-pane-pin").click()
    page.locator(f"{PANE} input[aria-label='search metrics']").fill("")
    page.wait_for_function("() => document.querySelector('.tau-pane-section').dataset.section === 'Pinned'",
                           timeout=30_000)
    # And one from its plot's head.
    page.locator(f"{PANE} .tau-pane-metric[data-metric='train/lr'] .tau-pane-pin").click()
    page.wait_for_function("() => document.querySelector('.tau-pane-section').dataset.count === '2'",
                           timeout=30_000)
    page.locator(f"{PANE} .tau-pane-list-toggle").click()
    page.locator(f"{PANE} .tau-pane-metric[data-metric='grad_norm/layer.0512']").scroll_into_view_if_needed()
    page.wait_for_selector(f"{PANE} .tau-pane-metric[data-metric='grad_norm/layer.0512'] .js-plotly-plot",
                           timeout=60_000)
    wait_settled(page)
    state = browser_state(page)
    assert state["sections"][0] == ["Pinned", "Pinned", "2 metrics", True]
    assert state["slots"][:2] == ["grad_norm/layer.0512", "train/lr"]
    assert "train" not in [s[0] for s in state["sections"]]  # its one metric is pinned: no empty section
    traits = visible_in_kernel(page, set(state["plotted"]))
    assert traits["pinned"] == ["grad_norm/layer.0512", "train/lr"]
    # Both pinned plots draw their points (a kernel that polls every metric reaches train/lr late: a long wait).
    page.wait_for_function("() => [...document.querySelectorAll(\".tau-pane-section[data-section=Pinned] "
                           ".tau-pane-metric\")].every((s) => Number(s.dataset.points) === 20)", timeout=240_000)
    assert "grad_norm/layer.0512" in traits["visible"]
    screenshot(page, "pane-wide-pinned")

    # The same pane shown again: the second view has the pins and the open sections (they live in the traits).
    run_cell(page, 1)
    page.wait_for_function("() => document.querySelectorAll('.jp-OutputArea-output .tau-pane').length === 2",
                           timeout=60_000)
    page.wait_for_function("() => { const p = document.querySelectorAll('.jp-OutputArea-output .tau-pane')[1];"
                           " return p.querySelector('.tau-pane-section').dataset.section === 'Pinned'; }",
                           timeout=30_000)
    second = browser_state(page, 1)
    assert second["slots"][:2] == ["grad_norm/layer.0512", "train/lr"]
    assert [s[3] for s in second["sections"] if s[0] == "grad_norm"] == [True]


LIVE = "ui-wide-live"


def test_loss_keeps_updating_while_another_cell_runs_on_a_live_1000_metric_run(lab: JupyterServer, page: Page,
                                                                               portal: str, store: Path):
    """The pane polls from its own thread: a cell that holds the kernel (here it sleeps) does not stop new rows
    of a live wide run reaching the loss plot. Rows are written only once that cell is running, and the plot
    must show them while it still runs."""
    names = wide_metric_names(WIDTH)
    write_rows(store, LIVE, names, range(20))  # live: no succeeded marker
    notebook = json.loads(json.dumps(NOTEBOOK).replace("{{RUN_ID}}", LIVE).replace("{{PORTAL_URL}}", portal))
    notebook["cells"][1]["source"] = "import time\ntime.sleep(600)  # another cell, holding the kernel"
    (lab.root_dir / "wide-live.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    open_notebook(page, lab, "wide-live.ipynb")
    run_cell(page, 0)
    loss = f"{PANE} .tau-pane-metric[data-metric=loss]"
    page.wait_for_function("(sel) => { const p = document.querySelector(sel); return p && Number(p.dataset.points)"
                           " === 20; }", arg=loss, timeout=180_000)
    run_cell(page, 1)
    # The cell is running once its prompt says [*] (the pane's cell ended long ago: nothing is queued before it);
    # the deadline is one only a broken build meets, however loaded the machine.
    page.wait_for_function("() => document.querySelectorAll('.jp-Notebook .jp-Cell')[1]"
                           ".querySelector('.jp-InputPrompt').textContent.includes('[*]')", timeout=300_000)
    for step in range(20, 25):
        write_rows(store, LIVE, names, range(step, step + 1), chunk=f"live-{step}")
    page.wait_for_function("(sel) => Number(document.querySelector(sel).dataset.points) === 25", arg=loss,
                           timeout=180_000)
    assert cell_running(page, 1), "the sleeping cell finished before the new rows were drawn"
    execute(page, "notebook:interrupt-kernel")
    page.wait_for_function("() => !document.querySelectorAll('.jp-Notebook .jp-Cell')[1]"
                           ".querySelector('.jp-InputPrompt').textContent.includes('[*]')", timeout=300_000)
