"""The Host allow-list: loopback names and IP addresses always, other names only when the Portal was told so."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import httpx
import pytest

from fixtures.portal import TOKEN, serve
from taunotebook.portal.hosts import ENV_ALLOW_HOSTS, host_name

from ..polling import DEADLINE

RUN = "/api/v2/stellar/runs/run-a"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _get(base: str, host: str, path: str = RUN, **headers: str) -> httpx.Response:
    return httpx.get(base + path, headers={**AUTH, "Host": host, **headers})


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST:8765", "127.0.0.1", "127.0.0.1:8765", "[::1]:8765",
                                  "app.localhost", "10.1.2.3:80", "[fe80::1]", "localhost."])
def test_loopback_names_and_ip_addresses_are_always_answered(portal_server, host):
    assert _get(portal_server.base_url, host).status_code == 200


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8765", "localhost.evil.example", "127.0.0.1.nip.io",
                                  "example"])
def test_another_name_is_refused_in_words_naming_the_flag(portal_server, host):
    response = _get(portal_server.base_url, host)
    assert response.status_code == 400
    error = response.json()["error"]
    name = host_name(host)
    assert error["code"] == "HOST_NOT_ALLOWED" and error["classification"] == "client"
    assert f"Host {name!r} is not allowed" in error["message"]
    assert f"--allow-host {name}" in error["message"] and ENV_ALLOW_HOSTS in error["message"]


def test_the_host_is_checked_before_the_token(portal_server):
    # A rebinding page has no token: it learns nothing from the answer either way, but it must not even be asked.
    response = httpx.get(portal_server.base_url + RUN, headers={"Host": "evil.example"})
    assert response.status_code == 400 and response.json()["error"]["code"] == "HOST_NOT_ALLOWED"
    page = httpx.get(portal_server.base_url + "/openapi.json", headers={"Host": "evil.example"})
    assert page.status_code == 400


def test_a_browser_is_refused_with_a_page_in_words(portal_server):
    response = _get(portal_server.base_url, "evil.example", "/stellar?target=run-a",
                    Accept="text/html,application/xhtml+xml")
    assert response.status_code == 400 and response.headers["content-type"].startswith("text/html")
    assert "Host not allowed" in response.text and "--allow-host evil.example" in response.text
    assert response.headers["x-content-type-options"] == "nosniff"


def test_allowed_names_exact_and_by_domain(portal_store):
    with serve(portal_store, allow_hosts=["Portal.Lab.Example", ".corp.example"]) as server:
        base = f"http://127.0.0.1:{server.port}"
        for host in ("portal.lab.example", "portal.lab.example:8765", "corp.example", "a.b.corp.example"):
            assert _get(base, host).status_code == 200, host
        for host in ("lab.example", "evilcorp.example", "corp.example.evil", "portal.lab.example.evil"):
            assert _get(base, host).status_code == 400, host


def test_a_star_allows_any_name(portal_store):
    with serve(portal_store, allow_hosts=["*"]) as server:
        assert _get(f"http://127.0.0.1:{server.port}", "anything.example").status_code == 200


def _start(*args: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "taunotebook", "portal", "--token", TOKEN, *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
    text = "".join(proc.stdout.readline() for _ in range(3))
    match = re.search(r"API base: (http://127\.0\.0\.1:\d+)/api/v2/stellar", text)
    if match is None:
        proc.kill()
        pytest.fail(f"the Portal did not start: {text!r} {proc.stderr.read()!r}")
    return proc, match.group(1)


def test_the_cli_flag_is_repeatable_and_replaces_the_environment(portal_store):
    proc, base = _start("--store", str(portal_store), "--allow-host", "one.example", "--allow-host", "two.example",
                        env={ENV_ALLOW_HOSTS: "env.example"})
    try:
        assert _get(base, "one.example").status_code == 200
        assert _get(base, "two.example:1234").status_code == 200
        assert _get(base, "env.example").status_code == 400
    finally:
        proc.terminate()
        proc.wait(timeout=DEADLINE)


def test_the_environment_variable_allows_names_when_no_flag_is_given(portal_store):
    proc, base = _start("--store", str(portal_store), env={ENV_ALLOW_HOSTS: "env.example, .lab.example"})
    try:
        assert _get(base, "env.example").status_code == 200
        assert _get(base, "gpu1.lab.example").status_code == 200
        assert _get(base, "other.example").status_code == 400
    finally:
        proc.terminate()
        proc.wait(timeout=DEADLINE)
