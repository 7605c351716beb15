"""A ``source=kusto`` loss pane in a real JupyterLab, in headless Chromium, drawing a run as it grows.

The trainer runs under ``tau-collector wrap`` with the streaming ADX sink (``TAU_METRICS_OFFLOAD_ADX_*``,
as an offloading Ray job's collector is configured); the Portal the kernel reads has an empty store and
reads ADX, here the stand-in cluster (the one part not real). The pane names ``source="kusto"``: without
it the Portal's default, the store, would have no such run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page
from polling import DEADLINE

from fixtures.browser import screenshot
from fixtures.jupyter import JupyterServer, cell_running, open_notebook, run_cell, start_jupyter
from fixtures.kusto import reader_for
from fixtures.pane_ui import DEADLINE_MS, LOSS_PLOT, PANE, TRAINER, points, wait_points
from fixtures.portal import TOKEN
from fixtures.servers import ServerThread
from services.kusto_cluster import KustoCluster
from tau_collector.expstore import open_store
from taunotebook.portal.app import create_app

NOTEBOOKS = Path(__file__).resolve().parent / "pane_notebooks"


@pytest.fixture(scope="module")
def cluster() -> Iterator[KustoCluster]:
    with KustoCluster() as c:
        yield c
    assert c.errors == []


@pytest.fixture(scope="module")
def portal(tmp_path_factory, cluster: KustoCluster) -> Iterator[str]:
    store = tmp_path_factory.mktemp("kusto-pane") / "store"
    open_store(store, create=True).close()
    reader = reader_for(cluster, workspace="default", max_age_s=0.5)
    with ServerThread(create_app(store, token=TOKEN, kusto=reader)) as server:
        yield f"http://127.0.0.1:{server.port}"
    reader.connection.close()


@pytest.fixture(scope="module")
def lab(tmp_path_factory, portal: str) -> Iterator[JupyterServer]:
    yield from start_jupyter(tmp_path_factory.mktemp("kusto-lab"),
                             {"TAU_PORTAL_TOKEN": TOKEN, "TAU_PORTAL_URL": portal})


def streaming_trainer(workdir: Path, cluster: KustoCluster, run: str, points: int, delay: float, stage: int = 0):
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "train.py").write_text(TRAINER, encoding="utf-8")
    env = {**os.environ, "TAU_METRICS_OFFLOAD_ADX_CLUSTER_URI": cluster.uri,
           "TAU_METRICS_OFFLOAD_ADX_DATABASE": cluster.database,
           "TAU_METRICS_OFFLOAD_ADX_CLIENT_ID": "unused-over-loopback-http"}
    cmd = [str(Path(sys.executable).with_name("tau-collector")), "wrap", "--run-dir", str(workdir / "run"),
           "--interval", "0.5s", "--run", run, "--project", "proj", "--experiment", "ui", "--group", "ui",
           "--tag", "tau_workspace=default", "--sink", "adx-streaming", "--",
           sys.executable, str(workdir / "train.py"), str(workdir / "go"), str(points), str(delay), "-1", str(stage)]
    log = open(workdir / "wrap.log", "wb")
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=workdir, env=env), log


def test_a_kusto_pane_draws_a_streamed_run_as_it_grows(lab: JupyterServer, page: Page, cluster: KustoCluster,
                                                       portal: str, tmp_path):
    # The trainer streams its 40 points in four stages of 10, each once the test has seen the pane draw the
    # stage before, and the other cell runs until the test ends it: growth observed, not timed.
    proc, log = streaming_trainer(tmp_path / "t", cluster, "ui-kusto", points=40, delay=0.05, stage=10)
    try:
        name = lab.copy_notebook(NOTEBOOKS / "kusto_pane.ipynb", "kusto.ipynb", RUN_ID="ui-kusto",
                                 PORTAL_URL=portal, STOP=str(tmp_path / "stop"))
        open_notebook(page, lab, name)
        run_cell(page, 0)
        wait_points(page, 1)  # step 0, streamed before the trainer waits for the go file
        run_cell(page, 1)
        page.wait_for_function("() => document.querySelectorAll('.jp-Cell')[1]"
                               ".querySelector('.jp-InputPrompt').textContent.includes('*')", timeout=DEADLINE_MS)
        seen = [points(page)]
        (tmp_path / "t" / "go").touch()
        for stage_end in (10, 20, 30, 40):
            wait_points(page, stage_end)
            seen.append(points(page))
            if stage_end == 20:
                screenshot(page, "pane-kusto-growing")
            if stage_end < 40:
                (tmp_path / "t" / f"go-{stage_end}").touch()
        assert cell_running(page, 1), f"the other cell ended before the test let it: counts {seen}"
        assert seen == [1, 10, 20, 30, 40], f"the point count should grow stage by stage while the cell runs: {seen}"
        (tmp_path / "stop").touch()
        assert proc.wait(timeout=DEADLINE) == 0
        page.wait_for_function("() => document.querySelector('.jp-OutputArea-output .tau-pane')"
                               ".dataset.state === 'succeeded'", timeout=60_000)
        pane = page.locator(PANE).first
        assert "source=kusto" in pane.locator("a.tau-pane-stellar").get_attribute("href")
        assert int(page.locator(LOSS_PLOT).get_attribute("data-points")) == 40
        screenshot(page, "pane-kusto-done")
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=30)
        log.close()
