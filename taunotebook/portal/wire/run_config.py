"""A run's configuration (our ``/runs/{run_id}/config``): its encoder and its OpenAPI fragment."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tau_collector.taugrid.run_config import RunConfig

from ..run_configs import fields_json
from .common import FIELDS, ref

__all__ = ["RUN_CONFIG", "run_config_json"]


def run_config_json(meta: dict, run_id: str, config: RunConfig | None, config_hash: str | None = None) -> dict:
    """The answer for a run with ``config``; without one (``None``): ``config_hash`` when the run names one, and
    empty ``config`` and ``fields`` (the metadata says why)."""
    body: dict = {"metadata": meta, "run_id": run_id}
    if config is None:
        if config_hash:
            body["config_hash"] = config_hash
        body.update(config={}, fields={})
        return body
    values: Mapping[str, Any] = config.values
    body.update(config_hash=config.config_hash, format=config.format, uri=config.uri, config=values,
                fields=fields_json(config.fields))
    return body


RUN_CONFIG = {
    "type": "object", "additionalProperties": False,
    "required": ["metadata", "run_id", "config", "fields"],
    "properties": {
        "metadata": ref("Metadata"), "run_id": {"type": "string"},
        "config_hash": {"type": "string", "description": "SHA-256 hex of the normalized JSON (of several "
                                                         "files: of their sorted hashes)"},
        "format": {"type": "string", "description": "json | yaml | tensorboard-hparams (comma-joined for "
                                                    "several files)"},
        "uri": {"type": "string", "description": "where the configuration was read"},
        "config": {"type": "object", "description": "the normalized configuration; {} without one"},
        "fields": FIELDS,
    },
}
