"""The experiment run listing pages newest first through an opaque, signed cursor bound to its query."""

from __future__ import annotations

import base64

import httpx
import pytest

from fixtures.portal import PAGE_RUNS, TOKEN, serve

from .expected import envelope

LIST = "/api/v2/stellar/experiments/exp-page/runs"


def _pages(api, **params) -> list[dict]:
    pages, cursor = [], None
    while True:
        body = api.get(LIST, params={**params, **({"cursor": cursor} if cursor else {})}).json()
        pages.append(body)
        cursor = body.get("next_cursor")
        if cursor is None:
            return pages


def test_limit_defaults_to_50_and_pages_cover_every_run_once_newest_first(api):
    (only,) = _pages(api)
    assert len(only["runs"]) == len(PAGE_RUNS) and "next_cursor" not in only
    pages = _pages(api, limit=3)
    assert [len(p["runs"]) for p in pages] == [3, 3, 1]
    listed = [r for p in pages for r in p["runs"]]
    assert [r["run_id"] for r in listed] == [r["run_id"] for r in only["runs"]]
    keys = [(r["created_at"], "proj\x00" + r["run_id"]) for r in listed]
    assert keys == sorted(keys, key=lambda k: (_neg(k[0]), k[1]))


def _neg(timestamp: str) -> list[int]:
    return [-ord(c) for c in timestamp]


def _first_cursor(api, **params) -> str:
    return api.get(LIST, params={"limit": 2, **params}).json()["next_cursor"]


def _invalid_cursor(r: httpx.Response) -> None:
    assert r.status_code == 400
    assert r.json() == envelope("INVALID_CURSOR", r.json()["error"]["message"], 400)


def test_a_tampered_cursor_is_rejected(api):
    cursor = _first_cursor(api)
    raw = bytearray(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    raw[len(raw) // 3] ^= 0x01  # a bit in the signed body
    tampered = base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("=")
    r = api.get(LIST, params={"limit": 2, "cursor": tampered})
    _invalid_cursor(r)
    assert r.json()["error"]["message"] == "cursor signature is invalid"


@pytest.mark.parametrize("garbage", ["!!!", "abc", "a" * 10])
def test_a_malformed_cursor_is_rejected(api, garbage):
    _invalid_cursor(api.get(LIST, params={"cursor": garbage}))


def test_a_cursor_is_bound_to_its_query(api):
    cursor = _first_cursor(api)
    r = api.get(LIST, params={"limit": 2, "cursor": cursor, "q": "page"})
    _invalid_cursor(r)
    assert r.json()["error"]["message"] == "cursor does not match this query"
    _invalid_cursor(api.get("/api/v2/stellar/experiments/exp-1/runs", params={"cursor": cursor}))
    _invalid_cursor(api.get(LIST, params={"cursor": cursor, "source": "auto"}))
    # The page size is not part of the query: a client may change it between pages.
    assert api.get(LIST, params={"limit": 5, "cursor": cursor}).status_code == 200


def test_a_cursor_from_another_portal_is_rejected(api, portal_store):
    cursor = _first_cursor(api)
    with serve(portal_store) as server, httpx.Client(
            base_url=f"http://127.0.0.1:{server.port}", headers={"Authorization": f"Bearer {TOKEN}"}) as other:
        _invalid_cursor(other.get(LIST, params={"limit": 2, "cursor": cursor}))
