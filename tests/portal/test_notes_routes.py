"""The Portal's writes (notes and tags on a run) over real HTTP: who may write, from where, what, and where not.

Every hostile-input and auth rule of the reads holds for the writes (Host, token, workspace, path ids), and
more: the token in a header (never the cookie or Authorization alone), Origin and Sec-Fetch-Site, a bounded
JSON body, field limits, TauGrid's idempotency rule, and refusals in words for a Kusto-served run.
"""

from __future__ import annotations

import httpx
import pytest

from fixtures.portal import TOKEN, build_store, serve
from tau_collector.expstore import StoreReader
from taunotebook.portal.writes import (
    MAX_BODY_BYTES,
    MAX_NOTE_CHARS,
    MAX_TAG_KEY_CHARS,
    MAX_TAG_VALUE_CHARS,
    page_write_key,
)

V2 = "/api/v2/stellar"
NOTES = f"{V2}/runs/run-a/notes"
WRITE = {"Authorization": f"Bearer {TOKEN}", "X-Tau-Token": TOKEN}


@pytest.fixture(scope="module")
def writable(tmp_path_factory):
    """A Portal of its own over a store of its own: these tests write."""
    root = build_store(tmp_path_factory.mktemp("writes") / "store")
    with serve(root) as server, httpx.Client(base_url=f"http://127.0.0.1:{server.port}") as client:
        client.store_root = root
        yield client


def _error(response: httpx.Response, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code
    return error["message"]


def _notes(client) -> list[str]:
    return [n["text"] for n in client.get(NOTES, headers=WRITE).json()["notes"]]


def test_a_note_is_written_and_read_back_with_its_author_and_time(writable):
    r = writable.post(NOTES, json={"text": "  loss spikes at 5k <b>&</b>  ", "author": "ana"}, headers=WRITE)
    assert r.status_code == 201, r.text
    note = r.json()["note"]
    assert r.json()["created"] is True and note["text"] == "loss spikes at 5k <b>&</b>" and note["author"] == "ana"
    assert note["created_at"].endswith("Z") and note["observation_id"].startswith("obs-")
    assert "loss spikes at 5k <b>&</b>" in _notes(writable)
    # The runs table finds the run by the note's words, in any case.
    table = writable.get("/stellar/data/runs", params={"note": "SPIKES AT"}, headers=WRITE).json()
    assert [row["run_id"] for row in table["runs"]] == ["run-a"]


def test_without_an_author_the_note_is_the_portals_users(writable):
    import getpass

    note = writable.post(NOTES, json={"text": "mine"}, headers=WRITE).json()["note"]
    assert note["author"] == getpass.getuser()


def test_the_same_idempotency_key_twice_is_one_note(writable):
    body = {"text": "checked the data loader", "idempotency_key": "route-key-1"}
    first = writable.post(NOTES, json=body, headers=WRITE)
    again = writable.post(NOTES, json=body, headers=WRITE)
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["created"] is False and again.json()["note"] == first.json()["note"]
    assert _notes(writable).count("checked the data loader") == 1


def test_the_same_key_with_another_text_is_a_409_in_words(writable):
    writable.post(NOTES, json={"text": "one", "idempotency_key": "route-key-2"}, headers=WRITE)
    r = writable.post(NOTES, json={"text": "two", "idempotency_key": "route-key-2"}, headers=WRITE)
    assert "'route-key-2' was used for a different request" in _error(r, 409, "CONFLICT")
    assert "two" not in _notes(writable)


def test_tags_are_set_and_deleted_and_the_run_and_table_follow(writable):
    r = writable.put(f"{V2}/runs/run-a/tags/verdict", json={"value": "keep"}, headers=WRITE)
    assert r.status_code == 200 and r.json()["tags"]["verdict"] == "keep"
    assert writable.get(f"{V2}/runs/run-a", headers=WRITE).json()["run"]["tags"]["verdict"] == "keep"
    table = writable.get("/stellar/data/runs", params={"tag": "verdict=keep"}, headers=WRITE).json()
    assert [row["run_id"] for row in table["runs"]] == ["run-a"] and table["runs"][0]["tags"]["verdict"] == "keep"
    r = writable.delete(f"{V2}/runs/run-a/tags/verdict", headers=WRITE)
    assert r.status_code == 200 and "verdict" not in r.json()["tags"]
    assert writable.delete(f"{V2}/runs/run-a/tags/verdict", headers=WRITE).status_code == 200  # twice is fine


def test_a_key_with_an_escaped_character_is_decoded_once(writable):
    r = writable.put(f"{V2}/runs/run-a/tags/data%20set", json={"value": "v2"}, headers=WRITE)
    assert r.status_code == 200 and r.json()["tags"]["data set"] == "v2"


# -- who may write ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("headers", [
    {"Authorization": f"Bearer {TOKEN}"},  # what jupyter-server-proxy adds to every request it forwards
    {"Authorization": f"Bearer {TOKEN}", "X-Tau-Token": TOKEN + "x"},
    {"Authorization": f"Bearer {TOKEN}", "X-Tau-Token": ""},
])
def test_authorization_alone_or_a_wrong_header_token_never_writes(writable, headers):
    r = writable.post(NOTES, json={"text": "not me"}, headers=headers)
    assert "X-Tau-Token" in _error(r, 401, "UNAUTHORIZED")
    assert "not me" not in _notes(writable)


