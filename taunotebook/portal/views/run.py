"""``GET /api/v2/stellar/runs/{run_id}``: one run, TauGrid's ``v2Run`` with its lifecycle (TAUGRID-REFERENCE §3).

The run shape is encoded by :mod:`..wire.run`; :func:`run_encoded` keeps it encoded per index change for every
answer that carries runs (the experiment's runs listing too).
"""

from __future__ import annotations

from starlette.responses import Response

from tau_collector.reads import CachesDerived, ExperimentReader, RunRow
from tau_collector.reads.lifecycle import classify
from tau_collector.taugrid.gojson import marshal
from tau_collector.taugrid.run_config import RunConfig

from ..context import Context
from ..errors import RawJSON, json_response, metadata_json
from ..run_configs import fields_json
from ..wire.run import run_json as wire_run_json

__all__ = ["classify_run", "read", "run_encoded", "run_json"]


def classify_run(run: RunRow, summaries: list) -> tuple[str, bool, list[str]]:
    """(lifecycle_state, successful, success_reasons) by TauGrid's ``ClassifyRun`` (``reads.lifecycle``)."""
    return classify(run.state, run.completed_at, run.tags, summaries)


def run_json(reader: ExperimentReader, run: RunRow, served: str, config: RunConfig | None = None,
             with_config: bool = False) -> dict:
    """TauGrid's ``v2Run`` of a run (:func:`..wire.run.run_json`), classified over its metric summaries;
    ``with_config`` adds its flattened config fields (null without a config)."""
    fields = fields_json(config.fields) if config is not None else None
    return wire_run_json(run, reader.metric_summaries(run.run_id), served, fields, with_config)


def run_encoded(reader: ExperimentReader, run: RunRow, served: str) -> RawJSON:
    """:func:`run_json`, encoded once per change of the index: a run of 10,000 metrics lists 10,000 names
    and classifies its run over 10,000 summaries (~30 ms), which a page asks on every visit."""
    build = lambda: RawJSON(marshal(run_json(reader, run, served), escape_html=False).decode())  # noqa: E731
    return reader.derived(("v2 run", run.run_id, served), build) if isinstance(reader, CachesDerived) else build()


def read(ctx: Context) -> Response:
    source, workspace = ctx.source_and_workspace()
    found = ctx.exact_run(source, workspace)
    return json_response({"metadata": metadata_json(source, [found.served], False, found.warnings),
                          "run": run_encoded(found.reader, found.run, found.served)})
