"""The Portal client: typed reads, TauGrid's errors as exceptions, retries, configuration, and Stellar links."""

from __future__ import annotations

import json
import math
import pickle
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest

from fixtures.portal import LOSS_POINTS, PAGE_RUNS, TOKEN, serve
from taunotebook.client import (
    ENV_TOKEN,
    ENV_URL,
    AuthorizationError,
    ClientError,
    DependencyError,
    InternalError,
    Metadata,
    MetricSummary,
    NotFoundError,
    PortalClient,
    PortalError,
    PortalUnreachable,
    Run,
    stellar_link,
    stellar_url,
)
from taunotebook.client.links import path_segment

# ---------------------------------------------------------------------------------------------------------------
# Stand-ins for TauGrid's real Portal, which cannot run here: a tiny HTTP server on 127.0.0.1 answering a script of
# responses. They model what the real Portal's boundary and gateways send (non-envelope bodies, Retry-After,
# proxies' HTML pages, fields newer than this client) — shapes our own server never produces.


@dataclass
class Seen:
    path: str
    query: list[tuple[str, str]]
    headers: dict[str, str]


@dataclass
class Scripted:
    """Answers requests with ``replies`` in order (the last one repeats) and records every request."""

    replies: list[tuple[int, dict[str, str], bytes]]
    seen: list[Seen] = field(default_factory=list)
    url: str = ""


def reply(status: int, body: object = None, headers: dict[str, str] | None = None, raw: bytes | None = None):
    data = raw if raw is not None else json.dumps(body).encode()
    return status, {"Content-Type": "application/json", **(headers or {})}, data


