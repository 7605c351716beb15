"""TauGrid's direct ``tau run --config`` file checked as TauGrid's ``core/runconfig`` checks it.

``tau run`` decodes the file with ``gopkg.in/yaml.v3`` into its ``Config`` struct with unknown keys
refused (``KnownFields``), then validates it (``ValidateDirect``), normalizes the engine
(``NormalizeEngine``: ``job``, ``ray``/``rayjob``) and checks the execution topology
(``ValidateExecution``). :func:`check_run_config` does the same in that order and answers a
:class:`Verdict` with TauGrid's own message for the first problem; a conformance table produced by
TauGrid's Go code (``tests/conformance``) holds the two to the same answers.

The file is decoded by yaml.v3's typed rules (:mod:`.typed_yaml`) into :data:`CONFIG`, TauGrid's
``Config`` struct, and checked by TauGrid's rules (:mod:`.run_config_rules`). A config with
``schema_version`` and no engine is an SDK-generated managed workflow manifest: it is decoded leniently
and its unknown keys are warnings, as in TauGrid.

The experiment identity is TauGrid's ``ExperimentRunMetadata``: the trimmed project and group, and the
experiment from the trimmed ``name``, else an id made from ``title`` (``IDFromTitle``, see
:func:`.ids.id_from_title`), else the group.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from tau_collector.taugrid.config_limits import ConfigBudget, ConfigError
from tau_collector.taugrid.gojson import decode_go_utf8, go_quote
from tau_collector.taugrid.ids import go_lower, go_trim
from tau_collector.taugrid.run_config_rules import (
    experiment_id,
    first_non_empty,
    get,
    validate_direct,
    validate_execution,
)
from tau_collector.taugrid.typed_yaml import (
    ANY,
    BOOL,
    DURATION,
    INT,
    INT64,
    STR,
    DecodeFailed,
    Decoder,
    Map,
    Node,
    Ptr,
    Slice,
    Struct,
    compose,
)

__all__ = ["CONFIG", "Verdict", "check_run_config", "normalize_engine"]

_ENGINES = {"": "", "job": "job", "ray": "rayjob", "rayjob": "rayjob"}


def normalize_engine(engine: str) -> str:
    """TauGrid's ``NormalizeEngine``: ``job``, ``rayjob`` (``ray`` is its alias) or ``""``; ValueError otherwise."""
    raw = go_lower(go_trim(engine))
    if raw not in _ENGINES:
        raise ValueError(f"engine {go_quote(raw)} is not valid; use job or rayjob")
    return _ENGINES[raw]


def _struct(go_name: str, /, **fields: Any) -> Struct:
    return Struct("runconfig." + go_name, fields)


_STRS = Slice(STR)
_ENV = Map(STR)
_RUN = _struct("Run", name=STR, engine=STR, entrypoint=STR, script=STR, image=STR, main_script=STR,
               workload_kind=STR, smoke_pairs=Ptr(INT), source=Ptr(_struct("Source", image=STR, path=STR)),
               ttl_seconds_after_finished=Ptr(INT64), working_dir=STR, working_dir_excludes=_STRS)
_WORKFLOW = _struct("Workflow", file=STR, script=STR, main_script=STR, workload_kind=STR,
                    extra_scripts=_STRS, upstream_checkpoint=STR, secret_payload=STR, smoke_pairs=Ptr(INT))
_RUNTIME = _struct("Runtime", image=STR, working_dir=STR, pip=_STRS, env=_ENV, env_secret=_ENV, env_kv=_ENV,
                   security=_struct("Security", mode=STR))
_COMPUTE = _struct("Compute", workers=Ptr(INT), gpus=Ptr(INT), gpus_per_worker=Ptr(INT),
                   cpu_workers=Ptr(INT), **dict.fromkeys((
                       "workload_kind", "gpu_resource_mode", "mig_profile", "cpu_request", "memory_request",
                       "cpu_limit", "memory_limit", "head_cpu_request", "head_memory_request", "head_cpu_limit",
                       "head_memory_limit", "worker_cpu_request", "worker_memory_request", "worker_cpu_limit",
                       "worker_memory_limit"), STR))
_POLICY = _struct("Policy", **dict.fromkeys((
    "workspace", "namespace", "profile", "queue", "team", "lane", "gpu_class", "mode", "topology", "shape",
    "priority", "priority_tier", "workload_profile_snapshot", "workload_priority_class", "pod_priority_class"),
    STR), node_selector=_ENV, clear_node_selector=BOOL, disable_default_priorities=Ptr(BOOL))
_IMAGE_ASSET = _struct("ImageAsset", name=STR, image=STR, source_path=STR, mount_path=STR)
_STORAGE = _struct("Storage", data_pvc=STR, result_pvc=STR, output=STR, publish=STR, volumes=_STRS,
                   mounts=_STRS, image_assets=Slice(_IMAGE_ASSET), checkpoint=STR)
