"""``GET /stellar/data/runs/{run_id}/job`` (page data): what the run's job asked for and where it is in its lifecycle.

The run page shows it on the run's card. From the store: the resources of the run's ``submission`` event
(recorded when it was submitted, :func:`taunotebook.lifecycle.record_submission`), and the lifecycle
its state, ``tau.status.message`` tag and ``fault`` / ``retry`` events give
(:func:`taunotebook.lifecycle.from_store`); the faults themselves, newest last. A source without run events
(Kusto) answers the state's lifecycle and no resources, with the reason in ``availability``.
"""

from __future__ import annotations

from starlette.responses import Response

from taunotebook.lifecycle import SUBMISSION_EVENT, from_store

from ..context import Context
from ..errors import json_response, metadata
from ..wire.job import job_json

__all__ = ["read"]


def read(ctx: Context) -> Response:
    source, workspace = ctx.source_and_workspace()
    found = ctx.exact_run(source, workspace)
    events = found.reader.run_events(found.run.run_id)
    submissions = [e for e in events if e.type == SUBMISSION_EVENT]
    meta = metadata(source, [found.served], False, found.warnings)
    if found.served == "kusto":
        meta["availability"] = {"state": "partial", "reasons": [
            *found.warnings, "the kusto source carries no run events: no resources or faults"]}
    submission = (submissions[-1].payload or {}) if submissions else {}
    lifecycle = from_store(found.run.state, found.run.tags, events).to_json()
    return json_response(job_json(meta, found.run.run_id, submission, lifecycle, events))
