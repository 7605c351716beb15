"""The token gate, the page cookie flow, workspace isolation and path-id checks."""

from __future__ import annotations

import httpx
import pytest

from fixtures.portal import TOKEN, serve

from .expected import envelope

V2 = "/api/v2/stellar"


def test_no_token_is_401_with_the_envelope(portal_server):
    r = httpx.get(portal_server.base_url + f"{V2}/runs/run-a")
    assert r.status_code == 401
    body = r.json()
    assert body == envelope("UNAUTHORIZED", body["error"]["message"], 401)
    assert body["error"]["classification"] == "authorization" and "Bearer" in body["error"]["message"]
    assert r.headers["www-authenticate"].startswith("Bearer")


@pytest.mark.parametrize("header", [f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}", "Bearer", f"Basic {TOKEN}", TOKEN])
def test_a_wrong_credential_is_401(portal_server, header):
    r = httpx.get(portal_server.base_url + f"{V2}/runs/run-a", headers={"Authorization": header})
    assert r.status_code == 401


def test_the_bearer_scheme_is_case_insensitive(portal_server):
    r = httpx.get(portal_server.base_url + f"{V2}/runs/run-a", headers={"Authorization": f"bearer {TOKEN}"})
    assert r.status_code == 200


def test_unknown_routes_need_the_token_too(portal_server):
    assert httpx.get(portal_server.base_url + "/api/v2/stellar/nothing").status_code == 401
    assert httpx.get(portal_server.base_url + "/stellar").status_code == 401


def test_a_token_in_an_api_query_is_not_a_credential(portal_server):
    r = httpx.get(portal_server.base_url + f"{V2}/runs/run-a", params={"token": TOKEN})
    assert r.status_code == 401 and "set-cookie" not in r.headers


def test_the_openapi_document_is_public(portal_server):
    r = httpx.get(portal_server.base_url + "/openapi.json")
    assert r.status_code == 200 and r.json()["openapi"].startswith("3.")


def test_a_page_opened_with_the_token_sets_a_strict_cookie_and_drops_the_token(portal_server):
    r = httpx.get(portal_server.base_url + "/stellar", params={"target": "run-a", "token": TOKEN, "project": "p"})
    assert r.status_code == 302
    assert r.headers["location"] == "./stellar?target=run-a&project=p"
    cookie = r.headers["set-cookie"]
    attributes = [a.strip().lower() for a in cookie.split(";")]
    assert "httponly" in attributes and "samesite=strict" in attributes and "path=/" in attributes
    assert TOKEN not in cookie  # the cookie is derived from the token, not the token
    name, value = cookie.split(";")[0].split("=", 1)
    api = httpx.get(portal_server.base_url + f"{V2}/runs/run-a", cookies={name: value})
    assert api.status_code == 200


def test_a_page_opened_with_a_wrong_token_gets_no_cookie(portal_server):
    r = httpx.get(portal_server.base_url + "/stellar", params={"token": "wrong"})
    assert r.status_code == 401 and "set-cookie" not in r.headers


def test_a_cookie_for_another_port_is_not_accepted(portal_server):
    r = httpx.get(portal_server.base_url + "/stellar", params={"token": TOKEN})
    name, value = r.headers["set-cookie"].split(";")[0].split("=", 1)
    other = "tau_portal_1" if name != "tau_portal_1" else "tau_portal_2"
    assert httpx.get(portal_server.base_url + f"{V2}/runs/run-a", cookies={other: value}).status_code == 401
    assert httpx.get(portal_server.base_url + f"{V2}/runs/run-a", cookies={name: value + "0"}).status_code == 401


# -- workspace isolation -------------------------------------------------------------------

@pytest.mark.parametrize("suffix", ["", "/metrics", "/series?target={run}&metric=train/loss"])
def test_another_workspaces_run_is_indistinguishable_from_a_missing_one(api, suffix):
    foreign = api.get(f"{V2}/runs/run-other" + suffix.format(run="run-other"))
    missing = api.get(f"{V2}/runs/no-such-run" + suffix.format(run="no-such-run"))
    assert foreign.status_code == missing.status_code == 404
    assert foreign.content == missing.content
    assert b"other" not in foreign.content


def test_another_workspaces_run_is_not_listed(api):
    runs = api.get(f"{V2}/experiments/exp-1/runs").json()["runs"]
    assert "run-other" not in {r["run_id"] for r in runs}


def test_naming_the_served_workspace_is_allowed(api):
    assert api.get(f"{V2}/runs/run-a", params={"workspace": "default"}).status_code == 200


def test_a_portal_for_another_workspace_sees_its_runs_and_untagged_ones(portal_store):
    with serve(portal_store, workspace="other") as server, httpx.Client(
            base_url=f"http://127.0.0.1:{server.port}", headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        runs = client.get(f"{V2}/experiments/exp-1/runs").json()["runs"]
        assert sorted(r["run_id"] for r in runs) == ["run-b", "run-other"]
        assert client.get(f"{V2}/runs/run-a").status_code == 404
        assert client.get(f"{V2}/runs/run-a", params={"workspace": "default"}).status_code == 403


# -- path ids ------------------------------------------------------------------------------

@pytest.mark.parametrize("raw", ["%2e", "%2e%2e", "%20%20", "%2F", "a%5Cb", "a%00b", "%zz", "a%2", "%C3%28",
                                 "x" * 513, "%C3%A9" * 257])
def test_unsafe_or_oversized_path_ids_are_invalid(api, raw):
    for path in (f"{V2}/runs/{raw}", f"{V2}/runs/{raw}/metrics", f"{V2}/experiments/{raw}/runs"):
        r = api.get(path)
        assert r.status_code == 400, (path, r.text)
        assert r.json() == envelope("INVALID_PATH", "path identifier is invalid", 400)


def test_a_512_byte_id_is_allowed_and_ids_are_trimmed(api):
    assert api.get(f"{V2}/runs/{'x' * 512}").status_code == 404  # valid, just absent
    assert api.get(f"{V2}/runs/%20run-a%20").json()["run"]["run_id"] == "run-a"
    assert api.get(f"{V2}/runs/run%2Da").json()["run"]["run_id"] == "run-a"  # %2D is '-'


def test_a_path_id_is_decoded_exactly_once(api):
    # %252D is the three characters "%2D": the id "run%2Da", which breaks the ID rule and names no run.
    r = api.get(f"{V2}/runs/run%252Da")
    assert r.status_code == 400
    assert r.json()["error"]["code"] == "INVALID_ARGUMENT"
    assert r.json()["error"]["message"].startswith('run_id "run%2Da" is invalid')


def test_an_encoded_slash_is_part_of_the_id_and_the_path_rule_refuses_it(api):
    for path in (f"{V2}/runs/a%2Fb", f"{V2}/runs/a%2Fb/metrics", f"{V2}/runs/run-a%2Fmetrics"):
        r = api.get(path)
        assert r.status_code == 400 and r.json()["error"]["code"] == "INVALID_PATH", (path, r.text)


def test_a_browser_page_without_a_valid_token_explains_itself_in_words(portal_server):
    import httpx

    response = httpx.get(f"{portal_server.base_url}/stellar?target=run-a&token=wrong",
                         headers={"Accept": "text/html,application/xhtml+xml"})
    assert response.status_code == 401
    assert response.headers["content-type"].startswith("text/html")
    assert "This Portal needs its token" in response.text
    api = httpx.get(f"{portal_server.base_url}/api/v2/stellar/runs/run-a", headers={"Accept": "text/html"})
    assert api.status_code == 401 and api.json()["error"]["code"] == "UNAUTHORIZED"
