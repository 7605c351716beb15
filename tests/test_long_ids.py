"""Ids of any length TauGrid allows: collected and imported into the store, read back by every reader.

A run id of 300 and 5000 bytes is longer than a file name may be (255 bytes); the store keeps the
full id in its index and Parquet rows and a bounded name on disk (``expstore/metric_files.py``).
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tau_collector.expstore import StoreReader
from taunotebook.importer import MAX_DERIVED_ID

LONG_IDS = {"300": "seed-" + "a" * 289 + "-00001", "5000": "sweep." + "b" * 4988 + "-00001"}
TAU = [sys.executable, "-m", "tau_collector"]


def _history(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "history.jsonl"
    path.write_text("".join(json.dumps({"_step": s, "_timestamp": 1_760_000_000 + s / 10, "loss": 1 / (s + 1)})
                            + "\n" for s in range(30)))
    return path


def _collect(tmp_path: Path, run: str, store: Path) -> None:
    history = _history(tmp_path / "hist")
    (tmp_path / "completion.json").write_text("")
    result = subprocess.run([*TAU, "collect", "--run", run, "--project", "proj", "--experiment", "exp",
                             "--group", "g" * 400, "--out", str(tmp_path / "out"), "--history", str(history),
                             "--completion-file", str(tmp_path / "completion.json"), "--store", str(store)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["completed"] is True


@pytest.mark.parametrize("size", list(LONG_IDS))
def test_a_long_run_id_is_collected_and_read_back_by_every_reader(tmp_path, size):
    run, store = LONG_IDS[size], tmp_path / "store"
    assert len(run) == int(size)
    _collect(tmp_path, run, store)

    reader = StoreReader(store)
    assert reader.run(run).state == "succeeded" and reader.run(run).run_group_id == "g" * 400
    assert reader.rows(run, "loss").step.tolist() == list(range(30))
    (path,) = [p for (p,) in reader.store.connection().execute("SELECT path FROM metric_files WHERE run_id = ? "
                                                               "AND path LIKE '%metrics-%'", (run,))][:1]
    assert all(len(part) <= 255 for part in path.split("/"))
    assert pq_run_ids(store / path) == {run}  # the Parquet rows keep the full id

    runs = subprocess.run([*TAU, "store", "runs", "--store", str(store)], capture_output=True, text=True, check=True)
    assert json.loads(runs.stdout)["run_id"] == run
    rows = subprocess.run([*TAU, "store", "rows", "--store", str(store), "--run", run, "--metric", "loss"],
                          capture_output=True, text=True, check=True)
    assert len(rows.stdout.splitlines()) == 30

    with _portal(store) as api:
        listed = api.get("/experiments/exp/runs", params={"target": "exp"}).json()
        assert [r["run_id"] for r in listed["runs"]] == [run]
        if len(run) <= MAX_PATH_ID:
            assert api.get(f"/runs/{run}").json()["run"]["run_id"] == run
            metrics = api.get(f"/runs/{run}/metrics").json()["metrics"]
            assert [m["name"] for m in metrics] == ["loss", "tau/run_status"]
            series = api.get(f"/runs/{run}/series", params={"target": run, "metric": "loss"}).json()
            assert series["run_id"] == run and series["source_points"] == 30
        else:
            _refused_as_taugrid_does(api, run)


# TauGrid's Portal refuses a path id over 512 bytes (TAUGRID-REFERENCE §3.1): such a run is listed, and its
# own routes answer TauGrid's INVALID_PATH, as they would there.
MAX_PATH_ID = 512


def _refused_as_taugrid_does(api: httpx.Client, run: str) -> None:
    for path in (f"/runs/{run}", f"/runs/{run}/metrics", f"/runs/{run}/series?target=x&metric=loss"):
        answer = api.get(path)
        assert answer.status_code == 400 and answer.json()["error"]["code"] == "INVALID_PATH"


def pq_run_ids(path: Path) -> set[str]:
    import pyarrow.parquet as pq

    return set(pq.read_table(path, columns=["run_id"]).column("run_id").to_pylist())


@contextlib.contextmanager
def _portal(store: Path) -> Iterator[httpx.Client]:
    """``taunotebook portal`` over ``store`` as a subprocess; an httpx client on its API base."""
    proc = subprocess.Popen([sys.executable, "-m", "taunotebook", "portal", "--store", str(store), "--port", "0",
                             "--token", "long-ids"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        text = "".join(proc.stdout.readline() for _ in range(3))
        api = re.search(r"API base: (http://127\.0\.0\.1:\d+/api/v2/stellar)", text)
        assert api, text
        with httpx.Client(base_url=api.group(1), headers={"Authorization": "Bearer long-ids"}) as client:
            yield client
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.parametrize("depth", [2, 19])
def test_an_import_whose_path_makes_a_long_run_id_is_imported_with_its_siblings(tmp_path, depth):
    logdir = tmp_path / "runs"
    deep = logdir.joinpath(*[f"{i:02d}" + "d" * 198 for i in range(depth)])
    _history(deep)
    _history(logdir / "short")  # a sibling run, imported too
    store = tmp_path / "store"
    result = subprocess.run([sys.executable, "-m", "taunotebook", "import", str(logdir), "--store", str(store),
                             "--no-progress"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    runs = {r.run_id: r for r in StoreReader(store).runs()}
    # import shortens a derived id over MAX_DERIVED_ID to a prefix and a hash of the path (taunotebook.importer)
    (long_id,) = [r for r in runs if r != "short-history"]
    assert "short-history" in runs and re.fullmatch(r"00d{189}-[0-9a-f]{8}", long_id), long_id
    assert len(long_id) == MAX_DERIVED_ID
    assert StoreReader(store).rows(long_id, "loss").step.tolist() == list(range(30))
    with _portal(store) as api:
        listed = api.get("/experiments/imported/runs", params={"target": "imported"}).json()
        assert long_id in [r["run_id"] for r in listed["runs"]]
        series = api.get(f"/runs/{long_id}/series", params={"target": long_id, "metric": "loss"})
        assert series.json()["source_points"] == 30
