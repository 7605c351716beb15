"""The v2 reads answer in TauGrid's shapes, field by field, with expectations written from TAUGRID-REFERENCE §3."""

from __future__ import annotations

import json

import httpx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fixtures.portal import BASE_NS, LOSS_POINTS, NOTE, TOKEN, loss_value, serve
from taunotebook.portal.errors import go_float

from .expected import (
    METADATA_KEYS,
    METRIC_KEYS,
    RFC3339_SECONDS,
    RUN_KEYS,
    SERIES_KEYS,
    expected_metadata,
    in_order,
)

V2 = "/api/v2/stellar"


def _meta(body: dict) -> str:
    generated = body["metadata"]["generated_at"]
    assert RFC3339_SECONDS.match(generated), generated
    return generated


def test_run_detail_matches_taugrids_run_shape(api):
    r = api.get(f"{V2}/runs/run-a")
    assert r.status_code == 200
    body = r.json()
    run = body["run"]
    assert RFC3339_SECONDS.match(run["created_at"])
    assert body == {
        "metadata": expected_metadata(_meta(body)),
        "run": {
            "run_id": "run-a", "experiment_id": "exp-1", "project": "proj", "run_group_id": "g1",
            "state": "succeeded", "lifecycle_state": "succeeded", "successful": True,
            "success_reasons": ["run state succeeded and success gates passed"],
            "created_at": run["created_at"],
            "started_at": "2025-10-09T08:53:20Z",  # the first point's wall time
            "completed_at": "2025-10-09T08:53:40Z",  # the tau/run_status point's wall time
            "tags": {"tau_workspace": "default"},
            "metric_names": ["eval/acc", "tau/run_status", "train/loss"],
            "source": "local",
        },
    }
    assert list(body) == ["metadata", "run"]
    assert in_order(list(run), RUN_KEYS)
    assert in_order(list(body["metadata"]), METADATA_KEYS)


def test_a_running_run_with_non_finite_points_omits_empty_optionals(api):
    body = api.get(f"{V2}/runs/run-b").json()
    run = body["run"]
    assert run == {
        "run_id": "run-b", "experiment_id": "exp-1", "project": "proj", "run_group_id": "g1",
        "state": "running", "lifecycle_state": "running", "successful": False, "success_reasons": ["run is running"],
        "created_at": run["created_at"], "started_at": "2025-10-09T08:53:20Z",
        "tags": {"note": NOTE}, "metric_names": ["train/loss"], "source": "local",
    }
    # Go's omitempty: no parent_run_id, owner, completed_at, config_hash, ... keys at all.
    assert "completed_at" not in run and "owner" not in run and "parent_run_id" not in run


def test_bodies_are_compact_unescaped_json_with_a_trailing_newline(api):
    r = api.get(f"{V2}/runs/run-b")
    raw = r.content
    assert raw.endswith(b"}\n") and raw.count(b"\n") == 1
    assert b'"note":"<b>&\'quoted\'</b>"' in raw  # not \u003c...: SetEscapeHTML(false)
    assert b": " not in raw.replace(NOTE.encode(), b"") and b", " not in raw
    assert r.headers["content-type"] == "application/json"
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["x-frame-options"] == "DENY"


def test_metric_catalog_is_name_sorted_with_values_only_for_finite_observations(api):
    body = api.get(f"{V2}/runs/run-a/metrics").json()
    metrics = {m["name"]: m for m in body["metrics"]}
    assert [m["name"] for m in body["metrics"]] == ["eval/acc", "tau/run_status", "train/loss"]
    acc = metrics["eval/acc"]
    assert RFC3339_SECONDS.match(acc["updated_at"]) or acc["updated_at"]
    assert acc == {
        "name": "eval/acc", "count": 50, "finite_count": 50, "non_finite_count": 0,
        "min_step": 0, "max_step": 490, "latest_step": 490,
        "latest_wall_time": (BASE_NS + 490 * 1_000_000) // 1000,  # µs
        "latest_value": 49 / 50, "min_value": 0.0, "max_value": 49 / 50, "updated_at": acc["updated_at"],
    }
    loss = metrics["train/loss"]
    values = [loss_value(s) for s in range(LOSS_POINTS)]
    assert (loss["count"], loss["finite_count"], loss["non_finite_count"]) == (LOSS_POINTS, LOSS_POINTS, 0)
    assert (loss["min_step"], loss["max_step"], loss["latest_step"]) == (0, LOSS_POINTS - 1, LOSS_POINTS - 1)
    assert loss["latest_value"] == values[-1]
    assert (loss["min_value"], loss["max_value"]) == (min(values), max(values))
    for m in body["metrics"]:
        assert in_order(list(m), METRIC_KEYS)
    assert body["run_id"] == "run-a" and list(body) == ["metadata", "run_id", "metrics"]
    assert body["metadata"] == expected_metadata(_meta(body))


