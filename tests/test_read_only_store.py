"""``taunotebook portal`` serves a store it cannot write; ``taunotebook import`` into one says so and writes nothing.

The store is on a real read-only bind mount (``tests/read_only_mount.py``). The collector's side
(``tau-collector store``, ``collect``, ``StoreReader``) is in ``tests/collector/expstore/test_read_only.py``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from polling import DEADLINE

from tau_collector.expstore import open_store
from tau_collector.expstore.write.writer import MetricWriter
from tau_collector.projection.metric_event import new_metric_event

from .read_only_mount import read_only, require_root, run_read_only, snapshot

BASE_NS = 1_760_000_000_000_000_000


@pytest.fixture
def store(tmp_path) -> Path:
    require_root()
    store = open_store(tmp_path / "store", create=True)
    events = [new_metric_event(project="proj", experiment_id="exp", run_group_id="g", run_id="seed-1",
                               metric_name="train/loss", step=s, wall_time=BASE_NS + s * 1_000_000,
                               value=1.0 / (s + 1), exported_at=BASE_NS, source="history")
              for s in range(100)]
    MetricWriter(store).write_chunk("k", events, [], request_hash="h")
    store.close()
    return tmp_path / "store"


def test_the_portal_serves_a_read_only_store(store):
    before = snapshot(store)
    proc = subprocess.Popen(read_only(store, [sys.executable, "-m", "taunotebook", "portal", "--store", str(store),
                                              "--port", "0", "--token", "t0k3n"]),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        text = "".join(proc.stdout.readline() for _ in range(3))
        api = re.search(r"API base: (http://127\.0\.0\.1:\d+/api/v2/stellar)", text)
        assert api, (text, proc.stderr.read() if proc.poll() is not None else "")
        headers = {"Authorization": "Bearer t0k3n"}
        run = httpx.get(f"{api.group(1)}/runs/seed-1", headers=headers)
        assert run.status_code == 200 and run.json()["run"]["metric_names"] == ["train/loss"]
        series = httpx.get(f"{api.group(1)}/runs/seed-1/series",
                           params={"target": "seed-1", "metric": "train/loss", "max_points": 10}, headers=headers)
        assert series.status_code == 200
        body = series.json()
        assert body["source_points"] == 100 and body["points"][-1] == {"step": 99, "value": 0.01}
        # Notes and tags are refused in words; the reads go on.
        write = {**headers, "X-Tau-Token": "t0k3n"}
        for response in (httpx.post(f"{api.group(1)}/runs/seed-1/notes", json={"text": "x"}, headers=write),
                         httpx.put(f"{api.group(1)}/runs/seed-1/tags/k", json={"value": "v"}, headers=write)):
            assert response.status_code == 409, response.text
            error = response.json()["error"]
            assert error["code"] == "READ_ONLY_STORE" and "read-only" in error["message"]
            assert str(store) not in error["message"]  # the Portal's paths stay off the wire
        assert httpx.get(f"{api.group(1)}/runs/seed-1/notes", headers=headers).json()["notes"] == []
    finally:
        proc.terminate()
        proc.wait(timeout=DEADLINE)
    assert "Traceback" not in proc.stderr.read()
    assert snapshot(store) == before


def test_import_into_a_read_only_store_says_so_in_one_line_and_writes_nothing(store, tmp_path):
    history = tmp_path / "history.jsonl"
    history.write_text('{"_step": 0, "_timestamp": 1760000000.5, "loss": 1.0}\n')
    before = snapshot(store)
    result = run_read_only(store, [sys.executable, "-m", "taunotebook", "import", str(history), "--store",
                                   str(store), "--no-progress"])
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert f"expstore {store} is read-only ({store} is on a read-only filesystem)" in line
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert snapshot(store) == before