@pytest.fixture
def scripted() -> Iterator[Scripted]:
    script = Scripted(replies=[])

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            parts = urlsplit(self.path)
            script.seen.append(Seen(parts.path, parse_qsl(parts.query, keep_blank_values=True),
                                    {k.lower(): v for k, v in self.headers.items()}))
            status, headers, body = script.replies[min(len(script.seen), len(script.replies)) - 1]
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    script.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield script
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class RecordingClient(PortalClient):
    """The real client, with its pauses recorded instead of slept so the tests stay fast and exact."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.sleeps: list[float] = []

    def _sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)


def envelope(status: int, code: str, message: str) -> tuple[int, dict[str, str], bytes]:
    classification = {401: "authorization", 403: "authorization", 404: "not_found", 502: "dependency",
                      503: "dependency", 504: "dependency"}.get(status, "internal" if status >= 500 else "client")
    return reply(status, {"error": {"code": code, "message": message, "classification": classification,
                                    "retryable": status >= 500}})


METADATA = {
    "generated_at": "2026-01-02T03:04:05Z",
    "provenance": {"requested_source": "local", "served_sources": ["local"]},
    "freshness": {"state": "immediate", "as_of": "2026-01-02T03:04:05Z"},
    "availability": {"state": "available"},
    "partial": False,
}

RUN = {
    "run_id": "seed-1", "experiment_id": "exp-a", "project": "proj", "run_group_id": "baseline", "state": "running",
    "lifecycle_state": "active", "successful": False, "success_reasons": [], "created_at": "2026-01-01T00:00:00Z",
    "tags": {"tau_workspace": "default"}, "metric_names": ["train/loss"], "source": "local",
}


# ------------------------------------------------------------------------------------------- stand-in: shapes


def test_fields_a_newer_portal_adds_are_kept_in_extra(scripted):
    run = {**RUN, "cost_usd": 1.5, "labels": {"a": "b"}}
    meta = {**METADATA, "trace_id": "t-1", "availability": {"state": "available", "since": "x"}}
    scripted.replies = [reply(200, {"metadata": meta, "run": run, "links": {"self": "/x"}})]
    with PortalClient(scripted.url, "tok") as client:
        got = client.run("seed-1")
    assert got.extra == {"cost_usd": 1.5, "labels": {"a": "b"}}
    assert got.metadata.extra == {"trace_id": "t-1"}
    assert got.metadata.availability.extra == {"since": "x"}
    assert got.response_extra == {"links": {"self": "/x"}}
    assert got.experiment_id == "exp-a" and got.parent_run_id is None


def test_series_points_become_compact_columns_and_non_finite_values_survive(scripted):
    body = {"metadata": {**METADATA, "partial": True}, "target": "exp-a", "run_id": "seed-1", "metric": "loss",
            "max_points": 3, "source_points": 10, "returned_points": 3,
            "points": [{"step": 1, "value": 0.5}, {"step": 5, "value": None, "wall_time": 7},
                       {"step": 2**40, "value": "-Infinity"}]}
    scripted.replies = [reply(200, body)]
    with PortalClient(scripted.url, "tok") as client:
        s = client.series("seed-1", "loss", target="exp-a")
    assert s.steps.typecode == "q" and s.values.typecode == "d"
    assert list(s.steps) == [1, 5, 2**40]
    assert s.values[0] == 0.5 and math.isnan(s.values[1]) and s.values[2] == -math.inf
    assert s.point_extra == ({}, {"wall_time": 7}, {})
    assert s.partial is True and (s.source_points, s.returned_points, s.max_points) == (10, 3, 3)


def test_series_sends_taugrids_parameter_names_with_defaults_from_the_constructor(scripted):
    scripted.replies = [reply(200, {"metadata": METADATA, "points": []})]
    with PortalClient(scripted.url, "tok", source="kusto", workspace="ws", project="proj") as client:
        client.series("seed-1", "train/loss", start_step=10, end_step=20, step_interval=2, max_points=100)
    (req,) = scripted.seen
    assert req.path == "/api/v2/stellar/runs/seed-1/series"
    assert sorted(req.query) == sorted([
        ("source", "kusto"), ("workspace", "ws"), ("target", "seed-1"), ("metric", "train/loss"),
        ("start_step", "10"), ("end_step", "20"), ("step_interval", "2"), ("max_points", "100"), ("project", "proj"),
    ])
    assert req.headers["authorization"] == "Bearer tok"


def test_unset_series_limits_are_left_to_the_server(scripted):
    scripted.replies = [reply(200, {"metadata": METADATA, "points": []})]
    with PortalClient(scripted.url, "tok") as client:
        client.series("r", "m")
    assert scripted.seen[0].query == [("target", "r"), ("metric", "m")]


def test_path_ids_are_escaped_so_dot_segments_reach_the_server(scripted):
    scripted.replies = [envelope(400, "INVALID_PATH", "invalid run id")]
    with PortalClient(scripted.url, "tok") as client:
        with pytest.raises(ClientError):
            client.metrics("..")
        with pytest.raises(ClientError):
            client.metrics("a/b c")
    assert [s.path for s in scripted.seen] == ["/api/v2/stellar/runs/%2E%2E/metrics",
                                                "/api/v2/stellar/runs/a%2Fb%20c/metrics"]


def test_a_base_url_with_a_path_prefix_keeps_it(scripted):
    scripted.replies = [reply(200, {"metadata": METADATA, "run_id": "r", "metrics": []})]
    with PortalClient(scripted.url + "/user/me/tau-portal/", "tok") as client:
        client.metrics("r")
    assert scripted.seen[0].path == "/user/me/tau-portal/api/v2/stellar/runs/r/metrics"


def test_listing_filters_and_list_values_become_repeated_parameters(scripted):
    scripted.replies = [reply(200, {"metadata": METADATA, "target": "exp-a", "runs": [RUN]})]
    with PortalClient(scripted.url, "tok") as client:
        page = client.experiment_runs("exp-a", limit=5, tag=["a=1", "b=2"], state="running", q=None)
    assert scripted.seen[0].path == "/api/v2/stellar/experiments/exp-a/runs"
    assert scripted.seen[0].query == [("limit", "5"), ("tag", "a=1"), ("tag", "b=2"), ("state", "running")]
    assert page.next_cursor is None and [r.run_id for r in page] == ["seed-1"]


def test_a_server_repeating_a_cursor_stops_the_iterator_with_an_error(scripted):
    scripted.replies = [reply(200, {"metadata": METADATA, "target": "e", "runs": [RUN], "next_cursor": "c1"})]
    with PortalClient(scripted.url, "tok") as client, pytest.raises(ClientError, match="CURSOR_LOOP"):
        list(client.iter_experiment_runs("e"))
    assert len(scripted.seen) == 2


# ------------------------------------------------------------------------------------------- stand-in: errors


def test_portal_boundary_error_string_becomes_a_typed_error(scripted):
    scripted.replies = [reply(403, {"error": "workspace route not allowed"})]
    with RecordingClient(scripted.url, "tok") as client, pytest.raises(AuthorizationError) as info:
        client.run("seed-1")
    err = info.value
    assert (err.status, err.code, err.message, err.classification, err.retryable) == (
        403, "FORBIDDEN", "workspace route not allowed", "authorization", False)
    assert len(scripted.seen) == 1 and client.sleeps == []
    assert ENV_TOKEN in str(err)


def test_portal_boundary_reason_scope_state_becomes_a_readable_error(scripted):
    scripted.replies = [reply(404, {"reason": "workspace not found", "scope": "workspace", "state": "missing"})]
    with PortalClient(scripted.url, "tok") as client, pytest.raises(NotFoundError) as info:
        client.metrics("seed-1")
    assert info.value.message == "workspace not found (scope=workspace, state=missing)"
    assert info.value.status == 404 and info.value.code == "NOT_FOUND"


def test_deprecated_api_error_keeps_its_code_and_detail(scripted):
    scripted.replies = [reply(400, {"error": "Bad Request", "code": "INVALID_ARGUMENT", "detail": "bad max_points",
                                    "status": 400})]
    with PortalClient(scripted.url, "tok") as client, pytest.raises(ClientError) as info:
        client.series("r", "m")
    assert (info.value.code, info.value.message) == ("INVALID_ARGUMENT", "Bad Request: bad max_points")


def test_a_proxy_html_502_is_a_retryable_dependency_error(scripted):
    page = b"<html><head><title>502 Bad Gateway</title></head></html>"
    scripted.replies = [reply(502, raw=page, headers={"Content-Type": "text/html"}),
                        reply(200, {"metadata": METADATA, "run": RUN})]
    with RecordingClient(scripted.url, "tok", backoff=0.5) as client:
        assert client.run("seed-1").run_id == "seed-1"
    assert len(scripted.seen) == 2 and client.sleeps == [0.5]


def test_envelope_retryable_false_is_not_retried_even_on_a_5xx(scripted):
    scripted.replies = [reply(500, {"error": {"code": "INTERNAL", "message": "boom", "classification": "internal",
                                              "retryable": False}})]
    with RecordingClient(scripted.url, "tok") as client, pytest.raises(InternalError) as info:
        client.run("r")
    assert len(scripted.seen) == 1 and info.value.attempts == 1 and info.value.retryable is False


def test_retryable_503_is_retried_with_exponential_backoff_then_succeeds(scripted):
    scripted.replies = [envelope(503, "SOURCE_UNAVAILABLE", "kusto down")] * 2 + [
        reply(200, {"metadata": METADATA, "run": RUN})]
    with RecordingClient(scripted.url, "tok", backoff=0.25, retries=3) as client:
        assert client.run("seed-1").run_id == "seed-1"
    assert len(scripted.seen) == 3
    assert client.sleeps == [0.25, 0.5]


def test_retry_after_seconds_replace_the_backoff(scripted):
    busy = envelope(503, "SOURCE_UNAVAILABLE", "busy")
    scripted.replies = [(busy[0], {**busy[1], "Retry-After": "7"}, busy[2]), reply(200, {"metadata": METADATA,
                                                                                         "run": RUN})]
    with RecordingClient(scripted.url, "tok", backoff=0.25) as client:
        client.run("seed-1")
    assert client.sleeps == [7.0]


def test_retries_exhausted_raise_the_last_error_with_the_attempt_count(scripted):
    scripted.replies = [envelope(504, "UPSTREAM_TIMEOUT", "kusto timed out")]
    with RecordingClient(scripted.url, "tok", retries=2, backoff=1) as client, pytest.raises(DependencyError) as info:
        client.metrics("seed-1")
    err = info.value
    assert (err.status, err.code, err.message, err.retryable, err.attempts) == (
        504, "UPSTREAM_TIMEOUT", "kusto timed out", True, 3)
    assert len(scripted.seen) == 3 and client.sleeps == [1, 2]
    assert "gave up after 3 attempts" in str(err)


def test_errors_survive_pickling_with_every_field(scripted):
    scripted.replies = [envelope(504, "UPSTREAM_TIMEOUT", "kusto timed out")]
    with RecordingClient(scripted.url, "tok", retries=1) as client, pytest.raises(DependencyError) as info:
        client.run("r")
    copy = pickle.loads(pickle.dumps(info.value))
    assert type(copy) is DependencyError
    assert (copy.status, copy.code, copy.message, copy.classification, copy.retryable, copy.attempts, copy.url) == (
        504, "UPSTREAM_TIMEOUT", "kusto timed out", "dependency", True, 2, info.value.url)
    assert str(copy) == str(info.value)


def test_a_redirect_to_a_login_page_is_an_error_naming_the_location(scripted):
    scripted.replies = [reply(302, raw=b"", headers={"Location": "/hub/login"})]
    with PortalClient(scripted.url, "tok") as client, pytest.raises(ClientError, match="/hub/login"):
        client.run("r")


def test_a_success_that_is_not_json_is_an_error_not_a_crash(scripted):
    scripted.replies = [reply(200, raw=b"<html>Jupyter</html>", headers={"Content-Type": "text/html"})]
    with PortalClient(scripted.url, "tok") as client, pytest.raises(InternalError) as info:
        client.run("r")
    assert info.value.code == "INVALID_RESPONSE"


def test_json_that_is_not_the_v2_shape_is_an_invalid_response_error(scripted):
    scripted.replies = [reply(200, {"metadata": METADATA, "points": [{"value": 1.0}]}), reply(200, {"run": None})]
    with RecordingClient(scripted.url, "tok") as client:
        with pytest.raises(InternalError, match="KeyError: 'step'") as info:
            client.series("r", "m")
        assert info.value.code == "INVALID_RESPONSE" and info.value.retryable is False
        with pytest.raises(InternalError, match="run: expected a JSON object"):
            client.run("r")
    assert len(scripted.seen) == 2 and client.sleeps == []


def test_a_timestamp_this_python_cannot_parse_is_kept_in_extra(scripted):
    meta = {**METADATA, "generated_at": "Tuesday noon"}
    scripted.replies = [reply(200, {"metadata": meta, "run_id": "r", "metrics": []})]
    with PortalClient(scripted.url, "tok") as client:
        got = client.metrics("r")
    assert got.metadata.generated_at is None and got.metadata.extra == {"generated_at": "Tuesday noon"}
    assert got.metadata.freshness.as_of is not None


def test_a_retry_after_date_in_the_past_means_retry_now(scripted):
    busy = envelope(503, "SOURCE_UNAVAILABLE", "busy")
    scripted.replies = [(busy[0], {**busy[1], "Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, busy[2]),
                        reply(200, {"metadata": METADATA, "run": RUN})]
    with RecordingClient(scripted.url, "tok", backoff=0.25) as client:
        client.run("seed-1")
    assert client.sleeps == [0.0]


def test_connection_refused_is_unreachable_after_every_retry():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # Nothing listens on the port now: every attempt is refused.
    with RecordingClient(f"http://127.0.0.1:{port}", "tok", retries=2, backoff=0.1) as client:
        with pytest.raises(PortalUnreachable) as info:
            client.run("seed-1")
    err = info.value
    assert err.status is None and err.retryable is True and err.attempts == 3
    assert client.sleeps == [0.1, 0.2]
    assert ENV_URL in str(err)
    assert isinstance(err, PortalError)


def test_a_server_that_never_answers_times_out_as_unreachable():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        # The kernel completes the handshake from the backlog; nobody ever reads or answers.
        with RecordingClient(f"http://127.0.0.1:{port}", "tok", retries=1, backoff=0, timeout=0.2) as client:
            with pytest.raises(PortalUnreachable, match="Timeout"):
                client.run("seed-1")
    assert client.sleeps == [0]


def test_error_messages_do_not_echo_a_token_from_the_url(scripted):
    scripted.replies = [envelope(404, "NOT_FOUND", "requested experiment data was not found")]
    with PortalClient(scripted.url + "/?token=s3cret") as client, pytest.raises(NotFoundError) as info:
        client.run("nope")
    assert "s3cret" not in str(info.value)
    assert scripted.seen[0].headers["authorization"] == "Bearer s3cret"


# ------------------------------------------------------------------------------------------- configuration


def test_url_and_token_come_from_the_environment(scripted, monkeypatch):
    monkeypatch.setenv(ENV_URL, scripted.url)
    monkeypatch.setenv(ENV_TOKEN, "from-env")
    scripted.replies = [reply(200, {"metadata": METADATA, "run": RUN})]
    with PortalClient() as client:
        client.run("seed-1")
    assert scripted.seen[0].headers["authorization"] == "Bearer from-env"


def test_arguments_win_over_the_environment(scripted, monkeypatch):
    monkeypatch.setenv(ENV_URL, "http://127.0.0.1:9/never")
    monkeypatch.setenv(ENV_TOKEN, "from-env")
    scripted.replies = [reply(200, {"metadata": METADATA, "run": RUN})]
    with PortalClient(scripted.url, "from-arg") as client:
        client.run("seed-1")
    assert scripted.seen[0].headers["authorization"] == "Bearer from-arg"


def test_a_token_in_the_given_url_wins_over_the_environment(scripted, monkeypatch):
    monkeypatch.setenv(ENV_TOKEN, "stale")
    scripted.replies = [reply(200, {"metadata": METADATA, "run": RUN})]
    with PortalClient(scripted.url + "/stellar?token=fresh") as client:
        client.run("seed-1")
    assert scripted.seen[0].headers["authorization"] == "Bearer fresh"


def test_no_url_anywhere_names_the_environment_variables(monkeypatch):
    monkeypatch.delenv(ENV_URL, raising=False)
    monkeypatch.delenv(ENV_TOKEN, raising=False)
    with pytest.raises(ValueError) as info:
        PortalClient()
    assert ENV_URL in str(info.value) and ENV_TOKEN in str(info.value)


@pytest.mark.parametrize("printed", ["{root}/stellar?token=tok", "{root}/api/v2/stellar", "{root}/api/v2/stellar/",
                                     "{root}/"])
def test_either_url_the_portal_prints_names_the_same_portal(scripted, printed):
    scripted.replies = [reply(200, {"metadata": METADATA, "run": RUN})]
    with PortalClient(printed.format(root=scripted.url + "/user/me/tau-portal"), "tok") as client:
        client.run("seed-1")
        assert client.stellar_url("r") == scripted.url + "/user/me/tau-portal/stellar?target=r"
    assert scripted.seen[0].path == "/user/me/tau-portal/api/v2/stellar/runs/seed-1"


def test_a_url_that_is_not_http_is_refused_at_construction():
    with pytest.raises(ValueError, match="http"):
        PortalClient("127.0.0.1:8000", "tok")


# ------------------------------------------------------------------------------------------- stellar_url


def test_stellar_url_is_taugrids_target_link():
    assert stellar_url("seed-1", base="") == "/stellar?target=seed-1"
    assert stellar_url("seed-1", "proj", base="") == "/stellar?target=seed-1&project=proj"


def test_stellar_url_query_escapes_like_go():
    assert stellar_url(" a b/c~d.e_f-g ", base="") == "/stellar?target=a+b%2Fc~d.e_f-g"
    assert stellar_url("r", "p&q=é", base="") == "/stellar?target=r&project=p%26q%3D%C3%A9"


def test_stellar_url_with_a_workspace_sorts_the_keys():
    assert stellar_url("run 1", "my proj", base="", workspace="team ws") == (
        "/stellar?project=my+proj&target=run+1&workspace=team+ws")
    assert stellar_url("run1", base="", workspace="ws") == "/stellar?target=run1&workspace=ws"


def test_stellar_url_carries_a_source_in_the_sorted_query():
    assert stellar_url("r", "p", base="", source="kusto") == "/stellar?project=p&source=kusto&target=r"
    assert stellar_url("r", base="", workspace="ws", source="auto") == "/stellar?source=auto&target=r&workspace=ws"
    with PortalClient("http://127.0.0.1:8765/", source="Kusto") as client:
        assert client.source == "kusto"
        assert client.stellar_url("r") == "http://127.0.0.1:8765/stellar?source=kusto&target=r"


def test_stellar_url_blank_run_gives_no_link_and_blank_project_is_dropped():
    assert stellar_url("  ", "proj", base="http://h") == ""
    assert stellar_url("r", "  ", base="") == "/stellar?target=r"


def test_stellar_url_sits_under_the_base_url_without_its_token(monkeypatch):
    assert stellar_url("r", base="http://127.0.0.1:8765/user/me/tau-portal/?token=abc") == (
        "http://127.0.0.1:8765/user/me/tau-portal/stellar?target=r")
    monkeypatch.setenv(ENV_URL, "http://127.0.0.1:8765")
    assert stellar_url("r") == "http://127.0.0.1:8765/stellar?target=r"


def test_stellar_url_under_a_path_only_base_is_a_path_link():
    assert stellar_url("r", "p", base="/user/me/tau-portal/") == "/user/me/tau-portal/stellar?target=r&project=p"


def test_client_stellar_url_uses_its_base_workspace_and_project():
    with PortalClient("http://127.0.0.1:8765/?token=t", workspace="ws", project="p") as client:
        assert client.stellar_url("r") == "http://127.0.0.1:8765/stellar?project=p&target=r&workspace=ws"
        assert client.stellar_url("r", "other", base="") == "/stellar?project=other&target=r&workspace=ws"



def test_stellar_url_with_compared_runs_lists_each_other_run_once_escaped():
    assert stellar_url("r", "p", base="", compare=["b c", "r", "d,e", "b c", " "]) == (
        "/stellar?target=r&project=p&compare=b+c,d%2Ce")


def test_stellar_link_outside_jupyter_names_the_workspace_and_the_compared_runs(monkeypatch):
    for name in ("JUPYTERHUB_SERVICE_PREFIX", "JPY_PARENT_PID"):
        monkeypatch.delenv(name, raising=False)
    assert stellar_link("r", "p", portal_url="http://127.0.0.1:9/?token=t", workspace="ws", compare=["b"]) == (
        "http://127.0.0.1:9/stellar?project=p&target=r&workspace=ws&compare=b")


def test_stellar_link_inside_jupyter_goes_through_the_proxy_without_a_workspace(monkeypatch):
    monkeypatch.setenv("JUPYTERHUB_SERVICE_PREFIX", "/user/ada")
    assert stellar_link("r", "p", portal_url="http://127.0.0.1:9", workspace="ws", compare=["b"]) == (
        "/user/ada/tau-portal/stellar?target=r&project=p&compare=b")


@pytest.mark.parametrize(("run_id", "segment"), [
    ("pct%61x", "pct%2561x"), ("a/b", "a%2Fb"), ("a b", "a%20b"), ("été", "%C3%A9t%C3%A9"), (".", "%2E"),
    ("..", "%2E%2E"), ("run-1.a_b~c", "run-1.a_b~c"),
])
def test_a_path_segment_escapes_every_byte_an_id_could_be_misread_by(run_id, segment):
    assert path_segment(run_id, "run_id") == segment

# ---------------------------------------------------------------------------------------------------------------
# Against the real local Portal (conftest's ``portal_server``), comparing every typed result with the JSON body of the
# very response it was built from (two requests would differ in ``generated_at`` across a second boundary).


class CountingTransport(httpx.HTTPTransport):
    """httpx's real transport, keeping the requests that go out on the wire and the JSON bodies that come back."""

    def __init__(self):
        super().__init__()
        self.requests: list[httpx.Request] = []
        self.bodies: list[object] = []

    def handle_request(self, request):
        self.requests.append(request)
        response = super().handle_request(request)
        response.read()  # the client reads the same cached bytes afterwards
        self.bodies.append(json.loads(response.content))
        return response


