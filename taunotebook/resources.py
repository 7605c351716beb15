"""One vocabulary for what a job asks of its platform (:class:`JobResources`), and what each backend makes of it.

The magic's flags (``--gpus 2``), ``submit(gpus=2)`` and ``JobResources(gpus=2)`` are the same
request. Each backend renders what it can and refuses, naming the option, what it cannot honour:

* ``tau``: TauGrid's ``compute``, ``runtime``, ``policy``, ``execution`` and ``resilience`` sections
  (:func:`tau_sections`), the engine ``job`` or ``rayjob``;
* ``ray``: the Jobs API's ``entrypoint_num_gpus`` / ``entrypoint_num_cpus`` / ``entrypoint_memory`` /
  ``entrypoint_resources`` and ``runtime_env`` ``pip`` / ``image_uri`` (:func:`ray_submit_options`); retries
  are resubmissions of the failed job (:mod:`taunotebook.backends.ray`);
* ``local``: ``CUDA_VISIBLE_DEVICES`` for the GPUs, a time limit, and retries that resume from the last
  checkpoint (``tau-collector wrap --retries``; :func:`local_environment`).
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

__all__ = ["ENGINES", "JobResources", "add_resource_arguments", "local_environment", "parse_quantity_cpu",
           "parse_quantity_memory", "ray_submit_options", "resources_from_args", "tau_sections"]

ENGINES = ("job", "rayjob")
_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([a-zA-Z]*)$")
_MEMORY_UNITS = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30,
                 "Ti": 2**40}
_DURATION = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(s|m|h|d)?$")
_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SECRET = re.compile(r"^[^:\s]+:[^:\s]+$")


@dataclass(frozen=True)
class JobResources:
    """What a job asks for; every field is optional (None/empty: the platform's default).

    ``gpus`` is the job's total; ``gpus_per_worker`` with ``workers`` asks for a Ray cluster's worker pods
    (``tau`` engine ``rayjob``). CPU and memory are Kubernetes quantities (``"500m"``, ``"2"``, ``"4Gi"``).
    ``secrets`` maps an environment variable to ``SECRET:KEY`` (TauGrid's ``runtime.env_secret``).
    ``nodes`` and ``processes_per_node`` start the script with ``torchrun`` (``tau`` engine ``job``);
    ``retries`` and ``checkpoint_path`` are TauGrid's ``resilience``; ``time_limit`` is seconds or
    ``"30m"``/``"2h"``/``"1d"``.
    """

    gpus: int | None = None
    gpus_per_worker: int | None = None
    workers: int | None = None
    cpu: str | None = None
    cpu_limit: str | None = None
    memory: str | None = None
    memory_limit: str | None = None
    image: str | None = None
    pip: tuple[str, ...] = ()
    secrets: Mapping[str, str] = field(default_factory=dict)
    queue: str | None = None
    profile: str | None = None
    nodes: int | None = None
    processes_per_node: int | None = None
    retries: int | None = None
    checkpoint_path: str | None = None
    time_limit: float | str | None = None
    engine: str | None = None

    def __post_init__(self) -> None:
        for name in ("gpus", "gpus_per_worker", "workers", "nodes", "processes_per_node", "retries"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"{name} must be a whole number >= 0, not {value!r}")
        for name in ("workers", "nodes", "processes_per_node"):
            if getattr(self, name) == 0:
                raise ValueError(f"{name} must be at least 1")
        for name in ("cpu", "cpu_limit"):
            if getattr(self, name) is not None:
                parse_quantity_cpu(getattr(self, name), name)
        for name in ("memory", "memory_limit"):
            if getattr(self, name) is not None:
                parse_quantity_memory(getattr(self, name), name)
        for name in ("image", "queue", "profile", "checkpoint_path"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip() or value != value.strip()):
                raise ValueError(f"{name} must be a non-empty text without surrounding spaces, not {value!r}")
        if isinstance(self.pip, str):
            object.__setattr__(self, "pip", (self.pip,))
        object.__setattr__(self, "pip", tuple(self.pip))
        for requirement in self.pip:
            if not isinstance(requirement, str) or not requirement.strip():
                raise ValueError(f"pip: {requirement!r} is not a requirement (e.g. 'torch==2.4.0')")
        object.__setattr__(self, "secrets", dict(self.secrets))
        for name, ref in self.secrets.items():
            if not _ENV_NAME.match(str(name)) or not isinstance(ref, str) or not _SECRET.match(ref):
                raise ValueError(f"secret {name}={ref!r}: give ENV_NAME=SECRET:KEY (a Kubernetes secret and its key)")
        if self.time_limit is not None:
            self.time_limit_seconds()
        if self.engine is not None and self.engine not in ENGINES:
            raise ValueError(f"engine {self.engine!r} is not one of {', '.join(ENGINES)}")
        if self.gpus is not None and self.gpus_per_worker is not None:
            raise ValueError(f"give gpus (the job's total, {self.gpus}) or gpus_per_worker "
                             f"({self.gpus_per_worker}), not both")
        if self.checkpoint_path is not None and not self.retries:
            raise ValueError(f"checkpoint_path {self.checkpoint_path!r} is where a retried job resumes from: "
                             "give retries too (e.g. retries=2)")

    def time_limit_seconds(self) -> float | None:
        """The time limit in seconds (ValueError naming ``time_limit`` for a bad value)."""
        value = self.time_limit
        if value is None:
            return None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            seconds = float(value)
        else:
            match = _DURATION.match(str(value).strip())
            if not match:
                raise ValueError(f"time_limit {value!r}: give seconds or a number with s, m, h or d (e.g. '2h')")
            seconds = float(match.group(1)) * _DURATION_UNITS[match.group(2) or "s"]
        if not seconds > 0 or seconds == float("inf"):
            raise ValueError(f"time_limit {value!r} must be a positive time")
        return seconds

    def given(self) -> dict[str, Any]:
        """The options that were set (name -> value), in the field order."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) not in (None, (), {})}

    @property
    def distributed(self) -> bool:
        return (self.nodes or 1) > 1 or (self.processes_per_node or 1) > 1

    @classmethod
    def from_options(cls, options: Mapping[str, Any] | JobResources | None) -> JobResources:
        """A :class:`JobResources` from a mapping of its field names (``submit``'s keyword arguments)."""
        if options is None:
            return cls()
        if isinstance(options, JobResources):
            return options
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(options) - names)
        if unknown:
            raise ValueError(f"unknown resource option(s) {', '.join(unknown)}; the options are "
                             f"{', '.join(f.name for f in fields(cls))}")
        return cls(**{k: v for k, v in options.items() if v is not None})

    def replace(self, **changes: Any) -> JobResources:
        return dataclasses.replace(self, **changes)


def parse_quantity_cpu(text: Any, what: str = "cpu") -> float:
    """A Kubernetes CPU quantity (``"500m"``, ``"2"``) in cores; ValueError naming ``what``."""
    match = _QUANTITY.match(str(text).strip())
    if not match or match.group(2) not in ("", "m"):
        raise ValueError(f"{what} {text!r}: give cores ('2', '0.5') or millicores ('500m')")
    return float(match.group(1)) / (1000 if match.group(2) == "m" else 1)


def parse_quantity_memory(text: Any, what: str = "memory") -> int:
    """A Kubernetes memory quantity (``"4Gi"``, ``"512Mi"``, ``"1G"``) in bytes; ValueError naming ``what``."""
    match = _QUANTITY.match(str(text).strip())
    if not match or match.group(2) not in _MEMORY_UNITS:
        raise ValueError(f"{what} {text!r}: give bytes with a unit ({', '.join(u for u in _MEMORY_UNITS if u)}), "
                         "e.g. '4Gi'")
    return int(float(match.group(1)) * _MEMORY_UNITS[match.group(2)])


# -- the flags ---------------------------------------------------------------------------------

_FLAGS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("--gpus", "gpus", {"type": int, "metavar": "N", "help": "GPUs for the job (its total)"}),
    ("--gpus-per-worker", "gpus_per_worker", {"type": int, "metavar": "N"}),
    ("--workers", "workers", {"type": int, "metavar": "N"}),
    ("--cpu", "cpu", {"metavar": "Q"}),
    ("--cpu-limit", "cpu_limit", {"metavar": "Q"}),
    ("--memory", "memory", {"metavar": "Q"}),
    ("--memory-limit", "memory_limit", {"metavar": "Q"}),
    ("--image", "image", {"metavar": "IMAGE"}),
    ("--pip", "pip", {"action": "append", "default": [], "metavar": "REQ"}),
    ("--env", "env", {"action": "append", "default": [], "metavar": "K=V"}),
    ("--secret", "secrets", {"action": "append", "default": [], "metavar": "K=SECRET:KEY"}),
    ("--queue", "queue", {"metavar": "Q"}),
    ("--profile", "profile", {"metavar": "P"}),
    ("--nodes", "nodes", {"type": int, "metavar": "N"}),
    ("--procs-per-node", "processes_per_node", {"type": int, "metavar": "N"}),
    ("--retries", "retries", {"type": int, "metavar": "N"}),
    ("--checkpoint-path", "checkpoint_path", {"metavar": "PATH"}),
    ("--time-limit", "time_limit", {"metavar": "T"}),
    ("--engine", "engine", {"choices": ENGINES}),
)


