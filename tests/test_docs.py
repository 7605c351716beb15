"""Keep docs/ true: the collector flag table matches the real parser, named environment variables
exist in the source tree, and relative links point to existing files."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from tau_collector.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SOURCE_DIRS = ("collector", "taunotebook", "js", "binder")
SOURCE_FILES = ("dev", "pyproject.toml")
SOURCE_SUFFIXES = {".py", ".js", ".mjs", ".toml", ".cfg", ".yml", ".yaml", ".sh", ""}
FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
ENV_NAME = re.compile(r"`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)`")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def collect_parser() -> argparse.ArgumentParser:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["collect"]


def parser_flags() -> set[str]:
    return {opt for action in collect_parser()._actions for opt in action.option_strings}


def table_flags() -> set[str]:
    """Flags named in the first cell of each row of the table in docs/collector-flags.md."""
    flags: set[str] = set()
    rows = 0
    for line in (DOCS / "collector-flags.md").read_text().splitlines():
        if not line.startswith("| `-"):
            continue
        rows += 1
        first_cell = re.split(r"(?<!\\)\|", line)[1]
        flags.update(FLAG.findall(first_cell))
    assert rows >= 20, f"the flag table has only {rows} rows"
    return flags


def test_flag_table_matches_collect_help() -> None:
    documented, real = table_flags(), parser_flags()
    assert documented - real == set(), "documented but not accepted by `tau-collector collect`"
    assert real - documented == set(), "accepted by `tau-collector collect` but missing from the table"


def test_flag_table_defaults_and_variables_match_help() -> None:
    """Each row's variable must be the one the flag's help names, and stated defaults must be real."""
    parser = collect_parser()
    by_flag = {opt: action for action in parser._actions for opt in action.option_strings}
    for line in (DOCS / "collector-flags.md").read_text().splitlines():
        if not line.startswith("| `--"):
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        flag = FLAG.findall(cells[0])[0]
        action = by_flag[flag]
        variables = ENV_NAME.findall(cells[1])
        help_text = action.help or ""
        for var in variables:
            assert f"${var}" in help_text, f"{flag}: {var} is not the variable its --help names"
        help_vars = re.findall(r"\$([A-Z][A-Z0-9_]+)", help_text)
        assert set(help_vars) <= set(variables), f"{flag}: --help names {help_vars}, the table {variables}"
        if isinstance(action.default, str) and action.default:
            assert f"`{action.default}`" in cells[2], f"{flag}: parser default {action.default!r} not in table"


def source_text() -> str:
    parts = []
    for name in SOURCE_FILES:
        parts.append((ROOT / name).read_text(errors="replace"))
    for directory in SOURCE_DIRS:
        for path in (ROOT / directory).rglob("*"):
            if "node_modules" in path.parts or not path.is_file() or path.suffix not in SOURCE_SUFFIXES:
                continue
            parts.append(path.read_text(errors="replace"))
    return "\n".join(parts)


def test_environment_variables_in_configuration_exist_in_source() -> None:
    names = set(ENV_NAME.findall((DOCS / "configuration.md").read_text()))
    assert len(names) >= 20, f"configuration.md names only {sorted(names)}"
    text = source_text()
    missing = sorted(n for n in names if not re.search(rf"(?<![A-Z0-9_]){n}(?![A-Z0-9_])", text))
    assert missing == [], f"named in docs/configuration.md but not found in the source tree: {missing}"


def test_every_tau_metrics_offload_variable_in_source_is_documented() -> None:
    text = source_text()
    in_source = set(re.findall(r"TAU_METRICS_OFFLOAD_[A-Z0-9_]*[A-Z0-9](?![A-Z0-9_*])", text))
    documented = set(ENV_NAME.findall((DOCS / "configuration.md").read_text()))
    assert in_source, "no TAU_METRICS_OFFLOAD_* variable found in the source tree"
    assert in_source - documented == set()


DOC_PAGES = sorted(DOCS.glob("*.md"))


def test_docs_exist() -> None:
    names = {p.name for p in DOC_PAGES}
    for page in ("README.md", "install.md", "commands.md", "data-path.md", "configuration.md",
                 "collector-flags.md", "api.md", "troubleshooting.md", "benchmarks.md"):
        assert page in names


@pytest.mark.parametrize("page", DOC_PAGES, ids=lambda p: p.name)
def test_relative_links_point_to_existing_files(page: Path) -> None:
    text = page.read_text()
    links = [m for m in LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", m) and not m.startswith("#")]
    for link in links:
        target = (page.parent / link.split("#", 1)[0]).resolve()
        assert target.exists(), f"{page.name}: link {link!r} points to a missing file"


def test_index_links_every_page() -> None:
    index = (DOCS / "README.md").read_text()
    linked = set(LINK.findall(index))
    for page in DOC_PAGES:
        if page.name != "README.md":
            assert page.name in linked, f"docs/README.md does not link {page.name}"


def test_no_absolute_paths_of_this_machine() -> None:
    for path in [*DOC_PAGES, *(ROOT / "binder").iterdir()]:
        text = path.read_text()
        assert not re.search(r"(?<![\w.~])/(work|tmp|home|root|opt)/", text), f"{path.name} names a local path"
