"""A job's faults and lifecycle: a local job killed by a signal is a ``fault`` event of its run, and the run page's
job data and ``SubmittedRun.lifecycle`` say ``failed: killed by SIGKILL``; a lost wrapper is a ``worker-lost``
fault; the words each backend's status gives (:mod:`taunotebook.lifecycle`)."""

from __future__ import annotations

import os
import signal
import time
from types import SimpleNamespace

import httpx
import pytest

from tau_collector.job.faults import cgroup_oom_kills, describe_exit
from taunotebook.lifecycle import Lifecycle, from_store, ray_lifecycle, terminal
from taunotebook.local_portal import ensure_portal
from taunotebook.submission import submit

from ..polling import DEADLINE


def _get(path: str) -> dict:
    portal = ensure_portal()
    answer = httpx.get(portal.url + path, headers={"Authorization": f"Bearer {portal.token}"}, timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()


KILLED = ("import json, os, signal\nprint(json.dumps({'step': 0, 'loss': 1.0}), flush=True)\n"
          "os.kill(os.getpid(), signal.SIGKILL)\n")


def test_a_local_job_killed_by_a_signal_is_a_fault_event_and_failed_killed_by_sigkill(tau_home):
    run = submit(code=KILLED, name="killed", gpus=0)
    assert run.wait(DEADLINE) == "failed"
    assert run.lifecycle.text.startswith("failed: killed by SIGKILL (exit 137)") \
        or run.lifecycle.text.startswith("failed: killed for memory")
    assert run.resources == {"gpus": 0}
    job = _get(f"/stellar/data/runs/{run.run_id}/job")
    faults = _get(f"/api/portal/experiments/{run.experiment_id}/fault-events")
    assert job["lifecycle"]["phase"] == "failed"
    assert job["lifecycle"]["text"].startswith(("failed: killed by SIGKILL", "failed: killed for memory"))
    assert job["resources"] == {"gpus": 0} and job["backend"] == "local"
    (fault,) = job["faults"]
    assert fault["kind"] in ("signal", "oom") and "SIGKILL" in fault["message"]
    (event,) = faults["events"]
    assert event["checkType"] in ("Signal", "OOMKilled") and event["reason"] == "SIGKILL"
    assert event["node"] == os.uname().nodename and faults["allocatedNodes"] == [event["node"]]


def test_a_lost_wrapper_is_a_worker_lost_fault(tau_home):
    run = submit(code="import json, time\nprint(json.dumps({'step': 0, 'loss': 1.0}), flush=True)\n"
                      "time.sleep(600)\n", name="lost")
    while "loss" not in run.metrics():
        time.sleep(0.2)
    os.killpg(run.record["pid"], signal.SIGKILL)
    assert run.wait(DEADLINE) == "failed"
    assert run.lifecycle.text == (f"failed: the job wrapper (pid {run.record['pid']}) exited without recording "
                                  "an outcome")
    job = _get(f"/stellar/data/runs/{run.run_id}/job")
    assert [f["kind"] for f in job["faults"]] == ["worker-lost"]


@pytest.mark.parametrize(("code", "before", "after", "words", "kind"), [
    (0, None, None, "exited with code 0", None),
    (3, None, None, "exited with code 3", None),
    (-signal.SIGTERM, None, None, "killed by SIGTERM (exit 143)", "signal"),
    (-signal.SIGKILL, 4, 4, "killed by SIGKILL (exit 137)", "signal"),
    (137, None, None, "killed by SIGKILL (exit 137)", "signal"),
    (-signal.SIGKILL, 4, 5, "killed for memory: SIGKILL while the cgroup's OOM-kill counter rose by 1 (exit 137)",
     "oom"),
])
def test_an_exit_in_words(code, before, after, words, kind):
    said, fault = describe_exit(code, before, after)
    assert said == words
    assert (fault or {}).get("kind") == kind


def test_the_cgroup_oom_counter_is_read_from_memory_events(tmp_path):
    (tmp_path / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 2\noom_kill 2\n")
    assert cgroup_oom_kills(tmp_path) == 2
    assert cgroup_oom_kills(tmp_path / "none") is None


def test_rays_status_in_words():
    pending = SimpleNamespace(status="PENDING", message="Job has not started yet. It may be waiting for resources "
                              "(CPUs, GPUs, memory, custom resources) to become available.")
    assert ray_lifecycle(pending).text.startswith("queued: Job has not started yet. It may be waiting for resources")
    failed = SimpleNamespace(status="FAILED", message="Job entrypoint command failed with exit code 1",
                             error_type="JOB_ENTRYPOINT_COMMAND_ERROR", driver_exit_code=1)
    assert ray_lifecycle(failed).text == ("failed: Job entrypoint command failed with exit code 1 "
                                          "(JOB_ENTRYPOINT_COMMAND_ERROR, exit 1)")
    assert ray_lifecycle(SimpleNamespace(status="STOPPED", message="")).text == "cancelled"


def test_a_stored_runs_lifecycle_counts_retries_and_names_the_fault():
    ev = lambda t, m="": SimpleNamespace(type=t, message=m)  # noqa: E731
    events = [ev("retry"), ev("retry"), ev("fault", "entrypoint killed by SIGKILL (exit 137)")]
    assert from_store("failed", {"tau.status.message": "entrypoint exited with code 137"}, events).text == \
        "failed (retried 2): killed by SIGKILL (exit 137)"
    assert from_store("running", {}, [ev("retry")]).text == "running (retried 1)"
    assert from_store("pending", {}, []).text == "queued"
    assert terminal("succeeded", "entrypoint exited with code 0").text == "succeeded"
    assert Lifecycle("admitted", "starting").to_json() == {"phase": "admitted", "reason": "starting", "retries": 0,
                                                           "text": "admitted: starting"}


def test_rays_own_job_details_read_in_words():
    job_submission = pytest.importorskip("ray.job_submission")
    details = job_submission.JobDetails(
        type="SUBMISSION", entrypoint="python -m tau_collector wrap ...", status=job_submission.JobStatus.FAILED,
        message="Job entrypoint command failed with exit code 137", error_type="JOB_ENTRYPOINT_COMMAND_ERROR",
        driver_exit_code=137)
    assert ray_lifecycle(details).text == ("failed: Job entrypoint command failed with exit code 137 "
                                           "(JOB_ENTRYPOINT_COMMAND_ERROR, exit 137)")