def add_resource_arguments(parser: argparse.ArgumentParser) -> None:
    """The resource flags (``--gpus``, ``--image``, ``--env K=V`` ...) on an argparse parser."""
    for flag, dest, kwargs in _FLAGS:
        parser.add_argument(flag, dest=f"res_{dest}", **kwargs)


def _pairs(items: Sequence[str], flag: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{flag} {item!r} must be NAME=VALUE")
        out[key.strip()] = value
    return out


def resources_from_args(opts: argparse.Namespace) -> tuple[JobResources, dict[str, str]]:
    """The :class:`JobResources` and the ``--env`` mapping the flags of :func:`add_resource_arguments` give."""
    values = {dest: getattr(opts, f"res_{dest}") for _, dest, _ in _FLAGS}
    env = _pairs(values.pop("env"), "--env")
    values["secrets"] = _pairs(values.pop("secrets"), "--secret")
    values["pip"] = tuple(values["pip"])
    flag_of = {dest: flag for flag, dest, _ in _FLAGS}
    try:
        return JobResources(**{k: v for k, v in values.items() if v is not None}), env
    except ValueError as err:  # name the flag, not the field
        message = str(err)
        for dest, flag in flag_of.items():
            if message.startswith(dest + " "):
                message = flag + message[len(dest):]
                break
        raise ValueError(message) from None


# -- rendering ---------------------------------------------------------------------------------


def _refuse(resources: JobResources, names: Sequence[str], backend: str, why: str) -> None:
    given = resources.given()
    bad = [n for n in names if n in given]
    if bad:
        flags = ", ".join(f"{n} (--{n.replace('_', '-').replace('processes-per-node', 'procs-per-node')})"
                          for n in bad)
        raise ValueError(f"{flags}: not available on the {backend} backend: {why}")


def tau_engine(resources: JobResources, base_engine: str = "") -> str:
    """The TauGrid engine: ``--engine``, else the base config's, else ``rayjob`` when workers are asked, else
    ``job``."""
    if resources.engine:
        return resources.engine
    if base_engine:
        return base_engine
    return "rayjob" if resources.workers is not None or resources.gpus_per_worker is not None else "job"


def tau_sections(resources: JobResources, engine: str, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """TauGrid's ``compute``, ``runtime``, ``policy``, ``execution`` and ``resilience`` sections for ``engine``."""
    r = resources
    out: dict[str, dict[str, Any]] = {}

    def put(section: str, key: str, value: Any) -> None:
        if value is not None and not (isinstance(value, (list, tuple, dict)) and not value):
            out.setdefault(section, {})[key] = value

    if engine == "rayjob":
        if r.nodes is not None or r.processes_per_node is not None:
            raise ValueError("nodes (--nodes) and processes_per_node (--procs-per-node) start torchrun, which is for "
                             "engine job; on engine rayjob give workers (--workers) and gpus_per_worker "
                             "(--gpus-per-worker)")
        if r.gpus is not None:
            raise ValueError(f"gpus (--gpus {r.gpus}) is a job's total, for engine job; on engine rayjob give "
                             "gpus_per_worker (--gpus-per-worker) with workers (--workers)")
        put("compute", "workers", r.workers)
        put("compute", "gpus_per_worker", r.gpus_per_worker)
        prefix = "worker_"
    else:
        if r.workers is not None or r.gpus_per_worker is not None:
            raise ValueError("workers (--workers) and gpus_per_worker (--gpus-per-worker) ask for Ray worker pods: "
                             "add --engine rayjob, or give gpus (--gpus) for one job pod")
        put("compute", "gpus", r.gpus)
        prefix = ""
    put("compute", f"{prefix}cpu_request", r.cpu)
    put("compute", f"{prefix}cpu_limit", r.cpu_limit)
    put("compute", f"{prefix}memory_request", r.memory)
    put("compute", f"{prefix}memory_limit", r.memory_limit)
    put("runtime", "image", r.image)
    put("runtime", "pip", list(r.pip))
    put("runtime", "env", dict(env or {}))
    put("runtime", "env_secret", dict(r.secrets))
    put("policy", "queue", r.queue)
    put("policy", "profile", r.profile)
    if r.distributed:
        put("execution", "launcher", "torchrun")
        put("execution", "nodes", r.nodes)
        put("execution", "processes_per_node", r.processes_per_node)
    put("resilience", "max_retries", r.retries)
    put("resilience", "checkpoint_path", r.checkpoint_path)
    return out


def ray_submit_options(resources: JobResources) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(submit_job keyword arguments, runtime_env entries)`` for Ray's Jobs API; ValueError for what it lacks."""
    r = resources
    _refuse(r, ("gpus_per_worker", "workers", "nodes", "processes_per_node"), "ray",
            "a Ray job is one entrypoint on the cluster; start workers from the script (Ray Train's ScalingConfig)")
    _refuse(r, ("cpu_limit", "memory_limit"), "ray", "Ray schedules by requests only (give cpu / memory)")
    _refuse(r, ("queue", "profile"), "ray", "they are TauGrid's scheduling policy (use --backend tau)")
    _refuse(r, ("secrets",), "ray", "Ray's runtime_env has no secret references (pass env vars, or use --backend tau)")
    _refuse(r, ("engine",), "ray", "the engine is TauGrid's (--backend tau)")
    kwargs: dict[str, Any] = {}
    if r.gpus is not None:
        kwargs["entrypoint_num_gpus"] = r.gpus
    if r.cpu is not None:
        kwargs["entrypoint_num_cpus"] = parse_quantity_cpu(r.cpu)
    if r.memory is not None:
        kwargs["entrypoint_memory"] = parse_quantity_memory(r.memory)
    runtime_env: dict[str, Any] = {}
    if r.pip:
        runtime_env["pip"] = list(r.pip)
    if r.image is not None:
        runtime_env["image_uri"] = r.image
    return kwargs, runtime_env


def local_environment(resources: JobResources, env: Mapping[str, str]) -> dict[str, str]:
    """The environment a local job gets for ``resources``: ``CUDA_VISIBLE_DEVICES`` for ``gpus`` (unless ``env``
    names the devices itself); ValueError naming each option that cannot apply on this machine."""
    r = resources
    _refuse(r, ("image", "pip"), "local", "the job runs in this Python environment (install packages here, or use "
            "--backend ray / tau)")
    _refuse(r, ("queue", "profile", "secrets", "engine"), "local", "they are TauGrid's (use --backend tau)")
    _refuse(r, ("workers", "gpus_per_worker", "nodes", "processes_per_node"), "local",
            "a local job is one process (run torchrun from the script, or use --backend tau)")
    _refuse(r, ("cpu", "cpu_limit", "memory", "memory_limit"), "local", "a local job shares this machine")
    out: dict[str, str] = {}
    if r.gpus is not None and "CUDA_VISIBLE_DEVICES" not in env:
        out["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(r.gpus))
    return out
