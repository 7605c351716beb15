"""TauGrid's checks of a decoded direct run config: ``ValidateDirect`` and ``ValidateExecution`` (``core/runconfig``).

Each check raises ``ValueError`` with TauGrid's own message for the first problem, in TauGrid's order;
:mod:`.direct_config` decodes the file and calls them.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

from tau_collector.taugrid.gojson import go_quote
from tau_collector.taugrid.ids import go_lower, go_trim, id_from_title, id_problem
from tau_collector.taugrid.typed_yaml import GeneralMap

__all__ = ["MAX_LITERAL_ENV_TOTAL_BYTES", "MAX_LITERAL_ENV_VALUE_BYTES", "TAU_ENV_ALLOWED", "check_literal_env",
           "experiment_id", "first_non_empty", "get", "reserved_env_keys", "validate_direct", "validate_execution"]

MAX_LITERAL_ENV_VALUE_BYTES = 64 * 1024
MAX_LITERAL_ENV_TOTAL_BYTES = 128 * 1024
_MAX_TTL = 2**31 - 1
_INT64_MAX = 2**63 - 1
TAU_ENV_ALLOWED = ("TAU_RESUME_FROM", "TAU_RETRY_ATTEMPT", "TAU_RETRY_MAX", "TAU_RETRY_REASON")
_RESERVED_ENV = frozenset({"MASTER_ADDR", "MASTER_PORT"})


def get(config: dict[str, Any], path: str, default: Any = None) -> Any:
    """The value at a dotted ``path`` of a decoded config, ``default`` when a part is missing or null."""
    node: Any = config
    for part in path.split("."):
        if not isinstance(node, dict) or node.get(part) is None:
            return default
        node = node[part]
    return node


def first_non_empty(*values: str) -> str:
    """TauGrid's ``firstNonEmpty``: the first value that is not blank, untrimmed."""
    return next((v for v in values if go_trim(v)), "")


def experiment_id(experiment: dict[str, Any]) -> str:
    """TauGrid's ``resolvedID``: the trimmed name, else the id of the trimmed title, else the trimmed group."""
    if name := go_trim(experiment.get("name") or ""):
        return name
    if title := go_trim(experiment.get("title") or ""):
        return id_from_title(title)
    return go_trim(experiment.get("group") or "")


# -- ValidateDirect ---------------------------------------------------------------------


def validate_direct(c: dict[str, Any]) -> None:
    gpus = get(c, "compute.gpus")
    if gpus is not None and gpus < 0:
        raise ValueError("compute.gpus must be >= 0")
    _check_working_dir(get(c, "runtime.working_dir", ""))
    source = get(c, "run.source")
    if source is not None:
        _check_source(source)
    runtime = c.get("runtime") or {}
    env = runtime.get("env") or {}
    secrets = runtime.get("env_secret") or {}
    for name in secrets:
        if name in env:
            raise ValueError(f"runtime.env_secret.{name} conflicts with runtime.env.{name}; "
                             "set each env var in only one place")
    for name in sorted(secrets):
        spec = secrets[name] or ""
        secret, sep, key = spec.partition(":")
        if not sep or not go_trim(secret) or not go_trim(key) or go_trim(spec) != spec or \
                go_trim(secret) != secret or go_trim(key) != key:
            raise ValueError(f"runtime.env_secret.{name}: expected SECRET:KEY, got {go_quote(spec)}")
    for i, name in enumerate(sorted(secrets)):
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError(f"runtime.env_secret: runtime.env[{i}]: env var name {go_quote(name)} is invalid "
                             "(use C_IDENTIFIER format)")
    for name in runtime.get("env_kv") or {}:
        if name in env:
            raise ValueError(f"runtime.env_kv.{name} conflicts with runtime.env.{name}; "
                             "set each env var in only one place")
        if name in secrets:
            raise ValueError(f"runtime.env_kv.{name} conflicts with runtime.env_secret.{name}; "
                             "set each env var in only one place")
    conflicts = reserved_env_keys([*env, *secrets], allow_nccl=bool(get(c, "execution.allow_nccl_override")))
    if conflicts:
        raise ValueError(f"runtime.env contains Tau-managed keys that cannot be overridden: {', '.join(conflicts)}; "
                         f"remove them from runtime.env (settable TAU_ keys: {', '.join(TAU_ENV_ALLOWED)})")
    if go_trim(get(c, "runtime.security.mode", "")) not in ("", "restricted"):
        raise ValueError('runtime.security.mode must be "restricted" or omitted')
    check_literal_env(env)
    _check_metrics(c)
    _check_storage(c.get("storage") or {})


