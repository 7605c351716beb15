"""``GET /api/v2/stellar/runs/{run_id}``: one run, TauGrid's ``v2Run`` with its lifecycle (TAUGRID-REFERENCE §3).

The run shape is encoded here (:func:`run_json`, :func:`run_encoded`) for every answer that carries runs
(the experiment's runs listing too).
"""

from __future__ import annotations

from starlette.responses import Response

from tau_collector.reads import CachesDerived, ExperimentReader, RunRow
from tau_collector.reads.lifecycle import classify
from tau_collector.taugrid.gojson import marshal

from ..context import Context
from ..errors import RawJSON, json_response, metadata_json

__all__ = ["classify_run", "read", "run_encoded", "run_json"]


def classify_run(run: RunRow, summaries: list) -> tuple[str, bool, list[str]]:
    """(lifecycle_state, successful, success_reasons) by TauGrid's ``ClassifyRun`` (``reads.lifecycle``)."""
    return classify(run.state, run.completed_at, run.tags, summaries)


def run_json(reader: ExperimentReader, run: RunRow, served: str) -> dict:
    """TauGrid's ``v2Run`` (keys in its order, empty ones omitted as Go's omitempty does)."""
    summaries = reader.metric_summaries(run.run_id)
    lifecycle, successful, reasons = classify_run(run, summaries)
    out: dict = {"run_id": run.run_id}
    if run.experiment_id:
        out["experiment_id"] = run.experiment_id
    out.update(project=run.project, run_group_id=run.run_group_id)
    if run.parent_run_id:
        out["parent_run_id"] = run.parent_run_id
    out.update(state=run.state, lifecycle_state=lifecycle, successful=successful)
    if reasons:
        out["success_reasons"] = reasons
    if run.owner:
        out["owner"] = run.owner
    out["created_at"] = run.created_at
    for key in ("started_at", "completed_at", "config_hash", "code_sha", "image_digest", "result_uri"):
        value = getattr(run, key)
        if value:
            out[key] = value
    out.update(tags=dict(sorted(run.tags.items())), metric_names=sorted(run.metric_names), source=served)
    return out


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
