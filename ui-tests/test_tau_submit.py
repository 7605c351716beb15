"""``%%tau_submit`` in a real JupyterLab: the cell becomes a local job and its pane draws a growing curve.

Nothing is preset: the kernel gets only a temporary ``TAU_HOME``, so the magic starts the local job, its
collector and the local Portal on demand, exactly as on a first-time user's laptop.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page

from fixtures.browser import screenshot
from fixtures.jupyter import JupyterServer, cell_running, open_notebook, run_all, start_jupyter
from fixtures.pane_ui import DEADLINE_MS, LOSS_PLOT, points
from fixtures.processes import stop_processes_mentioning

NOTEBOOKS = Path(__file__).resolve().parent / "submit_notebooks"


@pytest.fixture(scope="module")
def tau_home(tmp_path_factory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("tau-home")
    yield home
    stop_processes_mentioning(home)  # the job, its collector and the Portal the magic started


@pytest.fixture(scope="module")
def lab(tmp_path_factory, tau_home: Path) -> Iterator[JupyterServer]:
    yield from start_jupyter(tmp_path_factory.mktemp("submit-lab"), {"TAU_HOME": str(tau_home)})


def test_tau_submit_draws_a_growing_curve_while_another_cell_sleeps(lab: JupyterServer, page: Page, tmp_path: Path):
    # The job writes its 150 points in stages (0..39, then 40.., 80.., 120..), each once the test has seen the
    # pane draw the stage before, and the other cell runs until the test ends it: growth observed, not timed.
    go, stop = tmp_path / "go", tmp_path / "stop"
    name = lab.copy_notebook(NOTEBOOKS / "tau_submit.ipynb", "submit.ipynb", GO=str(go), STOP=str(stop))
    open_notebook(page, lab, name)
    run_all(page)
    page.wait_for_function("() => document.querySelectorAll('.jp-Cell')[2]"
                           ".querySelector('.jp-InputPrompt').textContent.includes('*')", timeout=DEADLINE_MS)
    seen = []
    for stage_end in (40, 80, 120, 150):
        page.wait_for_function(
            "([sel, n]) => { const p = document.querySelector(sel); return p && Number(p.dataset.points) >= n; }",
            arg=[LOSS_PLOT, stage_end], timeout=DEADLINE_MS)
        seen.append(points(page))
        if stage_end == 80:
            screenshot(page, "tau-submit-growing")
        if stage_end < 150:
            go.with_name(f"go-{stage_end}").touch()
    assert cell_running(page, 2), f"the other cell ended before the test let it: counts {seen}"
    assert seen == [40, 80, 120, 150], f"the curve should grow stage by stage while the other cell runs: {seen}"
    stop.touch()
    output = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea").inner_text()
    assert "ui-submit-" in output  # the magic printed the run id
