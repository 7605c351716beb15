"""``GET /api/portal/workspaces``: TauGrid's workspace directory, which its own Stellar app reads first."""

from __future__ import annotations

import httpx

from fixtures.portal import TOKEN, serve

WORKSPACES = "/api/portal/workspaces"

# TauGrid's WorkspaceScope fields in Go's order (omitempty ones only when set).
SCOPE_KEYS = ["workspace", "name", "cluster", "namespace", "source", "authorizationMode", "experimentsUrl",
              "experimentsNative", "availability", "managed"]


def test_the_directory_selects_the_served_workspace_in_taugrids_shape(api):
    r = api.get(WORKSPACES)
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert list(body) == ["workspaces", "selected", "managed"]
    assert body["managed"] is False
    assert body["workspaces"] == [body["selected"]]
    scope = body["selected"]
    assert list(scope) == SCOPE_KEYS
    assert scope["workspace"] == "default" and scope["availability"] == "available"
    assert scope["source"] == "local"
    # What the frontend's experimentsAPI() needs before it reads any v2 route.
    assert scope["experimentsNative"] == {"state": "available", "apiBasePath": "/api/v2/stellar"}
    assert r.text.endswith("\n")  # Go's encoder writes a trailing newline, as every answer of ours


def test_the_directory_needs_the_token(portal_server):
    r = httpx.get(portal_server.base_url + WORKSPACES)
    assert r.status_code == 401
    assert r.json()["error"]["code"] == "UNAUTHORIZED"


def test_another_method_is_405_in_taugrids_error_shape(api):
    r = api.post(WORKSPACES)
    assert r.status_code == 405 and r.json() == {"error": "method not allowed"}


def test_another_portal_names_its_own_workspace(portal_store):
    with serve(portal_store, workspace="team-a") as server:
        body = httpx.get(f"http://127.0.0.1:{server.port}{WORKSPACES}", params={"workspace": "other"},
                         headers={"Authorization": f"Bearer {TOKEN}"}).json()
    assert body["selected"]["workspace"] == "team-a" and body["selected"]["name"] == "team-a"