def _metadata_matches(meta: Metadata, raw: dict) -> None:
    assert meta.generated_at is not None and meta.generated_at.isoformat().replace("+00:00", "Z") == (
        raw["generated_at"])
    assert meta.provenance.requested_source == raw["provenance"]["requested_source"]
    assert list(meta.provenance.served_sources) == raw["provenance"]["served_sources"]
    assert meta.freshness.state == raw["freshness"]["state"]
    assert meta.freshness.as_of.isoformat().replace("+00:00", "Z") == raw["freshness"]["as_of"]
    assert meta.availability.state == raw["availability"]["state"]
    assert list(meta.availability.reasons) == raw["availability"].get("reasons", [])
    assert meta.partial is raw["partial"]
    assert list(meta.warnings) == raw.get("warnings", [])
    assert meta.extra == {}


def _plain(value):
    return list(value) if isinstance(value, tuple) else value


def _mirrors(obj, raw: dict, skip: tuple[str, ...] = ()) -> None:
    """Every field the server sent is on the typed object (or in its extra) with the same value."""
    for key, value in raw.items():
        if key in skip:
            continue
        assert _plain(getattr(obj, key)) == value, key
    assert obj.extra == {}


def _run_matches(run: Run, raw: dict) -> None:
    _mirrors(run, raw)
    assert run.success_reasons == tuple(raw.get("success_reasons", ()))