def test_the_page_cookie_alone_never_writes_but_with_the_pages_key_it_does(writable):
    page = writable.get("/stellar/runs/run-a", params={"token": TOKEN})  # sets the page cookie
    assert page.status_code == 302 and writable.cookies
    cookie_only = writable.post(NOTES, json={"text": "by cookie"})
    _error(cookie_only, 401, "UNAUTHORIZED")
    page_key = page_write_key(TOKEN)
    html = writable.get("/stellar/runs/run-a").text
    assert page_key in html and TOKEN not in html  # the page carries its write key, never the token
    with_key = writable.post(NOTES, json={"text": "by page"}, headers={"X-Tau-Token": page_key})
    assert with_key.status_code == 201, with_key.text
    writable.cookies.clear()


def test_no_token_at_all_is_refused_before_the_write_gate(writable):
    r = writable.post(NOTES, json={"text": "x"}, headers={"X-Tau-Token": TOKEN})
    _error(r, 401, "UNAUTHORIZED")  # the token gate of every route: Bearer or the page cookie


@pytest.mark.parametrize(("headers", "says"), [
    ({"Origin": "http://evil.example"}, "'http://evil.example' is refused"),
    ({"Origin": "null"}, "'null' is refused"),
    ({"Origin": "file://"}, "is refused"),
    ({"Sec-Fetch-Site": "cross-site"}, "another site"),
    ({"Sec-Fetch-Site": "same-site", "Origin": "http://localhost:3000"}, "another site"),
])
def test_a_write_from_another_site_is_403_in_words(writable, headers, says):
    r = writable.post(NOTES, json={"text": "csrf"}, headers={**WRITE, **headers})
    assert says in _error(r, 403, "CROSS_SITE_WRITE")
    assert "csrf" not in _notes(writable)


@pytest.mark.parametrize("headers", [{"Origin": "http://127.0.0.1:8888"}, {"Origin": "http://localhost:8888"},
                                     {"Sec-Fetch-Site": "same-origin", "Origin": "http://localhost:8888"}])
def test_a_write_from_the_portals_own_pages_passes(writable, headers):
    assert writable.post(NOTES, json={"text": "same origin"}, headers={**WRITE, **headers}).status_code == 201


def test_another_host_is_refused_before_anything_else(writable):
    r = writable.post(NOTES, json={"text": "rebound"}, headers={**WRITE, "Host": "evil.example"})
    _error(r, 400, "HOST_NOT_ALLOWED")


