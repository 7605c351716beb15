"""The loss pane in a real JupyterLab and Notebook 7, in headless Chromium: live growth, errors in words, NaN
marks, the link, the saved notebook, the same run colours as the Stellar page.

Every scenario drives a real trainer wrapped by ``tau-collector wrap`` (the collector beside it writing
the store), a Portal started by the test over that store, and a ``jupyter lab`` (or ``jupyter notebook``:
the tests marked for both run in each) started by the test whose kernel runs
:class:`taunotebook.pane.LossPane`. Screenshots go to ``artifacts/ui/``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from fixtures.browser import ARTIFACTS, screenshot
from fixtures.jupyter import JupyterServer, cell_running, execute, open_notebook, run_all, run_cell, start_jupyter
from fixtures.pane_ui import (
    DEADLINE_MS,
    LOSS_PLOT,
    NOTEBOOKS,
    PANE,
    Trainer,
    new_store,
    points,
    portal_over,
    require_pane_bundle,
    wait_points,
)
from fixtures.portal import TOKEN
from fixtures.servers import ServerThread, free_port
from taunotebook.portal.app import create_app


@pytest.fixture(scope="module", autouse=True)
def pane_built() -> None:
    require_pane_bundle()


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    path = new_store(tmp_path_factory, "pane-store")
    return path


@pytest.fixture(scope="module")
def portal(store: Path) -> Iterator[str]:
    yield from portal_over(store)


@pytest.fixture(scope="module")
def lab(tmp_path_factory, store: Path, portal: str) -> Iterator[JupyterServer]:
    home = tmp_path_factory.mktemp("lab")
    yield from start_jupyter(home, {"TAU_PORTAL_TOKEN": TOKEN, "TAU_PORTAL_URL": portal, "TAU_STORE": str(store)})


@pytest.fixture(scope="module")
def notebook7(tmp_path_factory, store: Path, portal: str) -> Iterator[JupyterServer]:
    home = tmp_path_factory.mktemp("notebook7")
    yield from start_jupyter(home, {"TAU_PORTAL_TOKEN": TOKEN, "TAU_PORTAL_URL": portal, "TAU_STORE": str(store)},
                         app="notebook")


@pytest.fixture(params=["lab", "notebook"])
def jupyter(request) -> JupyterServer:
    """JupyterLab, then Jupyter Notebook 7: where users open the same notebooks."""
    return request.getfixturevalue("lab" if request.param == "lab" else "notebook7")


def test_points_grow_while_another_cell_sleeps(jupyter: JupyterServer, page: Page, store: Path, portal: str,
                                               tmp_path):
    run = f"ui-live-{jupyter.app}"
    # The trainer writes its 60 points in four stages of 15, each once the test has seen the pane draw the
    # one before, and the other cell runs until the test ends it: the growth is observed, not timed, so a
    # slow machine neither misses it nor ends the cell first.
    trainer = Trainer(tmp_path / "t", store, run, points=60, delay=0.02, stage=15)
    try:
        name = jupyter.copy_notebook(NOTEBOOKS / "live_pane.ipynb", "live.ipynb", RUN_ID=run, PORTAL_URL=portal,
                                     STOP=str(tmp_path / "stop"))
        open_notebook(page, jupyter, name)
        t0 = time.monotonic()
        run_cell(page, 0)
        wait_points(page, 1)  # step 0, written before the trainer waits for the go file
        t1 = time.monotonic()
        run_cell(page, 1)
        page.wait_for_function("() => document.querySelectorAll('.jp-Cell')[1]"
                               ".querySelector('.jp-InputPrompt').textContent.includes('*')", timeout=DEADLINE_MS)
        print(f"pane drew its first point {t1 - t0:.1f} s after its cell started")
        seen = [points(page)]
        trainer.release()
        for stage_end in (15, 30, 45, 60):
            wait_points(page, stage_end, timeout=DEADLINE_MS)
            seen.append(points(page))
            if stage_end in (15, 45):
                screenshot(page, f"pane-{jupyter.app}-growing-{stage_end}")
            if stage_end < 60:
                trainer.release(stage_end)
        assert cell_running(page, 1), f"the other cell ended before the test let it: counts {seen}"
        assert seen == [1, 15, 30, 45, 60], f"the point count should grow stage by stage while the cell runs: {seen}"
        (tmp_path / "stop").touch()
        assert trainer.wait() == 0
        pane = page.locator(PANE).first
        page.wait_for_function("() => document.querySelector('.jp-OutputArea-output .tau-pane')"
                               ".dataset.state === 'succeeded'", timeout=30_000)
        assert pane.locator(".tau-pane-state").text_content() == "succeeded"
        # loss first, then the other metric the trainer logs
        assert pane.locator(".tau-pane-metric").nth(0).get_attribute("data-metric") == "loss"
        assert pane.locator(".tau-pane-metric").nth(1).get_attribute("data-metric") == "lr"
        # The loss plot was drawn alone, full width; when lr came the grid made two columns: it fits its cell.
        widths = """() => [...document.querySelectorAll('.tau-pane-metric .js-plotly-plot')]
            .map((gd) => [gd._fullLayout.width, gd.getBoundingClientRect().width])"""
        try:
            page.wait_for_function(f"() => ({widths})().every(([drawn, cell]) => Math.abs(drawn - cell) <= 2)",
                                   timeout=10_000)
        except PlaywrightTimeout:
            screenshot(page, f"pane-{jupyter.app}-misfit")
            misfit = page.evaluate(widths)
            raise AssertionError(f"a plot does not fit its cell: [drawn, cell] widths {misfit}") from None
        screenshot(page, f"pane-{jupyter.app}-live-done")
    finally:
        trainer.stop()


def test_nan_point_is_marked_with_a_count(lab: JupyterServer, page: Page, store: Path, portal: str, tmp_path):
    trainer = Trainer(tmp_path / "t", store, "ui-nan", points=30, delay=0.02, nan_at=12, gated=False)
    assert trainer.wait() == 0
    name = lab.copy_notebook(NOTEBOOKS / "pane_only.ipynb", "nan.ipynb", RUN_ID="ui-nan", PORTAL_URL=portal)
    open_notebook(page, lab, name)
    run_all(page)
    wait_points(page, 29)
    badge = page.locator(f"{PANE} .tau-pane-metric[data-metric=loss] .tau-pane-nonfinite")
    page.wait_for_function("() => { const b = document.querySelector("
                           "'.tau-pane-metric[data-metric=loss] .tau-pane-nonfinite');"
                           " return b && b.textContent.includes('step 12'); }", timeout=30_000)
    assert badge.get_attribute("data-nonfinite") == "1"
    assert badge.text_content() == "⚠ 1 non-finite value (NaN at step 12)"
    # The mark itself: a marker trace on the axis at step 12.
    marks = page.evaluate("""() => {
        const gd = document.querySelector('.tau-pane-metric[data-metric=loss] .js-plotly-plot');
        return gd.data.filter(t => t.mode === 'markers').map(t => Array.from(t.x));
    }""")
    assert marks == [[12]]
    screenshot(page, "pane-nan-marked")


def test_stellar_link_opens_a_page_showing_the_run(jupyter: JupyterServer, page: Page, store: Path, portal: str,
                                                   tmp_path):
    run = f"ui-link-{jupyter.app}"
    trainer = Trainer(tmp_path / "t", store, run, points=10, delay=0.02, gated=False)
    assert trainer.wait() == 0
    name = jupyter.copy_notebook(NOTEBOOKS / "pane_only.ipynb", "link.ipynb", RUN_ID=run, PORTAL_URL=portal)
    open_notebook(page, jupyter, name)
    run_all(page)
    wait_points(page, 10)
    href = page.locator(f"{PANE} a.tau-pane-stellar").get_attribute("href")
    # Inside Jupyter the link goes through the Jupyter server (jupyter-server-proxy), on the notebook's origin.
    assert href == f"/tau-portal/stellar?target={run}&project=proj"
    stellar = page.context.new_page()
    try:
        stellar.goto(jupyter.base_url + href)
        stellar.wait_for_selector("#stellar[data-state=ready]", timeout=90_000)
        assert run in stellar.locator("#stellar").inner_text()
        screenshot(stellar, f"pane-{jupyter.app}-stellar-link")
    finally:
        stellar.close()


def test_portal_outage_is_said_in_words_and_recovers(lab: JupyterServer, page: Page, store: Path, tmp_path):
    trainer = Trainer(tmp_path / "t", store, "ui-outage", points=40, delay=0.2)
    port = free_port()
    own = f"http://127.0.0.1:{port}"
    try:
        with ServerThread(create_app(store, token=TOKEN), port=port):
            name = lab.copy_notebook(NOTEBOOKS / "pane_only.ipynb", "outage.ipynb", RUN_ID="ui-outage",
                                     PORTAL_URL=own)
            open_notebook(page, lab, name)
            run_all(page)
            wait_points(page, 1)
        # The Portal is gone while the run goes on.
        trainer.release()
        status = page.locator(f"{PANE} .tau-pane-status")
        page.wait_for_function("() => document.querySelector('.jp-OutputArea-output .tau-pane')"
                               ".dataset.status === 'unreachable'", timeout=30_000)
        text = status.text_content() or ""
        assert text.startswith(f"Portal unreachable at {own}/") and "retrying" in text
        screenshot(page, "pane-portal-unreachable")
        before = points(page)
        with ServerThread(create_app(store, token=TOKEN), port=port):
            page.wait_for_function("() => document.querySelector('.jp-OutputArea-output .tau-pane')"
                                   ".dataset.status === 'ok'", timeout=60_000)
            assert trainer.wait() == 0
            wait_points(page, 40)
            assert points(page) > before
            assert "unreachable" not in (status.text_content() or "")
            screenshot(page, "pane-portal-recovered")
    finally:
        trainer.stop()


def test_saved_notebook_shows_the_last_figure_without_a_kernel(jupyter: JupyterServer, page: Page, store: Path,
                                                               portal: str, tmp_path):
    run = f"ui-saved-{jupyter.app}"
    trainer = Trainer(tmp_path / "t", store, run, points=20, delay=0.02, gated=False)
    assert trainer.wait() == 0
    name = jupyter.copy_notebook(NOTEBOOKS / "pane_only.ipynb", "saved.ipynb", RUN_ID=run, PORTAL_URL=portal)
    open_notebook(page, jupyter, name)
    run_all(page)
    wait_points(page, 20)
    # The live view hides the static fallback; the kernel mirrors the browser's snapshot into it.
    fallback = page.locator(".tau-pane-static")
    page.wait_for_function("() => { const s = document.querySelector('.tau-pane-static img');"
                           " return s && s.src.startsWith('data:image/png'); }", timeout=60_000)
    assert not fallback.is_visible()
    execute(page, "docmanager:save")
    saved = jupyter.root_dir / name
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=30_000)
    assert 'data-tau-pane-static' in saved.read_text() and "data:image/png;base64," in saved.read_text()
    execute(page, "kernelmenu:shutdown")
    page.wait_for_function("() => { const w = window.jupyterapp.shell.currentWidget;"
                           " return !w.sessionContext.session || !w.sessionContext.session.kernel; }",
                           timeout=30_000)
    # Reopen with no kernel: the widget cannot come back, the last figure does.
    page.goto(jupyter.notebook_url(name))
    page.wait_for_selector(".tau-pane-static img", state="visible", timeout=60_000)
    size = page.evaluate("() => { const i = document.querySelector('.tau-pane-static img');"
                         " return [i.naturalWidth, i.naturalHeight]; }")
    assert size[0] >= 400 and size[1] >= 100
    screenshot(page, f"pane-{jupyter.app}-saved-static")


def loss_traces(page: Page) -> list[dict]:
    return page.evaluate("""() => {
        const gd = document.querySelector('.tau-pane-metric[data-metric=loss] .js-plotly-plot');
        return gd.data.map(t => ({ name: t.name, mode: t.mode, visible: t.visible, type: t.type,
                                   x: Array.from(t.x, v => v instanceof Date ? v.getTime() : v),
                                   y: Array.from(t.y) }));
    }""")


def test_controls_smoothing_log_y_wall_time_compare_and_zoom(lab: JupyterServer, page: Page, store: Path, portal: str,
                                                             tmp_path):
    # 6000 rows: more than the first, width-sized read asks for, so zooming has detail to fetch.
    big = Trainer(tmp_path / "big", store, "ui-big", points=6000, delay=0.0, gated=False)
    small = Trainer(tmp_path / "small", store, "ui-small", points=50, delay=0.0, gated=False)
    assert big.wait() == 0 and small.wait() == 0
    name = lab.copy_notebook(NOTEBOOKS / "pane_only.ipynb", "controls.ipynb", RUN_ID="ui-big", PORTAL_URL=portal)
    notebook = lab.root_dir / name
    compare = 'project=\\"proj\\", compare=[\\"ui-small\\"])'
    notebook.write_text(notebook.read_text().replace('project=\\"proj\\")', compare))
    open_notebook(page, lab, name)
    run_all(page)
    page.wait_for_function("""() => {
        const gd = document.querySelector('.tau-pane-metric[data-metric=loss] .js-plotly-plot');
        return gd && gd.data && gd.data.length === 6 && gd.data[0].x.length > 50 && gd.data[3].x.length === 50;
    }""", timeout=60_000)
    traces = loss_traces(page)
    raw_big, raw_small = traces[0], traces[3]
    assert raw_big["name"] == "ui-big" and raw_small["name"] == "ui-small (compare)"
    assert len(raw_small["x"]) == 50
    first_read = len(raw_big["x"])
    assert first_read < 6000, "the first read is reduced to the pane's width"
    assert raw_big["x"][0] == 0 and raw_big["x"][-1] == 5999

    # Smoothing: TensorBoard's debiased EMA of the raw values.
    page.locator(f"{PANE} input[aria-label=smoothing]").fill("0.6")
    page.wait_for_function("() => document.querySelector('.tau-pane-metric[data-metric=loss] .js-plotly-plot')"
                           ".data[1].visible === true", timeout=10_000)
    traces = loss_traces(page)
    last, expected = 0.0, []
    for i, v in enumerate(traces[3]["y"]):
        last = last * 0.6 + 0.4 * v
        expected.append(last / (1 - 0.6 ** (i + 1)))
    assert traces[4]["y"] == pytest.approx(expected, rel=1e-12)

    # Log y.
    page.locator(f"{PANE} input[aria-label='log scale']").check()
    page.wait_for_function("() => document.querySelector('.tau-pane-metric[data-metric=loss] .js-plotly-plot')"
                           "._fullLayout.yaxis.type === 'log'", timeout=10_000)

    # Wall-time axis: x becomes dates from the run's wall times (the trainer ran moments ago).
    page.locator(f"{PANE} select[aria-label='x axis']").select_option("wall")
    page.wait_for_function("() => document.querySelector('.tau-pane-metric[data-metric=loss] .js-plotly-plot')"
                           "._fullLayout.xaxis.type === 'date'", timeout=10_000)
    xs = loss_traces(page)[0]["x"]
    assert abs(xs[-1] / 1000 - time.time()) < 3600 and xs == sorted(xs)

    # A metric as x: the trainer logs lr = 0.1 / (1 + step) from step 1 on. The kernel polls lr beside loss; each
    # loss point takes lr at its step (lr goes down: the line runs right to left), step 0 has none and is said.
    page.locator(f"{PANE} select[aria-label='x axis']").select_option("metric:lr")
    page.wait_for_function("() => document.querySelector('.tau-pane-metric[data-metric=loss] .js-plotly-plot')"
                           "._fullLayout.xaxis.title.text === 'lr'", timeout=30_000)
    small_x = loss_traces(page)[3]["x"]
    assert small_x[0] is None and small_x[1:] == pytest.approx([0.1 / (1 + s) for s in range(1, 50)], rel=1e-12)
    note = page.locator(f"{LOSS_PLOT} .tau-pane-xnote")
    assert note.get_attribute("data-missing") == "2"  # step 0 of each run
    assert "2 points without lr not drawn" in note.inner_text()
    screenshot(page, "pane-x-metric")
    page.locator(f"{PANE} select[aria-label='x axis']").select_option("step")
    page.wait_for_function("() => document.querySelector('.tau-pane-metric[data-metric=loss] .js-plotly-plot')"
                           "._fullLayout.xaxis.type === 'linear'", timeout=10_000)

    # Zoom: the visible range is read again at full fidelity.
    page.evaluate("""() => {
        const gd = document.querySelector('.tau-pane-metric[data-metric=loss] .js-plotly-plot');
        gd.emit('plotly_relayout', { 'xaxis.range[0]': 2000, 'xaxis.range[1]': 2300 });
    }""")
    page.wait_for_function("""() => {
        const gd = document.querySelector('.tau-pane-metric[data-metric=loss] .js-plotly-plot');
        return Array.from(gd.data[0].x).filter(s => s >= 2000 && s <= 2300).length === 301;
    }""", timeout=30_000)
    zoomed = loss_traces(page)[0]["x"]
    assert zoomed == sorted(zoomed) and zoomed[0] == 0 and zoomed[-1] == 5999
    screenshot(page, "pane-controls")


def test_a_run_has_the_same_colour_in_the_pane_and_on_the_stellar_page(lab: JupyterServer, page: Page, store: Path,
                                                                       portal: str, tmp_path):
    runs = ["ui-colour-a", "ui-colour-b", "ui-colour-c"]
    trainers = [Trainer(tmp_path / r, store, r, points=20, delay=0.0, gated=False) for r in runs]
    assert all(t.wait() == 0 for t in trainers)
    name = lab.copy_notebook(NOTEBOOKS / "pane_only.ipynb", "colours.ipynb", RUN_ID=runs[0], PORTAL_URL=portal)
    notebook = lab.root_dir / name
    notebook.write_text(notebook.read_text().replace(
        'project=\\"proj\\")', 'project=\\"proj\\", compare=[\\"ui-colour-b\\", \\"ui-colour-c\\"])'))
    open_notebook(page, lab, name)
    run_all(page)
    page.wait_for_function("() => { const gd = document.querySelector("
                           "'.tau-pane-metric[data-metric=loss] .js-plotly-plot');"
                           " return gd && gd.data && gd.data.length === 9 && gd.data[6].x.length === 20; }",
                           timeout=60_000)
    pane_colours = page.evaluate("""() => {
        const gd = document.querySelector('.tau-pane-metric[data-metric=loss] .js-plotly-plot');
        return Object.fromEntries(gd.data.filter((t) => t.mode === 'lines').map((t) => [t.legendgroup, t.line.color]));
    }""")
    legend = page.evaluate("(sel) => [...document.querySelectorAll(sel + ' .legend .legendtext')]"
                           ".map((t) => t.textContent)", LOSS_PLOT)
    assert legend == ["ui-colour-a", "ui-colour-b (compare)", "ui-colour-c (compare)"]
    assert len(set(pane_colours.values())) == 3

    href = page.locator(f"{PANE} a.tau-pane-stellar").get_attribute("href")
    stellar = page.context.new_page()
    try:
        stellar.goto(lab.base_url + href)
        stellar.wait_for_selector("#stellar[data-state=ready]", timeout=90_000)
        page_colours = stellar.evaluate("""() => {
            const gd = document.querySelector('section.stellar-chart[data-metric=loss] .stellar-plot');
            return Object.fromEntries(gd.data.filter((t) => t.meta.role === 'raw')
                .map((t) => [t.meta.runId, t.line.color]));
        }""")
        swatches = {r: stellar.locator(f'section.stellar-run[data-run-id="{r}"]').get_attribute("data-color")
                    for r in runs}
        screenshot(stellar, "pane-colours-stellar")
    finally:
        stellar.close()
    assert page_colours == pane_colours
    assert swatches == pane_colours
    screenshot(page, "pane-colours")


def test_compare_an_experiment_and_the_legend_names_runs_by_what_differs(lab: JupyterServer, page: Page, store: Path,
                                                                         portal: str, tmp_path):
    lrs = {"ui-sweep-a": 0.1, "ui-sweep-b": 0.03, "ui-sweep-c": 0.01}
    trainers = [Trainer(tmp_path / run, store, run, points=20, delay=0.0, gated=False, experiment="ui-sweep",
                        config={"lr": lr, "batch": 32}, speed=lr * 20) for run, lr in lrs.items()]
    assert all(t.wait() == 0 for t in trainers)
    name = lab.copy_notebook(NOTEBOOKS / "pane_only.ipynb", "sweep.ipynb", RUN_ID="ui-sweep-a", PORTAL_URL=portal)
    notebook = lab.root_dir / name
    # compare= names the experiment: the pane draws all of its runs.
    notebook.write_text(notebook.read_text().replace(
        'project=\\"proj\\")', 'project=\\"proj\\", compare=[\\"ui-sweep\\"])'))
    open_notebook(page, lab, name)
    run_all(page)
    page.wait_for_function("""() => {
        const gd = document.querySelector('.tau-pane-metric[data-metric=loss] .js-plotly-plot');
        return gd && gd.data && gd.data.filter((t) => t.mode === 'lines' && t.x.length === 20).length === 6
            && gd.data.some((t) => t.name === 'lr=0.01');
    }""", timeout=60_000)
    legend = page.evaluate("(sel) => [...document.querySelectorAll(sel + ' .legend .legendtext')]"
                           ".map((t) => t.textContent)", LOSS_PLOT)
    # batch is the same in all three: only lr names them. The pane's own run first.
    assert legend[0] == "lr=0.1" and sorted(legend) == ["lr=0.01", "lr=0.03", "lr=0.1"]
    hover = page.evaluate("""() => {
        const gd = document.querySelector('.tau-pane-metric[data-metric=loss] .js-plotly-plot');
        return Object.fromEntries(gd.data.filter((t) => t.mode === 'lines').map((t) => [t.name, t.text]));
    }""")
    assert hover == {"lr=0.1": "ui-sweep-a", "lr=0.03": "ui-sweep-b", "lr=0.01": "ui-sweep-c"}  # the id in the hover
    href = page.locator(f"{PANE} a.tau-pane-stellar").get_attribute("href")
    assert "target=ui-sweep-a" in href and sorted(href.split("compare=")[1].split(",")) == ["ui-sweep-b", "ui-sweep-c"]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.locator(PANE).first.screenshot(path=str(ARTIFACTS / "pane-compare-by-config.png"))


def test_seeds_drawn_as_their_mean_with_a_band_and_on_relative_time(lab: JupyterServer, page: Page, store: Path,
                                                                     portal: str, tmp_path):
    seeds = {"ui-seed-0": 1.0, "ui-seed-1": 1.3, "ui-seed-2": 0.8}
    trainers = [Trainer(tmp_path / run, store, run, points=20, delay=0.0, gated=False, experiment="ui-seeds",
                        config={"lr": 0.1, "seed": i}, speed=speed) for i, (run, speed) in enumerate(seeds.items())]
    assert all(t.wait() == 0 for t in trainers)
    name = lab.copy_notebook(NOTEBOOKS / "pane_only.ipynb", "seeds.ipynb", RUN_ID="ui-seed-0", PORTAL_URL=portal)
    notebook = lab.root_dir / name
    notebook.write_text(notebook.read_text().replace(
        'project=\\"proj\\")', 'project=\\"proj\\", compare=[\\"ui-seeds\\"], aggregate=\\"mean\\")'))
    open_notebook(page, lab, name)
    run_all(page)
    page.wait_for_function("""() => {
        const gd = document.querySelector('.tau-pane-metric[data-metric=loss] .js-plotly-plot');
        return gd && gd.data && gd.data.some((t) => t.showlegend && String(t.name).includes('mean of 3 runs')
            && t.x.length === 20);
    }""", timeout=60_000)
    band = loss_traces(page)
    lower, upper, center = band[0], band[1], band[2]
    assert center["name"] == "loss (mean of 3 runs, min–max)"
    assert all(lo <= c <= hi for lo, c, hi in zip(lower["y"], center["y"], upper["y"], strict=True))
    assert upper["y"][-1] > lower["y"][-1]  # the seeds differ: the band has a width

    # Each run its line again: the mean drawn was the mean of these lines, step for step.
    page.locator(f"{PANE} select[aria-label='runs as']").select_option("")
    page.wait_for_function("""() => document.querySelector('.tau-pane-metric[data-metric=loss] .js-plotly-plot')
        .data.filter((t) => t.mode === 'lines' && t.visible !== false && t.x.length === 20).length === 3""",
                           timeout=10_000)
    lines = [t for t in loss_traces(page) if t["mode"] == "lines" and t["visible"] is not False]
    assert center["y"] == pytest.approx([sum(ys) / 3 for ys in zip(*(t["y"] for t in lines), strict=True)], rel=1e-12)
    assert lower["y"] == pytest.approx([min(ys) for ys in zip(*(t["y"] for t in lines), strict=True)], rel=1e-12)

    # Relative time: every run starts at 0, whenever it ran.
    page.locator(f"{PANE} select[aria-label='x axis']").select_option("relative")
    page.wait_for_function("""() => document.querySelector('.tau-pane-metric[data-metric=loss] .js-plotly-plot')
        ._fullLayout.xaxis.title.text.startsWith('relative time')""", timeout=10_000)
    lines = [t for t in loss_traces(page) if t["mode"] == "lines" and t["visible"] is not False]
    assert [t["x"][0] for t in lines] == [0, 0, 0]
    assert all(t["x"] == sorted(t["x"]) for t in lines)
    page.locator(f"{PANE} select[aria-label='runs as']").select_option("mean")
    page.wait_for_function("""() => document.querySelector('.tau-pane-metric[data-metric=loss] .js-plotly-plot')
        .data.some((t) => String(t.name).includes('mean of 3 runs'))""", timeout=10_000)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.locator(PANE).first.screenshot(path=str(ARTIFACTS / "pane-seeds-mean-band.png"))
    page.locator(f"{PANE} select[aria-label='x axis']").select_option("step")  # the browser's choice is kept