def reserved_env_keys(names: list[str], *, allow_nccl: bool = False) -> list[str]:
    """The names TauGrid refuses in ``runtime.env``/``env_secret`` (sorted): ``MASTER_ADDR``/``MASTER_PORT``
    (any case), the ``TAU_`` namespace (any case) but the four retry keys spelled exactly, and ``NCCL_*``
    (any case) unless ``execution.allow_nccl_override``."""
    out = []
    for name in names:
        upper = name.upper()
        if upper in _RESERVED_ENV or (upper.startswith("TAU_") and name not in TAU_ENV_ALLOWED) or \
                (not allow_nccl and upper.startswith("NCCL_")):
            out.append(name)
    return sorted(out, key=lambda n: n.encode("utf-8", "surrogatepass"))


def check_literal_env(env: dict[str, str]) -> None:
    """TauGrid's ``ValidateLiteralEnvPayloads``: a value over 64 KiB, or over 128 KiB in all, is refused."""
    total = 0
    for name in sorted(env, key=lambda n: n.encode("utf-8", "surrogatepass")):
        size = len((env[name] or "").encode("utf-8", "surrogatepass"))
        if size > MAX_LITERAL_ENV_VALUE_BYTES:
            raise ValueError(f"literal environment variable {go_quote(name)} is {size} bytes; maximum is "
                             f"{MAX_LITERAL_ENV_VALUE_BYTES} bytes: {_PUBLISH}")
        total += len(name.encode("utf-8", "surrogatepass")) + 1 + size + 1
    if total > MAX_LITERAL_ENV_TOTAL_BYTES:
        raise ValueError(f"literal environment payload is {total} bytes; maximum is {MAX_LITERAL_ENV_TOTAL_BYTES} "
                         f"bytes: {_PUBLISH}")


_PUBLISH = ("publish source or artifacts once and reference a digest-pinned OCI image with run.source instead of "
            "embedding content in environment variables")


def _check_working_dir(value: str) -> None:
    if value and (go_trim(value) != value or not value.startswith("/") or posixpath.normpath(value) != value
                  or value.startswith("//") or "\\" in value):
        raise ValueError(f"runtime.working_dir {go_quote(value)} must be a clean absolute container path")


def _clean_abs(value: str) -> bool:
    return value.startswith("/") and value != "/" and posixpath.normpath(value) == value and not value.startswith("//")


_PINNED = ("must be a complete lowercase OCI image reference pinned by an @sha256:<64 lowercase hex> digest")
_REF_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|[-]*)[a-z0-9]+)*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_PINNED_RE = re.compile(
    rf"(?P<domain>{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*(?::[0-9]+)?)/(?P<path>{_REF_COMPONENT}"
    rf"(?:/{_REF_COMPONENT})*)(?::[\w][\w.-]{{0,127}})?@sha256:[a-f0-9]{{64}}")


def _check_pinned(field_name: str, image: str) -> None:
    # distribution/reference's ParseNormalizedNamed, then String() must give the image back: a full domain
    # (with a '.' or ':' or 'localhost', not docker.io's short forms), lowercase, pinned by a sha256 digest.
    match = _PINNED_RE.fullmatch(image)
    ok = match is not None and image == image.lower()
    if ok:
        domain, name_path = match.group("domain"), match.group("path")
        if not ("." in domain or ":" in domain or domain == "localhost"):
            ok = False
        elif domain in ("docker.io", "index.docker.io") and (domain == "index.docker.io" or "/" not in name_path):
            ok = False
        elif len(domain) + 1 + len(name_path) > 255:
            ok = False
    if not ok:
        raise ValueError(f"{field_name} {_PINNED}")


def _check_source(source: dict[str, Any]) -> None:
    _check_pinned("run.source.image", source.get("image") or "")
    path = source.get("path") or ""
    if not _clean_abs(path):
        raise ValueError("run.source.path must be a clean absolute path below /")
    if path == "/tau-source" or path.startswith("/tau-source/"):
        raise ValueError(f"run.source.path {go_quote(path)} is hidden by Tau's staging volume")