def test_metric_catalog_counts_non_finite_observations(api):
    (loss,) = api.get(f"{V2}/runs/run-b/metrics").json()["metrics"]
    # 8 finite rows + the rewritten step 5 = 9 finite; NaN and +Inf = 2 non-finite; count is every row.
    assert (loss["count"], loss["finite_count"], loss["non_finite_count"]) == (11, 9, 2)
    assert (loss["min_value"], loss["max_value"]) == (0.0, 0.9)


def test_series_shape_and_last_write_wins(api):
    r = api.get(f"{V2}/runs/run-b/series", params={"target": "run-b", "metric": "train/loss"})
    body = r.json()
    points = [(0, 0.0), (1, 0.1), (2, 0.2), (4, 0.4), (5, 0.55), (6, 0.6), (8, 0.8), (9, 0.9)]
    assert body == {
        "metadata": expected_metadata(_meta(body)),
        "target": "run-b", "run_id": "run-b", "metric": "train/loss",
        "max_points": 8000,  # TauGrid's default
        # Non-finite observations have no JSON form: left out of points and of source_points.
        "source_points": len(points), "returned_points": len(points),
        "points": [{"step": s, "value": v} for s, v in points],
    }
    assert list(body) == [k for k in SERIES_KEYS if k in body]
    assert b'{"step":0,"value":0}' in r.content  # Go writes float64(0) as 0


def test_series_range_and_interval_are_echoed_and_thinning_is_partial(api):
    params = {"target": "run-a", "metric": "train/loss", "start_step": 100, "end_step": 199, "step_interval": 10}
    body = api.get(f"{V2}/runs/run-a/series", params=params).json()
    steps = [*range(100, 200, 10), 199]  # first, (step - first) % 10 == 0, and the last
    assert body["points"] == [{"step": s, "value": loss_value(s)} for s in steps]
    assert (body["start_step"], body["end_step"], body["step_interval"]) == (100, 199, 10)
    assert (body["source_points"], body["returned_points"]) == (100, len(steps))
    assert body["metadata"] == expected_metadata(_meta(body), partial=True)
    assert list(body) == [k for k in SERIES_KEYS if k in body]


def test_series_reduction_keeps_first_last_and_every_spike(api):
    body = api.get(f"{V2}/runs/run-a/series", params={"target": "run-a", "metric": "train/loss"}).json()
    steps = [p["step"] for p in body["points"]]
    assert body["source_points"] == LOSS_POINTS and body["returned_points"] == len(steps) <= 8000
    assert body["metadata"]["partial"] is True and body["metadata"]["availability"] == {"state": "degraded"}
    assert steps == sorted(set(steps)) and steps[0] == 0 and steps[-1] == LOSS_POINTS - 1
    spikes = [s for s in range(LOSS_POINTS) if s % 997 == 500]
    assert set(spikes) <= set(steps)
    assert all(p["value"] == loss_value(p["step"]) for p in body["points"])


def test_max_points_one_returns_the_last_point(api):
    body = api.get(f"{V2}/runs/run-a/series",
                   params={"target": "run-a", "metric": "train/loss", "max_points": 1}).json()
    assert body["points"] == [{"step": LOSS_POINTS - 1, "value": loss_value(LOSS_POINTS - 1)}]
    assert body["max_points"] == 1 and body["metadata"]["partial"] is True


def test_an_experiment_target_warns_that_runs_were_truncated(api):
    body = api.get(f"{V2}/runs/run-b/series", params={"target": "exp-1", "metric": "train/loss"}).json()
    # run-a and run-b match exp-1 in this workspace (run-other is another workspace's).
    warning = "runs truncated to 1 of 2 matching runs"
    assert body["metadata"] == expected_metadata(_meta(body), warnings=[warning])
    assert body["target"] == "exp-1" and body["run_id"] == "run-b"


