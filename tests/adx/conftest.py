"""Fixtures for the ADX tests: ``adx_env`` (Azurite, the Kusto management stand-in, the ingestion worker)."""

from __future__ import annotations

import sys
from pathlib import Path

# The services live in tests/services; make ``services`` importable however pytest was started.
_TESTS = str(Path(__file__).resolve().parents[1])
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from services.adx_env import adx_env, azurite  # noqa: E402, F401  (fixtures, used by name)
