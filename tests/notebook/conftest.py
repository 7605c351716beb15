"""Registers ``tau_home`` for notebooks run by nbclient (``tests/fixtures/notebook_kernel.py``)."""

from fixtures.notebook_kernel import tau_home  # noqa: F401  (a fixture, used by name)
