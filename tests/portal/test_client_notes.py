"""Notes and tags from Python: the client's writes and the run handle (``run.note``, ``run.notes``, ``run.tags``)
against a real Portal on 127.0.0.1."""

from __future__ import annotations

import getpass

import httpx
import pytest

from fixtures.portal import TOKEN, build_store, serve
from taunotebook.client import ClientError, NotFoundError, PortalClient, RunTags


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    root = build_store(tmp_path_factory.mktemp("client-notes") / "store")
    with serve(root) as server, PortalClient(f"http://127.0.0.1:{server.port}", TOKEN, retries=0) as c:
        yield c


def test_run_note_and_notes_read_back_in_order_with_author_and_time(client):
    run = client.run_handle("run-b")
    first = run.note("lr too high")
    second = run.note("restarted with 3e-4", author="bo")
    notes = run.notes()
    assert [(n.text, n.author) for n in notes][-2:] == [("lr too high", getpass.getuser()), ("restarted with 3e-4", "bo")]
    assert notes[-1] == second and first.created_at.endswith("Z")


def test_a_retried_note_is_one_note(client):
    # The client sends an idempotency key with each note: the same key again (a retry after a lost answer) is the
    # note written the first time.
    a = client.add_note("run-b", "once", idempotency_key="client-key-1")
    b = client.add_note("run-b", "once", idempotency_key="client-key-1")
    assert a == b and [n.text for n in client.notes("run-b")].count("once") == 1
    with pytest.raises(ClientError) as err:
        client.add_note("run-b", "twice", idempotency_key="client-key-1")
    assert err.value.status == 409 and err.value.code == "CONFLICT"


def test_run_tags_is_a_mapping_read_and_written_through_the_portal(client):
    tags = client.run_handle("run-b").tags
    assert isinstance(tags, RunTags)
    tags["verdict"] = "keep"
    assert tags["verdict"] == "keep" and "verdict" in tags and dict(tags)["verdict"] == "keep"
    assert client.run("run-b").tags["verdict"] == "keep"
    del tags["verdict"]
    assert "verdict" not in tags
    with pytest.raises(KeyError):
        del tags["verdict"]
    with pytest.raises(TypeError, match="tags are text"):
        tags["n"] = 3  # type: ignore[assignment]


def test_a_reserved_key_and_a_missing_run_are_typed_errors_in_words(client):
    with pytest.raises(ClientError, match="reserved for the collector"):
        client.run_handle("run-a").tags["tau_workspace"] = "other"
    with pytest.raises(NotFoundError):
        client.run_handle("no-such-run").note("x")


def test_the_write_header_carries_the_token_and_reads_do_not(client):
    seen: list[httpx.Request] = []
    transport = httpx.MockTransport(lambda r: (seen.append(r), httpx.Response(404, json={"error": {
        "code": "NOT_FOUND", "message": "m", "classification": "not_found", "retryable": False}}))[1])
    with PortalClient("http://127.0.0.1:1", TOKEN, transport=transport, retries=0) as mocked:
        for call in (lambda: mocked.notes("r"), lambda: mocked.add_note("r", "t"), lambda: mocked.set_tag("r", "k", "v"),
                     lambda: mocked.delete_tag("r", "k")):
            with pytest.raises(NotFoundError):
                call()
    assert [r.method for r in seen] == ["GET", "POST", "PUT", "DELETE"]
    assert "x-tau-token" not in seen[0].headers
    assert all(r.headers["x-tau-token"] == TOKEN for r in seen[1:])
    assert seen[1].headers["content-type"] == "application/json"


def test_a_submitted_run_writes_its_notes_and_tags_through_its_portal(client):
    from taunotebook.submission import SubmittedRun

    run = SubmittedRun({"run_id": "run-b", "name": "b", "project": "proj", "experiment": "exp-1", "group": "g1",
                        "workspace": "default", "backend": "local"})
    run.portal = lambda: PortalClient(client.base_url, TOKEN, retries=0)  # its own Portal: here, the test's
    run.note("from the submitting notebook")
    run.tags["stage"] = "tuned"
    assert run.notes()[-1].text == "from the submitting notebook"
    assert run.tags["stage"] == "tuned" and client.run("run-b").tags["stage"] == "tuned"
