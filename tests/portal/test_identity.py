"""One identity rule through the real Portal over HTTP: a path id is decoded once, no run is served as another.

The store holds ids a TauGrid store could not (written before ids were checked, or imported): ``pct%61x``
beside ``pctax``, a space, unicode, upper case. Each run's one point has its own value, so an answer shows
whose data it is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from urllib.parse import quote

import httpx
import pytest

from fixtures.portal import BASE_NS, TOKEN, serve
from tau_collector.expstore import open_store
from tau_collector.expstore.write.writer import MetricWriter
from tau_collector.projection.metric_event import new_metric_event
from taunotebook.client import ClientError, NotFoundError, PortalClient, stellar_url
from taunotebook.client.links import path_segment

V2 = "/api/v2/stellar"
RUNS = {"pctax": 1.0, "pct%61x": 2.0, "a b": 3.0, "été": 4.0, "Run-A": 5.0, "run-1": 6.0, "50%": 7.0}
LEGACY_EXPERIMENT = "Exp Legacy"


def event(run: str, value: float, **kw):
    fields = {"project": "proj", "experiment_id": "exp-1", "run_group_id": "g1", "tags": {}, **kw}
    return new_metric_event(run_id=run, metric_name="loss", step=1, wall_time=BASE_NS, value=value,
                            exported_at=BASE_NS, source="history", **fields)


@pytest.fixture(scope="module")
def portal(tmp_path_factory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("identity") / "store"
    store = open_store(root, create=True)
    writer = MetricWriter(store)
    for i, (run, value) in enumerate(RUNS.items()):
        experiment = LEGACY_EXPERIMENT if run == "Run-A" else "exp-1"
        writer.write_chunk(f"k{i}", [event(run, value, experiment_id=experiment)], [], request_hash="h")
    writer.write_chunk("other", [event("Other Ws", 9.0, tags={"tau_workspace": "other"})], [], request_hash="h")
    store.close()
    with serve(root) as server:
        yield f"http://127.0.0.1:{server.port}"


@pytest.fixture(scope="module")
def http(portal) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=portal, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        yield client


def _value(response: httpx.Response) -> float:
    assert response.status_code == 200, response.text
    return response.json()["points"][0]["value"]


def _series(http: httpx.Client, raw_segment: str, target: str) -> httpx.Response:
    # The raw segment goes on the wire as written: httpx does not re-escape an existing %XX.
    return http.get(f"{V2}/runs/{raw_segment}/series", params={"target": target, "metric": "loss"})


def test_a_double_escaped_id_names_the_id_with_the_percent_not_another_run(http):
    assert _value(_series(http, "pct%2561x", "pct%61x")) == RUNS["pct%61x"]
    assert http.get(f"{V2}/runs/pct%2561x").json()["run"]["run_id"] == "pct%61x"
    assert http.get(f"{V2}/runs/pct%2561x/metrics").json()["run_id"] == "pct%61x"
    # Escaped once, %61 is an 'a': the other run.
    assert _value(_series(http, "pct%61x", "pctax")) == RUNS["pctax"]
    assert http.get(f"{V2}/runs/pctax").json()["run"]["run_id"] == "pctax"


@pytest.mark.parametrize("run", sorted(RUNS))
def test_every_id_escaped_once_reads_back_as_itself_on_every_route(http, run):
    segment = path_segment(run, "run_id")
    assert http.get(f"{V2}/runs/{segment}").json()["run"]["run_id"] == run
    assert http.get(f"{V2}/runs/{segment}/metrics").json()["run_id"] == run
    assert _value(_series(http, segment, run)) == RUNS[run]
    points = http.get(f"/stellar/data/runs/{segment}/points", params={"metric": "loss"})
    assert points.status_code == 200 and points.json()["run_id"] == run


@pytest.mark.parametrize("run", sorted(RUNS))
def test_the_stellar_pages_escaping_reads_back_the_same_id(http, run):
    # The page builds API paths with encodeURIComponent, which leaves A-Z a-z 0-9 - _ . ! ~ * ' ( ) as they are.
    segment = quote(run, safe="-_.!~*'()")
    assert _value(_series(http, segment, run)) == RUNS[run]


@pytest.mark.parametrize("run", sorted(RUNS))
def test_the_client_reads_every_run_as_itself(portal, run):
    with PortalClient(portal, TOKEN) as client:
        assert client.run(run).run_id == run
        assert client.metrics(run).run_id == run
        assert list(client.series(run, "loss").values) == [RUNS[run]]
        assert client.point_details(run, "loss").run_id == run


@pytest.mark.parametrize("run", sorted(RUNS))
def test_the_stellar_link_names_the_run_the_page_then_shows(http, run):
    link = stellar_url(run, "proj", base="")
    page = http.get(link)
    config = json.loads(re.search(r'<script type="application/json" id="stellar-config">(.*?)</script>',
                                  page.text).group(1))
    assert config["targets"] == [run] and config["project"] == "proj"


def test_spaces_around_an_id_are_trimmed_as_taugrid_does(http):
    assert http.get(f"{V2}/runs/%20a%20b%20").json()["run"]["run_id"] == "a b"


@pytest.mark.parametrize("segment", ["a%2Fb", "a%5Cb", "%2E%2E", "nul%00"])
def test_an_escaped_separator_or_dot_segment_is_an_invalid_path(http, segment):
    response = http.get(f"{V2}/runs/{segment}")
    assert response.status_code == 400 and response.json()["error"]["code"] == "INVALID_PATH", response.text
    points = http.get(f"/stellar/data/runs/{segment}/points", params={"metric": "loss"})
    assert points.status_code == 400 and points.json()["error"]["code"] == "INVALID_PATH"


def test_the_client_sends_a_slash_in_an_id_escaped_and_gets_invalid_path(portal):
    with PortalClient(portal, TOKEN) as client, pytest.raises(ClientError) as info:
        client.run("a/b")
    assert (info.value.status, info.value.code) == (400, "INVALID_PATH")


# -- the ID rule decides how a miss is answered -----------------------------------------------------

def _error(response: httpx.Response) -> tuple[int, str, str]:
    body = response.json()["error"]
    return response.status_code, body["code"], body["message"]


def test_a_valid_id_that_names_nothing_is_not_found(http):
    assert _error(http.get(f"{V2}/runs/run-zzz")) == (404, "NOT_FOUND", "requested experiment data was not found")


def test_an_id_breaking_the_id_rule_that_names_nothing_is_taugrids_invalid_argument(http):
    status, code, message = _error(http.get(f"{V2}/runs/Run-Z"))
    assert (status, code) == (400, "INVALID_ARGUMENT")
    assert message == "run_id \"Run-Z\" is invalid (use lowercase alphanumerics with internal '-', '_' or '.')"
    status, code, message = _error(http.get(f"/stellar/data/runs/{quote('-x-')}/points", params={"metric": "loss"}))
    assert (status, code, message) == (400, "INVALID_ARGUMENT",
                                       'run_id "-x-" is invalid (must start and end with an alphanumeric)')


def test_another_workspaces_run_is_answered_like_a_missing_one(http):
    # "Other Ws" exists, in workspace "other": answered as "Other Wz", which exists nowhere.
    hidden, absent = _error(http.get(f"{V2}/runs/Other%20Ws")), _error(http.get(f"{V2}/runs/Other%20Wz"))
    assert hidden == (absent[0], absent[1], absent[2].replace("Other Wz", "Other Ws"))
    assert hidden[:2] == (400, "INVALID_ARGUMENT")


@pytest.mark.parametrize(("params", "kind", "value"), [
    ({"target": "Not A Target"}, "target", "Not A Target"),
    ({"target": "run-1", "project": "Proj X"}, "project", "Proj X"),
])
def test_query_ids_breaking_the_rule_that_match_nothing_are_invalid_arguments(http, params, kind, value):
    status, code, message = _error(http.get(f"{V2}/runs/run-1/series", params={"metric": "loss", **params}))
    assert (status, code) == (400, "INVALID_ARGUMENT") and message.startswith(f'{kind} "{value}" is invalid')


def test_a_valid_query_id_that_matches_nothing_is_not_found(http):
    response = http.get(f"{V2}/runs/run-1/series", params={"metric": "loss", "target": "exp-2"})
    assert _error(response)[:2] == (404, "NOT_FOUND")


def test_a_legacy_experiment_id_lists_its_runs_and_an_unknown_invalid_one_is_refused(http):
    runs = http.get(f"{V2}/experiments/{quote(LEGACY_EXPERIMENT)}/runs").json()["runs"]
    assert [r["run_id"] for r in runs] == ["Run-A"]
    status, code, message = _error(http.get(f"{V2}/experiments/Exp%20New/runs"))
    assert (status, code) == (400, "INVALID_ARGUMENT") and message.startswith('experiment_id "Exp New" is invalid')
    assert http.get(f"{V2}/experiments/exp-9/runs").json()["runs"] == []  # valid and empty: an empty page
    status, _, message = _error(http.get(f"{V2}/experiments/exp-1/runs", params={"group": "G 1"}))
    assert status == 400 and message.startswith('group "G 1" is invalid')
    status, _, message = _error(http.get("/stellar/data/experiments", params={"project": "P Q"}))
    assert status == 400 and message.startswith('project "P Q" is invalid')


def test_the_client_gets_the_rule_as_typed_errors(portal):
    with PortalClient(portal, TOKEN) as client:
        with pytest.raises(NotFoundError):
            client.run("run-zzz")
        with pytest.raises(ClientError) as info:
            client.run("Run-Z")
        assert info.value.code == "INVALID_ARGUMENT" and 'run_id "Run-Z" is invalid' in info.value.message
