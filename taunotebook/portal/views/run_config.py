"""``GET /api/v2/stellar/runs/{run_id}/config`` (our addition): the run's configuration and its hash.

The normalized values and the flattened fields (:mod:`..run_configs`); a source that carries no
configurations, or a run without one, answers empty ones with the reason in ``availability``.
"""

from __future__ import annotations

from starlette.responses import Response

from ..context import Context
from ..errors import json_response, metadata
from ..run_configs import fields_json, read_configs, reads_configs

__all__ = ["read"]


def read(ctx: Context) -> Response:
    source, workspace = ctx.source_and_workspace()
    found = ctx.exact_run(source, workspace)
    config = read_configs(found.reader, [found.run.run_id]).get(found.run.run_id)
    meta = metadata(source, [found.served], False, found.warnings)
    body: dict = {"metadata": meta, "run_id": ctx.run_id}
    if config is None:
        if not reads_configs(found.reader):
            reason = f"the {found.served} source carries no run configurations"
        elif found.run.config_hash:
            reason = f"config_hash {found.run.config_hash} names no stored configuration"
        else:
            reason = "no configuration is stored for this run"
        meta["availability"] = {"state": "unavailable", "reasons": [*found.warnings, reason]}
        if found.run.config_hash:
            body["config_hash"] = found.run.config_hash
        body.update(config={}, fields={})
        return json_response(body)
    body.update(config_hash=config.config_hash, format=config.format, uri=config.uri, config=config.values,
                fields=fields_json(config.fields))
    return json_response(body)
