"""OpenAPI fragments several answer shapes share (int64, counts, string lists, config fields)."""

from __future__ import annotations

__all__ = ["FIELDS", "INT64", "NONNEG", "SCALAR", "STRINGS", "ref"]

INT64 = {"type": "integer", "format": "int64"}
NONNEG = {"type": "integer", "minimum": 0}
STRINGS = {"type": "array", "items": {"type": "string"}}
SCALAR = {"nullable": True, "oneOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"}]}
FIELDS = {"type": "object", "description": "flattened config fields: dotted keys, scalars (a list of up to 8 "
                                           "scalars as its JSON text)", "additionalProperties": SCALAR}


def ref(name: str) -> dict:
    """A reference to one of the document's component schemas."""
    return {"$ref": f"#/components/schemas/{name}"}
