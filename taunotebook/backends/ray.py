"""The ``ray`` backend: the cell as a Ray job (Jobs API) whose entrypoint is ``tau-collector wrap`` around the script.

The address comes from ``--ray-address`` or ``RAY_ADDRESS`` (the dashboard's ``http://host:8265``).
``runtime_env`` carries the script (``working_dir``) and the environment. Where the metrics go: when
the cluster shares this machine's filesystem (its address is loopback, or ``TAU_RAY_SHARED_STORE=1``)
the wrapper writes the run directory and the local expstore under ``TAU_HOME`` exactly as the local
backend does; otherwise the job's collector offloads to ADX with TauGrid's
``TAU_METRICS_OFFLOAD_ADX_*`` settings, which must be set here and are forwarded to the job, through
TauGrid's queued sink (``adx-queued-v1``) or, with ``TAU_RAY_ADX_SINK=adx-streaming``, the streaming
one (points queryable within seconds: what a live pane wants). Such a run's record says
``"source": "kusto"``: its pane, ``series()`` and Stellar link read ``source=kusto`` by themselves
(:class:`~taunotebook.submission.SubmittedRun`), and its events carry ``tau_workspace`` (the wrapper's
tag), which the Portal's strict Kusto workspace scoping needs to find them.
The submission id is the run id, so a run is re-attached by id from any kernel.

Retries (``retries=N``): Ray's Jobs API retries no entrypoint, so a job that ends ``FAILED`` is submitted
again, at most N times, as ``<run>-retry-<k>`` (the same run id, a new submission id) with TauGrid's
``TAU_RESUME_FROM`` (the run's last registered checkpoint, read back from the store; else
``checkpoint_path``), ``TAU_RESUME_STEP``, ``TAU_RETRY_ATTEMPT``, ``TAU_RETRY_MAX`` and ``TAU_RETRY_REASON``
in ``runtime_env.env_vars``, and a ``retry`` run event at the checkpoint's step. The loop lives on this side,
driven by the run record (:meth:`RayBackend.advance`): a detached watcher process started with the job
(its own session: it outlives the kernel) advances it until the run ends, and so does every reader of the
run's state (the pane, ``run.wait()``, ``%tau_runs``) -- submission ids are deterministic, so two of them
never submit one attempt twice. The limit: a retry needs this machine up (the watcher, or a reader of the run).

Ray's token authentication (Ray >= 2.52; on by default for local clusters since 2.59, which write
``~/.ray/auth_token``): the Jobs API requests carry the token Ray's own CLI would use --
``RAY_AUTH_TOKEN``, else the file ``RAY_AUTH_TOKEN_PATH`` names, else ``~/.ray/auth_token`` -- unless
``RAY_AUTH_MODE=disabled``.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..lifecycle import Lifecycle, ray_lifecycle, record_submission
from ..loopback import is_loopback_url
from ..resources import ray_submit_options
from ..submit_config import CONFIG_ENV
from . import RECORD, BackendError, BackendUnavailable, RunSpec, read_record, write_record
from .local import store_dir, wrapper_argv

__all__ = ["RayBackend", "last_checkpoint", "ray_auth_headers", "ray_state", "retry_submission_id",
           "submit_job_kwargs"]

ADX_ENV = ("TAU_METRICS_OFFLOAD_ADX_CLUSTER_URI", "TAU_METRICS_OFFLOAD_ADX_DATABASE",
           "TAU_METRICS_OFFLOAD_ADX_CLIENT_ID")
RAY_CONFIG_FILE = "tau-run-config.json"
ENV_ADX_SINK = "TAU_RAY_ADX_SINK"
ADX_SINKS = ("adx-queued-v1", "adx-streaming")
RETRY_EVENT = "retry"
WATCH_INTERVAL = 2.0  # seconds between the retry watcher's looks at the job
WATCH_UNREACHABLE = 600.0  # seconds the watcher waits for an unreachable cluster before it stops
_STATES = {"PENDING": "pending", "RUNNING": "running", "SUCCEEDED": "succeeded", "FAILED": "failed",
           "STOPPED": "cancelled"}


def ray_state(status: object) -> str:
    """Ray's ``JobStatus`` in TauGrid's words (STOPPED is a cancellation)."""
    return _STATES.get(str(getattr(status, "value", status)).upper(), "unknown")


def ray_auth_headers() -> dict[str, str]:
    """The ``Authorization`` header for Ray's token authentication, from where Ray's CLI finds the token."""
    if os.environ.get("RAY_AUTH_MODE", "").strip().lower() == "disabled":
        return {}
    token = os.environ.get("RAY_AUTH_TOKEN", "").strip()
    if not token:
        path = os.environ.get("RAY_AUTH_TOKEN_PATH") or str(Path.home() / ".ray" / "auth_token")
        try:
            token = Path(path).read_text(encoding="utf-8").strip()
        except OSError:
            token = ""
    return {"Authorization": f"Bearer {token}"} if token else {}


def _client(address: str):
    try:
        from ray.job_submission import JobSubmissionClient
    except ImportError as err:
        raise BackendUnavailable(f"the ray backend needs Ray's job client: pip install 'taunotebook[ray]' ({err})") \
            from None
    try:
        return JobSubmissionClient(address, headers=ray_auth_headers())
    except Exception as err:  # Ray raises ConnectionError/RuntimeError variants with multi-line text
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        hint = ""
        if "auth" in first.lower():
            hint = ("; the cluster wants Ray's token: set RAY_AUTH_TOKEN, or RAY_AUTH_TOKEN_PATH to the token "
                    "file (`ray get-auth-token` prints it), or put it in ~/.ray/auth_token")
        raise BackendUnavailable(f"cannot reach the Ray cluster at {address}: {first}{hint}") from None


def _shared(address: str) -> bool:
    if os.environ.get("TAU_RAY_SHARED_STORE") in ("0", "1"):
        return os.environ["TAU_RAY_SHARED_STORE"] == "1"
    return is_loopback_url(address)


def _adx_sink() -> str:
    sink = os.environ.get(ENV_ADX_SINK, "").strip() or ADX_SINKS[0]
    if sink not in ADX_SINKS:
        raise BackendUnavailable(f"{ENV_ADX_SINK}={sink!r}: must be one of {', '.join(ADX_SINKS)}")
    return sink


def retry_submission_id(run_id: str, attempt: int) -> str:
    """The submission id of the run's ``attempt``-th retry (0: the first submission, the run id itself)."""
    return run_id if attempt == 0 else f"{run_id}-retry-{attempt}"


