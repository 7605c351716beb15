"""Helpers the UI tests import by name (a test must never import ``conftest``: several exist)."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Page

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / "artifacts" / "ui"


def screenshot(page: Page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{re.sub(r'[^A-Za-z0-9_.-]+', '-', name)}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def open_ready(page: Page, url: str, *, state: str = "ready") -> None:
    """Open a Stellar page and wait until its script says it has drawn (or failed) everything."""
    page.goto(url)
    page.wait_for_selector(f"#stellar[data-state={state}]", timeout=30_000)
