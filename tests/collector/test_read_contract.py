"""The read contract (``tau_collector.reads``) and run configurations (``tau_collector.taugrid.run_config``) stand on
their own: they load neither the store nor numpy, both readers keep the contract's methods, and sources,
sinks and Portal routes reach the store only where they use it."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from tau_collector.expstore import StoreReader
from tau_collector.reads import ExperimentReader
from taunotebook.portal.kusto import KustoReader

ROOT = Path(__file__).resolve().parents[2]
COLLECTOR = ROOT / "collector" / "tau_collector"
PORTAL = ROOT / "taunotebook" / "portal"

# The modules outside the store that use the store itself: its sink and writer, the import into it, the
# commands that open it, the Portal's local reader and its series export (both read its files).
STORE_USERS = {
    "collector/tau_collector/sinks/expstore.py",
    "collector/tau_collector/sinks/expstore_columns.py",
    "collector/tau_collector/collect/import_pass.py",
    "collector/tau_collector/collect/delivery.py",  # the rows of a run's source files (only when a sink keeps artifacts)
    "collector/tau_collector/cli/collect.py",
    "collector/tau_collector/cli/store.py",
    "collector/tau_collector/cli/wrap.py",  # records the run's webhook notifications as run events in --store
    "taunotebook/portal/app.py",
    "taunotebook/portal/context.py",  # opens the served store for the Portal's writes (notes, tags)
    "taunotebook/portal/cli.py",
    "taunotebook/portal/jupyter_proxy.py",
    "taunotebook/portal/views/export.py",
    "taunotebook/portal/views/notes.py",  # the Portal's first writes: notes and tags into the store
}


def _imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports (module level or in a function), relative imports resolved."""
    package = ".".join(path.relative_to(ROOT / ("collector" if "tau_collector" in path.parts else "")).parts[:-1])
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[:len(base) - node.level + 1]
                found.add(".".join([*base, *([node.module] if node.module else [])]))
            else:
                found.add(node.module or "")
    return found


def test_the_read_contract_and_run_configs_load_neither_the_store_nor_numpy():
    code = ("import sys, tau_collector.reads, tau_collector.reads.lifecycle, tau_collector.taugrid.run_config; "
            "print(sorted(m for m in sys.modules if m in ('numpy', 'pyarrow', 'yaml') "
            "or m.startswith('tau_collector.expstore')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("module", ["taugrid/config_limits.py", "taugrid/config_yaml.py"])
def test_config_parsing_modules_do_not_import_run_config(module):
    # run_config imports them (YAML lazily); the other way round would be the old configs <-> config_yaml cycle.
    assert "tau_collector.taugrid.run_config" not in _imported_modules(COLLECTOR / module)


@pytest.mark.parametrize("reader", [StoreReader, KustoReader], ids=lambda r: r.__name__)
def test_both_readers_keep_every_method_of_the_contract(reader):
    for name, wanted in inspect.getmembers(ExperimentReader, inspect.isfunction):
        if name.startswith("_"):
            continue
        have = inspect.signature(getattr(reader, name)).parameters
        for param in inspect.signature(wanted).parameters.values():
            assert param.name in have, f"{reader.__name__}.{name} lacks {param.name}"
            assert have[param.name].kind == param.kind, f"{reader.__name__}.{name}: {param.name} is {param.kind}"
        extra = [p for p in have.values() if p.name not in inspect.signature(wanted).parameters]
        assert all(p.default is not p.empty for p in extra), f"{reader.__name__}.{name}: {extra} need values"


def test_sources_sinks_and_the_portal_name_the_store_only_where_they_use_it():
    users = set()
    for path in [*COLLECTOR.rglob("*.py"), *PORTAL.rglob("*.py")]:
        if COLLECTOR / "expstore" in path.parents:
            continue
        if any(m == "tau_collector.expstore" or m.startswith("tau_collector.expstore.")
               for m in _imported_modules(path)):
            users.add(path.relative_to(ROOT).as_posix())
    assert users == STORE_USERS
