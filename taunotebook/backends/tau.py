"""The ``tau`` backend: render TauGrid's run config for the cell and call ``tau run --workspace W --config FILE``.

The rendered config asks TauGrid for what the local backend does by itself: durable output under the
workspace (``storage.output``), the history chunks the job writes (``metrics.history``) offloaded by
TauGrid's collector sidecar (``metrics.offload.enabled``), and the run's Stellar identity
(``experiment``). It is checked against TauGrid's run-config rules (``core/runconfig``) before
anything is called. The entrypoint is a small launcher that runs the training script with its stdout
through ``tau-collector normalize``, so ``print(json.dumps({"step", "loss"}))`` rows become the house
history rows TauGrid's collector reads; the job image needs ``tau-collector`` installed.

A run with checkpoints (``--checkpoints GLOB``, or a ``resilience.checkpoint_path`` / ``storage.checkpoint``
the config names) runs the script under ``tau-collector wrap`` instead (:func:`checkpoint_globs`): its
history goes to ``<output>/taunotebook/`` (``metrics.history`` says so) and wrap's collector registers the
checkpoints with their step, beside the run's metrics and status, in the run's own expstore
``<output>/store`` (``taunotebook portal --store`` serves it).
"""

from __future__ import annotations

import os
import posixpath
import shutil
import subprocess
import time
from collections.abc import Mapping
from typing import Any

from tau_collector.taugrid.direct_config import check_run_config
from tau_collector.taugrid.yaml_writer import dump_yaml

from ..base_config import merge_base
from ..lifecycle import Lifecycle, from_store
from ..resources import tau_engine, tau_sections
from . import BackendError, BackendUnavailable, RunSpec, path_component, write_record

__all__ = ["TauBackend", "checkpoint_globs", "launcher", "render_config", "to_yaml", "validate_config"]

HISTORY_DIR = "metrics-history-attempt-0"
WRAP_DIR = "taunotebook"  # under storage.output: wrap's run directory when the run registers checkpoints
STORE_DIR = "store"  # under storage.output: the run's expstore, where wrap registers its checkpoints
DEFAULT_CHECKPOINT_DIR = "/data/checkpoints/finetunes"  # TauGrid's default resilience.checkpoint_path: <this>/<name>
DATA_ROOT = "/data"
OFFLOAD = "when metrics.offload.enabled is true"
ENTRY = "tau_entry.py"
CONFIG = "tau.yaml"
LAUNCHER = '''\
"""Runs the training script with its stdout through tau-collector's normalizer (rendered by taunotebook)."""
import os, subprocess, sys

output = os.environ.get("TAU_RUN_OUTPUT", {output!r})
history = os.path.join(output, {history!r})
os.makedirs(history, exist_ok=True)
here = os.path.dirname(os.path.abspath(__file__))
limit = {time_limit!r}  # seconds (taunotebook's time_limit), or None
if os.environ.get("RANK", "0") != "0":  # torchrun: only rank 0's stdout becomes the run's history
    try:
        sys.exit(subprocess.call([sys.executable, os.path.join(here, {script!r}), *{args!r}], timeout=limit))
    except subprocess.TimeoutExpired:
        sys.exit(124)
# system/ metrics of the trainer's process tree, as wrap samples them (TAU_COLLECTOR_SYSTEM_INTERVAL, 0 = off)
from tau_collector.cli.durations import DurationError, duration_type
try:
    interval = duration_type(zero=True)(os.environ.get("TAU_COLLECTOR_SYSTEM_INTERVAL", "").strip() or "10")
except DurationError as exc:
    print(f"tau_entry: $TAU_COLLECTOR_SYSTEM_INTERVAL: {{exc}}; sampling every 10s", file=sys.stderr)
    interval = 10.0
checkpoints = {checkpoints!r}  # globs of the job's checkpoints (relative ones under the working directory)
if checkpoints:  # tau-collector wrap registers them, with the run's metrics, in the run's own store
    command = [sys.executable, "-m", "tau_collector", "wrap", "--run-dir", os.path.dirname(history),
               *{identity!r}, "--sink", "expstore", "--store", os.path.join(output, {store!r}),
               "--system-interval", f"{{interval:g}}"]
    if limit is not None:
        command += ["--time-limit", f"{{limit:g}}"]
    for pattern in checkpoints:
        command += ["--checkpoints", os.path.join(os.getcwd(), pattern)]
    sys.exit(subprocess.call([*command, "--", sys.executable, os.path.join(here, {script!r}), *{args!r}]))
trainer = subprocess.Popen([sys.executable, os.path.join(here, {script!r}), *{args!r}], stdout=subprocess.PIPE)
normalize = subprocess.Popen([sys.executable, "-m", "tau_collector", "normalize", "--out", history],
                             stdin=trainer.stdout)
trainer.stdout.close()
sampler = None
if interval > 0:
    from tau_collector.job.system_sampler import SystemSampler
    sampler = SystemSampler(history, trainer.pid, interval).start()
try:
    code = trainer.wait(timeout=limit)
except subprocess.TimeoutExpired:
    print(f"tau_entry: time limit of {{limit:g}}s reached; stopping the trainer", file=sys.stderr)
    trainer.terminate()
    try:
        trainer.wait(timeout=30)
    except subprocess.TimeoutExpired:
        trainer.kill()
        trainer.wait()
    code = 124
normalize.wait()
if sampler is not None:
    sampler.stop()
sys.exit(code)
'''


