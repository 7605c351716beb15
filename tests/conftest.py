"""Registers the shared Portal fixtures (``tests/fixtures/portal.py``) for every test under ``tests/``."""

from fixtures.portal import api, capi, config_store, portal_server, portal_store  # noqa: F401  (fixtures, used by name)
