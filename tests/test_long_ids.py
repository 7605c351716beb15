"""One id rule, one length limit: what ``collect``, ``wrap``, ``project``, ``import`` and the store accept, the API serves.

TauGrid's v2 handlers refuse a path id over 512 bytes (``decodeV2PathID``); :data:`tau_collector.taugrid.ids.MAX_ID_BYTES`
is that limit, applied at ingest too, so no run is stored that no API call can reach. A run id of 300 and
512 bytes is longer than a file name may be (255 bytes); the store keeps the full id in its index and
Parquet rows and a bounded name on disk (``expstore/metric_files.py``).
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
from polling import DEADLINE

from tau_collector.expstore import StoreReader, open_store
from tau_collector.expstore.store import StoreError
from tau_collector.expstore.write.writer import MetricWriter
from tau_collector.projection.metric_event import new_metric_event
from tau_collector.taugrid.ids import MAX_ID_BYTES
from taunotebook.importer import MAX_DERIVED_ID
from taunotebook.portal.identity import MAX_PATH_ID

LONG_IDS = {"300": "seed-" + "a" * 289 + "-00001", "512": "sweep." + "b" * 500 + "-00001"}
TOO_LONG = {"513": "r" * 513, "600": "r" * 600, "5000": "sweep." + "b" * 4988 + "-00001"}
TAU = [sys.executable, "-m", "tau_collector"]


def test_one_limit_is_the_apis_path_limit():
    assert MAX_ID_BYTES == MAX_PATH_ID == 512 and MAX_DERIVED_ID <= MAX_ID_BYTES


def _history(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "history.jsonl"
    path.write_text("".join(json.dumps({"_step": s, "_timestamp": 1_760_000_000 + s / 10, "loss": 1 / (s + 1)})
                            + "\n" for s in range(30)))
    return path


def _collect(tmp_path: Path, run: str, store: Path, experiment: str = "exp") -> subprocess.CompletedProcess:
    history = _history(tmp_path / "hist")
    (tmp_path / "completion.json").write_text("")
    return subprocess.run([*TAU, "collect", "--run", run, "--project", "proj", "--experiment", experiment,
                           "--group", "g" * 400, "--out", str(tmp_path / "out"), "--history", str(history),
                           "--completion-file", str(tmp_path / "completion.json"), "--store", str(store)],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("size", list(LONG_IDS))
def test_a_long_run_id_is_collected_and_read_back_by_every_reader(tmp_path, size):
    run, store = LONG_IDS[size], tmp_path / "store"
    assert len(run) == int(size)
    result = _collect(tmp_path, run, store)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["completed"] is True

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
        assert api.get(f"/runs/{run}").json()["run"]["run_id"] == run
        metrics = api.get(f"/runs/{run}/metrics").json()["metrics"]
        assert [m["name"] for m in metrics] == ["loss", "tau/run_status"]
        series = api.get(f"/runs/{run}/series", params={"target": run, "metric": "loss"}).json()
        assert series["run_id"] == run and series["source_points"] == 30
        # one byte more is the API's INVALID_PATH, as in TauGrid; such a run cannot be stored (below)
        if len(run) == MAX_ID_BYTES:
            for path in (f"/runs/{run}x", f"/runs/{run}x/metrics", f"/runs/{run}x/series?target=x&metric=loss",
                         f"/experiments/{run}x/runs"):
                answer = api.get(path)
                assert answer.status_code == 400 and answer.json()["error"]["code"] == "INVALID_PATH", path


@pytest.mark.parametrize("size", list(TOO_LONG))
@pytest.mark.parametrize("flag", ["run", "experiment"])
def test_collect_refuses_an_id_the_api_could_not_serve_naming_the_flag(tmp_path, size, flag):
    value, store = TOO_LONG[size], tmp_path / "store"
    result = _collect(tmp_path, value if flag == "run" else "r1", store, experiment=value if flag == "experiment"
                      else "exp")
    assert result.returncode == 2, result.stderr
    kind = {"run": "run_id", "experiment": "experiment_id"}[flag]
    assert (f'--{flag}: {kind} "{value[:40]}..." is invalid ({size} bytes; at most 512, the longest id '
            "TauGrid's v2 API serves in a path)") in result.stderr
    assert not store.exists() and not (tmp_path / "out").exists()


def test_project_and_wrap_refuse_one_byte_over_the_limit(tmp_path):
    history = _history(tmp_path / "hist")
    identity = ["--project", "proj", "--experiment", "exp", "--group", "g"]
    project = subprocess.run([*TAU, "project", str(history), "--run", "r" * 513, *identity],
                             capture_output=True, text=True, timeout=120)
    assert project.returncode == 2 and "--run: run_id" in project.stderr and "(513 bytes; at most 512" in project.stderr
    assert project.stdout == ""
    wrap = subprocess.run([*TAU, "wrap", "--run-dir", str(tmp_path / "rd"), "--run", "r" * 513, *identity, "--",
                           sys.executable, "-c", f"open({str(tmp_path / 'started')!r}, 'w')"],
                          capture_output=True, text=True, timeout=120)
    assert wrap.returncode == 2 and "--run: run_id" in wrap.stderr and "(513 bytes; at most 512" in wrap.stderr
    assert not (tmp_path / "started").exists()
    ok = subprocess.run([*TAU, "project", str(history), "--run", "r" * 512, *identity],
                        capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert {json.loads(line)["run_id"] for line in ok.stdout.splitlines()} == {"r" * 512}


def test_import_refuses_an_option_one_byte_over_the_limit(tmp_path):
    history = _history(tmp_path / "hist")
    for flag in ("--project", "--experiment", "--group"):
        result = subprocess.run([sys.executable, "-m", "taunotebook", "import", str(history), flag, "p" * 513,
                                 "--store", str(tmp_path / "store"), "--no-progress"],
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 2 and f"{flag} " in result.stderr and "(513 bytes; at most 512" in result.stderr
        assert not (tmp_path / "store").exists()


def test_submit_refuses_a_name_whose_run_id_would_be_over_the_limit(tmp_path, monkeypatch):
    from taunotebook.submission import new_run_id, submit

    monkeypatch.setenv("TAU_HOME", str(tmp_path / "home"))
    assert len(new_run_id("n" * 505, "default", tmp_path / "home")) == MAX_ID_BYTES  # the longest name fits
    with pytest.raises(ValueError, match=r"name is 506 bytes long: the run id it makes \(<name>-<6 hex>\) must be "
                                         r"at most 512 bytes, so a name at most 505"):
        submit(code="print(1)", name="n" * 506)
    assert not (tmp_path / "home" / "projects").exists()


def _event(run: str, experiment: str = "exp"):
    return new_metric_event(project="proj", experiment_id=experiment, run_group_id="g", run_id=run,
                            metric_name="loss", step=1, wall_time=1_760_000_000_000_000_000, value=0.5,
                            exported_at=1_760_000_000_000_000_000, source="history", tags={})


@pytest.mark.parametrize(("run", "experiment", "problem"), [
    ("r" * 513, "exp", "run_id \"rrrr"),
    ("r1", "e" * 513, "experiment_id \"eeee"),
    ("a/b", "exp", 'run_id "a/b" cannot be named in an API path'),
    ("..", "exp", 'run_id ".." cannot be named in an API path'),
    (" r1", "exp", 'run_id " r1" cannot be named in an API path'),
])
def test_the_store_refuses_a_run_no_api_call_could_reach(tmp_path, run, experiment, problem):
    # MetricEvents need not follow the ID rule (TauGrid's validation does not apply it), so the store checks
    # what the API can name: a refused chunk stores nothing, a servable one beside it is stored.
    store = open_store(tmp_path / "store", create=True)
    writer = MetricWriter(store)
    with pytest.raises(StoreError) as raised:
        writer.write_chunk("bad", [_event(run, experiment)], [], request_hash="h1")
    assert problem in str(raised.value)
    assert not writer.recorded("bad") and StoreReader(tmp_path / "store").runs() == []
    writer.write_chunk("good", [_event("r" * 512), _event("Run A")], [], request_hash="h2")  # the limit itself; an id off the rule
    assert {r.run_id for r in StoreReader(tmp_path / "store").runs()} == {"r" * 512, "Run A"}
    writer.close()


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
        proc.wait(timeout=DEADLINE)


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
