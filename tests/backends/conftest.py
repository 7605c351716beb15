"""Registers ``tau_home`` for the backend tests (``tests/fixtures/local_backend.py``)."""

from fixtures.local_backend import tau_home  # noqa: F401  (a fixture, used by name)
