"""Headless Debian Chromium (Python Playwright) against the real Portal on 127.0.0.1; screenshots kept as artifacts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

# The Portal fixture (a real server over a store written by the real writer) is shared with the API tests.
from portal.conftest import PortalServer, portal_server, portal_store  # noqa: F401
from ui_pages import CHROMIUM_ARGS, chromium_path

from taunotebook.portal.views.pages import BUILD_HINT, PAGE_BUNDLE

REPO = Path(__file__).resolve().parents[1]
@pytest.fixture(scope="session", autouse=True)
def pages_built() -> None:
    built = REPO / "taunotebook" / "static" / "stellar" / PAGE_BUNDLE
    if not built.is_file():
        pytest.fail(f"{built.relative_to(REPO)} is missing: build it with `{BUILD_HINT}`")


@pytest.fixture(scope="session")
def chromium() -> Iterator[Browser]:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(chromium: Browser, request) -> Iterator[Page]:
    """A fresh browser context (no cookies) per test; console errors fail the test unless it expects them."""
    context = chromium.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
    pg.on("console", lambda msg: errors.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None)
    pg.console_errors = errors  # type: ignore[attr-defined]
    yield pg
    context.close()