def last_checkpoint(store: str | None, run_id: str) -> tuple[str, int | None] | None:
    """The run's last registered checkpoint still on disk, ``(uri, step)``: the highest step, else the last
    registered without one; None when the store has none (or there is no store)."""
    if not store:
        return None
    try:
        from tau_collector.expstore import StoreReader, open_store

        reader = StoreReader(open_store(store))
        rows, after = [], None
        while page := reader.artifacts(run_id, type="checkpoint", after_id=after):
            rows.extend(page)
            after = page[-1].artifact_id
    except Exception:  # no store yet, or unreadable: resume without a checkpoint
        return None
    live = [r for r in rows if not (r.tags or {}).get("deleted")]
    stepped = [r for r in live if r.step is not None]
    if stepped:
        best = max(stepped, key=lambda r: (r.step, r.created_at or ""))
        return best.uri, best.step
    return (live[-1].uri, None) if live else None


def submit_job_kwargs(spec: RunSpec, entrypoint: str, working_dir: str, env: Mapping[str, str]) -> dict[str, Any]:
    """The exact keyword arguments of ``JobSubmissionClient.submit_job`` for ``spec`` (what ``--dry-run`` prints):
    the entrypoint, the run id as submission id, ``runtime_env`` (working dir, env, pip, image) and the
    resources (:func:`~taunotebook.resources.ray_submit_options`)."""
    resources, runtime_extra = ray_submit_options(spec.resources)
    return {"entrypoint": entrypoint, "submission_id": spec.run_id,
            "runtime_env": {"working_dir": working_dir, "env_vars": dict(env), **runtime_extra},
            "metadata": {"tau_project": spec.project, "tau_group": spec.group}, **resources}


