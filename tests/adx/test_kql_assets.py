"""The shipped KQL assets describe exactly the MetricEvent the collector writes (no drift)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tau_collector.projection.metric_event import FIELD_ORDER
from tau_collector.sinks.adx.queued import DEFAULT_MAPPING, DEFAULT_TABLE

KQL = Path(__file__).resolve().parents[2] / "collector" / "kql"
TYPES = {"step": "long", "wall_time": "datetime", "exported_at": "datetime", "value": "real", "tags": "dynamic"}


def _unquote(name: str) -> str:
    """``['project']`` → ``project`` (KQL quoting of a keyword used as a column name)."""
    match = re.fullmatch(r"\['(.+)'\]", name.strip())
    return match.group(1) if match else name.strip()


def _code(path: Path) -> str:
    return "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith("//"))


def test_there_are_21_metric_event_fields() -> None:
    assert len(FIELD_ORDER) == 21


def test_table_columns_are_the_metric_event_fields_in_order_with_their_types() -> None:
    text = _code(KQL / "01-table.kql")
    match = re.search(r"\.create-merge table (\w+) \((.*)\)", text, re.S)
    assert match is not None, "01-table.kql has no `.create-merge table NAME (...)`"
    assert match.group(1) == DEFAULT_TABLE
    columns = [tuple(part.rsplit(":", 1)) for part in match.group(2).split(",")]
    assert [_unquote(name) for name, _ in columns] == list(FIELD_ORDER)
    assert {_unquote(name): kind.strip() for name, kind in columns} == {
        field: TYPES.get(field, "string") for field in FIELD_ORDER
    }


def test_mapping_reads_each_column_from_the_same_named_key() -> None:
    text = _code(KQL / "02-mapping.kql")
    header = re.search(r'\.create-or-alter table (\w+) ingestion json mapping "(\w+)"', text)
    assert header is not None and header.groups() == (DEFAULT_TABLE, DEFAULT_MAPPING)
    body = re.search(r"```(.*)```", text, re.S)
    assert body is not None, "02-mapping.kql has no ``` fenced mapping body"
    mapping = json.loads(body.group(1))
    assert [m["column"] for m in mapping] == list(FIELD_ORDER)
    assert all(m["path"] == "$." + m["column"] and set(m) == {"column", "path"} for m in mapping)


def test_dedup_view_keeps_every_column_by_event_id() -> None:
    text = _code(KQL / "03-dedup-view.kql")
    assert "materialized-view TauExpMetricEventsV1Dedup on table TauExpMetricEventsV1" in text
    assert "where isnotempty(event_id)" in text
    match = re.search(r"arg_max\((.*?)\)\s*by event_id", text, re.S)
    assert match is not None
    args = [_unquote(a) for a in match.group(1).split(",")]
    assert args[0] == "exported_at"
    assert sorted([*args[1:], "event_id"]) == sorted(set(FIELD_ORDER) - {"exported_at"})


def test_typed_rows_function_projects_every_field_from_the_view() -> None:
    text = _code(KQL / "04-typed-rows.kql")
    assert "TauExpMetricEventRows()" in text and "TauExpMetricEventsV1Dedup" in text
    projected = re.findall(r"^\s*(\['project'\]|\w+) = (to\w+)\(", text, re.M)
    assert sorted(_unquote(name) for name, _ in projected) == sorted(FIELD_ORDER)
    casts = {_unquote(name): cast for name, cast in projected}
    assert (casts["step"], casts["value"], casts["wall_time"], casts["tags"]) == (
        "tolong", "todouble", "todatetime", "todynamic",
    )  # fmt: skip