def test_run_is_typed_and_equals_the_servers_json(portal_server):
    transport = CountingTransport()
    with PortalClient(portal_server.base_url, portal_server.token, transport=transport) as client:
        run = client.run("run-a")
    (raw,) = transport.bodies
    _run_matches(run, raw["run"])
    _metadata_matches(run.metadata, raw["metadata"])
    assert (run.run_id, run.experiment_id, run.project, run.state) == ("run-a", "exp-1", "proj", "succeeded")
    assert run.response_extra == {}


def test_metrics_are_typed_summaries_equal_to_the_servers_json(portal_server):
    transport = CountingTransport()
    with PortalClient(portal_server.base_url, portal_server.token, transport=transport) as client:
        got = client.metrics("run-b")
    (raw,) = transport.bodies
    _metadata_matches(got.metadata, raw["metadata"])
    assert got.run_id == raw["run_id"] == "run-b"
    assert len(got) == len(raw["metrics"]) == 1
    for summary, expected in zip(got, raw["metrics"], strict=True):
        assert isinstance(summary, MetricSummary)
        _mirrors(summary, expected)
    loss = got["train/loss"]
    assert loss.non_finite_count == 2 and loss.count == loss.finite_count + 2


def test_series_columns_equal_the_servers_points_and_partial_comes_from_metadata(portal_server):
    transport = CountingTransport()
    with PortalClient(portal_server.base_url, portal_server.token, transport=transport) as client:
        s = client.series("run-a", "train/loss", max_points=500)
    (raw,) = transport.bodies
    _metadata_matches(s.metadata, raw["metadata"])
    _mirrors(s, raw, skip=("metadata", "points"))
    assert list(s.steps) == [p["step"] for p in raw["points"]]
    assert list(s.values) == [p["value"] for p in raw["points"]]
    assert s.partial is True and s.source_points == LOSS_POINTS and s.returned_points == len(s) <= 500
    assert s.target == s.run_id == "run-a"


