"""Helpers the UI tests import by name (a test must never import ``conftest``: several exist)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import Page

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / "artifacts" / "ui"

CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-quic",
]


def chromium_path() -> str:
    path = os.environ.get("TAU_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.fail("no Chromium found: install it with `apt-get install -y chromium` (or set TAU_CHROMIUM)")
    return path


def screenshot(page: Page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{re.sub(r'[^A-Za-z0-9_.-]+', '-', name)}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def open_ready(page: Page, url: str, *, state: str = "ready") -> None:
    """Open a Stellar page and wait until its script says it has drawn (or failed) everything."""
    page.goto(url)
    page.wait_for_selector(f"#stellar[data-state={state}]", timeout=30_000)
