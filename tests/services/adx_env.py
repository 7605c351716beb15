"""Pytest fixtures and helpers for the ADX queued-ingestion path: Azurite + Kusto mgmt stand-in + ingestion worker.

Any test directory can use them by importing the fixtures into its ``conftest.py``
(``from services.adx_env import adx_env, azurite``) with ``tests/`` on ``sys.path``.
``adx_env`` gives what an end-to-end test needs: the ingest URI to hand the collector
(``--adx-cluster-uri``), the database, the worker holding what was ingested, and Azurite itself
(to stop and restart it). Azurite is shared per module (it takes 1–3 s to start); the management
server and the worker are fresh per test, and each test gets its own database so their ingestions
never mix.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tau_collector.projection.metric_event import encode_ndjson_many, new_metric_event
from tau_collector.sinks import Chunk

from .azurite import Azurite
from .ingestion_worker import IngestionWorker
from .kusto_mgmt import IngestionResources, KustoMgmtServer, create_ingestion_resources

__all__ = ["AdxEnv", "adx_env", "azurite", "metric_chunk"]

WALL_TIME_NS = 1_790_274_612_250_000_000
EXPORTED_AT_NS = 1_790_274_700_000_000_000


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
    if not azurite.running:  # a fault test that failed midway may have left it stopped
        azurite.start()
    resources = create_ingestion_resources(azurite)
    database = f"taunotebook_{uuid.uuid4().hex[:12]}"
    with KustoMgmtServer(resources) as mgmt, IngestionWorker(resources, database) as worker:
        yield AdxEnv(mgmt.uri, database, worker, mgmt, azurite, resources)


def metric_chunk(sequence: int = 1, steps: range = range(5), run_id: str = "seed-1") -> Chunk:
    """A history chunk of canonical ``train/loss`` events, one per step."""
    events = [
        new_metric_event(
            project="demo",
            experiment_id="sgd-demo",
            run_group_id="lr-sweep",
            run_id=run_id,
            metric_name="train/loss",
            step=step,
            wall_time=WALL_TIME_NS + step * 1_000_000,
            value=2.0 / (step + 1),
            exported_at=EXPORTED_AT_NS,
            source="jsonl",
            tags={"html": "<ok>"},
        )
        for step in steps
    ]
    ndjson = encode_ndjson_many(events)
    return Chunk(sequence, "history", hashlib.sha256(ndjson).hexdigest(), ndjson, len(events))
