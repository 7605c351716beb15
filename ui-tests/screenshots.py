"""Screenshots of the loss pane and the Stellar compare page for the same three runs, and the colour each run got.

A store written by the real writer (three runs of one project, ``loss`` and ``accuracy``, one NaN), a Portal
over it, a real ``jupyter lab`` whose kernel shows ``LossPane("baseline", compare=[...])``, and the Stellar
page the pane's "Open in Stellar" link opens through Jupyter's proxy. Prints each run's line colour in both
places (they must agree) and writes ``pane.png``, ``compare.png`` and ``colours.json`` to the output folder.

Usage::

    .venv/bin/python ui-tests/screenshots.py artifacts/ui/after
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "tests")]
from fixtures.jupyter import open_notebook, run_all, start_jupyter  # noqa: E402 - the suite's fixtures
from fixtures.portal import BASE_NS, TOKEN  # noqa: E402
from fixtures.servers import ServerThread  # noqa: E402
from tau_collector.expstore import open_store  # noqa: E402
from tau_collector.expstore.write.writer import MetricWriter  # noqa: E402
from tau_collector.projection.metric_event import new_metric_event  # noqa: E402
from taunotebook.portal.app import create_app  # noqa: E402

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
RUNS = {"baseline": 1.0, "lr-3e-4": 0.7, "lr-1e-3": 0.45}  # run → how fast its loss falls
STEPS = 1500


def build(root: Path) -> None:
    store = open_store(root, create=True)
    writer = MetricWriter(store)
    for run, speed in RUNS.items():
        events, bad = [], []
        for step in range(STEPS):
            loss = 2.0 * math.exp(-step * speed / 400) + 0.08 * math.sin(step / 7 + speed) + 0.1
            acc = 1 - 0.9 * math.exp(-step * speed / 300) + 0.02 * math.cos(step / 11)
            for metric, value in (("loss", loss), ("accuracy", acc)):
                e = new_metric_event(project="demo", experiment_id="sweep", run_group_id="lr", run_id=run,
                                     metric_name=metric, step=step, wall_time=BASE_NS + step * 50_000_000,
                                     value=value, exported_at=BASE_NS, source="history", tags={})
                if run == "lr-1e-3" and metric == "loss" and step == 900:
                    e.value = math.nan
                    bad.append(e)
                else:
                    events.append(e)
        writer.write_chunk(f"{run}-0", events, bad, request_hash="h")
        writer.write_chunk(f"{run}-status", [new_metric_event(
            project="demo", experiment_id="sweep", run_group_id="lr", run_id=run, metric_name="tau/run_status",
            step=STEPS, wall_time=BASE_NS + STEPS * 50_000_000, value=1.0, exported_at=BASE_NS, source="history",
            tags={})], [], request_hash="h")
    store.close()


NOTEBOOK = {
    "cells": [{"cell_type": "code", "execution_count": None, "id": "c0", "metadata": {}, "outputs": [],
               "source": "from taunotebook.pane import LossPane\n\nLossPane(\"baseline\", portal=PORTAL, "
                         "project=\"demo\", compare=[\"lr-3e-4\", \"lr-1e-3\"])"}],
    "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
    "nbformat": 4, "nbformat_minor": 5,
}

PANE_COLOURS = """() => {
    const gd = document.querySelector('.tau-pane-metric[data-metric=loss] .js-plotly-plot');
    const out = {};
    for (const t of gd.data) if (t.mode === 'lines' && t.legendgroup && !(t.legendgroup in out))
        out[t.legendgroup] = t.line.color;
    return out;
}"""
PAGE_COLOURS = """() => {
    const gd = document.querySelector('section.stellar-chart[data-metric=loss] .stellar-plot');
    const out = {};
    for (const t of gd.data) if (t.meta && t.meta.role === 'raw') out[t.meta.runId] = t.line.color;
    return out;
}"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path, help="folder for pane.png, compare.png and colours.json")
    args = parser.parse_args()
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    work = out / ".work"
    shutil.rmtree(work, ignore_errors=True)
    store = work / "store"
    build(store)
    try:
        with ServerThread(create_app(store, token=TOKEN)) as server:
            portal = f"http://127.0.0.1:{server.port}"
            lab_gen = start_jupyter(work / "lab", {"TAU_PORTAL_TOKEN": TOKEN, "TAU_STORE": str(store)})
            lab = next(lab_gen)
            try:
                nb = json.loads(json.dumps(NOTEBOOK))
                nb["cells"][0]["source"] = nb["cells"][0]["source"].replace("PORTAL", json.dumps(portal))
                (lab.root_dir / "compare.ipynb").write_text(json.dumps(nb), encoding="utf-8")
                with sync_playwright() as p:
                    chromium = os.environ.get("TAU_CHROMIUM") or shutil.which("chromium")
                    browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
                    page = browser.new_context(viewport={"width": 1300, "height": 900}).new_page()
                    open_notebook(page, lab, "compare.ipynb")
                    run_all(page)
                    page.wait_for_function("""() => [...document.querySelectorAll('.tau-pane-metric')]
                        .filter(p => Number(p.dataset.points) >= 3 * 1500 - 1).length === 2""", timeout=120_000)
                    page.wait_for_timeout(1500)
                    page.locator(".jp-OutputArea-output .tau-pane").first.screenshot(path=str(out / "pane.png"))
                    pane_colours = page.evaluate(PANE_COLOURS)
                    href = page.locator(".tau-pane a.tau-pane-stellar").get_attribute("href")
                    stellar = browser.new_context(viewport={"width": 1300, "height": 900}).new_page()
                    stellar.goto(lab.base_url + href)
                    stellar.wait_for_selector("#stellar[data-state=ready]", timeout=120_000)
                    stellar.wait_for_timeout(1000)
                    stellar.screenshot(path=str(out / "compare.png"), full_page=True)
                    page_colours = stellar.evaluate(PAGE_COLOURS)
                    browser.close()
            finally:
                for _ in lab_gen:
                    pass
    finally:
        shutil.rmtree(work, ignore_errors=True)
    colours = {"pane": pane_colours, "compare_page": page_colours, "stellar_href": href,
               "agree": all(pane_colours.get(r) == page_colours.get(r) for r in RUNS)}
    (out / "colours.json").write_text(json.dumps(colours, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(colours, indent=2))


if __name__ == "__main__":
    main()