class RayBackend:
    name = "ray"

    def _address(self, spec: RunSpec) -> str:
        address = spec.options.get("ray_address") or os.environ.get("RAY_ADDRESS")
        if not address:
            raise BackendUnavailable("no Ray cluster address: pass --ray-address http://HOST:8265 or set RAY_ADDRESS")
        return address

    def check(self, spec: RunSpec) -> None:
        ray_submit_options(spec.resources)  # a resource Ray's Jobs API has no field for is refused first
        address = self._address(spec)
        try:
            import ray.job_submission  # noqa: F401
        except ImportError as err:
            raise BackendUnavailable(f"the ray backend needs Ray's job client: pip install 'taunotebook[ray]' "
                                     f"({err})") from None
        if not _shared(address):
            if not all(os.environ.get(k) for k in ADX_ENV):
                raise BackendUnavailable(f"the Ray cluster at {address} does not share this machine's store: set "
                                         f"{', '.join(ADX_ENV)} so the job's collector offloads to ADX "
                                         "(or TAU_RAY_SHARED_STORE=1 if it does share the filesystem)")
            _adx_sink()

    def submit(self, spec: RunSpec) -> dict[str, Any]:
        address = self._address(spec)
        dry_run = bool(spec.options.get("dry_run"))
        client = None if dry_run else _client(address)
        directory = spec.run_dir
        stage = directory / "ray-working-dir"
        if not dry_run:
            stage.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(spec.script, stage / "train.py")
        shared = _shared(address)
        env = {**spec.env, "TAU_WORKSPACE": spec.workspace, "TAU_RUN_ID": spec.run_id}
        if shared:
            store = store_dir(spec.home)
            run_dir, sink = str(directory), ["--sink", "expstore", "--store", str(store)]
        else:
            store = None
            run_dir, sink = "tau-run", ["--sink", _adx_sink()]
            env.update({k: v for k, v in os.environ.items() if k.startswith("TAU_METRICS_OFFLOAD_")})
        config = None
        if spec.config_path is not None:
            # A shared filesystem reads the run directory's file; elsewhere the job reads the copy
            # that travels in its working directory.
            config = str(spec.config_path)
            if not shared:
                config = RAY_CONFIG_FILE
                if not dry_run:
                    shutil.copyfile(spec.config_path, stage / RAY_CONFIG_FILE)
            env[CONFIG_ENV] = config
        argv = wrapper_argv(spec, run_dir, sink, python="python", script="train.py", config=config, retries=False)
        entrypoint = shlex.join(argv)
        kwargs = submit_job_kwargs(spec, entrypoint, str(stage), env)
        if dry_run:
            out = spec.options.get("out") or print
            out(f"# JobSubmissionClient({address!r}).submit_job(**kwargs) with kwargs:\n"
                + json.dumps(kwargs, indent=2, sort_keys=True))
            return {**spec.identity(), "backend": self.name, "dry_run": True, "submit_job": kwargs}
        try:
            client.submit_job(**kwargs)
        except Exception as err:
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise BackendError(f"Ray refused the job: {first}") from None
        record = {
            **spec.identity(), "backend": self.name, "created_at": time.time(), "run_dir": str(directory),
            "address": address, "submission_id": spec.run_id, "shared_store": shared,
            "store": str(store) if store else None, "entrypoint": entrypoint, "config": config,
            "resources": spec.resources.given(),  # what the job asked for (JobResources fields)
            "source": None if shared else "kusto",  # where the Portal finds its metrics (SubmittedRun.source)
        }
        retries = spec.resources.retries or 0
        if retries:
            record.update(retries=retries, attempt=0, submit_job={k: v for k, v in kwargs.items()
                                                                   if k != "submission_id"},
                          checkpoint_path=argv[argv.index("--checkpoint-path") + 1]
                          if "--checkpoint-path" in argv else None)
        write_record(directory, record)
        if store is not None:
            record_submission(str(store), spec.run_id, self.name, record["resources"])
        if retries:
            self._start_watcher(record)
        return record

    # -- retries: resubmitting a failed job

    def _start_watcher(self, record: Mapping[str, Any]) -> None:
        """The detached process that advances the run's retries until it ends (its own session: it outlives the
        kernel); its output goes to ``retry-watcher.log`` in the run directory."""
        directory = Path(record["run_dir"])
        with open(directory / "retry-watcher.log", "ab") as log:
            subprocess.Popen([sys.executable, "-m", "taunotebook.backends.ray", "watch", str(directory / RECORD)],
                             stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                             close_fds=True, cwd=str(directory))

    def advance(self, record: dict[str, Any]) -> Any:
        """Ray's job info for the run's current attempt, after resubmitting it if it failed with retries left.
        ``record`` (the run record) is brought up to date in place, from ``run.json`` and by a resubmission."""
        fresh = read_record(Path(record["run_dir"]) / RECORD) if record.get("run_dir") else None
        if fresh is not None and fresh.get("attempt", 0) > record.get("attempt", 0):
            record.update(fresh)
        client = _client(record["address"])
        info = client.get_job_info(record["submission_id"])
        attempt, retries = int(record.get("attempt", 0)), int(record.get("retries", 0))
        if ray_state(info.status) != "failed" or attempt >= retries or not record.get("submit_job"):
            return info
        if record.get("shared_store"):
            from .local import read_completion_state

            completion = read_completion_state(Path(record["run_dir"]))
            if completion and completion.get("state") == "cancelled":
                return info  # cancelled through its wrapper (a stop rule): not a failure to retry
        attempt += 1
        reason = ray_lifecycle(info).reason or "the job failed"
        found = last_checkpoint(record.get("store"), record["run_id"])
        resume_from, step = found if found else (record.get("checkpoint_path") or "", None)
        kwargs = json.loads(json.dumps(record["submit_job"]))
        env = {k: v for k, v in kwargs["runtime_env"].get("env_vars", {}).items()
               if k not in ("TAU_RESUME_FROM", "TAU_RESUME_STEP", "TAU_RETRY_ATTEMPT", "TAU_RETRY_MAX",
                            "TAU_RETRY_REASON")}
        env.update(TAU_RETRY_ATTEMPT=str(attempt), TAU_RETRY_MAX=str(retries), TAU_RETRY_REASON=reason)
        if resume_from:
            env["TAU_RESUME_FROM"] = resume_from
        if step is not None:
            env["TAU_RESUME_STEP"] = str(step)
        kwargs["runtime_env"]["env_vars"] = env
        submission_id = retry_submission_id(record["run_id"], attempt)
        try:
            client.submit_job(submission_id=submission_id, **kwargs)
            submitted = True
        except Exception:  # another reader of the run submitted this attempt first (the id exists)
            try:
                client.get_job_info(submission_id)
            except Exception as err:
                raise BackendError(f"Ray refused retry {attempt}/{retries} of run {record['run_id']}: {err}") \
                    from None
            submitted = False
        record.update(attempt=attempt, submission_id=submission_id,
                      submissions=[*record.get("submissions", [record["run_id"]]), submission_id])
        write_record(Path(record["run_dir"]), record)
        if submitted:
            where = (f"resuming from {resume_from}" + (f" (step {step})" if step is not None else "")) \
                if resume_from else "no checkpoint to resume from"
            self._record_retry(record, f"retry {attempt}/{retries} of the Ray job after it failed ({reason}); "
                               f"{where}", {"attempt": attempt, "max_retries": retries, "step": step,
                                            "resume_from": resume_from or None, "reason": reason,
                                            "submission_id": submission_id})
        return client.get_job_info(submission_id)

    @staticmethod
    def _record_retry(record: Mapping[str, Any], message: str, payload: dict[str, Any]) -> None:
        """The retry as a ``retry`` run event in the run's local store (its step in the payload); never raises."""
        if not record.get("store"):
            return
        try:
            from tau_collector.expstore import open_store, record_run_events
            from tau_collector.expstore.store import utc_now_rfc3339
            from tau_collector.reads import RunEvent

            record_run_events(open_store(record["store"], create=True), [
                RunEvent(record["run_id"], utc_now_rfc3339(), RETRY_EVENT, "taunotebook", "warning", message,
                         payload)])
        except Exception:  # the retry goes ahead whatever happens to its record
            pass

    # -- answering for a run from Ray's job table

    def _info(self, record: Mapping[str, Any]):
        if record.get("retries") and isinstance(record, dict):
            return self.advance(record)
        return _client(record["address"]).get_job_info(record["submission_id"])

    def state(self, record: Mapping[str, Any]) -> str:
        try:
            state = ray_state(self._info(record).status)
        except BackendUnavailable:
            return "unknown"
        if state in ("succeeded", "failed") and record.get("shared_store"):
            # The wrapper's completion file knows a cancellation Ray saw only as the entrypoint's exit code.
            from .local import read_completion_state

            completion = read_completion_state(Path(record["run_dir"]))
            if completion and completion.get("state") == "cancelled":
                return "cancelled"
        return state

    def finished(self, record: Mapping[str, Any]) -> bool:
        return self.state(record) in ("succeeded", "failed", "cancelled", "unknown")

    def lifecycle(self, record: Mapping[str, Any]) -> Lifecycle:
        """Ray's job status and its message in words (``queued: Job has not started yet. It may be waiting for
        resources ...``); a run cancelled through its wrapper is ``cancelled``."""
        try:
            current = ray_lifecycle(self._info(record))
        except BackendUnavailable as err:
            return Lifecycle("unknown", str(err))
        retried = int(record.get("attempt", 0))
        if current.phase in ("succeeded", "failed") and self.state(record) == "cancelled":
            return Lifecycle("cancelled", current.reason, retried)
        return Lifecycle(current.phase, current.reason, retried)

    def logs(self, record: Mapping[str, Any]) -> str:
        """The job log; of a retried run, every attempt's, each after a ``--- retry N`` line."""
        client = _client(record["address"])
        submissions = record.get("submissions") or [record["submission_id"]]
        parts = []
        for attempt, submission_id in enumerate(submissions):
            text = client.get_job_logs(submission_id)
            parts.append(text if attempt == 0 else f"--- retry {attempt} ({submission_id})\n{text}")
        return "".join(parts)

    def follow(self, record: Mapping[str, Any], write: Callable[[str], object]) -> None:
        """Stream the job log with ``tail_job_logs`` (on its own loop: a kernel's loop is already running)."""
        client = _client(record["address"])
        if ray_state(client.get_job_info(record["submission_id"]).status) not in ("pending", "running"):
            write(client.get_job_logs(record["submission_id"]))  # ended: the whole log, no stream to wait on
            return

        async def tail() -> None:
            async for lines in client.tail_job_logs(record["submission_id"]):
                write(lines)

        thread = threading.Thread(target=lambda: asyncio.run(tail()), name="tau-ray-logs", daemon=True)
        thread.start()
        thread.join()

    def cancel(self, record: Mapping[str, Any]) -> None:
        client = _client(record["address"])
        if ray_state(client.get_job_info(record["submission_id"]).status) in ("pending", "running"):
            client.stop_job(record["submission_id"])


