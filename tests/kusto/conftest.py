"""Registers the ``source=kusto`` fixtures (``tests/fixtures/kusto.py``) and the ADX stand-ins (``services``)."""

from fixtures.kusto import assets, kusto_cluster, kusto_language, loaded_cluster, reader  # noqa: F401  (fixtures)
from services.adx_env import adx_env, azurite  # noqa: F401  (fixtures, used by name)
