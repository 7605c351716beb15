"""The series download (``/stellar/data/export/{run_id}``): every stored point as CSV or JSON, v2's checks and envelope."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import subprocess
import sys

import httpx
import numpy as np
import pytest

from fixtures.portal import BASE_NS, LOSS_POINTS, TOKEN, serve
from tau_collector.expstore import StoreReader
from taunotebook.client import NotFoundError, PortalClient

EXPORT = "/stellar/data/export/run-b"


def _text(value: float) -> str:
    """The shortest text that reads back as ``value`` (an integral value without ".0")."""
    text = repr(value)
    return text[:-2] if text.endswith(".0") else text


def _wall(step: int, ns: int | None = None) -> str:
    return _text(((BASE_NS + step * 1_000_000) if ns is None else ns) // 1000 / 1e6)


def test_csv_holds_every_stored_point_with_non_finite_values_spelled_out(api):
    response = api.get(EXPORT, params={"metric": "train/loss"})
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/csv; charset=utf-8"
    assert response.headers["content-disposition"] == 'attachment; filename="run-b-train_loss.csv"'
    expected = {s: _text(s / 10) for s in range(10)} | {0: "0", 3: "NaN", 5: "0.55", 7: "Infinity"}
    lines = response.text.splitlines()
    assert lines[0] == "step,wall_time,value"
    walls = {s: _wall(s) for s in range(10)} | {5: _wall(5, BASE_NS + 10**12)}  # step 5 was written again: last wins
    assert lines[1:] == [f"{s},{walls[s]},{expected[s]}" for s in range(10)]


def test_json_is_one_document_with_the_rows_as_columns_named_once(api):
    response = api.get(EXPORT, params={"metric": "train/loss", "format": "json"})
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["run_id"] == "run-b" and body["metric"] == "train/loss" and body["project"] == "proj"
    assert body["columns"] == ["step", "wall_time", "value"]
    assert [r[0] for r in body["rows"]] == list(range(10))
    assert body["rows"][3][2] == "NaN" and body["rows"][7][2] == "Infinity" and body["rows"][5][2] == 0.55
    assert body["rows"][1] == [1, float(_wall(1)), 0.1]


def test_a_window_exports_only_its_steps_and_says_which(api):
    body = api.get(EXPORT, params={"metric": "train/loss", "format": "json", "start_step": 3,
                                   "end_step": 7}).json()
    assert (body["start_step"], body["end_step"]) == (3, 7)
    assert [r[0] for r in body["rows"]] == [3, 4, 5, 6, 7]
    text = api.get(EXPORT, params={"metric": "train/loss", "start_step": 8}).text
    assert [line.split(",")[0] for line in text.splitlines()[1:]] == ["8", "9"]


def test_a_long_series_over_several_files_is_exported_whole_and_exact(api, portal_store):
    text = api.get("/stellar/data/export/run-a", params={"metric": "train/loss"}).text
    rows = list(csv.reader(io.StringIO(text)))[1:]
    stored = StoreReader(portal_store).rows("run-a", "train/loss")
    assert len(rows) == LOSS_POINTS == len(stored)
    assert [int(r[0]) for r in rows] == stored.step.tolist()
    assert [float(r[2]) for r in rows] == stored.value.tolist()  # shortest round-trip text: bit-exact


def test_a_metric_the_run_does_not_have_exports_no_rows(api):
    assert api.get(EXPORT, params={"metric": "nope"}).text == "step,wall_time,value\n"
    assert json.loads(api.get(EXPORT, params={"metric": "nope", "format": "json"}).text)["rows"] == []


@pytest.mark.parametrize(("path", "params", "expected"), [
    (EXPORT, {}, (400, "EXACT_SERIES_REQUIRED")),
    (EXPORT, {"metric": "train/loss", "format": "xlsx"}, (400, "INVALID_ARGUMENT")),
    (EXPORT, {"metric": "train/loss", "start_step": "5", "end_step": "4"}, (400, "INVALID_ARGUMENT")),
    (EXPORT, {"metric": "train/loss", "end_step": "x"}, (400, "INVALID_ARGUMENT")),
    (EXPORT, {"metric": "train/loss", "source": "bogus"}, (400, "INVALID_SOURCE")),
    (EXPORT, {"metric": "train/loss", "workspace": "other"}, (403, "WORKSPACE_FORBIDDEN")),
    (EXPORT, {"metric": "train/loss", "source": "kusto"}, (503, "SOURCE_UNAVAILABLE")),
    (EXPORT, {"metric": "train/loss", "project": "other-proj"}, (404, "NOT_FOUND")),
    ("/stellar/data/export/run-other", {"metric": "train/loss"}, (404, "NOT_FOUND")),
    ("/stellar/data/export/run-b/more", {"metric": "train/loss"}, (404, "NOT_FOUND")),
    ("/stellar/data/export/%2E%2E", {"metric": "train/loss"}, (400, "INVALID_PATH")),
])
def test_the_export_answers_bad_requests_as_v2_does(api, path, params, expected):
    response = api.get(path, params=params)
    assert (response.status_code, response.json()["error"]["code"]) == expected


def test_a_bad_format_says_which_formats_there_are(api):
    response = api.get(EXPORT, params={"metric": "train/loss", "format": "xlsx"})
    assert response.json()["error"]["message"] == "format must be csv or json"


def test_the_export_is_get_only_and_token_protected(portal_server, api):
    assert api.post(EXPORT, params={"metric": "train/loss"}).status_code == 405
    assert httpx.get(portal_server.base_url + EXPORT, params={"metric": "train/loss"}).status_code == 401


# -- the client: the same points as columns -----------------------------------------------------------------


def test_the_client_reads_every_point_as_columns_with_non_finite_values_and_wall_times(portal_server):
    with PortalClient(portal_server.base_url, TOKEN, project="proj") as client:
        columns = client.series_columns("run-b", "train/loss")
    assert columns.step.tolist() == list(range(10))
    assert columns.step.dtype == np.int64 and columns.value.dtype == np.float64
    assert math.isnan(columns.value[3]) and columns.value[7] == math.inf and columns.value[5] == 0.55
    assert columns.non_finite_count == 2
    assert columns.wall_time[1] == float(_wall(1))


def test_the_client_reads_a_window_and_a_long_series_exactly(portal_server, portal_store):
    with PortalClient(portal_server.base_url, TOKEN, project="proj") as client:
        window = client.series_columns("run-b", "train/loss", start_step=6, end_step=8)
        whole = client.series_columns("run-a", "train/loss")
    assert window.step.tolist() == [6, 7, 8] and (window.start_step, window.end_step) == (6, 8)
    stored = StoreReader(portal_store).rows("run-a", "train/loss")
    assert whole.step.tolist() == stored.step.tolist() and whole.value.tolist() == stored.value.tolist()


def test_columns_become_a_dataframe_when_pandas_is_installed(portal_server):
    pd = pytest.importorskip("pandas")
    with PortalClient(portal_server.base_url, TOKEN, project="proj") as client:
        frame = client.series_columns("run-b", "train/loss").to_pandas()
    assert list(frame.columns) == ["step", "wall_time", "value"]
    assert frame["step"].tolist() == list(range(10))
    assert frame["wall_time"].iloc[0] == pd.Timestamp(BASE_NS // 1000, unit="us", tz="UTC")
    assert frame["value"].isna().sum() == 1  # NaN; +Inf stays a number
    assert frame["value"].iloc[7] == math.inf


def test_without_pandas_to_pandas_says_how_to_get_it(tmp_path):
    # A pandas that cannot be imported, in a fresh interpreter: what a notebook without pandas sees.
    (tmp_path / "pandas.py").write_text("raise ImportError('No module named pandas')\n")
    code = ("import numpy as np\nfrom taunotebook.client import SeriesColumns\n"
            "c = SeriesColumns('r', 'm', np.arange(2), np.zeros(2), np.ones(2))\n"
            "try:\n    c.to_pandas()\nexcept ImportError as e:\n    print(e)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True, timeout=60)
    assert out.stdout.startswith("SeriesColumns.to_pandas() needs pandas: pip install pandas")


def test_the_client_raises_the_portals_error_envelope(portal_server):
    with PortalClient(portal_server.base_url, TOKEN, project="proj") as client:
        with pytest.raises(NotFoundError) as caught:
            client.series_columns("run-other", "train/loss")
    assert caught.value.code == "NOT_FOUND"


def test_a_run_served_by_kusto_is_refused_with_where_to_read_it(portal_store):
    # A second reader of the same store stands in for the Kusto source: the route tells the sources apart.
    with serve(portal_store, kusto=StoreReader(portal_store)) as server, httpx.Client(
            base_url=f"http://127.0.0.1:{server.port}", headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        refused = client.get(EXPORT, params={"metric": "train/loss", "source": "kusto"})
        assert refused.status_code == 400
        assert refused.json()["error"] == {**refused.json()["error"], "code": "INVALID_ARGUMENT", "message": (
            "export reads runs of the local store; this run is served by kusto: read it with the v2 series instead")}
        assert client.get(EXPORT, params={"metric": "train/loss", "source": "local"}).status_code == 200