def test_a_series_range_is_returned_in_full(portal_server):
    with PortalClient(portal_server.base_url, portal_server.token) as client:
        s = client.series("run-a", "train/loss", start_step=100, end_step=199)
    assert list(s.steps) == list(range(100, 200))
    assert s.partial is False and s.source_points == s.returned_points == 100
    assert (s.start_step, s.end_step, s.max_points) == (100, 199, 8000)


def test_series_target_may_be_the_experiment(portal_server):
    with PortalClient(portal_server.base_url, portal_server.token, project="proj") as client:
        s = client.series("run-b", "train/loss", target="exp-1")
    assert s.target == "exp-1" and s.run_id == "run-b"
    assert dict(zip(s.steps, s.values, strict=True))[5] == 0.55  # the later write of step 5 wins


def test_experiment_runs_page_equals_the_servers_json(portal_server):
    transport = CountingTransport()
    with PortalClient(portal_server.base_url, portal_server.token, transport=transport) as client:
        page = client.experiment_runs("exp-1")
    (raw,) = transport.bodies
    _metadata_matches(page.metadata, raw["metadata"])
    assert page.target == raw["target"] and page.next_cursor is None and page.extra == {}
    assert len(page) == len(raw["runs"])
    for run, expected in zip(page, raw["runs"], strict=True):
        _run_matches(run, expected)
        assert run.metadata is None
    assert {r.run_id for r in page} == {"run-a", "run-b"}  # run-other belongs to another workspace


