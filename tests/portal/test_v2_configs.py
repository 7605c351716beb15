"""Run configurations over HTTP: the v2 run's config_hash, the config route, include=config and config filters
on the run listing (expectations from the stored configs and TAUGRID-REFERENCE §3, not from the Portal's output)."""

from __future__ import annotations

import hashlib

import httpx
import pytest

from fixtures.config_store import RunsOnlyReader, sweep_config
from fixtures.portal import TOKEN, serve
from tau_collector.expstore import StoreReader

from .expected import RFC3339_SECONDS, envelope, expected_metadata

V2 = "/api/v2/stellar"
SWEEP_RUNS = f"{V2}/experiments/sweep/runs"


def _ok(r: httpx.Response) -> dict:
    assert r.status_code == 200, r.text
    return r.json()


def _error(r: httpx.Response) -> tuple[int, str, str]:
    body = r.json()
    assert body == envelope(body["error"]["code"], body["error"]["message"], r.status_code)
    return r.status_code, body["error"]["code"], body["error"]["message"]


def _ids(body: dict) -> list[str]:
    return [r["run_id"] for r in body["runs"]]


# -- the v2 run carries config_hash ------------------------------------------------------------------------


def test_a_run_with_a_config_carries_its_hash_where_taugrid_puts_it(capi):
    config = sweep_config("lr-0.1")
    expected_hash = hashlib.sha256(
        b'{"batch":32,"layers":[64,64],"lr":0.1,"optimizer":{"name":"adam"}}').hexdigest()
    assert config.config_hash == expected_hash
    run = _ok(capi.get(f"{V2}/runs/lr-0.1"))["run"]
    assert run["config_hash"] == expected_hash
    keys = list(run)
    assert keys.index("completed_at" if "completed_at" in run else "created_at") < keys.index("config_hash")
    assert keys.index("config_hash") < keys.index("tags")
    listed = {r["run_id"]: r for r in _ok(capi.get(SWEEP_RUNS))["runs"]}
    assert listed["lr-0.1"]["config_hash"] == expected_hash
    assert "config_hash" not in listed["no-config"]  # omitempty, as Go's struct
    assert "config" not in listed["lr-0.1"]  # the default shape is TauGrid's


# -- GET /runs/{run_id}/config ------------------------------------------------------------------------------


def test_the_config_route_answers_values_fields_format_and_uri(capi):
    body = _ok(capi.get(f"{V2}/runs/lr-0.03/config"))
    generated = body["metadata"]["generated_at"]
    assert RFC3339_SECONDS.match(generated)
    assert body == {
        "metadata": expected_metadata(generated),
        "run_id": "lr-0.03",
        "config_hash": sweep_config("lr-0.03").config_hash,
        "format": "json",
        "uri": "/sweeps/lr-0.03/params.json",
        "config": {"batch": 32, "layers": [64, 64], "lr": 0.03, "optimizer": {"name": "adam"}},
        "fields": {"batch": 32, "layers": "[64,64]", "lr": 0.03, "optimizer.name": "adam"},
    }
    assert list(body) == ["metadata", "run_id", "config_hash", "format", "uri", "config", "fields"]
    assert '"lr":0.00001' in capi.get(f"{V2}/runs/lr-1e-05/config").text  # Go's float text


def test_a_run_without_a_config_is_unavailable_with_a_reason(capi):
    body = _ok(capi.get(f"{V2}/runs/no-config/config"))
    assert body["metadata"]["availability"] == {"state": "unavailable",
                                                "reasons": ["no configuration is stored for this run"]}
    assert body["metadata"]["partial"] is False
    assert {k: v for k, v in body.items() if k != "metadata"} == {"run_id": "no-config", "config": {}, "fields": {}}


@pytest.mark.parametrize(("method", "path", "params", "expected"), [
    ("GET", "/runs/nope/config", {}, (404, "NOT_FOUND", "requested experiment data was not found")),
    ("GET", "/runs/hidden-1/config", {}, (404, "NOT_FOUND", "requested experiment data was not found")),
    ("GET", "/runs/lr-0.1/config", {"project": "other"}, (404, "NOT_FOUND", "requested experiment data was not found")),
    ("GET", "/runs/%2E%2E/config", {}, (400, "INVALID_PATH", "path identifier is invalid")),
    ("GET", "/runs/lr-0.1/config", {"source": "nope"}, (400, "INVALID_SOURCE", "source must be local, kusto, or auto")),
    ("GET", "/runs/lr-0.1/config", {"workspace": "other"}, (403, "WORKSPACE_FORBIDDEN", None)),
    ("GET", "/runs/lr-0.1/config", {"source": "kusto"}, (503, "SOURCE_UNAVAILABLE", None)),
    ("POST", "/runs/lr-0.1/config", {}, (405, "METHOD_NOT_ALLOWED", "method not allowed")),
    ("GET", "/runs/lr-0.1/config/more", {}, (404, "NOT_FOUND", "route was not found")),
])
def test_the_config_route_answers_bad_requests_as_the_other_run_reads_do(capi, method, path, params, expected):
    status, code, message = _error(capi.request(method, V2 + path, params=params))
    assert (status, code) == expected[:2]
    if expected[2] is not None:
        assert message == expected[2]


