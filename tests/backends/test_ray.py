"""The ``ray`` backend against a real local Ray head on 127.0.0.1, started and stopped (by PID) by this module."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psutil
import pytest

from fixtures.processes import stop_processes_mentioning
from taunotebook.backends import BackendUnavailable
from taunotebook.backends.ray import ray_auth_headers, ray_state
from taunotebook.local_portal import ensure_portal, stop_portal
from taunotebook.submission import attach, runs, submit

pytestmark = pytest.mark.slow

MARKER = "TAU_TEST_RAY_HEAD"


def _free_ports(count: int) -> list[int]:
    """Ports free on 127.0.0.1 now, all different: a second suite on this machine starts its own head beside
    this one (every port Ray would otherwise take by default is chosen here)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _ours(marker: str) -> list[psutil.Process]:
    """Every process started from our `ray start`: those that inherited the marker, and their descendants
    (some of Ray's agents rewrite their environment area with their process title)."""
    found: dict[int, psutil.Process] = {}
    for process in psutil.process_iter():
        try:
            if process.environ().get(MARKER) == marker:
                found[process.pid] = process
                found.update((child.pid, child) for child in process.children(recursive=True))
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return list(found.values())


def _stop(marker: str) -> None:
    """Stop every process of our `ray start` (by PID)."""
    processes = _ours(marker)
    for process in processes:
        process.terminate()
    _, alive = psutil.wait_procs(processes, timeout=15)
    for process in alive:
        process.kill()
    psutil.wait_procs(alive, timeout=15)


@pytest.fixture(scope="module")
def ray_head():
    """A local Ray head with token authentication on, as Ray >= 2.59 starts local clusters by default.

    The token is the test's own (``RAY_AUTH_TOKEN_PATH``, also set for this process while the head
    lives), so neither the head nor our client depends on a ``~/.ray/auth_token`` left by anything else.
    """
    temp = Path(tempfile.mkdtemp(prefix="ray"))  # short: Ray's unix socket paths must fit in 107 bytes
    marker = uuid.uuid4().hex
    token_file = temp / "auth_token"
    token_file.write_text(uuid.uuid4().hex + uuid.uuid4().hex)
    venv_bin = str(Path(sys.executable).parent)
    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token_file)}
    saved = {key: os.environ.get(key) for key in (*auth, "RAY_AUTH_TOKEN")}
    os.environ.pop("RAY_AUTH_TOKEN", None)
    os.environ.update(auth)
    env = {**os.environ, "PATH": f"{venv_bin}{os.pathsep}{os.environ['PATH']}", MARKER: marker,
           "RAY_USAGE_STATS_ENABLED": "0", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
    gcs, dashboard, client, agent, agent_grpc, runtime_env, metrics, node_manager, object_manager = _free_ports(9)
    # Worker ports: a range of this suite's own (most likely), holding none of the ports chosen above.
    ports = {gcs, dashboard, client, agent, agent_grpc, runtime_env, metrics, node_manager, object_manager}
    first_worker = 10002 + 1000 * (os.getpid() % 20)
    while any(first_worker <= port <= first_worker + 997 for port in ports):
        first_worker += 1000
    try:
        # Ray gives its raylet a fixed 30 s to register (ray/_private/node.py): on a loaded machine that can
        # pass, so a failed start is stopped and tried again, up to three times.
        for _ in range(3):
            started = subprocess.run(
                [os.path.join(venv_bin, "ray"), "start", "--head", f"--port={gcs}", "--node-ip-address=127.0.0.1",
                 "--dashboard-host=127.0.0.1", f"--dashboard-port={dashboard}", "--include-dashboard=true",
                 "--num-cpus=2", "--disable-usage-stats", f"--temp-dir={temp}", f"--ray-client-server-port={client}",
                 f"--dashboard-agent-listen-port={agent}", f"--dashboard-agent-grpc-port={agent_grpc}",
                 f"--runtime-env-agent-port={runtime_env}", f"--metrics-export-port={metrics}",
                 f"--node-manager-port={node_manager}", f"--object-manager-port={object_manager}",
                 f"--min-worker-port={first_worker}", f"--max-worker-port={first_worker + 997}"],
                env=env, capture_output=True, text=True, timeout=600,
            )
            if not started.returncode:
                break
            _stop(marker)
        if started.returncode:
            pytest.fail(f"ray start failed (exit {started.returncode}):\n{started.stdout[-3000:]}\n{started.stderr[-3000:]}")
        yield f"http://127.0.0.1:{dashboard}"
    finally:
        _stop(marker)
        shutil.rmtree(temp, ignore_errors=True)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture
def tau_home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("TAU_HOME", str(home))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.delenv("TAU_RAY_SHARED_STORE", raising=False)
    try:
        yield home
    finally:
        stop_portal(home=home)
        stop_processes_mentioning(home)


def test_ray_token_comes_from_where_rays_cli_finds_it(tmp_path, monkeypatch):
    for key in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert ray_auth_headers() == {}  # no token anywhere: no header (a cluster without auth)
    (tmp_path / ".ray").mkdir()
    (tmp_path / ".ray" / "auth_token").write_text("from-home\n")
    assert ray_auth_headers() == {"Authorization": "Bearer from-home"}
    (tmp_path / "t").write_text("from-path")
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(tmp_path / "t"))
    assert ray_auth_headers() == {"Authorization": "Bearer from-path"}
    monkeypatch.setenv("RAY_AUTH_TOKEN", "from-env")
    assert ray_auth_headers() == {"Authorization": "Bearer from-env"}
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    assert ray_auth_headers() == {}


