"""``/runs/{id}/metrics`` of a wide run: TauGrid's shape, byte for byte Go's encoding, kept current as the run grows."""

from __future__ import annotations

import json

import httpx
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fixtures.portal import TOKEN, serve
from tau_collector.expstore import open_store
from tau_collector.expstore.write.writer import MetricWriter, RunColumns
from tau_collector.reads import MetricSummaryRow
from taunotebook.portal.errors import encode_json
from taunotebook.portal.wire.metric import catalog_json

WIDTH = 3000


def _chunk(first_step: int, steps: int, width: int) -> RunColumns:
    names = [f"moe.{i:05d}/load" for i in range(width)]
    metric = np.repeat(np.arange(width, dtype=np.int32), steps)
    step = np.tile(np.arange(first_step, first_step + steps, dtype=np.int64), width)
    value = metric / 7.0 + step
    value[::97] = np.nan  # some non-finite observations
    return RunColumns(project="p", experiment_id="e", run_group_id="g", run_id="wide", names=names, metric=metric,
                      step=step, wall_time=1_790_000_000_000_000 + step * 1000, value=value,
                      tags=["{}"] * metric.size, tag_sets=[{}], source="history")


def test_a_wide_catalog_is_complete_go_encoded_and_follows_new_chunks(tmp_path):
    store = open_store(tmp_path / "store", create=True)
    writer = MetricWriter(store)
    writer.write_columns("k1", [_chunk(0, 5, WIDTH)], request_hash="h")
    with serve(tmp_path / "store") as server, httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        url = f"http://127.0.0.1:{server.port}/api/v2/stellar/runs/wide/metrics"
        raw = http.get(url).content
        body = json.loads(raw)
        assert encode_json(body) == raw  # compact, key order kept, Go's float text: what the encoder makes
        assert list(body) == ["metadata", "run_id", "metrics"] and body["run_id"] == "wide"
        metrics = body["metrics"]
        assert [m["name"] for m in metrics] == [f"moe.{i:05d}/load" for i in range(WIDTH)]
        m = metrics[1234]
        assert (m["count"], m["min_step"], m["max_step"], m["latest_step"]) == (5, 0, 4, 4)
        assert m["latest_value"] == 1234 / 7.0 + 4
        assert http.get(url).content.split(b',"run_id"', 1)[1] == raw.split(b',"run_id"', 1)[1]  # same answer again
        # The run grows (one more metric, five more steps): the next answer says so.
        writer.write_columns("k2", [_chunk(5, 5, WIDTH + 1)], request_hash="h")
        grown = http.get(url).json()["metrics"]
        assert len(grown) == WIDTH + 1 and grown[-1]["name"] == f"moe.{WIDTH:05d}/load"
        assert (grown[1234]["count"], grown[1234]["max_step"], grown[1234]["latest_value"]) == (10, 9, 1234 / 7.0 + 9)
        assert grown[0]["non_finite_count"] == 2 and grown[0]["finite_count"] == 8


def _reference(summaries) -> bytes:
    """The catalog as a dict per metric through the generic Go encoder (what the route built before)."""
    metrics = []
    for s in sorted(summaries, key=lambda s: s.metric_name):
        item: dict = {"name": s.metric_name, "count": s.count, "finite_count": s.finite_count,
                      "non_finite_count": s.non_finite_count}
        for key in ("min_step", "max_step", "latest_step", "latest_wall_time"):
            if getattr(s, key) is not None:
                item[key] = getattr(s, key)
        if s.finite_count > 0:
            for key in ("latest_value", "min_value", "max_value"):
                item[key] = float(getattr(s, key) or 0.0)
        if s.updated_at:
            item["updated_at"] = s.updated_at
        metrics.append(item)
    return encode_json(metrics)


_FLOATS = st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False),
                    st.sampled_from([0.0, -0.0, 1.0, 1e21, 1e20, 1e-6, 1e-7, 123456789.0, 0.1]))
_INTS = st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1))
_SUMMARY = st.builds(
    MetricSummaryRow, run_id=st.just("r"), metric_name=st.text(max_size=12), project=st.just("p"),
    run_group_id=st.just("g"), count=st.integers(0, 10**12), finite_count=st.integers(0, 3),
    non_finite_count=st.integers(0, 10**6), min_step=_INTS, max_step=_INTS, latest_step=_INTS,
    latest_wall_time=_INTS, latest_value=_FLOATS, min_value=_FLOATS, max_value=_FLOATS,
    updated_at=st.sampled_from(["", "2026-12-02T06:00:00Z", 'odd "<&>" \\u2028\u2028']), latest_file_id=st.none())


@settings(max_examples=200, deadline=None)
@given(summaries=st.lists(_SUMMARY, max_size=6, unique_by=lambda s: s.metric_name))
def test_the_catalog_encoder_writes_what_the_go_encoder_writes(summaries):
    count, raw = catalog_json(summaries)
    assert count == len(summaries)
    assert raw.text.encode() + b"\n" == _reference(summaries)


def test_a_wide_runs_detail_is_encoded_once_and_follows_new_chunks_and_its_state(tmp_path):
    """``GET /runs/{id}`` lists every metric name and classifies the run over every summary: kept encoded while
    the index is unchanged, and current after a new chunk (one more metric) and after the run completes."""
    store = open_store(tmp_path / "store", create=True)
    writer = MetricWriter(store)
    writer.write_columns("k1", [_chunk(0, 5, WIDTH)], request_hash="h")
    with serve(tmp_path / "store") as server, httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        url = f"http://127.0.0.1:{server.port}/api/v2/stellar/runs/wide"
        raw = http.get(url).content
        body = json.loads(raw)
        assert encode_json(body) == raw
        run = body["run"]
        assert run["metric_names"] == [f"moe.{i:05d}/load" for i in range(WIDTH)]
        assert run["state"] == "running" and "completed_at" not in run
        assert http.get(url).content.split(b',"run":', 1)[1] == raw.split(b',"run":', 1)[1]  # same answer again
        writer.write_columns("k2", [_chunk(5, 5, WIDTH + 1)], request_hash="h")
        grown = http.get(url).json()["run"]
        assert len(grown["metric_names"]) == WIDTH + 1 and grown["metric_names"][-1] == f"moe.{WIDTH:05d}/load"
        writer.mark_completed("wide")
        done = http.get(url).json()["run"]
        assert done["state"] == "completed" and done["completed_at"]
        assert done["lifecycle_state"] != run["lifecycle_state"] or done["state"] != run["state"]
        # The experiment's run listing carries the same (cached) run.
        listed = http.get(f"http://127.0.0.1:{server.port}/api/v2/stellar/experiments/e/runs").json()["runs"]
        assert listed == [done]
