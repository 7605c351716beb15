"""The ``local`` backend: ``tau-collector wrap`` in its own session, writing the local expstore under ``TAU_HOME``.

The wrapper is started with ``start_new_session`` so it is the leader of its own process group: a
kernel restart (which signals the kernel's group) does not reach it, the job outlives the kernel,
and cancelling is one SIGTERM to that group — the wrapper then marks the run ``cancelled``. The run
record keeps the wrapper's pid and its start time (``/proc/<pid>/stat``), so any later process can
tell whether that very process still runs, without being its parent.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tau_collector.collect.completion_file import write_completion

from ..lifecycle import Lifecycle, record_submission, terminal
from ..resources import local_environment
from ..submit_config import CONFIG_ENV
from . import BackendError, RunSpec, tau_home, write_record

__all__ = ["LocalBackend", "process_alive", "start_ticks_of", "store_dir", "wrapper_argv"]

HISTORY_DIR = "metrics-history-attempt-0"
LOG = "job.log"
# The wrapper's own children (our Popen objects) must be reaped by us, else they linger as zombies
# that still "exist" for kill(pid, 0); keyed by run id.
_CHILDREN: dict[str, subprocess.Popen] = {}


def store_dir(home: Path | None = None) -> Path:
    """The local expstore every local run writes: ``<TAU_HOME>/store``."""
    return (home or tau_home()) / "store"


def wrapper_argv(spec: RunSpec, run_dir: str, sink: list[str], *, python: str = sys.executable,
                 script: str | None = None, interval: str = "2s", config: str | None = None,
                 retries: bool = True) -> list[str]:
    """``python -m tau_collector wrap --run-dir D <identity> <sink> [--tfevents X]... [--run-config C]
    [--time-limit S] [--checkpoints GLOB]... [--retries N] [--checkpoint-path DIR] -- python SCRIPT ARGS...``;
    ``retries=False`` leaves ``--retries`` out (a backend that retries the whole job itself)."""
    argv = [python, "-m", "tau_collector", "wrap", "--run-dir", run_dir, "--interval", interval,
            "--run", spec.run_id, "--project", spec.project, "--experiment", spec.experiment,
            "--group", spec.group, "--tag", f"tau_workspace={spec.workspace}", *sink]
    for logdir in spec.tfevents:
        argv += ["--tfevents", logdir]
    if config is not None:
        argv += ["--run-config", config]
    argv += spec.stop_rules
    argv += spec.notify
    limit = spec.resources.time_limit_seconds()
    if limit is not None:
        argv += ["--time-limit", f"{limit:g}"]
    for pattern in spec.checkpoints:
        argv += ["--checkpoints", pattern]
    if spec.resources.retries and retries:
        argv += ["--retries", str(spec.resources.retries)]
    if spec.resources.checkpoint_path is not None:
        argv += ["--checkpoint-path", os.path.join(str(spec.cwd or Path.cwd()), spec.resources.checkpoint_path)]
    return [*argv, "--", python, script or str(spec.script), *spec.args]


def start_ticks_of(pid: int) -> int | None:
    """The process's start time in clock ticks (field 22 of ``/proc/<pid>/stat``), None if it is gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def process_alive(pid: int, start_ticks: int | None) -> bool:
    """True while the process with this pid *and* this start time runs (a reused pid is not ours)."""
    ticks = start_ticks_of(pid)
    return ticks is not None and (start_ticks is None or ticks == start_ticks)


def _record_lost(record: Mapping[str, Any], message: str) -> None:
    """The lost wrapper as a ``worker-lost`` fault of the run in its local store; never raises."""
    try:
        from tau_collector.expstore import open_store, record_run_events
        from tau_collector.expstore.store import utc_now_rfc3339
        from tau_collector.job.faults import fault_event

        record_run_events(open_store(record["store"], create=True), [
            fault_event(record["run_id"], utc_now_rfc3339(), "worker-lost", message, source="taunotebook",
                        pid=record.get("pid"))])
    except Exception:  # the run's outcome stands whatever happens to its fault record
        pass