def test_a_group_target_is_accepted_and_warns_like_an_experiment(api):
    r = api.get(f"{V2}/runs/run-b/series", params={"target": "g1", "metric": "train/loss"})
    assert r.status_code == 200 and r.json()["returned_points"] == 8
    assert r.json()["metadata"]["warnings"] == ["runs truncated to 1 of 2 matching runs"]


def test_a_project_filter_does_not_narrow_the_truncation_count(api):
    # TauGrid's loadRuns ignores project: N counts the target's runs in the workspace.
    body = api.get(f"{V2}/runs/run-b/series",
                   params={"target": "exp-1", "metric": "train/loss", "project": "proj"}).json()
    assert body["metadata"]["warnings"] == ["runs truncated to 1 of 2 matching runs"]


def test_a_run_target_and_a_single_run_experiment_do_not_warn(api):
    for target, run in (("run-b", "run-b"), ("page-00", "page-00")):
        body = api.get(f"{V2}/runs/{run}/series", params={"target": target, "metric": "train/loss"}).json()
        assert "warnings" not in body["metadata"] and body["metadata"]["availability"] == {"state": "available"}
    # exp-page holds 7 runs: every one of its series says so, as TauGrid's local path does.
    body = api.get(f"{V2}/runs/page-03/series", params={"target": "exp-page", "metric": "train/loss"}).json()
    assert body["metadata"]["warnings"] == ["runs truncated to 1 of 7 matching runs"]
    assert body["returned_points"] == 1


def test_an_unknown_metric_is_an_empty_series_said_in_taugrids_words(api):
    body = api.get(f"{V2}/runs/run-b/series", params={"target": "run-b", "metric": "nope"}).json()
    assert (body["source_points"], body["returned_points"], body["points"]) == (0, 0, [])
    assert body["metadata"]["partial"] is False
    assert body["metadata"]["warnings"] == ["no scalar metric points matched the series query"]
    assert body["metadata"]["availability"]["state"] == "degraded"


def test_a_range_of_only_non_finite_points_is_not_said_to_match_nothing(api):
    # run-b's step 3 is NaN: TauGrid reads it as a matched point; we leave it out of points, silently.
    body = api.get(f"{V2}/runs/run-b/series",
                   params={"target": "run-b", "metric": "train/loss", "start_step": 3, "end_step": 3}).json()
    assert body["returned_points"] == 0 and "warnings" not in body["metadata"]


def test_source_is_case_insensitive_and_auto_reads_local(api):
    local = api.get(f"{V2}/runs/run-a", params={"source": " LOCAL "}).json()
    assert local["metadata"]["provenance"] == {"requested_source": "local", "served_sources": ["local"]}
    auto = api.get(f"{V2}/runs/run-a", params={"source": "auto"}).json()
    assert auto["metadata"] == expected_metadata(_meta(auto), requested="auto", served=["local"])


def test_run_listing_shape_newest_first(api):
    body = api.get(f"{V2}/experiments/exp-1/runs").json()
    assert list(body) == ["metadata", "target", "runs"]  # no next_cursor on the last page
    assert body["target"] == "exp-1"
    runs = body["runs"]
    assert {r["run_id"] for r in runs} == {"run-a", "run-b"}
    order = sorted(runs, key=lambda r: "proj\x00" + r["run_id"])
    order.sort(key=lambda r: r["created_at"], reverse=True)  # newest first, then project/run id
    assert [r["run_id"] for r in runs] == [r["run_id"] for r in order]
    detail = api.get(f"{V2}/runs/run-a").json()["run"]
    assert next(r for r in runs if r["run_id"] == "run-a") == detail
    assert body["metadata"] == expected_metadata(_meta(body))


def test_an_empty_listing_names_the_requested_source(api):
    body = api.get(f"{V2}/experiments/exp-none/runs").json()
    assert body["runs"] == [] and body["metadata"]["provenance"]["served_sources"] == ["local"]
    auto = api.get(f"{V2}/experiments/exp-none/runs", params={"source": "auto"}).json()
    # Nothing served under auto: served_sources defaults to [requested], so freshness is unknown.
    assert auto["metadata"] == expected_metadata(_meta(auto), requested="auto", served=["auto"])


