"""Nested row values to flat metric names (``a/b`` or ``a.b``), to a depth limit, without recursion.

W&B logs a nested dict as ``val.acc``; Tune's own TensorBoard logger names nested results
``info/grad_norm``. A value nested deeper than the limit is dropped and counted (``nested_too_deep``)
like any other value that is not a scalar, so a hostile row (a thousand levels) costs a bounded
walk and never a ``RecursionError``. W&B media and table references (dicts with ``_type``) are
not numbers and are skipped.
"""

from __future__ import annotations

from collections.abc import Collection

from tau_collector.sources.records import HistoryRow

__all__ = ["NESTED_TOO_DEEP", "flatten_rows"]

NESTED_TOO_DEEP = "nested_too_deep"


def flatten_rows(rows: list[HistoryRow], *, separator: str, max_depth: int,
                 skip: Collection[str] = ()) -> tuple[list[HistoryRow], int]:
    """``rows`` with nested dicts flattened (top-level keys in ``skip`` left out) and how many values
    were dropped for nesting deeper than ``max_depth`` (a top-level value has depth 1)."""
    out = []
    too_deep = 0
    for row in rows:
        fields = row.fields
        if not any(type(value) is dict for value in fields.values()) and not any(key in fields for key in skip):
            out.append(row)
            continue
        flat: dict[str, object] = {}
        for key, value in fields.items():
            if key in skip:
                continue
            if isinstance(value, dict):
                too_deep += _flatten_into(key, value, flat, separator, max_depth)
            else:
                flat[key] = value
        out.append(HistoryRow(flat, row.line, row.offset))
    return out, too_deep


def _flatten_into(prefix: str, value: dict, into: dict[str, object], separator: str, max_depth: int) -> int:
    """Flatten one nested value (depth 2 below the top level) into ``into``; the number dropped."""
    dropped = 0
    stack: list[tuple[str, dict, int]] = [(prefix, value, 2)]
    while stack:
        name, mapping, depth = stack.pop()
        if "_type" in mapping:
            continue  # a W&B media/table reference, not a number
        if depth > max_depth:
            dropped += 1
            continue
        # Reversed onto the stack, so that names come out in the order of the keys.
        nested = []
        for key, inner in mapping.items():
            full = f"{name}{separator}{key}"
            if isinstance(inner, dict):
                nested.append((full, inner, depth + 1))
            else:
                into[full] = inner
        stack.extend(reversed(nested))
    return dropped