_PROFILER = _struct("Profiler", mode=STR, rank=STR, warmup=STR, duration=STR)
_METRICS = _struct("Metrics", history=_STRS, offload=_struct("MetricsOffload", enabled=BOOL))
_EXPERIMENT = _struct("Experiment", project=STR, name=STR, group=STR, title=STR)
_EXECUTION = _struct("Execution", launcher=Ptr(STR), processes_per_node=Ptr(INT), nodes=Ptr(INT), metric=STR,
                     mode=STR, num_samples=Ptr(INT), max_concurrent_trials=Ptr(INT), configs=Map(ANY),
                     allow_nccl_override=BOOL)
_RESILIENCE = _struct("Resilience", max_retries=INT, retry_on=_STRS, checkpoint_path=STR,
                      backoff_initial=DURATION, backoff_max=DURATION)
_SECTIONS = dict(run=_RUN, workflow=_WORKFLOW, runtime=_RUNTIME, compute=_COMPUTE, policy=_POLICY, storage=_STORAGE,
                 profiler=_PROFILER, metrics=_METRICS, experiment=_EXPERIMENT, execution=_EXECUTION,
                 resilience=_RESILIENCE)
#: TauGrid's ``Config``: every key a direct run config may hold, with its Go type.
CONFIG = _struct("Config", schema_version=ANY, name=STR, engine=STR, entrypoint=STR, script=STR, image=STR,
                 **_SECTIONS)
# The managed-workflow projection keeps fewer runtime and storage keys (and decodes leniently).
_MANAGED = _struct("managedConfigProjection", **{
    **CONFIG.fields,
    "runtime": Struct("struct { Image string \"yaml:\\\"image\\\"\"; WorkingDir string \"yaml:\\\"working_dir\\\"\"; "
                       "Pip []string \"yaml:\\\"pip\\\"\"; EnvKV map[string]string \"yaml:\\\"env_kv\\\"\" }",
                       {"image": STR, "working_dir": STR, "pip": _STRS, "env_kv": _ENV}),
    "storage": Struct("struct { DataPVC string \"yaml:\\\"data_pvc\\\"\"; "
                       "ResultPVC string \"yaml:\\\"result_pvc\\\"\"; "
                       "Output string \"yaml:\\\"output\\\"\"; Publish string \"yaml:\\\"publish\\\"\"; "
                       "ImageAssets []runconfig.ImageAsset \"yaml:\\\"image_assets\\\"\" }",
                       {"data_pvc": STR, "result_pvc": STR, "output": STR, "publish": STR,
                        "image_assets": Slice(_IMAGE_ASSET)}),
})
for _name in ("engine", "entrypoint", "script", "image"):
    del _MANAGED.fields[_name]
_MANAGED_PROBE = Struct("struct { SchemaVersion interface {} \"yaml:\\\"schema_version\\\"\"; Engine string "
                         "\"yaml:\\\"engine\\\"\"; Run struct { Engine string \"yaml:\\\"engine\\\"\" } "
                         "\"yaml:\\\"run\\\"\" }",
                         {"schema_version": ANY, "engine": STR,
                          "run": Struct("struct { Engine string \"yaml:\\\"engine\\\"\" }", {"engine": STR})})
_EVAL_PROBE = Struct("eval probe", {"task": STR, "eval": Map(ANY), "run": Struct("run probe", {"task": STR})})
# Keys the managed manifest schema owns (TauGrid's managedPassthroughPaths): True = its children are schema too.
_PASSTHROUGH = {**dict.fromkeys(("eval", "artifacts", "research", "model", "resource_naming", "compute.cpus",
                                 "compute.cpu_limit", "compute.memory", "compute.memory_limit", "compute.worker_cpus",
                                 "compute.worker_cpu_limit", "compute.worker_memory", "compute.worker_memory_limit",
                                 "runtime.rdma.enabled", "runtime.rdma.resource_name", "runtime.rdma.count",
                                 "runtime.rdma.shm_size", "storage.mounts.name", "storage.mounts.mountPath",
                                 "storage.mounts.pvc", "storage.mounts.readOnly"), False),
                "runtime.rdma": True, "storage.mounts": True}


def _schema_paths(t: Struct, prefix: str = "") -> dict[str, bool]:
    """TauGrid's ``configSchemaPaths``: every path of ``Config``, True for a nested struct (descend)."""
    out: dict[str, bool] = {}
    for name, ft in t.fields.items():
        path = f"{prefix}.{name}" if prefix else name
        inner = ft.elem if isinstance(ft, Ptr) else ft
        nested = inner.elem if isinstance(inner, Slice) and isinstance(inner.elem, Struct) else inner
        if isinstance(nested, Struct):
            out.update(_schema_paths(nested, path))
            out[path] = isinstance(inner, Struct)
        else:
            out[path] = False
    return out


_SCHEMA_PATHS = _schema_paths(CONFIG)