def _check_metrics(c: dict[str, Any]) -> None:
    history = get(c, "metrics.history", [])
    for i, raw in enumerate(history):
        value = go_trim(raw)
        if not value:
            raise ValueError(f"metrics.history[{i}] must not be empty")
        clean = posixpath.normpath(value)
        if clean.startswith("//"):
            clean = "/" + clean.lstrip("/")
        if clean.startswith("/"):
            if clean != "/data" and not clean.startswith("/data/"):
                raise ValueError(f"metrics.history[{i}] {go_quote(raw)}: absolute paths must be under /data")
            continue
        if clean == ".." or clean.startswith("../"):
            raise ValueError(f"metrics.history[{i}] {go_quote(raw)}: relative paths must not escape storage.output")
    if not get(c, "metrics.offload.enabled", False):
        return
    offload = "when metrics.offload.enabled is true"
    if not history:
        raise ValueError(f"metrics.history requires at least one JSONL path {offload}")
    experiment = c.get("experiment") or {}
    project = go_trim(experiment.get("project") or "")
    if not project:
        raise ValueError(f"experiment.project is required {offload}")
    resolved = experiment_id(experiment)
    if not resolved:
        raise ValueError(f"experiment.name is required {offload}")
    for where, kind, value in (("experiment.project", "project", project), ("experiment.name", "experiment", resolved),
                               ("experiment.group", "group", go_trim(experiment.get("group") or ""))):
        if where == "experiment.group" and not value:
            continue
        problem = id_problem(kind, value)
        if problem:
            raise ValueError(f"{where}: {problem}")


def _check_storage(storage: dict[str, Any]) -> None:
    raw = storage.get("checkpoint") or ""
    checkpoint = go_trim(raw)
    if checkpoint:
        if checkpoint != raw:
            raise ValueError(f"storage.checkpoint: must not have surrounding whitespace (got {go_quote(raw)})")
        if checkpoint.startswith("/") or "\\" in checkpoint or \
                any(part in ("", ".", "..") for part in checkpoint.split("/")):
            raise ValueError("storage.checkpoint: must be a relative path inside the run's checkpoint dir, without "
                             f"'.' or '..' segments (got {go_quote(raw)})")
    assets = storage.get("image_assets") or []
    if len(assets) > 8:
        raise ValueError("storage.image_assets supports at most 8 entries")
    names: set[str] = set()
    mounts: list[str] = []
    for i, asset in enumerate(assets):
        where = f"storage.image_assets[{i}]"
        name = asset.get("name") or ""
        if not name or len(name) > 50 or not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name):
            raise ValueError(f"{where}.name must be a lowercase DNS label no longer than 50 characters")
        if name in names:
            raise ValueError(f"storage.image_assets name {go_quote(name)} is declared more than once")
        names.add(name)
        _check_pinned(where + ".image", asset.get("image") or "")
        source = asset.get("source_path") or ""
        if not _clean_abs(source):
            raise ValueError(f"{where}.source_path must be a clean absolute path below /")
        if source == "/tau-asset" or source.startswith("/tau-asset/"):
            raise ValueError(f"{where}.source_path {go_quote(source)} is hidden by Tau's staging volume")
        mount = asset.get("mount_path") or ""
        if not _clean_abs(mount):
            raise ValueError(f"{where}.mount_path must be a clean absolute path below /")
        for reserved in ("/data", "/mnt", "/script", "/manifest", "/tmp", "/dev/shm", "/var/run/tau", "/tau/source"):
            if _overlap(mount, reserved):
                raise ValueError(f"{where}.mount_path {go_quote(mount)} overlaps Tau-reserved path {reserved}")
        if mount in mounts:
            raise ValueError(f"storage.image_assets mount_path {go_quote(mount)} is declared more than once")
        for other in mounts:
            if _overlap(mount, other):
                raise ValueError(f"storage.image_assets mount paths {go_quote(other)} and {go_quote(mount)} overlap")
        mounts.append(mount)
    if storage.get("publish") not in (None, "", "staged"):
        raise ValueError("storage.publish must be one of: staged")


def _overlap(a: str, b: str) -> bool:
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


# -- ValidateExecution ----------------------------------------------------------------