def _watch(path: str) -> int:
    """``python -m taunotebook.backends.ray watch RUN_JSON``: advance the run's retries until it ends."""
    backend = RayBackend()
    unreachable_since = None
    while True:
        record = read_record(Path(path))
        if record is None:
            return 1
        try:
            state = backend.state(record)
        except BackendError as err:
            print(f"retry watcher: {err}", file=sys.stderr, flush=True)
            return 1
        if state in ("succeeded", "failed", "cancelled"):
            return 0
        if state == "unknown":  # the cluster is unreachable: give up after WATCH_UNREACHABLE (readers still retry)
            unreachable_since = unreachable_since or time.monotonic()
            if time.monotonic() - unreachable_since > WATCH_UNREACHABLE:
                print(f"retry watcher: the Ray cluster at {record.get('address')} was unreachable for "
                      f"{WATCH_UNREACHABLE:g}s; stopping (reading the run's state still retries it)", file=sys.stderr)
                return 1
        else:
            unreachable_since = None
        time.sleep(WATCH_INTERVAL)


if __name__ == "__main__":  # the retry watcher (RayBackend._start_watcher)
    if len(sys.argv) != 3 or sys.argv[1] != "watch":
        sys.exit("usage: python -m taunotebook.backends.ray watch RUN_JSON")
    sys.exit(_watch(sys.argv[2]))
