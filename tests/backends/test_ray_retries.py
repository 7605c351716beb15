"""Retries of a Ray job by resubmission, against a recording Jobs API client: each attempt a new submission id,
TauGrid's retry environment with the run's last registered checkpoint, a ``retry`` event at its step, bounded."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tau_collector.expstore import StoreReader, open_store
from tau_collector.expstore.write.artifacts import record_artifacts
from tau_collector.reads.rows import ArtifactRow
from taunotebook.backends import write_record
from taunotebook.backends.ray import RayBackend, last_checkpoint, retry_submission_id


class RecordingJobs:
    """A stand-in ``JobSubmissionClient``: job statuses set by the test, every ``submit_job`` recorded."""

    def __init__(self) -> None:
        self.status: dict[str, str] = {}
        self.submitted: list[dict] = []

    def get_job_info(self, submission_id):
        if submission_id not in self.status:
            raise RuntimeError(f"Job {submission_id} does not exist")
        failed = self.status[submission_id] == "FAILED"
        return SimpleNamespace(status=self.status[submission_id], message="Job entrypoint command failed with exit "
                               "code 3" if failed else "", error_type=None, driver_exit_code=3 if failed else None)

    def submit_job(self, *, submission_id, **kwargs):
        if submission_id in self.status:
            raise RuntimeError(f"Job with submission_id {submission_id} already exists")
        self.submitted.append({"submission_id": submission_id, **kwargs})
        self.status[submission_id] = "PENDING"


@pytest.fixture
def jobs(monkeypatch) -> RecordingJobs:
    fake = RecordingJobs()
    monkeypatch.setattr("taunotebook.backends.ray._client", lambda address: fake)
    return fake


def _record(tmp_path, retries=2) -> dict:
    store = tmp_path / "store"
    record = {"run_id": "r-1", "workspace": "default", "backend": "ray", "run_dir": str(tmp_path / "run"),
              "address": "http://127.0.0.1:8265", "submission_id": "r-1", "shared_store": True, "store": str(store),
              "retries": retries, "attempt": 0, "checkpoint_path": None,
              "submit_job": {"entrypoint": "python -m tau_collector wrap ...",
                             "runtime_env": {"working_dir": "/wd", "env_vars": {"A": "1", "TAU_RUN_ID": "r-1"}},
                             "metadata": {"tau_project": "p", "tau_group": "g"}, "entrypoint_num_gpus": 1}}
    write_record(tmp_path / "run", record)
    return record


def _checkpoint(store, step, *, deleted=False):
    tags = {"kind": "file", **({"deleted": True} if deleted else {})}
    record_artifacts(open_store(store, create=True), [ArtifactRow("r-1", "checkpoint", f"/ck/ckpt-{step}.pt",
                                                                  f"/ck/ckpt-{step}.pt", step=step, tags=tags)])


def test_a_failed_job_is_resubmitted_with_the_retry_environment_and_its_last_checkpoint(tmp_path, jobs):
    record = _record(tmp_path)
    _checkpoint(record["store"], 5)
    _checkpoint(record["store"], 9, deleted=True)  # a deleted checkpoint is never resumed from
    jobs.status["r-1"] = "FAILED"
    assert RayBackend().state(record) == "pending"
    [call] = jobs.submitted
    assert call["submission_id"] == "r-1-retry-1" == retry_submission_id("r-1", 1)
    assert call["entrypoint"] == "python -m tau_collector wrap ..." and call["entrypoint_num_gpus"] == 1
    assert call["runtime_env"]["env_vars"] == {
        "A": "1", "TAU_RUN_ID": "r-1", "TAU_RESUME_FROM": "/ck/ckpt-5.pt", "TAU_RESUME_STEP": "5",
        "TAU_RETRY_ATTEMPT": "1", "TAU_RETRY_MAX": "2",
        "TAU_RETRY_REASON": "Job entrypoint command failed with exit code 3 (exit 3)"}
    assert record["attempt"] == 1 and record["submission_id"] == "r-1-retry-1"
    [event] = StoreReader(open_store(record["store"])).run_events("r-1", type="retry")
    assert event.payload["step"] == 5 and event.payload["submission_id"] == "r-1-retry-1"
    assert event.message.startswith("retry 1/2 of the Ray job after it failed (")

    # A second reader (another kernel, the watcher) sees attempt 1 from run.json and submits nothing more.
    from taunotebook.backends import read_record

    other = read_record(tmp_path / "run" / "run.json")
    assert other["submission_id"] == "r-1-retry-1" and RayBackend().state(other) == "pending"
    assert len(jobs.submitted) == 1

    jobs.status["r-1-retry-1"] = "RUNNING"
    assert RayBackend().lifecycle(record).text == "running (retried 1)"


def test_retries_are_bounded_and_the_last_failure_is_the_runs(tmp_path, jobs):
    record = _record(tmp_path, retries=1)
    jobs.status["r-1"] = "FAILED"
    RayBackend().state(record)
    jobs.status["r-1-retry-1"] = "FAILED"
    assert RayBackend().state(record) == "failed"
    assert [c["submission_id"] for c in jobs.submitted] == ["r-1-retry-1"]
    assert RayBackend().lifecycle(record).text.startswith("failed (retried 1): Job entrypoint command failed")


def test_two_readers_racing_submit_one_attempt_once(tmp_path, jobs):
    first, second = _record(tmp_path), dict(_record(tmp_path))
    jobs.status["r-1"] = "FAILED"
    jobs.status["r-1-retry-1"] = "PENDING"  # the other reader submitted it a moment ago (run.json not yet written)
    assert RayBackend().state(first) == "pending"
    assert jobs.submitted == [] and first["submission_id"] == "r-1-retry-1"
    assert StoreReader(open_store(first["store"], create=True)).run_events("r-1", type="retry") == []
    assert RayBackend().state(second) == "pending"


def test_without_a_registered_checkpoint_the_checkpoint_path_is_resumed_from(tmp_path, jobs):
    record = _record(tmp_path)
    record["checkpoint_path"] = "/data/ckpt/run"
    jobs.status["r-1"] = "FAILED"
    RayBackend().state(record)
    env = jobs.submitted[0]["runtime_env"]["env_vars"]
    assert env["TAU_RESUME_FROM"] == "/data/ckpt/run" and "TAU_RESUME_STEP" not in env
    assert last_checkpoint(None, "r-1") is None