def validate_execution(c: dict[str, Any], engine: str) -> None:
    run = c.get("run") or {}
    managed = bool(get(c, "workflow.file", "")) or (
        c.get("schema_version") is not None and not first_non_empty(run.get("engine") or "", c.get("engine") or ""))
    working_dir = get(c, "runtime.working_dir", "")
    _check_working_dir(working_dir)
    ttl = run.get("ttl_seconds_after_finished")
    if ttl is not None:
        if ttl <= 0:
            raise ValueError("run.ttl_seconds_after_finished must be > 0")
        if ttl > _MAX_TTL:
            raise ValueError(f"run.ttl_seconds_after_finished must be <= {_MAX_TTL} (Kubernetes int32 maximum)")
        if managed:
            raise ValueError("run.ttl_seconds_after_finished requires direct Job dispatch and cannot be used with "
                             "workflow.file")
        if engine != "job":
            raise ValueError("run.ttl_seconds_after_finished requires engine: job")
    source = run.get("source")
    if go_trim(working_dir):
        if managed:
            raise ValueError("runtime.working_dir requires direct Job dispatch and cannot be used with workflow.file")
        if engine != "job":
            raise ValueError("runtime.working_dir requires engine: job")
        if source is not None:
            raise ValueError("runtime.working_dir and run.source cannot be used together; run.source fixes the "
                             "container working directory at /tau/source")
        if go_trim(run.get("working_dir") or ""):
            raise ValueError("runtime.working_dir and run.working_dir cannot be used together; runtime.working_dir "
                             "sets a Job container path while run.working_dir ships a local project through Ray")
    if source is not None:
        if managed:
            raise ValueError("run.source requires direct Job dispatch and cannot be used with workflow.file")
        if engine != "job":
            raise ValueError("run.source requires engine: job")
        if go_trim(run.get("working_dir") or ""):
            raise ValueError("run.source and run.working_dir cannot be used together")
        entrypoint = go_trim(first_non_empty(run.get("entrypoint") or "", run.get("script") or "",
                                               c.get("entrypoint") or "", c.get("script") or ""))
        if not entrypoint:
            raise ValueError("run.source requires entrypoint")
        if entrypoint.startswith("/") or entrypoint in (".", "..") or posixpath.normpath(entrypoint) != entrypoint \
                or entrypoint.startswith("../") or "\\" in entrypoint:
            raise ValueError(f"entrypoint {go_quote(entrypoint)} must be a clean relative path inside run.source")
    if get(c, "storage.image_assets"):
        if managed:
            raise ValueError("storage.image_assets requires direct Job dispatch and cannot be used with workflow.file")
        if engine != "job":
            raise ValueError("storage.image_assets requires engine: job")
    execution = c.get("execution") or {}
    launcher = go_lower(go_trim(execution.get("launcher") or ""))
    nodes = execution.get("nodes")
    if nodes is not None and nodes < 1:
        raise ValueError(f"execution.nodes must be >= 1 (got {nodes})")
    _check_launcher(engine, launcher, nodes)
    if get(c, "policy.clear_node_selector", False):
        if managed:
            raise ValueError("policy.clear_node_selector requires native job dispatch; managed workflow dispatch "
                             "cannot clear profile/topology node selectors")
        if engine == "rayjob":
            raise ValueError("policy.clear_node_selector requires engine: job; RayJobs cannot clear profile/topology "
                             "node selectors")
    per_node = execution.get("processes_per_node")
    if per_node is not None and per_node > 1 and launcher != "torchrun":
        raise ValueError("execution.processes_per_node > 1 requires execution.launcher: torchrun")
    configs = execution.get("configs") or {}
    tune = bool(execution.get("metric")) or bool(execution.get("mode")) or \
        execution.get("num_samples") is not None or execution.get("max_concurrent_trials") is not None
    if tune and launcher != "ray-tune":
        raise ValueError("execution.metric/mode/num_samples/max_concurrent_trials require execution.launcher: ray-tune")
    if launcher == "ray-tune":
        if not execution.get("metric"):
            raise ValueError("execution.metric is required for launcher: ray-tune")
        if not configs:
            raise ValueError("execution.configs is required for launcher: ray-tune (defines the search space)")
        if (execution.get("mode") or "").lower() not in ("", "min", "max"):
            raise ValueError(f"execution.mode must be min or max, got {go_quote(execution.get('mode') or '')}")
    if configs:
        _check_configs(configs, launcher or ("ray-train" if engine == "rayjob" else "python"))


