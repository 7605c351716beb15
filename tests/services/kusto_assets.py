"""The shipped ``collector/kql/*.kql`` assets read into what the test services need: table, mapping, views, functions.

Each asset file holds one management command. The stand-in cluster builds its DuckDB schema from
them and the Kusto.Language service its database symbols, so both see exactly the shipped text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["KQL_DIR", "Assets", "Function", "View", "load_assets", "strip_comments"]

KQL_DIR = Path(__file__).resolve().parents[2] / "collector" / "kql"

_TABLE = re.compile(r"\.create-merge\s+table\s+(\w+)\s*\((.*)\)\s*$", re.S)
_MAPPING = re.compile(r'ingestion\s+json\s+mapping\s+"(\w+)"\s*```(.*)```', re.S)
_VIEW = re.compile(r"materialized-view\s+(?:with\s*\([^)]*\)\s*)?(\w+)\s+on\s+table\s+(\w+)\s*\{(.*)\}\s*$", re.S)
_FUNCTION = re.compile(r"\.create(?:-or-alter)?\s+function\s+(?:ifnotexists\s+)?(?:with\s*\(.*?\)\s*)?(\w+)(\([^)]*\))\s*(\{.*\})\s*$",
                       re.S)


@dataclass(frozen=True)
class View:
    name: str
    source: str
    query: str


@dataclass(frozen=True)
class Function:
    name: str
    parameters: str
    body: str  # with its braces
    command: str  # the whole `.create-or-alter function ...` text


@dataclass(frozen=True)
class Assets:
    table: str
    columns: tuple[tuple[str, str], ...]  # (name unquoted, KQL type), in order
    mapping_name: str
    mapping: tuple[tuple[str, str], ...]  # (column, JSON path)
    views: tuple[View, ...]
    functions: tuple[Function, ...]
    commands: tuple[tuple[str, str], ...]  # (file name, command text) of every asset, in order

    @property
    def table_schema(self) -> str:
        return "(" + ", ".join(f"['{name}']:{kind}" for name, kind in self.columns) + ")"


def strip_comments(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//")).strip()


def load_assets(directory: Path = KQL_DIR) -> Assets:
    table, columns, mapping_name, mapping = "", (), "", ()
    views: list[View] = []
    functions: list[Function] = []
    commands = []
    for path in sorted(directory.glob("[0-9][0-9]-*.kql")):
        text = strip_comments(path.read_text())
        commands.append((path.name, text))
        if match := _TABLE.search(text):
            table = match.group(1)
            pairs = [part.rsplit(":", 1) for part in match.group(2).split(",")]
            columns = tuple((re.sub(r"^\['(.+)'\]$", r"\1", n.strip()), k.strip()) for n, k in pairs)
        elif match := _MAPPING.search(text):
            mapping_name = match.group(1)
            mapping = tuple((m["column"], m["path"]) for m in json.loads(match.group(2)))
        elif match := _VIEW.search(text):
            views.append(View(match.group(1), match.group(2), match.group(3).strip()))
        elif match := _FUNCTION.search(text):
            functions.append(Function(match.group(1), match.group(2), match.group(3), text))
    if not (table and mapping):
        raise ValueError(f"{directory} holds no table or no JSON mapping asset")
    return Assets(table, columns, mapping_name, mapping, tuple(views), tuple(functions), tuple(commands))