def test_the_iterator_follows_cursors_and_visits_every_run_once(portal_server, api):
    everything = [r["run_id"] for r in api.get("/api/v2/stellar/experiments/exp-page/runs").json()["runs"]]
    transport = CountingTransport()
    with PortalClient(portal_server.base_url, portal_server.token, transport=transport) as client:
        pages = list(client.iter_experiment_run_pages("exp-page", limit=3))
        runs = [r.run_id for r in client.iter_experiment_runs("exp-page", limit=3)]
    assert [len(p) for p in pages] == [3, 3, 1]
    assert [p.next_cursor is None for p in pages] == [False, False, True]
    assert runs == everything and sorted(runs) == PAGE_RUNS
    assert len(transport.requests) == 6
    assert [dict(r.url.params).get("cursor") for r in transport.requests[:3]] == [None, pages[0].next_cursor,
                                                                                    pages[1].next_cursor]


def test_no_token_is_an_authorization_error_naming_the_variable(portal_server, monkeypatch):
    monkeypatch.delenv(ENV_TOKEN, raising=False)
    transport = CountingTransport()
    with PortalClient(portal_server.base_url, transport=transport) as client, pytest.raises(AuthorizationError) as info:
        client.run("run-a")
    err = info.value
    assert (err.status, err.classification, err.retryable, err.attempts) == (401, "authorization", False, 1)
    assert err.code == "UNAUTHORIZED" and ENV_TOKEN in str(err)
    assert len(transport.requests) == 1


