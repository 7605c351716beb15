"""``GET /api/portal/experiments/{id}/fault-events``: a job's faults in TauGrid's Portal shape.

The golden answers were written from TauGrid's Go definitions (``experimentFaultResponse`` and its coverage,
provenance and time-bounds structs in ``portal/internal/portalapi/experiment_faults.go``,
``faultevents.Event``, ``nodes.Condition``) as ``writeScopedJSON`` encodes them: marshalled, decoded into a
``map[string]any`` (keys sorted on the way out), ``scope`` and ``state`` added, no HTML escaping, ``omitempty``
fields absent, a trailing newline.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from fixtures.portal import TOKEN, build_store, serve
from tau_collector.expstore import open_store, record_run_events
from tau_collector.job.faults import fault_event
from tau_collector.reads import RunEvent, RunRow
from taunotebook.portal.errors import encode_json
from taunotebook.portal.views.workspaces import workspace_directory
from taunotebook.portal.wire.fault_events import fault_response, unavailable_response

GOLDEN = Path(__file__).parent / "golden"
SCOPE = workspace_directory("default", "local")["selected"]
NOW = "2026-12-03T15:00:00.5Z"


def _run(run_id: str, started: str | None, completed: str | None) -> RunRow:
    return RunRow(run_id, "proj", "exp-1", "g1", None, "failed" if completed else "running", None,
                  "2026-12-03T14:00:00Z", started, completed, None, None, None, None, None)


def test_a_signal_and_an_oom_kill_answer_taugrids_bytes():
    runs = [_run("run-a", "2026-12-03T14:00:01Z", "2026-12-03T14:10:00Z"), _run("run-b", None, None)]
    events = [
        fault_event("run-a", "2026-12-03T14:10:00Z", "oom", "entrypoint killed for memory: SIGKILL while the "
                    "cgroup's OOM-kill counter rose by 1 (exit 137)", node="gpu-node-1", signal="SIGKILL",
                    exit_code=137, oom_kills=1),
        fault_event("run-b", "2026-12-03T14:05:00.25Z", "signal", "entrypoint killed by SIGTERM <x> & y (exit 143)",
                    node="gpu-node-0", signal="SIGTERM", exit_code=143),
    ]
    body = encode_json(fault_response("exp-1", NOW, SCOPE, runs, events))
    assert body == (GOLDEN / "fault_events_local.json").read_bytes()


def test_a_source_without_fault_data_answers_coverage_unavailable_in_taugrids_bytes():
    body = encode_json(unavailable_response("exp-1", NOW, {**SCOPE, "source": "kusto"}, ["no faults here"]))
    assert body == (GOLDEN / "fault_events_unavailable.json").read_bytes()


def test_a_retry_event_is_a_job_fault_and_an_unknown_kind_is_refused():
    retry = fault_event("r", "2026-12-03T14:00:00Z", "retry", "retried from step 10", node="n")
    assert retry.type == "fault" and retry.severity == "warning" and retry.payload["kind"] == "retry"
    with pytest.raises(ValueError, match="fault kind 'boom' is not one of"):
        fault_event("r", "2026-12-03T14:00:00Z", "boom", "x")


# -- the route -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fault_store(tmp_path_factory) -> Path:
    root = build_store(tmp_path_factory.mktemp("faults") / "store")
    store = open_store(root, writable=True)
    record_run_events(store, [
        fault_event("run-a", "2026-12-03T14:10:00Z", "signal", "entrypoint killed by SIGKILL (exit 137)",
                    node="node-1", signal="SIGKILL", exit_code=137),
        RunEvent("run-a", "2026-12-03T14:10:00Z", "notification", "x", "info", "not a fault", None),
    ])
    store.close()
    return root


@pytest.fixture(scope="module")
def fapi(fault_store):
    with serve(fault_store) as server, httpx.Client(
            base_url=f"http://127.0.0.1:{server.port}", headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        yield client


def test_the_route_answers_the_experiments_faults(fapi):
    r = fapi.get("/api/portal/experiments/exp-1/fault-events")
    assert r.status_code == 200 and r.headers["content-type"] == "application/json; charset=utf-8"
    body = r.json()
    assert list(body) == sorted(body)  # writeScopedJSON's map: keys sorted
    assert body["experimentId"] == "exp-1" and body["state"] == "exact" and body["scope"] == SCOPE
    assert body["allocatedNodes"] == ["node-1"]
    assert body["coverage"]["allocation"] == "partial"  # run-b recorded no fault: its node is unknown
    (event,) = body["events"]
    assert event["scope"] == "node" and event["checkType"] == "Signal" and event["reason"] == "SIGKILL"
    assert event["message"] == "entrypoint killed by SIGKILL (exit 137)"
    assert event["rawCondition"]["lastTransitionTime"] == "2026-12-03T14:10:00Z"
    assert r.text.endswith("}\n")


@pytest.mark.parametrize(("path", "status", "body"), [
    ("/api/portal/experiments/%20/fault-events", 400, {"error": "invalid experiment ID"}),
    ("/api/portal/experiments/a%252Fb/fault-events", 400, {"error": "invalid experiment ID"}),
    ("/api/portal/experiments/%25zz/fault-events", 400, {"error": "invalid experiment ID"}),
    ("/api/portal/experiments/no-such/fault-events?x=1", 404,
     {"reason": "experiment not found", "scope": SCOPE, "state": "unavailable"}),
    ("/api/portal/experiments/exp-1/fault-events?workspace=other", 404, {"error": "workspace not found"}),
])
def test_bad_ids_unknown_experiments_and_other_workspaces(fapi, path, status, body):
    r = fapi.get(path)
    assert (r.status_code, r.json()) == (status, body)


def test_another_workspaces_experiment_is_not_found_and_other_methods_are_405(fapi):
    # run-other is exp-1 too, but tagged tau_workspace=other: this Portal serves default.
    assert "run-other" not in fapi.get("/api/portal/experiments/exp-1/fault-events").text
    r = fapi.post("/api/portal/experiments/exp-1/fault-events")
    assert r.status_code == 405 and r.text == "method not allowed\n"


def test_the_route_needs_the_token(fault_store):
    with serve(fault_store) as server:
        r = httpx.get(f"http://127.0.0.1:{server.port}/api/portal/experiments/exp-1/fault-events")
    assert r.status_code == 401


def test_a_kusto_portal_answers_coverage_unavailable(fault_store):
    from taunotebook.portal.sources import Sources
    from taunotebook.portal.views.fault_events import answer

    class NoLocal(Sources):
        def __init__(self):
            self.local, self.kusto, self.default_source = None, object(), "kusto"

    body = answer(NoLocal(), "default", SCOPE, "exp-1", NOW)
    doc = httpx.Response(200, content=body.body).json()
    assert body.status_code == 200 and doc["state"] == "unavailable"
    assert doc["coverage"] == {"allocation": "unavailable", "correlation": "unavailable", "evidence": "unavailable",
                               "timeBounds": "unknown", "reasons": [doc["coverage"]["reasons"][0]]}
    assert "kusto" in doc["coverage"]["reasons"][0] and doc["events"] == []


def test_the_golden_decodes_into_the_client_model_with_nothing_left_over():
    import json

    from taunotebook.client import ExperimentFaultEvents
    from taunotebook.client.decode import decode

    answer = decode(ExperimentFaultEvents, json.loads((GOLDEN / "fault_events_local.json").read_text()))
    assert answer.extra == {} and answer.coverage.extra == {} and answer.time_bounds.active is True
    first = answer.events[0]
    assert (first.node, first.check_type, first.raw_condition.reason) == ("gpu-node-0", "Signal", "SIGTERM")
    assert first.extra == {} and first.raw_condition.extra == {}
