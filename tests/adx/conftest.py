"""Registers the ADX fixtures: ``adx_env`` (Azurite, the Kusto management stand-in, the ingestion worker)."""

from services.adx_env import adx_env, azurite  # noqa: F401  (fixtures, used by name)