@pytest.mark.parametrize(("params", "expected"), [
    ({"q": "RUN-B"}, ["run-b"]),
    ({"tag": "note=" + NOTE}, ["run-b"]),
    ({"state": "SUCCEEDED"}, ["run-a"]),
    ({"lifecycle": "successful"}, ["run-a"]),
    ({"metric_name": "eval/acc"}, ["run-a"]),
    ({"group": "g1", "project": "proj"}, ["run-a", "run-b"]),
    ({"since": "2000-01-01T00:00:00Z"}, ["run-a", "run-b"]),
    ({"since": "1h"}, ["run-a", "run-b"]),
    ({"project": "elsewhere"}, []),
])
def test_run_listing_filters(api, params, expected):
    body = api.get(f"{V2}/experiments/exp-1/runs", params=params).json()
    assert sorted(r["run_id"] for r in body["runs"]) == expected


@pytest.mark.parametrize(("value", "go"), [
    (0.0, "0"), (123.0, "123"), (0.1, "0.1"), (1e-7, "1e-7"), (1.5e-6, "0.0000015"), (1e20, "100000000000000000000"),
    (1e21, "1e+21"), (-2.5e-10, "-2.5e-10"), (5e-324, "5e-324"), (1.7976931348623157e308, "1.7976931348623157e+308"),
])
def test_floats_are_written_as_go_encoding_json_writes_them(value, go):
    assert go_float(value) == go
    assert json.loads(go) == value


def test_bulk_encoded_points_use_go_number_forms():
    from taunotebook.portal.wire.series import points_json

    values = [1e-7, 0.5, 1.0, 1e21, 1e16, 1.5e-6, -0.0, 2.0, 0.1 + 0.2]
    text = points_json(np.arange(len(values)), np.array(values)).text
    expected = ",".join(f'{{"step":{i},"value":{go_float(v)}}}' for i, v in enumerate(values))
    assert text == f"[{expected}]"
    assert '"value":1e-7' in text and '"value":10000000000000000' in text and '"value":1}' in text



@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(-(2**63), 2**63 - 1),
                          st.one_of(st.floats(allow_nan=False, allow_infinity=False),
                                    st.integers(-(2**53), 2**53).map(float))), max_size=50))
def test_bulk_encoded_points_equal_go_encoding_of_each_point(points):
    from taunotebook.portal.wire.series import points_json

    steps = np.array([s for s, _ in points], dtype=np.int64)
    values = np.array([v for _, v in points], dtype=np.float64)
    expected = ",".join(f'{{"step":{s},"value":{go_float(v)}}}' for s, v in points)
    assert points_json(steps, values).text == f"[{expected}]"

def test_collector_problems_are_warnings_on_every_read_of_the_run(tmp_path):
    from tau_collector.expstore import open_store
    from tau_collector.expstore.write.run_events import record_run_events
    from tau_collector.expstore.write.writer import MetricWriter
    from tau_collector.projection.metric_event import new_metric_event
    from tau_collector.reads import SOURCE_PROBLEM, RunEvent

    store = open_store(tmp_path / "store", create=True)
    MetricWriter(store).write_chunk("k", [new_metric_event(
        project="p", experiment_id="e", run_group_id="g", run_id="r1", metric_name="loss", step=0,
        wall_time=1_790_000_000 * 10**9, value=1.0, exported_at=1_790_000_000 * 10**9)], [], request_hash="k")
    record_run_events(store, [RunEvent("r1", "2026-11-30T10:00:00Z", SOURCE_PROBLEM, "tau-collector", "error",
                                       f"h.jsonl:{line}: invalid JSON") for line in range(1, 9)])
    with serve(tmp_path / "store") as server, httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        base = f"http://127.0.0.1:{server.port}/api/v2/stellar/runs/r1"
        for url in (base, base + "/metrics", base + "/series?target=r1&metric=loss"):
            meta = http.get(url).json()["metadata"]
            assert meta["availability"]["state"] == "degraded"
            assert meta["warnings"][:2] == ["collector: h.jsonl:1: invalid JSON", "collector: h.jsonl:2: invalid JSON"]
            assert meta["warnings"][-1] == "collector: 3 more source problems" and len(meta["warnings"]) == 6
