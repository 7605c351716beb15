"""The loss pane where its live view cannot load: a JupyterLab whose widget manager lacks anywidget (its
labextension disabled in the server's own config directory), in headless Chromium. The pane's static output
shows the kernel's picture and line of text, refreshed while the run lives and final when it ends; in a
JupyterLab with anywidget the same output stays hidden behind the live view, however often it is refreshed.
"""

from __future__ import annotations

import base64
import json
import os
import re
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


@pytest.fixture(scope="module")
def media_run(store: Path) -> str:
    """A run imported into the module's store from tensorboardX's own event file (histograms, images, text)."""
    from fixtures.tb_writers import write_tensorboardx_media
    from taunotebook.importer import import_paths

    logs = store.parent / "media-logs"
    write_tensorboardx_media(logs / "run", [0, 10, 20])
    (run_id,) = import_paths([str(logs)], store, project="proj", clustering="off").run_ids
    return run_id


def test_the_saved_notebook_keeps_the_media_and_shows_them_reopened_after_the_kernel_stopped(
        lab_without_anywidget: JupyterServer, page: Page, store: Path, portal: str, media_run: str):
    import nbformat

    lab = lab_without_anywidget
    name = lab.copy_notebook(NOTEBOOKS / "pane_only.ipynb", "static-media.ipynb", RUN_ID=media_run, PORTAL_URL=portal)
    open_notebook(page, lab, name)
    run_all(page)
    media = f"{STATIC} .tau-pane-static-media"
    page.wait_for_selector(f'{media} [data-kind="images"][data-tag="sample"] img', timeout=DEADLINE_MS)
    page.wait_for_function(f"() => document.querySelector('{STATIC} .tau-pane-static-line').textContent"
                           ".includes('media tags at their latest steps')", timeout=60_000)
    execute(page, "docmanager:save")
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=30_000)
    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.sessionContext.session", timeout=30_000)
    # The file holds the media: the image's bytes are the stored image's.
    saved = nbformat.read(lab.root_dir / name, as_version=4)
    (static,) = [o for o in saved.cells[0].outputs if "data-tau-pane-static-media" in o.get("data", {}).get(
        "text/html", "")]
    found = re.search(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"[^>]*data-digest="sha256:([0-9a-f]{64})"',
                      static["data"]["text/html"])
    assert found, static["data"]["text/html"][:500]
    stored = store / "artifacts" / "sha256" / found.group(2)[:2] / found.group(2)
    assert base64.b64decode(found.group(1)) == stored.read_bytes()
    # Reopened: no kernel runs the pane; the saved output shows its histograms, images and text.
    fresh = page.context.new_page()
    try:
        fresh.goto(lab.notebook_url(name))
        fresh.wait_for_selector(f'{media} [data-kind="histograms"][data-tag="weights"] img', timeout=60_000)
        sizes = fresh.evaluate(f"""() => [...document.querySelectorAll('{media} img')].map(
            (i) => [i.closest('[data-kind]').dataset.kind, i.complete && i.naturalWidth > 0])""")
        kinds = {kind for kind, _ in sizes}
        assert kinds == {"histograms", "images"} and all(ok for _, ok in sizes), sizes
        text = fresh.locator(f'{media} [data-kind="text"]').inner_text()
        assert "step **20**: naïve ✓" in text
        fresh.locator(media).scroll_into_view_if_needed()
        screenshot(fresh, "pane-static-media-reopened")
    finally:
        fresh.close()
