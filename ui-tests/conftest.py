"""Registers the UI tests' fixtures: headless Chromium and the shared Portal (both in ``tests/fixtures/``)."""

from fixtures.browser import chromium, page, pages_built  # noqa: F401  (fixtures, used by name)
from fixtures.portal import portal_server, portal_store  # noqa: F401
