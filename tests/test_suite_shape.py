"""The suite's shape: tests import fixtures (``tests/fixtures/``), never another test module or a ``conftest``,
import the fixtures package by one name, and no two files of the suite share a name."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TREES = ("tests", "ui-tests", "bench")
SHARED_NAMES = {"__init__.py", "conftest.py"}  # one per directory by design


def python_files(root: Path) -> list[Path]:
    return sorted(p for tree in TREES for p in (root / tree).rglob("*.py") if "__pycache__" not in p.parts)


def imports(path: Path, root: Path) -> list[tuple[int, str, list[str]]]:
    """(line, absolute module, names imported from it) of every import; relative ones resolved against the package."""
    package = list(path.relative_to(root).with_suffix("").parts[:-1])
    found: list[tuple[int, str, list[str]]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.append((node.lineno, module, [alias.name for alias in node.names]))
    return found


def offending_imports(path: Path, root: Path) -> list[str]:
    """What ``path`` imports that it must not: a test module, a conftest, or ``tests.fixtures`` by that name."""
    in_fixtures = path.is_relative_to(root / "tests" / "fixtures")
    problems = []
    for line, module, names in imports(path, root):
        where = f"{path.relative_to(root)}:{line}"
        # ``from package import test_x`` imports the module ``package.test_x``.
        for name in [module, *(f"{module}.{n}" for n in names)]:
            last = name.rsplit(".", 1)[-1]
            if last.startswith("test_") or last == "conftest":
                problems.append(f"{where} imports {name} (a test module or conftest: share it in tests/fixtures/)")
        if not in_fixtures and (module == "tests.fixtures" or module.startswith("tests.fixtures.")):
            problems.append(f"{where} imports {module} (import the package as `fixtures`: one module name)")
    return problems


def duplicate_names(paths: list[Path], root: Path) -> dict[str, list[str]]:
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        if path.name not in SHARED_NAMES:
            by_name[path.name].append(path.relative_to(root).as_posix())
    return {name: where for name, where in by_name.items() if len(where) > 1}


def test_no_file_imports_a_test_module_or_a_conftest():
    problems = [problem for path in python_files(REPO) for problem in offending_imports(path, REPO)]
    assert problems == []


def test_no_two_files_of_the_suite_share_a_name():
    assert duplicate_names(python_files(REPO), REPO) == {}


def test_the_checks_report_each_bad_import_and_a_shared_name(tmp_path):
    (tmp_path / "tests" / "a").mkdir(parents=True)
    (tmp_path / "ui-tests").mkdir()
    (tmp_path / "tests" / "a" / "test_one.py").write_text(
        "from .conftest import x\nfrom . import test_two\nimport test_three\nfrom tests.fixtures.portal import y\n"
        "from fixtures.portal import z\nfrom ..polling import DEADLINE\n", encoding="utf-8")
    (tmp_path / "ui-tests" / "test_one.py").write_text("from fixtures import browser\n", encoding="utf-8")
    problems = offending_imports(tmp_path / "tests" / "a" / "test_one.py", tmp_path)
    assert [p.split(" (")[0] for p in problems] == [
        "tests/a/test_one.py:1 imports tests.a.conftest", "tests/a/test_one.py:2 imports tests.a.test_two",
        "tests/a/test_one.py:3 imports test_three", "tests/a/test_one.py:4 imports tests.fixtures.portal"]
    assert offending_imports(tmp_path / "ui-tests" / "test_one.py", tmp_path) == []
    assert duplicate_names(python_files(tmp_path), tmp_path) == {
        "test_one.py": ["tests/a/test_one.py", "ui-tests/test_one.py"]}
