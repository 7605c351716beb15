"""``GET /api/v2/stellar/runs/{run_id}/config`` (our addition): the run's configuration and its hash.

The normalized values and the flattened fields (:mod:`..run_configs`, encoded by :mod:`..wire.run_config`); a
source that carries no configurations, or a run without one, answers empty ones with the reason in
``availability``.
"""

from __future__ import annotations

from starlette.responses import Response

from ..context import Context
from ..errors import json_response, metadata
from ..run_configs import read_configs, reads_configs
from ..wire.run_config import run_config_json

__all__ = ["read"]


def read(ctx: Context) -> Response:
    source, workspace = ctx.source_and_workspace()
    found = ctx.exact_run(source, workspace)
    config = read_configs(found.reader, [found.run.run_id]).get(found.run.run_id)
    meta = metadata(source, [found.served], False, found.warnings)
    if config is None:
        if not reads_configs(found.reader):
            reason = f"the {found.served} source carries no run configurations"
        elif found.run.config_hash:
            reason = f"config_hash {found.run.config_hash} names no stored configuration"
        else:
            reason = "no configuration is stored for this run"
        meta["availability"] = {"state": "unavailable", "reasons": [*found.warnings, reason]}
    return json_response(run_config_json(meta, ctx.run_id, config, found.run.config_hash))