def test_a_cluster_that_wants_a_token_we_do_not_have_says_how_to_give_it(ray_head, tau_home, monkeypatch):
    monkeypatch.setenv("RAY_AUTH_TOKEN", "not-the-token")
    with pytest.raises(BackendUnavailable, match="RAY_AUTH_TOKEN_PATH to the token file"):
        submit(code="print(1)\n", backend="ray", ray_address=ray_head)


def test_ray_job_states_map_to_taugrids():
    assert [ray_state(s) for s in ("PENDING", "RUNNING", "SUCCEEDED", "FAILED", "STOPPED", "WEIRD")] == [
        "pending", "running", "succeeded", "failed", "cancelled", "unknown"]


def test_without_a_cluster_address_nothing_is_submitted(tau_home):
    with pytest.raises(BackendUnavailable, match="no Ray cluster address: pass --ray-address"):
        submit(code="print(1)\n", backend="ray")
    assert not tau_home.exists()


def test_a_remote_cluster_without_adx_settings_is_refused(tau_home, monkeypatch):
    for key in ("TAU_METRICS_OFFLOAD_ADX_CLUSTER_URI", "TAU_METRICS_OFFLOAD_ADX_DATABASE",
                "TAU_METRICS_OFFLOAD_ADX_CLIENT_ID"):
        monkeypatch.delenv(key, raising=False)
    with pytest.raises(BackendUnavailable, match="does not share this machine's store: set TAU_METRICS_OFFLOAD_ADX"):
        submit(code="print(1)\n", backend="ray", ray_address="http://10.1.2.3:8265")
    assert not tau_home.exists()


def test_a_cell_runs_as_a_ray_job_with_the_wrapper_and_its_series_reaches_the_local_portal(ray_head, tau_home):
    run = submit(code=("import json, time\nprint('on ray', flush=True)\nfor s in range(20):\n"
                       "    print(json.dumps({'step': s, 'loss': 1.0 / (s + 1)}), flush=True)\n"
                       "    time.sleep(0.1)\nprint('trained', flush=True)\n"),
                 backend="ray", ray_address=ray_head, project="demo", name="ray-job", group="ray")
    assert run.record["submission_id"] == run.run_id and run.uses_local_store is True
    followed: list[str] = []
    attach(run.run_id).follow(followed.append)  # streams (tail_job_logs) until the job ends
    assert run.wait(300) == "succeeded"
    assert "on ray" in "".join(followed) and "trained" in "".join(followed)
    assert "on ray" in run.logs() and '"loss"' not in run.logs()
    with ensure_portal().client() as client:
        series = client.series(run.run_id, "loss")
        assert list(series.steps) == list(range(20))
        assert list(series.values) == [1.0 / (s + 1) for s in range(20)]
        assert client.run(run.run_id).state == "succeeded"
    assert [(r.run_id, r.backend) for r in runs()] == [(run.run_id, "ray")]


