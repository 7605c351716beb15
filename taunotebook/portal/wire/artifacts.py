"""A run's artifacts (our ``/runs/{run_id}/artifacts``): the listing's encoder and its OpenAPI fragments."""

from __future__ import annotations

from tau_collector.reads import ArtifactRow

from .common import INT64, ref

__all__ = ["ARTIFACT", "ARTIFACT_LIST", "artifact_json", "artifact_list_json"]


def artifact_json(row: ArtifactRow, file: str) -> dict:
    """One row of TauGrid's ``artifacts`` table as the listing shows it; ``file`` says where its bytes are."""
    out: dict = {"artifact_id": row.artifact_id, "type": row.type, "name": row.name, "uri": row.uri, "file": file}
    for key in ("step", "content_type", "digest", "size_bytes", "caption", "created_at", "rank"):
        value = getattr(row, key)
        if value is not None:
            out[key] = value
    if row.tags:
        out["tags"] = row.tags
    return out


def artifact_list_json(meta: dict, run_id: str, items: list[dict], next_after: str | None) -> dict:
    body: dict = {"metadata": meta, "run_id": run_id, "artifacts": items}
    if next_after:
        body["next_after"] = next_after
    return body


ARTIFACT = {
    "type": "object",
    "required": ["artifact_id", "type", "name", "uri", "file"],
    "properties": {
        "artifact_id": {"type": "string"},
        "type": {"type": "string", "description": "TauGrid's words: metrics-jsonl, tensorboard, image, checkpoint, …"},
        "name": {"type": "string"}, "uri": {"type": "string", "description": "store-relative, a path, or a URI"},
        "file": {"type": "string", "enum": ["present", "gone", "remote"],
                 "description": "present: downloadable; gone: the file was deleted after it was registered; "
                                "remote: a URI this machine does not serve"},
        "step": INT64, "content_type": {"type": "string"},
        "digest": {"type": "string", "description": "sha256:<hex>, once the file is complete"},
        "size_bytes": INT64, "caption": {"type": "string"}, "created_at": {"type": "string"},
        "rank": {"type": "integer"}, "tags": {"type": "object"},
    },
}

ARTIFACT_LIST = {
    "type": "object", "additionalProperties": False,
    "required": ["metadata", "run_id", "artifacts"],
    "properties": {
        "metadata": ref("Metadata"), "run_id": {"type": "string"},
        "artifacts": {"type": "array", "items": ref("Artifact")},
        "next_after": {"type": "string", "description": "pass as after= for the next page; absent on the last"},
    },
}