# -- include=config and config filters on the run listing ---------------------------------------------------


def test_include_config_adds_each_runs_fields_and_null_without_one(capi):
    body = _ok(capi.get(SWEEP_RUNS, params={"include": "config"}))
    configs = {r["run_id"]: r["config"] for r in body["runs"]}
    assert configs == {
        "no-config": None,
        "lr-1e-05": {"batch": 32, "layers": "[64,64]", "lr": 1e-05, "optimizer.name": "sgd"},
        "lr-0.03": {"batch": 32, "layers": "[64,64]", "lr": 0.03, "optimizer.name": "adam"},
        "lr-0.1": {"batch": 32, "layers": "[64,64]", "lr": 0.1, "optimizer.name": "adam"},
    }
    assert _ids(body) == _ids(_ok(capi.get(SWEEP_RUNS)))  # the same runs in the same order as without include
    assert list(body["runs"][0])[-2:] == ["source", "config"]
    assert _ok(capi.get(SWEEP_RUNS, params=[("include", "config"), ("include", "")]))["runs"] == body["runs"]


@pytest.mark.parametrize(("params", "expected"), [
    ([("config.lr", "0.1")], ["lr-0.1"]),
    ([("config.lr", "1e-5")], ["lr-1e-05"]),  # a number matches numerically as well as by its text
    ([("config.lr", "0.00001")], ["lr-1e-05"]),  # the field's text, as Go writes the number
    ([("config.lr", "0.10")], ["lr-0.1"]),
    ([("config.lr", "0.1"), ("config.lr", "0.03")], ["lr-0.03", "lr-0.1"]),  # one key: any of its values
    ([("config.optimizer.name", "adam")], ["lr-0.03", "lr-0.1"]),
    ([("config.optimizer.name", "adam"), ("config.lr", "0.03")], ["lr-0.03"]),  # keys: all of them
    ([("config.batch", "32"), ("config.optimizer.name", "sgd")], ["lr-1e-05"]),
    ([("config.layers", "[64,64]")], ["lr-0.03", "lr-0.1", "lr-1e-05"]),
    ([("config.lr", "0.5")], []),
    ([("config.missing", "1")], []),
    ([("config.optimizer.name", "ADAM")], []),  # exact text
    ([("config.lr", "0.1"), ("tag", "arm=base")], ["lr-0.1"]),
    ([("config.lr", "0.03"), ("tag", "arm=base")], []),
])
def test_config_filters_select_runs_by_their_config_fields(capi, params, expected):
    assert sorted(_ids(_ok(capi.get(SWEEP_RUNS, params=params)))) == expected


@pytest.mark.parametrize(("params", "message"), [
    ([("config.", "x")], "config filters must be config.<key>=<value>"),
    ([("config. ", "x")], "config filters must be config.<key>=<value>"),
    ([(f"config.k{i}", "1") for i in range(33)], "at most 32 config filters may be given"),
    ([("include", "metrics")], "include must be one of: config"),
    ([("include", "config,bogus")], "include must be one of: config"),
])
def test_bad_config_filters_and_includes_are_invalid_arguments(capi, params, message):
    assert _error(capi.get(SWEEP_RUNS, params=params)) == (400, "INVALID_ARGUMENT", message)


def test_a_cursor_is_bound_to_its_config_filters_and_pages_them(capi):
    adam = _ids(_ok(capi.get(SWEEP_RUNS, params={"config.optimizer.name": "adam"})))
    assert sorted(adam) == ["lr-0.03", "lr-0.1"]
    first = _ok(capi.get(SWEEP_RUNS, params={"limit": 1, "config.optimizer.name": "adam"}))
    assert _ids(first) == adam[:1]
    cursor = first["next_cursor"]
    second = _ok(capi.get(SWEEP_RUNS, params={"limit": 1, "config.optimizer.name": "adam", "cursor": cursor}))
    assert _ids(second) == adam[1:] and "next_cursor" not in second
    status, code, message = _error(capi.get(SWEEP_RUNS, params={"limit": 1, "cursor": cursor}))
    assert (status, code, message) == (400, "INVALID_CURSOR", "cursor does not match this query")
    changed = {"limit": 1, "config.optimizer.name": "sgd", "cursor": cursor}
    assert _error(capi.get(SWEEP_RUNS, params=changed))[1] == "INVALID_CURSOR"


def test_the_kusto_source_has_no_configs(config_store):
    # TauGrid's Kusto tables carry no configurations: source=kusto says so in words; auto keeps the local record's.
    kusto = RunsOnlyReader(StoreReader(config_store))
    with serve(config_store, kusto=kusto) as server, httpx.Client(
            base_url=f"http://127.0.0.1:{server.port}", headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        body = _ok(client.get(f"{V2}/runs/lr-0.1/config", params={"source": "auto"}))
        assert body["fields"]["lr"] == 0.1
        body = _ok(client.get(f"{V2}/runs/lr-0.1/config", params={"source": "kusto"}))
        assert body["config"] == {} and body["fields"] == {}
        assert body["metadata"]["availability"]["state"] == "unavailable"
