"""The loss pane's histograms and images in a real JupyterLab, in headless Chromium: a run imported from a
tensorboardX logdir (``add_histogram``, ``add_image``) shows a histogram card and an image card below its loss
plot, and a click on a point of the loss curve moves the image card to that step; a pane comparing two runs shows
each card with both runs side by side at the one step, and an image's "full image" link opens the stored image,
not its thumbnail. Screenshots go to ``artifacts/ui/``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
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
BIG_CARD = f"{PANE} .media-images-card[data-tag=big]"
BIG = (240, 320)  # a picture larger than a thumbnail (≤ 160 px a side), so the full image is not the thumbnail


@pytest.fixture(scope="module", autouse=True)
def pane_built() -> None:
    require_pane_bundle()


def write_big_images(logdir: Path, steps: list[int]) -> None:
    """A second event file in ``logdir``: an image tag ``big`` of :data:`BIG` pictures (tensorboardX)."""
    from tensorboardX import SummaryWriter

    writer = SummaryWriter(str(logdir), filename_suffix=".big")
    rng = np.random.default_rng(7)
    for step in steps:
        writer.add_image("big", rng.integers(0, 255, (3, *BIG), dtype=np.uint8), step)
    writer.close()


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> tuple[Path, str, str]:
    """The store with run ``run`` (steps 0, 10, 20) and run ``other`` (steps 0, 15, 30), both with media."""
    store = new_store(tmp_path_factory, "pane-media-store")
    logs = store.parent / "logs"
    write_tensorboardx_media(logs / "run", [0, 10, 20])
    write_tensorboardx_media(logs / "other", [0, 15, 30])
    write_big_images(logs / "run", [0, 10, 20])
    write_big_images(logs / "other", [0, 15, 30])
    run_ids = import_paths([str(logs)], store, project="proj", clustering="off").run_ids
    assert sorted(run_ids) == ["other", "run"]
    return store, "run", "other"


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
    _, run_id, _ = imported
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


def test_a_pane_comparing_runs_shows_both_runs_side_by_side_at_one_step_and_opens_the_full_image(
        lab: JupyterServer, page: Page, imported, portal: str):
    _, run_id, other = imported
    page.set_viewport_size({"width": 1400, "height": 3000})
    name = lab.copy_notebook(NOTEBOOKS / "pane_compare.ipynb", "media-compare.ipynb", RUN_ID=run_id,
                             PORTAL_URL=portal, COMPARE=other)
    open_notebook(page, lab, name)
    run_all(page)
    page.wait_for_selector(f"{LOSS_PLOT} .tau-pane-plot .main-svg", timeout=DEADLINE_MS)
    page.wait_for_selector(f"{IMAGE_CARD} .media-panels[data-runs='2']", timeout=DEADLINE_MS)
    page.locator(IMAGE_CARD).scroll_into_view_if_needed(timeout=DEADLINE_MS)
    mine, theirs = f"{IMAGE_CARD} .media-panel[data-run={run_id}]", f"{IMAGE_CARD} .media-panel[data-run={other}]"
    # No cursor: the tag's latest step over both runs (30); each run shows its nearest, labelled.
    page.wait_for_selector(f"{theirs}[data-step='30'] img.media-thumb", timeout=DEADLINE_MS)
    page.wait_for_selector(f"{mine}[data-step='20'] img.media-thumb", timeout=DEADLINE_MS)
    assert page.locator(f"{mine} .media-step").text_content() == "step 20 (nearest to 30)"
    assert page.locator(f"{theirs} .media-run-label").text_content() == other
    left, right = page.locator(mine).bounding_box(), page.locator(theirs).bounding_box()
    assert left["y"] == right["y"] and left["x"] + left["width"] <= right["x"]  # side by side, the pane's run first
    colors = page.evaluate("""(sel) => [...document.querySelectorAll(sel + ' .media-swatch')]
        .map((s) => getComputedStyle(s).backgroundColor)""", IMAGE_CARD)
    assert len(colors) == 2 and colors[0] != colors[1]  # each run in its own colour, as in the legend
    # One cursor moves every run of every card: a click on the loss curve at step 10.
    page.locator(LOSS_PLOT).scroll_into_view_if_needed()
    page.wait_for_selector(f"{LOSS_PLOT} .tau-pane-plot .main-svg", timeout=DEADLINE_MS)  # drawn again on screen
    click_loss_point(page, 10)
    assert page.locator(f"{PANE} .tau-pane-step-input").input_value() == "10"
    page.locator(IMAGE_CARD).scroll_into_view_if_needed(timeout=DEADLINE_MS)  # a card off screen is not read
    page.wait_for_selector(f"{mine}[data-step='10'][data-state=ready]", timeout=DEADLINE_MS)
    page.wait_for_selector(f"{theirs}[data-step='15'][data-state=ready]", timeout=DEADLINE_MS)
    assert page.locator(f"{theirs} .media-step").text_content() == "step 15 (nearest to 10)"
    hist = f"{HISTOGRAM_CARD} .media-panel"
    page.locator(HISTOGRAM_CARD).scroll_into_view_if_needed(timeout=DEADLINE_MS)
    page.wait_for_selector(f"{hist}[data-run={run_id}][data-step='10']", timeout=DEADLINE_MS)
    page.wait_for_selector(f"{hist}[data-run={other}][data-step='15']", timeout=DEADLINE_MS)
    big = f"{BIG_CARD} .media-panel[data-run={other}]"
    page.locator(BIG_CARD).scroll_into_view_if_needed(timeout=DEADLINE_MS)
    page.wait_for_selector(f"{big}[data-step='15'][data-state=ready] img.media-thumb", timeout=DEADLINE_MS)
    screenshot(page, "pane-media-compare")
    thumb = page.evaluate(f"() => document.querySelector('{big} img.media-thumb').naturalWidth")
    assert 0 < thumb <= 160
    # The compared run's "full image" link: the stored 320 px picture in a new window, not the thumbnail.
    with page.expect_popup(timeout=DEADLINE_MS) as popup_info:
        page.locator(f"{big} a.media-image-link").first.click()
    popup = popup_info.value
    popup.wait_for_url("blob:**", timeout=DEADLINE_MS)
    popup.wait_for_function("() => document.images.length && document.images[0].naturalWidth > 0",
                            timeout=DEADLINE_MS)
    size = popup.evaluate("() => [document.images[0].naturalWidth, document.images[0].naturalHeight]")
    assert size == [BIG[1], BIG[0]]
    assert page.get_attribute(f"{big} a.media-image-link", "data-full") == "ready"
    popup.close()