def read_completion_state(run_dir: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads((run_dir / "completion.json").read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


class LocalBackend:
    name = "local"

    def check(self, spec: RunSpec) -> None:
        """The local backend needs only this Python and ``tau_collector``; resources it cannot apply are refused."""
        local_environment(spec.resources, spec.env)

    def submit(self, spec: RunSpec) -> dict[str, Any]:
        if not spec.script.is_file():
            raise BackendError(f"script {spec.script} does not exist")
        directory = spec.run_dir
        directory.mkdir(parents=True, exist_ok=True)
        store = store_dir(spec.home)
        config = str(spec.config_path) if spec.config_path is not None else None
        argv = wrapper_argv(spec, str(directory), ["--sink", "expstore", "--store", str(store)], config=config)
        env = dict(os.environ, **spec.env, **local_environment(spec.resources, spec.env),
                   TAU_WORKSPACE=spec.workspace, TAU_RUN_ID=spec.run_id)
        if config is not None:
            env[CONFIG_ENV] = config
        log_path = directory / LOG
        with open(log_path, "ab") as log:
            process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                       cwd=str(spec.cwd or Path.cwd()), env=env, start_new_session=True,
                                       close_fds=True)
        _CHILDREN[spec.run_id] = process
        record = {
            **spec.identity(), "backend": self.name, "created_at": time.time(), "run_dir": str(directory),
            "script": str(spec.script), "args": list(spec.args), "tfevents": list(spec.tfevents),
            "store": str(store), "log": str(log_path), "pid": process.pid, "start_ticks": start_ticks_of(process.pid),
            "command": argv, "config": config,
            "resources": spec.resources.given(),  # what the job asked for (JobResources fields)
        }
        write_record(directory, record)
        record_submission(str(store), spec.run_id, self.name, record["resources"])
        return record

    # -- answering for a run from its record

    def _alive(self, record: Mapping[str, Any]) -> bool:
        child = _CHILDREN.get(record["run_id"])
        if child is not None and child.pid == record.get("pid"):
            return child.poll() is None
        return process_alive(int(record["pid"]), record.get("start_ticks"))

    def state(self, record: Mapping[str, Any]) -> str:
        directory = Path(record["run_dir"])
        completion = read_completion_state(directory)
        if completion and completion.get("state"):
            return str(completion["state"])
        if self._alive(record):
            return "running" if (directory / "collector" / "ready").exists() else "pending"
        # The wrapper died without writing an outcome (SIGKILL, OOM killer, reboot). Write it in its place:
        # its collector (own session, still watching) then publishes the failure marker and exits.
        message = f"the job wrapper (pid {record.get('pid')}) exited without recording an outcome"
        write_completion(str(directory / "completion.json"), "failed", reason="workload-wrapper-lost",
                         message=message, completed_at=time.time_ns() // 1_000_000_000 * 1_000_000_000)
        _record_lost(record, message)
        return "failed"

    def lifecycle(self, record: Mapping[str, Any]) -> Lifecycle:
        """Where the job is: admitted (the wrapper starts its collector), running, or its outcome with the
        wrapper's words (``failed: killed by SIGKILL (exit 137)``)."""
        state = self.state(record)
        if state in ("succeeded", "failed", "cancelled"):
            completion = read_completion_state(Path(record["run_dir"])) or {}
            return terminal(state, str(completion.get("message", "")))
        if state == "pending":
            return Lifecycle("admitted", "the job wrapper is starting its metrics collector")
        return Lifecycle(state)

    def finished(self, record: Mapping[str, Any]) -> bool:
        return not self._alive(record)

    def exit_code(self, record: Mapping[str, Any]) -> int | None:
        child = _CHILDREN.get(record["run_id"])
        if child is not None and child.pid == record.get("pid"):
            return child.poll()
        return None

    def logs(self, record: Mapping[str, Any]) -> str:
        try:
            return Path(record["log"]).read_text(errors="replace")
        except OSError:
            return ""

    def follow(self, record: Mapping[str, Any], write: Callable[[str], object], *, interval: float = 0.2) -> None:
        """Write the job log as it grows until the job is finished."""
        offset = 0
        path = Path(record["log"])
        while True:
            finished = self.finished(record)
            try:
                with open(path, "rb") as f:
                    f.seek(offset)
                    data = f.read()
            except OSError:
                data = b""
            if data:
                offset += len(data)
                write(data.decode(errors="replace"))
            if finished:
                return
            time.sleep(interval)

    def cancel(self, record: Mapping[str, Any]) -> None:
        if not self._alive(record):
            return
        # A wrapper signalled before its collector is ready records the outcome as succeeded (exit 143),
        # and one signalled between "ready" and starting the trainer still starts it: wait for the ready
        # file, then repeat the SIGTERM until the wrapper has written the outcome (normally at once).
        directory = Path(record["run_dir"])
        deadline = time.monotonic() + 30
        while not (directory / "collector" / "ready").exists() and self._alive(record) \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        deadline = time.monotonic() + 10
        while self._alive(record) and not (directory / "completion.json").exists():
            try:
                os.killpg(int(record["pid"]), signal.SIGTERM)  # the wrapper leads its own session: pgid == pid
            except ProcessLookupError:
                return
            if time.monotonic() >= deadline:
                return
            time.sleep(1.0)