def test_a_diverging_trainer_on_ray_is_stopped_by_its_rule_and_the_run_ends_cancelled(ray_head, tau_home):
    from fixtures.local_backend import DIVERGING, first_step

    step, loss = first_step(lambda v: v > 1e6)
    run = submit(code=DIVERGING, backend="ray", ray_address=ray_head, project="demo", name="ray-diverge",
                 stop_if="loss>1e6")
    assert run.wait(300) == "cancelled"
    words = f"stopped by --stop-if 'loss>1e6': loss was {loss!r} at step {step}"
    with ensure_portal().client() as client:
        answer = client.run(run.run_id)
        assert answer.state == "cancelled"
        assert answer.tags["tau.status.reason"] == "metric-stop-rule"
        assert answer.tags["tau.status.message"].startswith(words)


def test_an_unknown_adx_sink_is_refused_naming_the_variable(tau_home, monkeypatch):
    for key in ("TAU_METRICS_OFFLOAD_ADX_CLUSTER_URI", "TAU_METRICS_OFFLOAD_ADX_DATABASE",
                "TAU_METRICS_OFFLOAD_ADX_CLIENT_ID"):
        monkeypatch.setenv(key, "https://ingest-c.kusto.windows.net" if key.endswith("URI") else "x")
    monkeypatch.setenv("TAU_RAY_ADX_SINK", "adx-fast")
    with pytest.raises(BackendUnavailable, match="TAU_RAY_ADX_SINK='adx-fast': must be one of adx-queued-v1, "
                                                 "adx-streaming"):
        submit(code="print(1)\n", backend="ray", ray_address="http://10.1.2.3:8265")
    assert not tau_home.exists()


def test_a_ray_job_without_the_shared_store_streams_to_adx_and_its_pane_reads_kusto_by_itself(
        ray_head, tau_home, monkeypatch):
    """Every part real but the cluster: the job's collector streams to the stand-in ADX, the local Portal
    (started on demand) reads it back with ``source=kusto`` because the run's record says so."""
    from services.kusto_cluster import KustoCluster

    for key in ("TAU_PORTAL_URL", "TAU_PORTAL_TOKEN", "TAU_PORTAL_KUSTO_CLUSTER", "TAU_PORTAL_KUSTO_DATABASE",
                "TAU_PORTAL_KUSTO_AUTH", "JPY_PARENT_PID", "JUPYTERHUB_SERVICE_PREFIX"):
        monkeypatch.delenv(key, raising=False)
    with KustoCluster() as cluster:
        monkeypatch.setenv("TAU_RAY_SHARED_STORE", "0")
        monkeypatch.setenv("TAU_RAY_ADX_SINK", "adx-streaming")
        monkeypatch.setenv("TAU_METRICS_OFFLOAD_ADX_CLUSTER_URI", cluster.uri)
        monkeypatch.setenv("TAU_METRICS_OFFLOAD_ADX_DATABASE", cluster.database)
        monkeypatch.setenv("TAU_METRICS_OFFLOAD_ADX_CLIENT_ID", "unused-over-loopback-http")
        run = submit(code=("import json, time\nfor s in range(20):\n"
                           "    print(json.dumps({'step': s, 'loss': 1.0 / (s + 1)}), flush=True)\n"
                           "    time.sleep(0.1)\n"),
                     backend="ray", ray_address=ray_head, project="demo", name="adx-job", group="ray")
        assert run.source == "kusto" and run.uses_local_store is False
        assert "--sink adx-streaming" in run.record["entrypoint"]
        assert "tau_workspace=default" in run.record["entrypoint"]  # the strict Kusto workspace scoping finds it
        pane = run.pane()
        try:
            assert pane.source == "kusto" and "source=kusto" in pane.stellar_href
            assert run.wait(300) == "succeeded"
            series = run.series("loss")
            assert list(series.steps) == list(range(20))
            assert list(series.values) == [1.0 / (s + 1) for s in range(20)]
            assert series.metadata.provenance.served_sources == ("kusto",)
            deadline = time.monotonic() + 60
            while (pane.state != "succeeded" or pane.polling) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert pane.state == "succeeded" and not pane.polling, pane.status
            assert list(pane._poller.held[(run.run_id, "loss")].steps) == list(range(20))
            assert "source=kusto" in run.stellar_url()
        finally:
            pane.close()
        assert not (tau_home / "store" / "metrics").exists() or not any((tau_home / "store" / "metrics").iterdir())
        assert cluster.errors == []


