"""``taunotebook portal``: prints its tokened URL like ``jupyter lab``, serves on loopback, refuses risky binds."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from fixtures.portal import TOKEN
from taunotebook.cli import main as taunotebook_main
from taunotebook.portal.cli import main as portal_main

from ..polling import DEADLINE


def _start(*args: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen, str, str]:
    proc = subprocess.Popen([sys.executable, "-m", "taunotebook", "portal", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
    lines = [proc.stdout.readline() for _ in range(3)]
    text = "".join(lines)
    page = re.search(r"(http://127\.0\.0\.1:\d+/stellar\?token=(\S+))", text)
    api = re.search(r"API base: (http://127\.0\.0\.1:\d+/api/v2/stellar)", text)
    if not (page and api):
        proc.kill()
        pytest.fail(f"no URLs printed: {text!r} {proc.stderr.read()!r}")
    return proc, page.group(1), api.group(1)


def test_it_prints_a_page_url_with_a_generated_token_and_serves_it(portal_store):
    proc, page, api = _start("--store", str(portal_store))
    try:
        token = page.split("token=")[1]
        assert len(token) >= 32 and token != TOKEN
        r = httpx.get(f"{api}/runs/run-a", headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 200 and r.json()["run"]["run_id"] == "run-a"
        assert httpx.get(f"{api}/runs/run-a").status_code == 401
        opened = httpx.get(page)  # what a browser does with the printed URL: cookie, then token-free URL
        assert opened.status_code == 302 and opened.headers["location"] == "./stellar"
    finally:
        proc.terminate()
        proc.wait(timeout=DEADLINE)


def test_a_given_token_and_workspace_are_used(portal_store):
    proc, page, api = _start("--store", str(portal_store), "--token", "my-token", "--workspace", "other")
    try:
        assert page.endswith("?token=my-token")
        r = httpx.get(f"{api}/runs/run-other", headers={"Authorization": "Bearer my-token"})
        assert r.status_code == 200
    finally:
        proc.terminate()
        proc.wait(timeout=DEADLINE)


def _children(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def test_workers_share_one_port_and_one_cursor_key_and_stop_together(portal_store):
    proc, _page, api = _start("--store", str(portal_store), "--token", "my-token", "--workers", "2")
    try:
        workers = _children(proc.pid)
        assert len(workers) == 2
        headers = {"Authorization": "Bearer my-token"}
        first = httpx.get(f"{api}/experiments/exp-page/runs", params={"limit": 2}, headers=headers).json()
        cursor = first["next_cursor"]
        # Each request on a new connection: the kernel hands them to either worker; a cursor one signed
        # is valid at the other.
        pages = []
        for _ in range(12):
            r = httpx.get(f"{api}/experiments/exp-page/runs", params={"limit": 2, "cursor": cursor},
                          headers=headers)
            assert r.status_code == 200, r.text
            pages.append([run["run_id"] for run in r.json()["runs"]])
        first_ids = [run["run_id"] for run in first["runs"]]
        assert len(pages[0]) == 2 and not set(pages[0]) & set(first_ids) and pages == [pages[0]] * 12
    finally:
        proc.terminate()
        assert proc.wait(timeout=15) == 0
    for pid in workers:
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()


def test_a_worker_that_dies_is_started_again(portal_store):
    import signal
    import time

    proc, _page, api = _start("--store", str(portal_store), "--token", "my-token", "--workers", "2")
    try:
        first = _children(proc.pid)
        os.kill(first[0], signal.SIGKILL)
        deadline = time.monotonic() + 30
        while True:
            now = _children(proc.pid)
            if len(now) == 2 and first[0] not in now:
                break
            assert time.monotonic() < deadline, f"no worker started again: {now}"
            time.sleep(0.05)
        assert first[1] in now
        for _ in range(6):
            assert httpx.get(f"{api}/runs/run-a", headers={"Authorization": "Bearer my-token"}).status_code == 200
    finally:
        proc.terminate()
        assert proc.wait(timeout=15) == 0
    assert "exited (-9): starting it again" in proc.stderr.read()


@pytest.mark.parametrize("args", [
    ["--host", "0.0.0.0"],
    ["--host", "192.168.1.10"],
    ["--port", "70000"],
    ["--workers", "0"],
    ["--workers", "17"],
    ["--token", "  "],
    ["--bogus"],
])
def test_usage_errors_exit_2(portal_store, args, capsys):
    with pytest.raises(SystemExit) as exc:
        portal_main(["--store", str(portal_store), *args])
    assert exc.value.code == 2
    assert "usage: taunotebook portal" in capsys.readouterr().err


def test_a_non_loopback_bind_explains_why_it_needs_a_token(portal_store, capsys):
    with pytest.raises(SystemExit):
        portal_main(["--store", str(portal_store), "--host", "0.0.0.0"])
    assert "pass --token explicitly" in capsys.readouterr().err


def test_a_missing_store_is_a_usage_error(tmp_path: Path, capsys):
    with pytest.raises(SystemExit) as exc:
        portal_main(["--store", str(tmp_path / "nowhere")])
    assert exc.value.code == 2 and "manifest.json" in capsys.readouterr().err


@pytest.mark.parametrize(("args", "words"), [
    (["--kusto-cluster", "http://kusto.example"], "only a loopback test cluster"),
    (["--kusto-cluster", "https://c.kusto.windows.net", "--kusto-auth", "none"], "--kusto-auth none is only for"),
    (["--kusto-cluster", "c.kusto.windows.net"], "must be an https:// URI"),
    (["--kusto-auth", "token"], "invalid choice: 'token'"),
    ([], "--store is required unless an ADX cluster is given"),
])
def test_bad_kusto_settings_are_usage_errors_naming_the_flag(args, words, capsys, monkeypatch):
    monkeypatch.delenv("TAU_PORTAL_KUSTO_CLUSTER", raising=False)
    with pytest.raises(SystemExit) as exc:
        portal_main(args)
    assert exc.value.code == 2 and words in capsys.readouterr().err


def test_a_cluster_from_the_environment_serves_source_kusto_without_a_store():
    from services.kusto_cluster import KustoCluster

    with KustoCluster() as cluster:
        env = {"TAU_PORTAL_KUSTO_CLUSTER": cluster.uri, "TAU_PORTAL_KUSTO_DATABASE": cluster.database,
               "TAU_PORTAL_KUSTO_AUTH": "none"}
        proc, _, api = _start("--token", "my-token", env=env)
        try:
            r = httpx.get(f"{api}/runs/nope", headers={"Authorization": "Bearer my-token"})
            assert r.status_code == 404 and r.json()["error"]["code"] == "NOT_FOUND"
            assert cluster.requests, "the Portal did not ask the cluster"
            r = httpx.get(f"{api}/runs/nope", params={"source": "local"}, headers={"Authorization": "Bearer my-token"})
            assert r.status_code == 503 and "--store" in r.json()["error"]["message"]
        finally:
            proc.terminate()
            proc.wait(timeout=DEADLINE)


def test_help_shows_examples(capsys):
    with pytest.raises(SystemExit) as exc:
        portal_main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out and "taunotebook portal --store" in out


def test_the_taunotebook_command_dispatches_and_rejects_unknown_commands(capsys):
    assert taunotebook_main(["nope"]) == 2
    assert "unknown command 'nope'" in capsys.readouterr().err
    assert taunotebook_main([]) == 2
    assert taunotebook_main(["--help"]) == 0