def test_a_wrong_token_is_an_authorization_error(portal_server):
    with PortalClient(portal_server.base_url, "not-the-token") as client, pytest.raises(AuthorizationError) as info:
        client.metrics("run-a")
    assert info.value.status == 401


def test_the_token_printed_in_the_portal_url_is_used_as_bearer(portal_server, monkeypatch):
    monkeypatch.delenv(ENV_TOKEN, raising=False)
    with PortalClient(f"{portal_server.base_url}/?token={TOKEN}") as client:
        assert client.run("run-a").run_id == "run-a"


def test_a_missing_run_is_not_found_with_the_servers_code_and_message(portal_server):
    with PortalClient(portal_server.base_url, portal_server.token) as client:
        for run_id in ("no-such-run", "run-other"):
            with pytest.raises(NotFoundError) as info:
                client.run(run_id)
            err = info.value
            assert (err.status, err.code, err.message, err.classification, err.retryable) == (
                404, "NOT_FOUND", "requested experiment data was not found", "not_found", False)


def test_invalid_argument_is_a_client_error_sent_once(portal_server):
    transport = CountingTransport()
    with RecordingClient(portal_server.base_url, portal_server.token, transport=transport) as client:
        with pytest.raises(ClientError) as info:
            client.series("run-a", "train/loss", max_points=0)
    err = info.value
    assert (err.status, err.code, err.message, err.classification, err.retryable) == (
        400, "INVALID_ARGUMENT", "max_points must be at least 1", "client", False)
    assert len(transport.requests) == 1 and err.attempts == 1 and client.sleeps == []


