"""``/runs/{id}/metrics`` of a wide run: TauGrid's shape, byte for byte Go's encoding, kept current as the run grows."""

from __future__ import annotations

import json

import httpx
import numpy as np

from tau_collector.expstore import open_store
from tau_collector.expstore.writer import MetricWriter, RunColumns
from taunotebook.portal.errors import encode_json

from .conftest import TOKEN, serve

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
