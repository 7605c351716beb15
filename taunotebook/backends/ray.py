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
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..lifecycle import Lifecycle, ray_lifecycle, record_submission
from ..loopback import is_loopback_url
from ..resources import ray_submit_options
from ..submit_config import CONFIG_ENV
from . import BackendError, BackendUnavailable, RunSpec, write_record
from .local import store_dir, wrapper_argv

__all__ = ["RayBackend", "ray_auth_headers", "ray_state", "submit_job_kwargs"]

ADX_ENV = ("TAU_METRICS_OFFLOAD_ADX_CLUSTER_URI", "TAU_METRICS_OFFLOAD_ADX_DATABASE",
           "TAU_METRICS_OFFLOAD_ADX_CLIENT_ID")
RAY_CONFIG_FILE = "tau-run-config.json"
ENV_ADX_SINK = "TAU_RAY_ADX_SINK"
ADX_SINKS = ("adx-queued-v1", "adx-streaming")
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
        argv = wrapper_argv(spec, run_dir, sink, python="python", script="train.py", config=config)
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
        write_record(directory, record)
        if store is not None:
            record_submission(str(store), spec.run_id, self.name, record["resources"])
        return record

    # -- answering for a run from Ray's job table

    def _info(self, record: Mapping[str, Any]):
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
        if current.phase in ("succeeded", "failed") and self.state(record) == "cancelled":
            return Lifecycle("cancelled", current.reason)
        return current

    def logs(self, record: Mapping[str, Any]) -> str:
        return _client(record["address"]).get_job_logs(record["submission_id"])

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