def test_a_dot_dot_run_id_reaches_the_server_as_invalid_path(portal_server):
    with PortalClient(portal_server.base_url, portal_server.token) as client, pytest.raises(ClientError) as info:
        client.metrics("..")
    assert (info.value.status, info.value.code) == (400, "INVALID_PATH")


def test_a_foreign_workspace_is_forbidden(portal_server):
    with PortalClient(portal_server.base_url, portal_server.token, workspace="other") as client:
        with pytest.raises(AuthorizationError) as info:
            client.run("run-a")
    assert (info.value.status, info.value.code) == (403, "WORKSPACE_FORBIDDEN")


def test_an_unavailable_source_is_retried_then_raised_with_the_attempts(portal_server):
    transport = CountingTransport()
    with RecordingClient(portal_server.base_url, portal_server.token, source="kusto", retries=2, backoff=0.5,
                         transport=transport) as client:
        with pytest.raises(DependencyError) as info:
            client.metrics("run-a")
    err = info.value
    assert (err.status, err.code, err.classification, err.retryable, err.attempts) == (
        503, "SOURCE_UNAVAILABLE", "dependency", True, 3)
    assert len(transport.requests) == 3 and client.sleeps == [0.5, 1.0]
    assert all(dict(r.url.params)["source"] == "kusto" for r in transport.requests)


def test_a_per_call_source_overrides_the_constructors(portal_server):
    with PortalClient(portal_server.base_url, portal_server.token, source="kusto", retries=0) as client:
        assert client.run("run-a", source="local").metadata.provenance.requested_source == "local"


def test_a_portal_serving_another_workspace_shows_its_runs_only(portal_server):
    with serve(portal_server.store_path, workspace="other") as other:
        with PortalClient(f"http://127.0.0.1:{other.port}", TOKEN, workspace="other") as client:
            assert client.run("run-other").tags == {"tau_workspace": "other"}
            with pytest.raises(NotFoundError):
                client.run("run-a")