def _unknown_keys(node: Node | None, prefix: str, out: list[str]) -> None:
    if node is None:
        return
    if node.kind == "seq":
        for item in node.content:
            _unknown_keys(item, prefix, out)
        return
    if node.kind != "map":
        return
    for key, value in zip(node.content[::2], node.content[1::2], strict=True):
        if not key.text:
            continue
        path = f"{prefix}.{key.text}" if prefix else key.text
        if path in _PASSTHROUGH:
            if _PASSTHROUGH[path]:
                _unknown_keys(value, path, out)
            continue
        if path not in _SCHEMA_PATHS:
            if path not in out:
                out.append(path)
            continue
        if _SCHEMA_PATHS[path]:
            _unknown_keys(value, path, out)


# -- the verdict ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Verdict:
    """What ``tau run --config`` answers for a file.

    ``stage``: where it was refused (``load`` — decoding or ``ValidateDirect``; ``engine``;
    ``execution``); ``error``: TauGrid's message; ``engine``: the normalized engine; ``identity``:
    ``project``, ``experiment``, ``group`` and ``stellar_experiment`` (the experiment, else the group);
    ``warnings``: unknown keys of a managed workflow manifest; ``config``: the decoded sections.
    """

    accepted: bool
    stage: str = ""
    error: str = ""
    engine: str | None = None
    identity: dict[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    config: dict[str, Any] = field(default_factory=dict)


class _Refused(Exception):
    def __init__(self, stage: str, message: str) -> None:
        super().__init__(message)
        self.stage = stage


def _decode_document(root: Node | None, t: Struct, *, strict: bool, where: str) -> dict[str, Any]:
    if root is None:
        return {}
    decoder = Decoder(strict, ConfigBudget(where))
    try:
        _, value = decoder.decode(root, t)
    except (DecodeFailed, ConfigError) as exc:
        raise _Refused("load", f"parse {where}: {exc}") from None
    if decoder.errors:
        raise _Refused("load", f"parse {where}: yaml: unmarshal errors:\n  " + "\n  ".join(decoder.errors))
    return value or {}


def _probe(root: Node | None, t: Struct, where: str) -> dict[str, Any] | None:
    try:
        return _decode_document(root, t, strict=False, where=where)
    except _Refused:
        return None


def check_run_config(text: str | bytes, source: str = "tau.yaml") -> Verdict:
    """TauGrid's verdict on a direct run config file's text (see the module docstring)."""
    if isinstance(text, bytes):
        text = decode_go_utf8(text)
    try:
        try:
            root = compose(text)
        except yaml.YAMLError as exc:
            raise _Refused("load", f"parse {source}: yaml: {exc}") from None
        except ConfigError as exc:
            raise _Refused("load", f"parse {source}: {exc}") from None
        config, warnings = _load(root, source)
        engine = _execution(config)
    except _Refused as refused:
        return Verdict(False, refused.stage, str(refused))
    return Verdict(True, engine=engine, identity=_identity(config), warnings=tuple(warnings), config=config)


def _load(root: Node | None, source: str) -> tuple[dict[str, Any], list[str]]:
    probe = _probe(root, _EVAL_PROBE, source)
    if probe is not None:
        task = go_lower(go_trim(first_non_empty(get(probe, "run.task", ""), probe.get("task") or "")))
        evaluation = probe.get("eval") or {}
        if task == "eval" or "harness" in evaluation or "model" in evaluation:
            raise _Refused("load", f"validate {source}: task: eval, eval.harness, and eval.model were removed; "
                                   "evaluation is an ordinary run.")
    managed = _decode_document(root, _MANAGED_PROBE, strict=False, where=source)
    if managed.get("schema_version") is not None and not first_non_empty(get(managed, "run.engine", ""),
                                                                            managed.get("engine") or ""):
        config = _decode_document(root, _MANAGED, strict=False, where=source)
        unknown: list[str] = []
        _unknown_keys(root, "", unknown)
        return config, [f"warning: unknown config key {go_quote(path)} in {source} (ignored)"
                        for path in sorted(unknown)]
    config = _decode_document(root, CONFIG, strict=True, where=source)
    try:
        validate_direct(config)
    except ValueError as exc:
        raise _Refused("load", f"validate {source}: {exc}") from None
    return config, []


def _identity(config: dict[str, Any]) -> dict[str, str]:
    experiment = config.get("experiment") or {}
    group = go_trim(experiment.get("group") or "")
    resolved = experiment_id(experiment)
    return {"project": go_trim(experiment.get("project") or ""), "experiment": resolved, "group": group,
            "stellar_experiment": resolved or group}



# -- NormalizeEngine, then ValidateExecution ------------------------------------------------


def _execution(c: dict[str, Any]) -> str:
    try:
        engine = normalize_engine(first_non_empty(get(c, "run.engine", ""), c.get("engine") or ""))
    except ValueError as exc:
        raise _Refused("engine", str(exc)) from None
    try:
        validate_execution(c, engine)
    except ValueError as exc:
        raise _Refused("execution", str(exc)) from None
    return engine