def test_a_job_asking_for_more_gpus_than_the_head_has_stays_pending(ray_head, tau_home):
    """The head has no GPU: Ray keeps the entrypoint pending while a job submitted after it runs to the end."""
    waiting = submit(code="print('never')\n", backend="ray", ray_address=ray_head, name="gpu-job", gpus=4)
    other = submit(code="print('ran')\n", backend="ray", ray_address=ray_head, name="cpu-job")
    assert other.wait(300) == "succeeded"
    try:
        assert waiting.state == "pending"
        assert waiting.record["entrypoint"] and "never" not in waiting.logs()
        # In Ray's words, in the run's lifecycle and in its pane's header and status line.
        lifecycle = waiting.lifecycle
        assert lifecycle.phase == "queued" and "waiting for resources" in lifecycle.reason, lifecycle
        pane = waiting.pane()
        try:
            deadline = time.monotonic() + 60
            while not pane.lifecycle and time.monotonic() < deadline:
                time.sleep(0.2)
            assert pane.lifecycle["phase"] == "queued" and pane.lifecycle["text"] == lifecycle.text
            assert pane.resources == {"gpus": 4}
            while pane.status.get("kind") != "not_found" and time.monotonic() < deadline:
                time.sleep(0.2)
            assert "queued: Job has not started yet" in pane.status["message"], pane.status
        finally:
            pane.close()
    finally:
        waiting.cancel()


RESUMING = """\
import json, os, sys, time
checkpoints = os.environ["CKPT_DIR"]
os.makedirs(checkpoints, exist_ok=True)
resume = os.environ.get("TAU_RESUME_FROM")
start = int(os.environ["TAU_RESUME_STEP"]) + 1 if resume else 0
for step in range(start, 12):
    print(json.dumps({"_step": step, "_timestamp": time.time(), "loss": 1.0 / (step + 1)}), flush=True)
    if step == 5 and not resume:
        with open(os.path.join(checkpoints, "ckpt-5.pt"), "wb") as fh:
            fh.write(b"w" * 5)
    if step == 8 and not resume:
        sys.exit(3)  # crashes after its checkpoint
print("resumed from", resume, "step", os.environ.get("TAU_RESUME_STEP"), "attempt",
      os.environ.get("TAU_RETRY_ATTEMPT"), "of", os.environ.get("TAU_RETRY_MAX"), flush=True)
"""


def test_a_failed_ray_job_is_resubmitted_and_resumes_from_its_last_checkpoint(ray_head, tau_home, tmp_path):
    """Attempt 1 writes ckpt-5.pt and fails; it is resubmitted as <run>-retry-1 with TAU_RESUME_FROM naming the
    checkpoint the collector registered, and succeeds; the run shows the retry at step 5."""
    from tau_collector.expstore import StoreReader, open_store

    checkpoint = tmp_path / "ckpt" / "ckpt-5.pt"
    run = submit(code=RESUMING, backend="ray", ray_address=ray_head, name="ray-resume", retries=2,
                 checkpoints=str(tmp_path / "ckpt" / "ckpt-*.pt"), env={"CKPT_DIR": str(tmp_path / "ckpt")})
    assert run.record["retries"] == 2 and "--retries" not in run.record["entrypoint"]
    assert run.wait(600) == "succeeded"
    assert run.record["attempt"] == 1 and run.record["submission_id"] == f"{run.run_id}-retry-1"
    assert run.record["submissions"] == [run.run_id, f"{run.run_id}-retry-1"]
    assert f"resumed from {checkpoint} step 5 attempt 1 of 2" in run.logs()
    assert run.lifecycle.text.startswith("succeeded (retried 1)"), run.lifecycle
    reader = StoreReader(open_store(tau_home / "store"))
    [retry] = reader.run_events(run.run_id, type="retry")
    assert retry.payload["step"] == 5 and retry.payload["resume_from"] == str(checkpoint)
    assert retry.payload["attempt"] == 1 and retry.payload["submission_id"] == f"{run.run_id}-retry-1"
    assert retry.message.startswith("retry 1/2 of the Ray job after it failed (")
    with ensure_portal().client() as client:
        assert [c.step for c in client.checkpoints(run.run_id).checkpoints] == [5]
        assert client.run(run.run_id).state == "succeeded"
