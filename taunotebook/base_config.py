"""A team's own TauGrid ``tau.yaml`` as the base of a ``tau`` run: read as TauGrid reads it, ours merged in.

:func:`load_base_config` decodes the file by TauGrid's rules (:func:`~tau_collector.taugrid.direct_config.
check_run_config`): a file ``tau run`` would refuse is refused here with TauGrid's message. Every section
passes through untouched. :func:`merge_base` adds what taunotebook owns — the entrypoint (our launcher
around the cell; the base's ``entrypoint``/``script`` are replaced by it), the metrics history and
offload, the experiment identity and the resources asked for. The base's ``name`` is the run's default
name, its ``experiment`` the default identity, its ``engine`` the default engine and its
``storage.output`` / ``storage.data_pvc`` are kept. A value both sides set differently is one
``ValueError`` naming both values — never a silent override.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tau_collector.taugrid.direct_config import check_run_config, normalize_engine
from tau_collector.taugrid.run_config_rules import experiment_id, first_non_empty, get

__all__ = ["BaseConfig", "load_base_config", "merge_base"]

_DURATIONS = ("backoff_initial", "backoff_max")
# Where a value of ours comes from, for the conflict message.
_SOURCES = {
    "experiment.project": "--project", "experiment.name": "--experiment (or --name)", "experiment.group": "--group",
    "metrics.history": "the history taunotebook's launcher writes", "metrics.offload.enabled": "taunotebook "
    "(its metrics are offloaded by TauGrid's collector)", "engine": "--engine", "compute.gpus": "--gpus",
    "compute.workers": "--workers", "compute.gpus_per_worker": "--gpus-per-worker", "runtime.image": "--image",
    "runtime.pip": "--pip", "policy.queue": "--queue", "policy.profile": "--profile",
    "execution.launcher": "--nodes/--procs-per-node (torchrun)", "execution.nodes": "--nodes",
    "execution.processes_per_node": "--procs-per-node", "resilience.max_retries": "--retries",
    "resilience.checkpoint_path": "--checkpoint-path",
}


class BaseConfig:
    """A loaded base config: its ``path``, its decoded ``config`` and the ``engine`` it names (or ``""``)."""

    def __init__(self, path: str, config: dict[str, Any]) -> None:
        self.path = path
        self.config = config
        self.engine = normalize_engine(first_non_empty(get(config, "run.engine", ""), config.get("engine") or ""))

    @property
    def name(self) -> str | None:
        return (self.config.get("name") or "").strip() or None

    def identity(self) -> dict[str, str]:
        """The base's ``experiment.project``/``group`` and its experiment id (``name``, else from ``title``)."""
        experiment = self.config.get("experiment") or {}
        out = {"project": (experiment.get("project") or "").strip(), "group": (experiment.get("group") or "").strip(),
               "experiment": experiment_id(experiment)}
        return {k: v for k, v in out.items() if v}


def _durations_as_text(config: dict[str, Any]) -> None:
    resilience = config.get("resilience")
    if isinstance(resilience, dict):
        for key in _DURATIONS:
            if isinstance(resilience.get(key), int):
                resilience[key] = f"{resilience[key]}ns"  # Go's time.ParseDuration reads it back exactly


def load_base_config(path: str | os.PathLike[str]) -> BaseConfig:
    """The base config at ``path`` as ``tau run`` reads it; ValueError naming the file for what TauGrid refuses."""
    where = os.fspath(path)
    try:
        data = Path(where).read_bytes()
    except OSError as err:
        raise ValueError(f"--base-config {where}: cannot read it ({err.strerror or err})") from None
    verdict = check_run_config(data, where)
    if not verdict.accepted:
        raise ValueError(f"--base-config {where}: TauGrid refuses it: {verdict.error}")
    if verdict.engine is None or (verdict.config.get("schema_version") is not None and not verdict.engine):
        raise ValueError(f"--base-config {where}: a managed workflow manifest (schema_version without engine) is not "
                         "a direct run config; give a config with engine: job or rayjob")
    config = dict(verdict.config)
    if config.get("workflow"):
        raise ValueError(f"--base-config {where}: workflow dispatch (workflow.file) runs the team's workflow, not "
                         "the cell; remove the workflow section to submit the cell with this config")
    _durations_as_text(config)
    return BaseConfig(where, config)


def _merge(base: Any, ours: Any, path: str, source: str) -> Any:
    if isinstance(base, Mapping) and isinstance(ours, Mapping):
        merged = dict(base)
        for key, value in ours.items():
            sub = f"{path}.{key}" if path else str(key)
            merged[key] = _merge(base[key], value, sub, source) if key in base else value
        return merged
    if base == ours:
        return base
    flag = _SOURCES.get(path) or _SOURCES.get(path.rsplit(".", 1)[0]) or "taunotebook's settings"
    raise ValueError(f"{path}: the base config {source} has {base!r} and {flag} asks for {ours!r}; change one of "
                     "them (a base config's value is never overridden)")


def merge_base(base: BaseConfig, ours: Mapping[str, Any]) -> dict[str, Any]:
    """``ours`` merged into the base config (see the module docstring); ValueError on a conflict."""
    config = {k: v for k, v in base.config.items() if k not in ("name", "engine", "entrypoint", "script")}
    run = {k: v for k, v in (config.get("run") or {}).items()
           if k not in ("name", "engine", "entrypoint", "script", "main_script")}
    if run:
        config["run"] = run
    else:
        config.pop("run", None)
    ours = {k: dict(v) if isinstance(v, Mapping) else v for k, v in ours.items()}
    if base.engine and ours.get("engine") != base.engine:
        raise ValueError(f"engine: the base config {base.path} has {base.engine!r} and --engine asks for "
                         f"{ours.get('engine')!r}; change one of them (a base config's value is never overridden)")
    storage = dict(ours.pop("storage", {}))
    base_storage = config.get("storage") or {}
    for key in ("output", "data_pvc"):
        if base_storage.get(key):
            storage.pop(key, None)
    head = {k: ours.pop(k) for k in ("name", "engine", "entrypoint") if k in ours}
    merged = _merge(config, {**ours, "storage": storage} if storage else ours, "", base.path)
    return {**head, **merged}