def _check_launcher(engine: str, launcher: str, nodes: int | None) -> None:
    if engine == "job":
        if launcher in ("ray-train", "ray-tune"):
            raise ValueError(f"execution.launcher {go_quote(launcher)} requires engine: rayjob (needs a Ray cluster); "
                             "got engine: job")
        if launcher not in ("", "python", "torchrun"):
            raise ValueError(f"execution.launcher {go_quote(launcher)} is not valid for engine: job; use python or "
                             "torchrun")
    elif engine == "rayjob":
        if launcher == "torchrun":
            raise ValueError("execution.launcher torchrun is for engine: job; Ray Train manages distributed init via "
                             "TorchConfig")
        if launcher == "python":
            raise ValueError("execution.launcher python is for engine: job; use ray-train for engine: rayjob")
        if launcher not in ("", "ray-train", "ray-tune"):
            raise ValueError(f"execution.launcher {go_quote(launcher)} is not valid for engine: rayjob; use ray-train "
                             "or ray-tune")
        if nodes is not None and nodes > 1:
            raise ValueError("execution.nodes is for engine: job; use compute.workers for RayJob pod count")
    elif launcher in ("ray-train", "ray-tune"):
        raise ValueError(f"execution.launcher {go_quote(launcher)} requires engine: rayjob; set engine: rayjob "
                         "explicitly")
    elif launcher not in ("", "python", "torchrun"):
        raise ValueError(f"execution.launcher {go_quote(launcher)} is not valid; use python, torchrun (engine: job) "
                         "or ray-train, ray-tune (engine: rayjob)")


_TORCHRUN_MANAGED = frozenset({"standalone", "nnodes", "nproc-per-node", "node-rank", "rdzv-backend", "rdzv-endpoint",
                               "rdzv-id", "master-addr", "master-port", "module", "no-python", "run-path"})
_RAY_TRAIN_SECTIONS = ("torch_config", "scaling_config", "failure_config")


def _check_configs(configs: dict[Any, Any], launcher: str) -> None:
    if launcher == "ray-tune":
        return
    if launcher == "ray-train":
        for section, value in configs.items():
            if section not in _RAY_TRAIN_SECTIONS:
                raise ValueError(f"execution.configs: {go_quote(str(section))} is not a valid Ray Train config "
                                 "section; use torch_config, scaling_config, or failure_config")
            if not isinstance(value, dict) or isinstance(value, GeneralMap):
                raise ValueError(f"execution.configs.{section} must be a map, not a scalar or list")
            if section == "scaling_config":
                for name in value:
                    if name in ("num_workers", "resources_per_worker"):
                        raise ValueError(f"execution.configs.scaling_config.{name} is Tau-managed (derived from "
                                         "compute.workers × gpus_per_worker); remove it")
        return
    seen: dict[str, str] = {}
    for key, value in configs.items():
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", key):
            raise ValueError(f"execution.configs: key {go_quote(key)} is invalid; must match "
                             "[A-Za-z0-9][A-Za-z0-9_.-]*")
        if value is None:
            raise ValueError(f"execution.configs: key {go_quote(key)} has null value; use empty string for a bare flag")
        if not isinstance(value, (str, bool, float)) and not (isinstance(value, int) and value <= _INT64_MAX):
            kind = {list: "[]interface {}", dict: "map[string]interface {}",
                    GeneralMap: "map[interface {}]interface {}"}.get(type(value), "uint64")
            raise ValueError(f"execution.configs: key {go_quote(key)} has non-scalar value (type {kind}); only "
                             "string, int, float, and bool are allowed")
        if launcher == "torchrun":
            canonical = key.lower().replace("_", "-")
            if canonical in _TORCHRUN_MANAGED:
                raise ValueError(f"execution.configs: {go_quote(key)} is a Tau-managed torchrun flag and cannot be "
                                 "overridden")
            if canonical in seen:
                raise ValueError(f"execution.configs: {go_quote(seen[canonical])} and {go_quote(key)} are the same "
                                 f"flag (canonical: --{canonical})")
            seen[canonical] = key
