"""Which reader offers which capability of the read contract (``tau_collector.reads.capabilities``), as a table
asserted with ``isinstance``; and the Portal asks for capabilities with ``isinstance`` only, never by name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from fixtures.config_store import RunsOnlyReader
from tau_collector.expstore import StoreReader, open_store
from tau_collector.reads import (
    CAPABILITIES,
    CachesDerived,
    ExperimentReader,
    ExportsSeries,
    HasGeneration,
    HasListings,
    PinsRequests,
    ReadsArtifacts,
    ReadsExperimentTable,
    ReadsMedia,
    ReadsNamedSummaries,
    ReadsNotes,
    ReadsRunConfigs,
)
from taunotebook.portal.kusto import KustoConnection, KustoReader, KustoSettings
from taunotebook.portal.sources import AutoReader

PORTAL = Path(__file__).resolve().parents[2] / "taunotebook" / "portal"

# What each reader offers besides ExperimentReader's methods. The store offers everything the Portal can use;
# TauGrid's Kusto tables carry no configs, listings or experiments table, and its reader keeps no derived values;
# source=auto merges configs from whichever source has them; a bare reader offers nothing more. Histograms, images
# and text live with the run's store only (never MetricEvents, so never in Kusto).
TABLE = {
    "store": {PinsRequests, HasGeneration, CachesDerived, ReadsRunConfigs, ReadsNamedSummaries, ReadsExperimentTable,
              HasListings, ExportsSeries, ReadsArtifacts, ReadsNotes, ReadsMedia},
    "kusto": {PinsRequests},
    "auto": {ReadsRunConfigs, ReadsNotes},
    "contract only": set(),
}


@pytest.fixture(scope="module")
def readers(tmp_path_factory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("capabilities") / "store"
    open_store(root, create=True).close()
    store = StoreReader(root)
    kusto = KustoReader(KustoConnection(KustoSettings("http://127.0.0.1:9", "db", auth="none")))
    return {"store": store, "kusto": kusto,
            "auto": AutoReader(store, kusto), "contract only": RunsOnlyReader(store)}


@pytest.mark.parametrize("name", list(TABLE))
def test_each_reader_offers_what_the_table_says(readers, name):
    reader = readers[name]
    assert isinstance(reader, ExperimentReader)
    offered = {capability for capability in CAPABILITIES if isinstance(reader, capability)}
    assert offered == TABLE[name], f"{name}: offers {sorted(c.__name__ for c in offered)}"


def test_the_table_names_every_capability():
    assert set().union(*TABLE.values()) == set(CAPABILITIES)


def _capability_methods() -> set[str]:
    return {name for capability in CAPABILITIES for name in capability.__dict__
            if not name.startswith("_") and callable(capability.__dict__[name])}


def test_the_portal_never_asks_for_a_capability_by_name():
    methods = _capability_methods()
    assert {"run_configs", "has_listings", "derived", "export_series", "pinned"} <= methods
    asked = []
    for path in PORTAL.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("getattr", "hasattr") and len(node.args) >= 2
                    and isinstance(node.args[1], ast.Constant) and node.args[1].value in methods):
                asked.append(f"{path.relative_to(PORTAL)}:{node.lineno} {node.func.id}(..., {node.args[1].value!r})")
    assert asked == []
