"""Fixtures for the ``source=kusto`` tests: the stand-in cluster, Kusto.Language, a reader on the real client."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

import pytest

from services.kusto_assets import Assets, load_assets
from services.kusto_cluster import KustoCluster
from services.kusto_language import KustoLanguage
from tau_collector.projection.metric_event import encode_ndjson_many
from taunotebook.portal.kusto import KustoConnection, KustoReader, KustoSettings
from taunotebook.portal.kusto.reader import DEFAULT_MAX_AGE_S

from .events import QUERY_NOW, fixture_events


@pytest.fixture(scope="session")
def assets() -> Assets:
    return load_assets()


@pytest.fixture(scope="session")
def kusto_language(assets: Assets) -> Iterator[KustoLanguage]:
    service = KustoLanguage()
    service.declare(assets)
    yield service
    service.close()


@pytest.fixture
def kusto_cluster() -> Iterator[KustoCluster]:
    with KustoCluster() as cluster:
        yield cluster
    assert cluster.errors == [], cluster.errors[0]


@pytest.fixture(scope="module")
def loaded_cluster() -> Iterator[KustoCluster]:
    """A stand-in cluster holding :func:`fixture_events` (read-only for the tests that share it)."""
    with KustoCluster() as cluster:
        cluster.ingest_ndjson(encode_ndjson_many(fixture_events()))
        yield cluster
    assert cluster.errors == [], cluster.errors[0]


def reader_for(cluster: KustoCluster, workspace: str = "ws-a", query_now: str = QUERY_NOW, *,
               max_age_s: float = DEFAULT_MAX_AGE_S, **settings) -> KustoReader:
    now = datetime.fromisoformat(query_now.replace("Z", "+00:00"))
    connection = KustoConnection(KustoSettings(cluster.uri, cluster.database, auth="none", query_now=now, **settings))
    return KustoReader(connection, workspace=workspace, max_age_s=max_age_s)


@pytest.fixture
def reader(loaded_cluster: KustoCluster) -> Iterator[KustoReader]:
    r = reader_for(loaded_cluster)
    yield r
    r.connection.close()