def render_config(spec: RunSpec, *, data_pvc: str | None = None) -> dict[str, Any]:
    """TauGrid's run config for ``spec``: storage, metrics history with offload enabled, experiment identity, the
    resources asked for (:func:`~taunotebook.resources.tau_sections`), merged into the base config if there is one
    (:func:`~taunotebook.base_config.merge_base`). ValueError names an option the engine cannot take, or a conflict."""
    output = posixpath.join(DATA_ROOT, "projects", path_component(spec.workspace), "runs", path_component(spec.run_id))
    storage: dict[str, Any] = {"output": output}
    if data_pvc:
        storage = {"data_pvc": data_pvc, **storage}
    base = spec.base_config
    engine = tau_engine(spec.resources, base.engine if base is not None else "")
    config: dict[str, Any] = {
        "name": spec.run_id,
        "engine": engine,
        "entrypoint": ENTRY,
        "storage": storage,
        "metrics": {"history": [f"{history_dir(spec)}/*.jsonl"], "offload": {"enabled": True}},
        "experiment": {"project": spec.project, "name": spec.experiment, "group": spec.group},
        **tau_sections(spec.resources, engine, spec.env),
    }
    return merge_base(base, config) if base is not None else config


def checkpoint_globs(spec: RunSpec) -> list[str]:
    """The globs of the job's checkpoints, as the launcher is given them: ``--checkpoints`` (relative ones under the
    job's working directory), else the files of ``resilience.checkpoint_path`` (``--checkpoint-path`` or the base
    config's); and ``storage.checkpoint`` when the base config names one (a path inside the run's checkpoint
    directory, TauGrid's default ``/data/checkpoints/finetunes/<name>``). ``[]``: no checkpoints to register."""
    base = spec.base_config.config if spec.base_config is not None else {}
    resilience = base.get("resilience") if isinstance(base.get("resilience"), Mapping) else {}
    storage = base.get("storage") if isinstance(base.get("storage"), Mapping) else {}
    directory = spec.resources.checkpoint_path or (resilience.get("checkpoint_path") or "").strip() or None
    globs = list(spec.checkpoints) or ([posixpath.join(directory, "*")] if directory else [])
    named = (storage.get("checkpoint") or "").strip()
    if named:
        path = posixpath.join(directory or posixpath.join(DEFAULT_CHECKPOINT_DIR, spec.run_id), named)
        globs += [path] if path not in globs else []
    return globs


def history_dir(spec: RunSpec) -> str:
    """Where the job's history chunks go, under ``storage.output``: wrap's run directory when it registers
    checkpoints (:func:`checkpoint_globs`), else the launcher's own."""
    return posixpath.join(WRAP_DIR, HISTORY_DIR) if checkpoint_globs(spec) else HISTORY_DIR


def launcher(spec: RunSpec, output: str) -> str:
    """The staged entrypoint ``tau_entry.py`` for ``spec`` (its run's history under ``output``)."""
    identity = ["--run", spec.run_id, "--project", spec.project, "--experiment", spec.experiment,
                "--group", spec.group, "--tag", f"tau_workspace={spec.workspace}"]
    return LAUNCHER.format(output=output, history=history_dir(spec), script="train.py", args=list(spec.args),
                           time_limit=spec.resources.time_limit_seconds(), checkpoints=checkpoint_globs(spec),
                           identity=identity, store=STORE_DIR)


def validate_config(config: Mapping[str, Any]) -> list[str]:
    """TauGrid's verdict on ``config`` as we write it (:func:`to_yaml`): its problem, or ``[]`` when ``tau run``
    would take it (TauGrid's ``core/runconfig`` rules, see :mod:`tau_collector.taugrid.direct_config`)."""
    try:
        text = to_yaml(config) + "\n"
    except ValueError as err:
        return [str(err)]
    verdict = check_run_config(text, CONFIG)
    return [] if verdict.accepted else [verdict.error]


def to_yaml(value: Mapping[str, Any]) -> str:
    """The config as block YAML that TauGrid's yaml.v3 decodes to exactly these values."""
    return dump_yaml(value)


