"""Module boundaries in ``tau_collector``: no module uses another's private names, and the expstore's layers
(format, store, maintain, write, read) import downwards only, without cycles."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parents[2] / "collector"
EXPSTORE = "tau_collector.expstore"

# What each part of the expstore may import of the others. The writer starts maintenance, so write comes after
# maintain. The store migrates the run listings when it opens a store for writing, so write.listing (which
# imports nothing of the store) is a part of its own, below the store; so is write.index_orphans (the one-time sweep
# of orphaned file rows the store runs when a writer first opens an old store; it imports only sqlite3).
LAYERS = {
    "format": set(),
    "write.listing": set(),
    "write.index_orphans": set(),
    "store": {"format", "write.listing", "write.index_orphans"},
    "maintain": {"format", "store"},
    "write": {"format", "store", "maintain", "write.listing", "write.index_orphans"},
    "read": {"format", "store", "write", "write.listing", "write.index_orphans"},
}
STANDALONE = {"write.listing", "write.index_orphans"}


def _modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the packages under ``root``."""
    found = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _type_checking_blocks(tree: ast.AST) -> set[int]:
    """ids of the nodes inside ``if TYPE_CHECKING:`` blocks (imports for annotations only)."""
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                inside.update(id(n) for n in ast.walk(child))
    return inside


def _source(name: str, path: Path, node: ast.ImportFrom) -> str:
    """The module a ``from … import`` in module ``name`` (file ``path``) imports from, relative imports resolved."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    base = package[:len(package) - node.level + 1] if node.level else []
    return ".".join([*base, *([node.module] if node.module else [])])


def private_uses(root: Path) -> list[str]:
    """Every ``from X import _name`` and ``X._name`` (X a module of the package) in a module other than X."""
    modules = _modules(root)
    problems = []
    for name, path in sorted(modules.items()):
        tree = ast.parse(path.read_text(), filename=str(path))
        where = path.relative_to(root).as_posix()
        bound: dict[str, str] = {}  # local name -> the module it names
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                source = _source(name, path, node)
                for alias in node.names:
                    if _is_private(alias.name) and source != name:
                        problems.append(f"{where}:{node.lineno}: from {source} import {alias.name}")
                    if f"{source}.{alias.name}" in modules:
                        bound[alias.asname or alias.name] = f"{source}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    bound[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else \
                        alias.name.split(".")[0]
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and _is_private(node.attr)):
                continue
            chain, value = [], node.value
            while isinstance(value, ast.Attribute):
                chain.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in bound:
                dotted = ".".join([bound[value.id], *reversed(chain)])
                if dotted in modules and dotted != name:
                    problems.append(f"{where}:{node.lineno}: {dotted}.{node.attr}")
    return problems


def _expstore_graph(*, annotations: bool = False) -> dict[str, set[str]]:
    """Expstore module -> the expstore modules it imports; those under ``TYPE_CHECKING`` with ``annotations``."""
    modules = _modules(PACKAGE_ROOT)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        if not name.startswith(EXPSTORE + ".") or path.name == "__init__.py":
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        skipped = set() if annotations else _type_checking_blocks(tree)
        targets = set()
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.ImportFrom):
                source = _source(name, path, node)
                targets.update([source, *(f"{source}.{a.name}" for a in node.names)])
            elif isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
        graph[name] = {m for m in targets if m in modules and m.startswith(EXPSTORE + ".") and m != name
                       and modules[m].name != "__init__.py"}
    return graph


def _part(module: str) -> str:
    """``format``, ``store``, ``maintain``, ``write`` or ``read`` (``write.listing`` and ``write.index_orphans`` for
    those modules)."""
    rest = module.removeprefix(EXPSTORE + ".")
    return rest if rest in STANDALONE else rest.split(".")[0]


def test_no_module_of_tau_collector_uses_another_modules_private_names():
    assert private_uses(PACKAGE_ROOT) == []


def test_the_check_sees_a_private_import_and_a_private_attribute(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def _hidden():\n    return 1\n\n\ndef shown():\n    return _hidden()\n")
    (pkg / "b.py").write_text("from pkg.a import _hidden\n")
    (pkg / "c.py").write_text("from pkg import a\n\nx = a._hidden()\ny = a.shown()\n")
    (pkg / "d.py").write_text("import pkg.a\n\nz = pkg.a._hidden\n")
    assert private_uses(tmp_path) == ["pkg/b.py:1: from pkg.a import _hidden", "pkg/c.py:3: pkg.a._hidden",
                                      "pkg/d.py:3: pkg.a._hidden"]


def test_the_expstore_imports_have_no_cycle():
    graph = _expstore_graph(annotations=True)  # a cycle through annotations is a cycle of ideas all the same
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            pytest.fail("import cycle: " + " -> ".join([*path[path.index(module):], module]))
        if module in done:
            return
        for target in sorted(graph.get(module, ())):
            visit(target, [*path, module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])


def test_every_expstore_module_is_in_a_layer():
    assert {_part(module) for module in _expstore_graph()} == set(LAYERS)


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_each_expstore_layer_imports_only_the_layers_below_it(layer):
    graph = _expstore_graph()
    wrong = sorted(f"{module} imports {target}" for module, targets in graph.items() if _part(module) == layer
                   for target in targets if _part(target) not in {layer, *LAYERS[layer]})
    assert wrong == []


def test_the_reader_and_its_level_reads_share_one_file_slices_object(tmp_path):
    from tau_collector.expstore import StoreReader, open_store
    from tau_collector.expstore.read.file_slices import FileSlices

    reader = StoreReader(open_store(tmp_path / "store", create=True))
    assert isinstance(reader.file_slices, FileSlices) and reader.levels.files is reader.file_slices


@pytest.mark.parametrize("module", sorted(p.name for p in (PACKAGE_ROOT / "tau_collector/expstore/read").glob("*.py")))
def test_the_read_layer_runs_no_sql_of_its_own(module):
    # Its SQL is the index modules' (write/: index_rows, summaries, listing, ...); the index cache only asks
    # SQLite whether another connection committed.
    tree = ast.parse((PACKAGE_ROOT / "tau_collector/expstore/read" / module).read_text())
    statements = [ast.unparse(node) for node in ast.walk(tree) if isinstance(node, ast.Call)
                  and isinstance(node.func, ast.Attribute) and node.func.attr.startswith("execute")]
    assert [s for s in statements if "PRAGMA data_version" not in s] == []
