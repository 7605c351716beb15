"""The loss pane's histograms and images in a real JupyterLab, in headless Chromium: a run imported from a
tensorboardX logdir (``add_histogram``, ``add_image``) shows a histogram card and an image card below its loss
plot, and a click on a point of the loss curve moves the image card to that step. Screenshots go to
``artifacts/ui/``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page

from fixtures.browser import screenshot
from fixtures.jupyter import JupyterServer, open_notebook, run_all, start_jupyter
from fixtures.pane_ui import DEADLINE_MS, LOSS_PLOT, NOTEBOOKS, PANE, new_store, portal_over, require_pane_bundle
from fixtures.portal import TOKEN
from fixtures.tb_writers import write_tensorboardx_media
from taunotebook.importer import import_paths

IMAGE_CARD = f"{PANE} .media-images-card[data-tag=sample]"
HISTOGRAM_CARD = f"{PANE} .media-histograms-card[data-tag=raw]"


@pytest.fixture(scope="module", autouse=True)
def pane_built() -> None:
    require_pane_bundle()


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> tuple[Path, str]:
    store = new_store(tmp_path_factory, "pane-media-store")
    logs = store.parent / "logs"
    write_tensorboardx_media(logs / "run", [0, 10, 20])
    (run_id,) = import_paths([str(logs)], store, project="proj", clustering="off").run_ids
    return store, run_id


@pytest.fixture(scope="module")
def portal(imported) -> Iterator[str]:
    yield from portal_over(imported[0])


@pytest.fixture(scope="module")
def lab(tmp_path_factory, imported, portal: str) -> Iterator[JupyterServer]:
    home = tmp_path_factory.mktemp("lab-media")
    yield from start_jupyter(home, {"TAU_PORTAL_TOKEN": TOKEN, "TAU_PORTAL_URL": portal,
                                    "TAU_STORE": str(imported[0])})


def click_loss_point(page: Page, step: int) -> None:
    """A real mouse click on the loss curve's point at ``step`` (where plotly drew it)."""
    where = page.evaluate("""([sel, step]) => {
        const gd = document.querySelector(sel + ' .tau-pane-plot');
        const trace = gd.data[0];
        const i = trace.x.indexOf(step);
        const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, box = gd.getBoundingClientRect();
        return [box.left + xa._offset + xa.l2p(step), box.top + ya._offset + ya.l2p(trace.y[i])];
    }""", [LOSS_PLOT, step])
    page.mouse.move(where[0], where[1])
    page.mouse.click(where[0], where[1])


def test_a_pane_shows_its_histogram_and_image_cards_and_a_click_on_the_loss_curve_moves_the_image(
        lab: JupyterServer, page: Page, imported, portal: str):
    _, run_id = imported
    page.set_viewport_size({"width": 1400, "height": 2400})  # the loss plot and the cards on one screen
    name = lab.copy_notebook(NOTEBOOKS / "pane_only.ipynb", "media.ipynb", RUN_ID=run_id, PORTAL_URL=portal)
    open_notebook(page, lab, name)
    run_all(page)
    page.wait_for_selector(f"{LOSS_PLOT} .tau-pane-plot .main-svg", timeout=DEADLINE_MS)
    page.wait_for_selector(f"{PANE} .tau-pane-media:not([hidden])", timeout=DEADLINE_MS)
    page.locator(IMAGE_CARD).scroll_into_view_if_needed(timeout=DEADLINE_MS)
    # No cursor yet: each card shows its tag's latest step.
    page.wait_for_selector(f"{IMAGE_CARD} .media-panel[data-step='20'] img.media-thumb", timeout=DEADLINE_MS)
    assert page.locator(f"{IMAGE_CARD} .media-step").text_content() == "step 20"
    page.wait_for_selector(f"{HISTOGRAM_CARD}[data-state=ready] .media-plot .main-svg", timeout=DEADLINE_MS)
    assert page.evaluate(f"() => document.querySelector('{IMAGE_CARD} img').naturalWidth") > 0
    page.locator(LOSS_PLOT).scroll_into_view_if_needed()
    click_loss_point(page, 10)
    page.wait_for_selector(f"{IMAGE_CARD} .media-panel[data-step='10'][data-state=ready]", timeout=DEADLINE_MS)
    assert page.locator(f"{IMAGE_CARD} .media-step").text_content() == "step 10"
    assert page.locator(f"{PANE} .tau-pane-step-input").input_value() == "10"
    page.wait_for_selector(f"{HISTOGRAM_CARD} .media-panel[data-step='10']", timeout=DEADLINE_MS)
    screenshot(page, "pane-media-cursor")
