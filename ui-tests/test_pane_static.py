"""The loss pane where its live view cannot load: a JupyterLab whose widget manager lacks anywidget (its
labextension disabled in the server's own config directory), in headless Chromium. The pane's static output
shows the kernel's picture and line of text, refreshed while the run lives and final when it ends; in a
JupyterLab with anywidget the same output stays hidden behind the live view, however often it is refreshed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page

from fixtures.browser import screenshot
from fixtures.jupyter import JupyterServer, execute, open_notebook, run_all, start_jupyter
from fixtures.pane_ui import (
    DEADLINE_MS,
    NOTEBOOKS,
    PANE,
    Trainer,
    new_store,
    portal_over,
    require_pane_bundle,
    wait_points,
)
from fixtures.portal import TOKEN

STATIC = ".jp-OutputArea-output .tau-pane-static"


@pytest.fixture(scope="module", autouse=True)
def pane_built() -> None:
    require_pane_bundle()


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    path = new_store(tmp_path_factory, "static-store")
    return path


@pytest.fixture(scope="module")
def portal(store: Path) -> Iterator[str]:
    yield from portal_over(store)


@pytest.fixture(scope="module")
def lab_without_anywidget(tmp_path_factory, store: Path, portal: str) -> Iterator[JupyterServer]:
    home = tmp_path_factory.mktemp("lab-no-anywidget")
    config = home / "config"
    config.mkdir(parents=True)
    # `--level=user` writes JUPYTER_CONFIG_DIR's labconfig: this server's alone, never the environment's.
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(config), "JUPYTER_DATA_DIR": str(home / "data")}
    done = subprocess.run([sys.executable, "-m", "jupyterlab.labextensions", "disable", "--level=user", "anywidget"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    page_config = json.loads((config / "labconfig" / "page_config.json").read_text())
    assert page_config["disabledExtensions"].get("anywidget") is True, page_config
    yield from start_jupyter(home, {"TAU_PORTAL_TOKEN": TOKEN, "TAU_PORTAL_URL": portal, "TAU_STORE": str(store)})


@pytest.fixture(scope="module")
def lab(tmp_path_factory, store: Path, portal: str) -> Iterator[JupyterServer]:
    home = tmp_path_factory.mktemp("lab")
    yield from start_jupyter(home, {"TAU_PORTAL_TOKEN": TOKEN, "TAU_PORTAL_URL": portal, "TAU_STORE": str(store)})


def static_line(page: Page) -> str:
    return page.locator(f"{STATIC} .tau-pane-static-line").text_content() or ""


def test_without_anywidget_the_pane_shows_its_picture_and_line_refreshed_then_final(
        lab_without_anywidget: JupyterServer, page: Page, store: Path, portal: str, tmp_path):
    lab = lab_without_anywidget
    run = "ui-static-live"
    trainer = Trainer(tmp_path / "t", store, run, points=30, delay=0.02)
    try:
        name = lab.copy_notebook(NOTEBOOKS / "pane_only.ipynb", "static.ipynb", RUN_ID=run, PORTAL_URL=portal)
        open_notebook(page, lab, name)
        run_all(page)
        # While the run lives (the trainer waits for the test after its first point): the picture and the line.
        page.wait_for_function(f"""() => {{
            const l = document.querySelector('{STATIC} .tau-pane-static-line');
            return l && l.textContent.includes(' · running · loss 2 (step 0)');
        }}""", timeout=DEADLINE_MS)
        assert page.locator(f"{STATIC} img").is_visible()
        assert page.locator(".tau-pane").count() == 0  # no live view: anywidget's front end is not there
        screenshot(page, "pane-static-no-anywidget-running")
        trainer.release()
        assert trainer.wait() == 0
        page.wait_for_function(f"""() => {{
            const l = document.querySelector('{STATIC} .tau-pane-static-line');
            return l && l.textContent.includes(' · succeeded · loss ') && l.textContent.includes('(step 29)');
        }}""", timeout=DEADLINE_MS)
        assert page.locator(STATIC).count() == 1  # updated in place, never one more output per refresh
        size = page.evaluate(f"() => {{ const i = document.querySelector('{STATIC} img');"
                             " return [i.naturalWidth, i.naturalHeight, i.complete]; }")
        assert size[0] >= 300 and size[1] >= 150 and size[2], size
        line = static_line(page)
        assert line.startswith(f"loss pane · run {run} · succeeded · loss "), line
        screenshot(page, "pane-static-no-anywidget-final")
    finally:
        trainer.stop()


# Records the notifications the page raises (the real constructor still runs).
RECORD_NOTIFICATIONS = """
(() => {
  const Real = window.Notification;
  window.__tauNotifications = [];
  class Recorded extends Real {
    constructor(title, options) { super(title, options); window.__tauNotifications.push({ title, ...options }); }
  }
  window.Notification = Recorded;
})();
"""


def test_with_anywidget_the_static_output_stays_hidden_and_the_run_ending_raises_one_notification(
        lab: JupyterServer, page: Page, store: Path, portal: str, tmp_path):
    run = "ui-static-hidden"
    trainer = Trainer(tmp_path / "t", store, run, points=30, delay=0.02)
    page.context.grant_permissions(["notifications"])
    page.add_init_script(RECORD_NOTIFICATIONS)
    try:
        name = lab.copy_notebook(NOTEBOOKS / "pane_only.ipynb", "hidden.ipynb", RUN_ID=run, PORTAL_URL=portal)
        open_notebook(page, lab, name)
        run_all(page)
        wait_points(page, 1)
        page.wait_for_function(f"() => !!document.querySelector('{STATIC} img')", timeout=DEADLINE_MS)
        bell = page.locator(f"{PANE} .tau-pane-bell")
        assert bell.get_attribute("aria-pressed") == "false"
        bell.click()  # the user's gesture: the bell is on (permission granted above)
        page.wait_for_function(f"() => document.querySelector('{PANE} .tau-pane-bell')"
                               ".getAttribute('aria-pressed') === 'true'", timeout=DEADLINE_MS)
        assert page.locator(f"{PANE} .tau-pane-alert").is_hidden()  # the run is running: nothing to say
        trainer.release()
        assert trainer.wait() == 0
        wait_points(page, 30)
        page.wait_for_function(f"""() => {{
            const l = document.querySelector('{STATIC} .tau-pane-static-line');
            return l && l.textContent.includes(' · succeeded · ');
        }}""", timeout=DEADLINE_MS)
        assert page.locator(STATIC).count() == 1
        assert not page.locator(STATIC).is_visible()
        assert page.locator(PANE).count() == 1  # the live view, once
        # The run ended while the page watched it: a banner in the pane and one browser notification.
        alert = page.locator(f"{PANE} .tau-pane-alert")
        alert.wait_for(state="visible", timeout=DEADLINE_MS)
        assert (alert.text_content() or "").startswith(f"tau run {run} succeeded")
        assert alert.get_attribute("data-raised") == "true"
        raised = page.evaluate("() => window.__tauNotifications")
        assert raised == [{"title": f"tau run {run} succeeded", "body": "entrypoint exited with code 0",
                           "tag": f"tau-run-{run}-succeeded"}]
        screenshot(page, "pane-run-ended-banner")
        # A reload of the page on the run that already ended raises nothing (the kernel restores the model).
        execute(page, "docmanager:save")
        page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=30_000)
        open_notebook(page, lab, name)
        page.wait_for_selector(f"{PANE}", timeout=DEADLINE_MS)
        page.wait_for_function(f"() => document.querySelector('{PANE}').dataset.state === 'succeeded'",
                               timeout=DEADLINE_MS)
        assert page.evaluate("() => window.__tauNotifications") == []
        assert page.locator(f"{PANE} .tau-pane-alert").is_hidden()
    finally:
        trainer.stop()
