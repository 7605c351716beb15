"""Registers the shared Portal fixtures (``tests/fixtures/portal.py``) and the imported tensorboardX media store
(``tests/fixtures/media_store.py``) for every test under ``tests/``."""

from fixtures.media_store import tbx_media_store  # noqa: F401  (a fixture, used by name)
from fixtures.portal import api, capi, config_store, portal_server, portal_store  # noqa: F401  (fixtures, used by name)