class TauBackend:
    name = "tau"

    def check(self, spec: RunSpec) -> None:
        if spec.config_path is not None:
            raise BackendError("--config is not supported by the tau backend yet: TauGrid's run config has no "
                               "field for a run's hyperparameters; pass them as script arguments instead")
        if spec.stop_rules:
            raise BackendError("--stop-on-nan and --stop-if are not supported by the tau backend: TauGrid's own "
                               "collector sidecar delivers its metrics and does not watch rules; use the local or "
                               "ray backend")
        if spec.notify:
            raise BackendError("--notify is not supported by the tau backend: TauGrid's own collector sidecar "
                               "runs the job and sends no webhooks; use the local or ray backend")
        if spec.tfevents:
            raise BackendError("--tfevents is not supported by the tau backend: TauGrid's collector reads "
                               "JSONL history only; print JSON rows instead")
        if not spec.options.get("dry_run") and shutil.which("tau") is None:
            raise BackendUnavailable("the `tau` CLI is not on PATH: install TauGrid's CLI, or add --dry-run to "
                                     "print the run config and command")
        problems = validate_config(render_config(spec))
        if problems:
            raise BackendError("invalid TauGrid run config: " + "; ".join(problems))

    def submit(self, spec: RunSpec) -> dict[str, Any]:
        config = render_config(spec, data_pvc=os.environ.get("TAU_DATA_PVC"))
        problems = validate_config(config)
        if problems:
            raise BackendError("invalid TauGrid run config: " + "; ".join(problems))
        text = to_yaml(config) + "\n"
        out = spec.options.get("out") or print
        if spec.options.get("dry_run"):
            out(f"# {CONFIG}\n{text}")
            out(f"$ tau run --workspace {spec.workspace} --config {CONFIG}")
            return {**spec.identity(), "backend": self.name, "dry_run": True, "config": config}
        stage = spec.run_dir / "tau"
        stage.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(spec.script, stage / "train.py")
        output = config["storage"]["output"]
        (stage / ENTRY).write_text(launcher(spec, output))
        config_path = stage / CONFIG
        config_path.write_text(text)
        command = ["tau", "run", "--workspace", spec.workspace, "--config", str(config_path)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=stage)
        except (OSError, subprocess.TimeoutExpired) as err:
            raise BackendError(f"`tau run` failed: {err}") from None
        if done.returncode != 0:
            detail = (done.stderr or done.stdout).strip().splitlines()
            raise BackendError(f"`tau run` exited with {done.returncode}: {detail[-1] if detail else 'no output'}")
        record = {
            **spec.identity(), "backend": self.name, "created_at": time.time(), "run_dir": str(spec.run_dir),
            "config": config, "config_path": str(config_path), "command": command, "submit_output": done.stdout,
            "resources": spec.resources.given(),  # what the job asked for (JobResources fields)
        }
        write_record(spec.run_dir, record)
        return record

    # -- answering for a run: TauGrid's Portal ($TAU_PORTAL_URL) knows its state

    def state(self, record: Mapping[str, Any]) -> str:
        if not os.environ.get("TAU_PORTAL_URL"):
            return "submitted"
        from ..client import NotFoundError, PortalClient, PortalError

        try:
            with PortalClient(workspace=record["workspace"], retries=0) as client:
                return client.run(record["run_id"]).state or "unknown"
        except NotFoundError:
            return "pending"
        except (PortalError, ValueError):
            return "unknown"

    def finished(self, record: Mapping[str, Any]) -> bool:
        return self.state(record) in ("succeeded", "failed", "cancelled")

    def lifecycle(self, record: Mapping[str, Any]) -> Lifecycle:
        """TauGrid's run state and status reason (the run's ``tau.status.message`` / ``tau.status.reason`` tags)
        from its Portal; without ``$TAU_PORTAL_URL``, ``submitted``."""
        if not os.environ.get("TAU_PORTAL_URL"):
            return Lifecycle("submitted", "set TAU_PORTAL_URL to follow the run on TauGrid's Portal")
        from ..client import NotFoundError, PortalClient, PortalError

        try:
            with PortalClient(workspace=record["workspace"], retries=0) as client:
                run = client.run(record["run_id"])
        except NotFoundError:
            return Lifecycle("queued", "TauGrid's Portal has no metrics of the run yet")
        except (PortalError, ValueError) as err:
            return Lifecycle("unknown", str(err))
        tags = dict(getattr(run, "tags", {}) or {})
        if not tags.get("tau.status.message") and tags.get("tau.status.reason"):
            tags["tau.status.message"] = tags["tau.status.reason"]
        state = run.state or run.lifecycle_state or "unknown"
        return from_store(state, tags, [])

    def logs(self, record: Mapping[str, Any]) -> str:
        return (f"run {record['run_id']} runs on TauGrid: `tau run status {record['run_id']}` and its Portal show "
                "the job's logs\n")

    def cancel(self, record: Mapping[str, Any]) -> None:
        raise BackendError(f"cancel TauGrid run {record['run_id']} with TauGrid's CLI or Portal")
