"""A ``source=kusto`` loss pane in a real JupyterLab, in headless Chromium, drawing a run as it grows.

The trainer runs under ``tau-collector wrap`` with the streaming ADX sink (``TAU_METRICS_OFFLOAD_ADX_*``,
as an offloading Ray job's collector is configured); the Portal the kernel reads has an empty store and
reads ADX, here the stand-in cluster (the one part not real). The pane names ``source="kusto"``: without
it the Portal's default, the store, would have no such run.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from jupyterlab import JupyterLab, cell_running, open_notebook, run_cell, start_lab
from kusto.conftest import reader_for
from playwright.sync_api import Page
from portal.conftest import TOKEN, ServerThread
from test_pane import LOSS_PLOT, PANE, TRAINER, points, wait_points
from ui_pages import screenshot

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
def lab(tmp_path_factory, portal: str) -> Iterator[JupyterLab]:
    yield from start_lab(tmp_path_factory.mktemp("kusto-lab"), {"TAU_PORTAL_TOKEN": TOKEN, "TAU_PORTAL_URL": portal})


def streaming_trainer(workdir: Path, cluster: KustoCluster, run: str, points: int, delay: float):
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "train.py").write_text(TRAINER, encoding="utf-8")
    env = {**os.environ, "TAU_METRICS_OFFLOAD_ADX_CLUSTER_URI": cluster.uri,
           "TAU_METRICS_OFFLOAD_ADX_DATABASE": cluster.database,
           "TAU_METRICS_OFFLOAD_ADX_CLIENT_ID": "unused-over-loopback-http"}
    cmd = [str(Path(sys.executable).with_name("tau-collector")), "wrap", "--run-dir", str(workdir / "run"),
           "--interval", "0.5s", "--run", run, "--project", "proj", "--experiment", "ui", "--group", "ui",
           "--tag", "tau_workspace=default", "--sink", "adx-streaming", "--",
           sys.executable, str(workdir / "train.py"), str(workdir / "go"), str(points), str(delay), "-1"]
    log = open(workdir / "wrap.log", "wb")
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=workdir, env=env), log


def test_a_kusto_pane_draws_a_streamed_run_as_it_grows(lab: JupyterLab, page: Page, cluster: KustoCluster,
                                                       portal: str, tmp_path):
    proc, log = streaming_trainer(tmp_path / "t", cluster, "ui-kusto", points=40, delay=0.3)
    try:
        name = lab.copy_notebook(NOTEBOOKS / "kusto_pane.ipynb", "kusto.ipynb", RUN_ID="ui-kusto",
                                 PORTAL_URL=portal, SLEEP="40")
        open_notebook(page, lab, name)
        run_cell(page, 0)
        wait_points(page, 1)  # step 0, streamed before the trainer waits for the go file
        run_cell(page, 1)
        page.wait_for_function("() => document.querySelectorAll('.jp-Cell')[1]"
                               ".querySelector('.jp-InputPrompt').textContent.includes('*')", timeout=30_000)
        (tmp_path / "t" / "go").touch()
        seen = [points(page)]
        while cell_running(page, 1) and seen[-1] < 40:
            page.wait_for_timeout(500)
            seen.append(points(page))
            if len(seen) == 6:
                screenshot(page, "pane-kusto-growing")
        growth = [b for a, b in itertools.pairwise(seen) if b > a]
        assert len(growth) >= 3, f"the point count should grow step by step while the cell sleeps: {seen}"
        assert seen[-1] == 40, f"every point drawn: {seen}"
        assert proc.wait(timeout=120) == 0
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