# -- what a write may carry -----------------------------------------------------------------------------


def test_a_form_or_text_body_is_415(writable):
    r = writable.post(NOTES, data={"text": "form"}, headers=WRITE)
    assert "application/json" in _error(r, 415, "UNSUPPORTED_MEDIA_TYPE")
    r = writable.post(NOTES, content=b'{"text": "plain"}', headers={**WRITE, "Content-Type": "text/plain"})
    _error(r, 415, "UNSUPPORTED_MEDIA_TYPE")


def test_an_oversized_body_is_413_whether_it_says_so_or_not(writable):
    big = b'{"text": "' + b"x" * MAX_BODY_BYTES + b'"}'
    r = writable.post(NOTES, content=big, headers={**WRITE, "Content-Type": "application/json"})
    assert str(MAX_BODY_BYTES) in _error(r, 413, "BODY_TOO_LARGE")

    def chunks():  # no Content-Length: the body is counted as it comes
        yield b'{"text": "'
        for _ in range(MAX_BODY_BYTES // 1024 + 1):
            yield b"y" * 1024
        yield b'"}'

    r = writable.post(NOTES, content=chunks(), headers={**WRITE, "Content-Type": "application/json"})
    _error(r, 413, "BODY_TOO_LARGE")


@pytest.mark.parametrize(("body", "says"), [
    (b"not json", "not JSON"),
    (b"[1, 2]", "JSON object"),
    (b'{"text": "x", "evil": 1}', "unknown field(s) 'evil'"),
    (b'{"text": ""}', "text is empty"),
    (b'{"text": "   "}', "text is empty"),
    (b'{"text": 5}', "text must be a string"),
    (b'{}', "text must be a string"),
    (b'{"text": "a\\u0000b"}', "control character"),
    (b'{"text": "' + b"x" * (MAX_NOTE_CHARS + 1) + b'"}', f"at most {MAX_NOTE_CHARS}"),
    (b'{"text": "x", "author": ""}', "author must be"),
    (b'{"text": "x", "author": "' + b"a" * 200 + b'"}', "author must be at most"),
    (b'{"text": "x", "idempotency_key": "has space"}', "idempotency_key"),
    (b'{"text": "x", "idempotency_key": 7}', "idempotency_key must be a string"),
])
def test_bad_note_bodies_are_400_naming_the_field(writable, body, says):
    r = writable.post(NOTES, content=body, headers={**WRITE, "Content-Type": "application/json"})
    assert says in _error(r, 400, "INVALID_ARGUMENT")


@pytest.mark.parametrize(("key", "body", "says"), [
    ("tau_workspace", {"value": "other"}, "reserved for the collector"),
    ("tau.status.state", {"value": "failed"}, "reserved for the collector"),
    ("jsonl.raw_key", {"value": "x"}, "reserved for the collector"),
    ("a%3Db", {"value": "x"}, "may not hold '='"),
    ("k" * (MAX_TAG_KEY_CHARS + 1), {"value": "x"}, f"at most {MAX_TAG_KEY_CHARS}"),
    ("ok", {"value": "v" * (MAX_TAG_VALUE_CHARS + 1)}, f"at most {MAX_TAG_VALUE_CHARS}"),
    ("ok", {"value": 3}, "value must be a string"),
    ("ok", {}, "value is required"),
    ("ok", {"value": "x", "other": 1}, "unknown field(s) 'other'"),
])
def test_bad_tags_are_400_in_words(writable, key, body, says):
    r = writable.put(f"{V2}/runs/run-a/tags/{key}", json=body, headers=WRITE)
    assert says in _error(r, 400, "INVALID_ARGUMENT")
    run = writable.get(f"{V2}/runs/run-a", headers=WRITE).json()["run"]
    assert run["tags"]["tau_workspace"] == "default"


@pytest.mark.parametrize("raw", ["%2e%2e", "a%00b", "a%2Fb", "a%5Cb", "%zz"])
def test_unsafe_tag_keys_are_invalid_paths(writable, raw):
    r = writable.put(f"{V2}/runs/run-a/tags/{raw}", json={"value": "x"}, headers=WRITE)
    _error(r, 400, "INVALID_PATH")


# -- where not ------------------------------------------------------------------------------------------


def test_another_workspaces_run_is_a_404_as_for_a_read(writable):
    r = writable.post(f"{V2}/runs/run-other/notes", json={"text": "peek"}, headers=WRITE)
    _error(r, 404, "NOT_FOUND")
    r = writable.put(f"{V2}/runs/run-other/tags/k", json={"value": "v"}, headers=WRITE)
    _error(r, 404, "NOT_FOUND")
    assert StoreReader(writable.store_root).notes("run-other") == []
    r = writable.post(NOTES, params={"workspace": "other"}, json={"text": "x"}, headers=WRITE)
    _error(r, 403, "WORKSPACE_FORBIDDEN")


def test_a_missing_run_is_404(writable):
    _error(writable.post(f"{V2}/runs/no-such-run/notes", json={"text": "x"}, headers=WRITE), 404, "NOT_FOUND")


@pytest.mark.parametrize(("method", "path"), [("PUT", NOTES), ("DELETE", NOTES), ("PATCH", NOTES),
                                              ("GET", f"{V2}/runs/run-a/tags/k"),
                                              ("POST", f"{V2}/runs/run-a/tags/k")])
def test_other_methods_are_405_naming_the_allowed_ones(writable, method, path):
    r = writable.request(method, path, json={"value": "x"}, headers=WRITE)
    assert "this route takes" in _error(r, 405, "METHOD_NOT_ALLOWED") and r.headers["allow"]


def test_a_kusto_served_run_refuses_in_words(portal_store):
    # A Portal whose only source is a cluster (here a reader over a store, served as source=kusto).
    from fixtures.servers import ServerThread
    from taunotebook.portal.app import create_app

    with ServerThread(create_app(None, token=TOKEN, kusto=StoreReader(portal_store))) as server:
        base = f"http://127.0.0.1:{server.port}"
        r = httpx.post(base + NOTES, json={"text": "x"}, headers=WRITE)
        assert "served from Kusto, which this Portal only reads" in _error(r, 409, "READ_ONLY_SOURCE")
        r = httpx.put(base + f"{V2}/runs/run-a/tags/k", json={"value": "v"}, headers=WRITE)
        _error(r, 409, "READ_ONLY_SOURCE")
        assert httpx.get(base + NOTES, headers=WRITE).json()["notes"] == []  # reads answer, with none


def test_the_notifications_a_run_sent_are_listed_for_its_page(writable):
    from tau_collector.expstore import open_store, record_run_events
    from tau_collector.reads import RunEvent

    store = open_store(writable.store_root, writable=True)
    record_run_events(store, [RunEvent("run-a", "2026-01-02T03:04:05Z", "notification", "tau-collector-wrap",
                                       "warning", "finished notification to https://hooks.example failed after 4 "
                                       "attempt(s): refused", {"trigger": "finished", "outcome": "failed",
                                                               "url": "https://hooks.example", "attempts": 4,
                                                               "status": None})])
    store.close()
    body = writable.get("/stellar/data/runs/run-a/notifications", headers=WRITE).json()
    assert body["notifications"] == [{"time": "2026-01-02T03:04:05Z", "severity": "warning",
                                      "message": "finished notification to https://hooks.example failed after 4 "
                                                 "attempt(s): refused", "trigger": "finished", "outcome": "failed",
                                      "url": "https://hooks.example", "attempts": 4}]
    from taunotebook.client import PortalClient

    with PortalClient(str(writable.base_url), TOKEN, retries=0) as client:  # and the client reads them
        sent = client.notifications("run-a")
    assert [(n.trigger, n.outcome, n.attempts) for n in sent] == [("finished", "failed", 4)]
