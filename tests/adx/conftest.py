"""Fixtures for the ADX queued-ingestion path: Azurite, the Kusto management stand-in and the ingestion worker.

``adx_env`` is what end-to-end tests need: the ingest URI to give the collector, the database,
the worker holding what was ingested, and Azurite itself (to stop and restart it). Azurite is
shared by the module's tests (it takes about a second to start); the management server and the
worker are fresh per test, and each test gets its own database name so their ingestions never mix.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

# The services live in tests/services; make ``services`` importable however pytest was started.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from services.azurite import Azurite  # noqa: E402
from services.ingestion_worker import IngestionWorker  # noqa: E402
from services.kusto_mgmt import IngestionResources, KustoMgmtServer, create_ingestion_resources  # noqa: E402


@dataclass
class AdxEnv:
    """A queued-ingestion endpoint on 127.0.0.1 whose ADX side is the in-memory ``worker``."""

    ingest_uri: str
    database: str
    worker: IngestionWorker
    mgmt: KustoMgmtServer
    azurite: Azurite
    resources: IngestionResources


@pytest.fixture(scope="module")
def azurite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Azurite]:
    with Azurite(tmp_path_factory.mktemp("azurite")) as server:
        yield server


@pytest.fixture
def adx_env(azurite: Azurite) -> Iterator[AdxEnv]:
    if not azurite.running:  # a fault test may have left it stopped after a failure
        azurite.start()
    resources = create_ingestion_resources(azurite)
    database = f"taunotebook_{uuid.uuid4().hex[:12]}"
    with KustoMgmtServer(resources) as mgmt, IngestionWorker(resources, database) as worker:
        yield AdxEnv(mgmt.uri, database, worker, mgmt, azurite, resources)
