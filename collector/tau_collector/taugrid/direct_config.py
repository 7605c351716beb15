"""TauGrid's direct ``tau run --config`` file checked as TauGrid's ``core/runconfig`` checks it.

``tau run`` decodes the file with ``gopkg.in/yaml.v3`` into its ``Config`` struct with unknown keys
refused (``KnownFields``), then validates it (``ValidateDirect``), normalizes the engine
(``NormalizeEngine``: ``job``, ``ray``/``rayjob``) and checks the execution topology
(``ValidateExecution``). :func:`check_run_config` does the same in that order and answers a
:class:`Verdict` with TauGrid's own message for the first problem; a conformance table produced by
TauGrid's Go code (``tests/conformance``) holds the two to the same answers.

The typed decoding follows yaml.v3's rules, which differ from reading the file into plain values: a
string field takes any scalar's text (``name: 123`` is ``"123"``), an integer field takes an integer or
a float (truncated) but not a quoted number, a bool field takes ``true``/``false`` and the YAML 1.1
words (``yes``, ``on``, also quoted) but not ``"true"``; a null leaves a field at its zero value and is
dropped from a list; every type error and unknown key of the document is reported together. A config
with ``schema_version`` and no engine is an SDK-generated managed workflow manifest: it is decoded
leniently and its unknown keys are warnings, as in TauGrid.

The experiment identity is TauGrid's ``ExperimentRunMetadata``: the trimmed project and group, and the
experiment from the trimmed ``name``, else an id made from ``title`` (``IDFromTitle``, see
:func:`id_from_title`), else the group.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import yaml

from tau_collector.taugrid.config_limits import ConfigBudget, ConfigError
from tau_collector.taugrid.config_yaml import resolve_plain
from tau_collector.taugrid.gojson import decode_go_utf8, go_quote

__all__ = [
    "MAX_LITERAL_ENV_TOTAL_BYTES",
    "MAX_LITERAL_ENV_VALUE_BYTES",
    "TAU_ENV_ALLOWED",
    "Verdict",
    "check_run_config",
    "go_quote",
    "id_from_title",
    "kubernetes_label_value",
    "normalize_engine",
    "validate_tau_id",
]

MAX_LITERAL_ENV_VALUE_BYTES = 64 * 1024
MAX_LITERAL_ENV_TOTAL_BYTES = 128 * 1024
_MAX_TTL = 2**31 - 1
_INT64_RANGE = (-(2**63), 2**63 - 1)
TAU_ENV_ALLOWED = ("TAU_RESUME_FROM", "TAU_RETRY_ATTEMPT", "TAU_RETRY_MAX", "TAU_RETRY_REASON")
_RESERVED_ENV = frozenset({"MASTER_ADDR", "MASTER_PORT"})
_ENGINES = {"": "", "job": "job", "ray": "rayjob", "rayjob": "rayjob"}
_TAG = "tag:yaml.org,2002:"


# -- Go's text of values in messages ---------------------------------------------------


def _go_bytes_text(raw: bytes) -> str:
    # Go strings are bytes: a message holding a cut UTF-8 sequence reads as U+FFFD per bad byte.
    return decode_go_utf8(raw)


# -- identity rules (exptelemetry.ValidateID, experiment.KubernetesLabelValue) ----------


def validate_tau_id(kind: str, value: str) -> str | None:
    """TauGrid's ``ValidateID`` message for ``value``, or None when it is a valid id (no length limit)."""
    if value == "":
        return f"{kind} is required"
    invalid = f"{kind} {go_quote(value)} is invalid (use lowercase alphanumerics with internal '-', '_' or '.')"
    if _go_trim(value) != value or "/" in value or "\\" in value:
        return invalid
    last = len(value.encode("utf-8", "surrogatepass")) - 1
    at = 0
    for ch in value:
        if not ("a" <= ch <= "z" or "0" <= ch <= "9" or ch in "-_."):
            return invalid
        if (at == 0 or at == last) and ch in "-_.":
            return f"{kind} {go_quote(value)} is invalid (must start and end with an alphanumeric)"
        at += 1
    return None


# Go's unicode.IsSpace: the characters strings.TrimSpace removes.
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
            "\u2028\u2029\u202f\u205f\u3000"


def _go_trim(value: str) -> str:
    """Go's ``strings.TrimSpace`` (Python's ``str.strip`` also removes U+001C..U+001F)."""
    return value.strip(_GO_SPACE)


def _label_hash(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _valid_label(value: str) -> bool:
    for ch in value:
        if not (ch.islower() or ch.isdigit() or ch in "-_."):
            return False
    return value[:1] in _LABEL_EDGE and value[-1:] in _LABEL_EDGE


_LABEL_EDGE = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


def kubernetes_label_value(value: str) -> str:
    """TauGrid's ``KubernetesLabelValue``: trimmed, lowercased, each run of characters outside
    ``[a-z0-9._-]`` one ``-``, ``-_.`` trimmed from the ends; a 12-hex SHA-256 of the trimmed text when
    nothing is left; past 63 bytes cut to fit ``-<hash>``."""
    original = _go_trim(value)
    if not original:
        return ""
    out: list[str] = []
    dash = False
    for ch in _go_lower(original):
        if "a" <= ch <= "z" or "0" <= ch <= "9" or ch in "-_.":
            out.append(ch)
            dash = False
        elif not dash:
            out.append("-")
            dash = True
    normalized = "".join(out).strip("-_.") or _label_hash(original)
    if len(normalized) <= 63 and _valid_label(normalized):
        return normalized
    suffix = "-" + _label_hash(original)
    limit = 63 - len(suffix)
    normalized = normalized[:limit].strip("-_.")
    return normalized + suffix if normalized else suffix.strip("-")


def _go_lower(value: str) -> str:
    # Go's strings.ToLower maps each rune alone ("İ" is "i", no final-sigma rule).
    return "".join(ch.lower()[0] for ch in value)


def id_from_title(title: str) -> str:
    """TauGrid's ``experiment.IDFromTitle``: the experiment id a human-written title stands for."""
    return kubernetes_label_value(title)


def normalize_engine(engine: str) -> str:
    """TauGrid's ``NormalizeEngine``: ``job``, ``rayjob`` (``ray`` is its alias) or ``""``; ValueError otherwise."""
    raw = _go_lower(_go_trim(engine))
    if raw not in _ENGINES:
        raise ValueError(f"engine {go_quote(raw)} is not valid; use job or rayjob")
    return _ENGINES[raw]


# -- YAML nodes -------------------------------------------------------------------------


class _Node:
    """A YAML node as yaml.v3 keeps it: kind, explicit tag, text, style and line."""

    __slots__ = ("content", "kind", "line", "quoted", "tag", "text")

    def __init__(self, kind: str, tag: str | None, line: int, text: str = "", quoted: bool = False) -> None:
        self.kind = kind
        self.tag = tag if tag not in (None, "!") else None
        self.line = line
        self.text = text
        self.quoted = quoted
        self.content: list[_Node] = []

    def resolved(self) -> tuple[str, Any]:
        """(short tag, value) of a scalar, as yaml.v3's ``resolve`` gives them."""
        if self.quoted:
            return "!!str", self.text
        if self.tag is not None:
            kind = self.tag[len(_TAG):] if self.tag.startswith(_TAG) else self.tag
            if kind in ("str", "binary", "timestamp") or not self.tag.startswith(_TAG):
                return "!!" + kind if self.tag.startswith(_TAG) else self.tag, self.text
            if kind == "null":
                return "!!null", None
            value = resolve_plain(self.text)
            return "!!" + kind, value
        value = resolve_plain(self.text)
        return _short_tag(value), value

    def short_tag(self) -> str:
        if self.kind == "map":
            return "!!map"
        if self.kind == "seq":
            return "!!seq"
        return self.resolved()[0]


def _short_tag(value: Any) -> str:
    if value is None:
        return "!!null"
    if isinstance(value, bool):
        return "!!bool"
    if isinstance(value, int):
        return "!!int"
    if isinstance(value, float):
        return "!!float"
    return "!!str"


def _compose(text: str) -> _Node | None:
    """The first document's root node (None for a stream with no document); aliases share nodes."""
    anchors: dict[str, _Node] = {}
    stack: list[_Node] = []
    root: _Node | None = None
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        line = event.start_mark.line + 1 if event.start_mark else 0
        if isinstance(event, yaml.DocumentEndEvent):
            break
        node: _Node | None = None
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            node = _Node("map" if isinstance(event, yaml.MappingStartEvent) else "seq", event.tag, line)
            if event.anchor:
                anchors[event.anchor] = node
            if stack:
                stack[-1].content.append(node)
            else:
                root = node
            stack.append(node)
            continue
        if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            stack.pop()
            continue
        if isinstance(event, yaml.ScalarEvent):
            node = _Node("scalar", event.tag, line, event.value,
                         quoted=event.style is not None or not event.implicit[0])
            if event.tag not in (None, "!"):
                node.quoted = False
            if event.anchor:
                anchors[event.anchor] = node
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor not in anchors:
                raise ConfigError(f"yaml: unknown anchor '{event.anchor}' referenced")
            node = anchors[event.anchor]
        if node is not None:
            if stack:
                stack[-1].content.append(node)
            else:
                root = node
    return root


# -- Go types and yaml.v3's decoding into them -----------------------------------------


class _Ptr(NamedTuple):
    elem: Any


class _Slice(NamedTuple):
    elem: Any


class _Map(NamedTuple):
    elem: Any


class _Struct(NamedTuple):
    name: str
    fields: dict[str, Any]


_STR, _INT, _INT64, _BOOL, _ANY, _DURATION = "string", "int", "int64", "bool", "interface {}", "duration"


def _type_name(t: Any) -> str:
    if isinstance(t, _Ptr):
        return _type_name(t.elem)
    if isinstance(t, _Slice):
        return "[]" + _type_name(t.elem)
    if isinstance(t, _Map):
        return "map[string]" + _type_name(t.elem)
    if isinstance(t, _Struct):
        return t.name
    return t


class GeneralMap(dict):
    """A YAML mapping with a non-string key, decoded into ``any`` (Go's ``map[interface{}]interface{}``)."""


class _Fail(Exception):
    """yaml.v3 stopped decoding at once (``failf``): the message is the whole error."""


class _Decoder:
    def __init__(self, strict: bool, budget: ConfigBudget) -> None:
        self.strict = strict
        self.budget = budget
        self.errors: list[str] = []

    def terror(self, node: _Node, tag: str, t: Any) -> None:
        if node.tag is not None:
            tag = "!!" + node.tag[len(_TAG):] if node.tag.startswith(_TAG) else node.tag
        value = ""
        if tag not in ("!!seq", "!!map"):
            raw = node.text.encode("utf-8", "surrogatepass")
            value = f" `{_go_bytes_text(raw[:7])}...`" if len(raw) > 10 else f" `{node.text}`"
        self.errors.append(f"line {node.line}: cannot unmarshal {tag}{value} into {_type_name(t)}")

    def decode(self, node: _Node, t: Any, depth: int = 0) -> tuple[bool, Any]:
        self.budget.take(depth)
        if isinstance(t, _Ptr):
            if node.kind == "scalar" and node.short_tag() == "!!null":
                return True, None
            return self.decode(node, t.elem, depth)
        if t == _DURATION and not (node.kind == "scalar" and node.short_tag() == "!!null"):
            ok, text = self.decode(node, _STR, depth)
            if not ok:
                return False, None
            try:
                return True, _parse_duration(text)
            except ValueError as exc:
                raise _Fail(f"invalid duration {go_quote(text)}: {exc}") from None
        if node.kind == "scalar":
            return self.scalar(node, t)
        if node.kind == "seq":
            return self.sequence(node, t, depth)
        return self.mapping(node, t, depth)

    def scalar(self, node: _Node, t: Any) -> tuple[bool, Any]:
        tag, value = node.resolved()
        if value is None:
            return (True, None) if t == _ANY or isinstance(t, (_Slice, _Map)) else (False, None)
        if t == _ANY:
            return True, value
        if t == _STR:
            return True, node.text
        if t in (_INT, _INT64) and not isinstance(value, (bool, str)):
            if isinstance(value, float):
                if value != value or not -(2.0**63) <= value < 2.0**63:
                    self.terror(node, tag, t)
                    return False, None
                value = int(value)
            if _INT64_RANGE[0] <= value <= _INT64_RANGE[1]:
                return True, value
        if t == _BOOL:
            if isinstance(value, bool):
                return True, value
            if isinstance(value, str):
                if value in ("y", "Y", "yes", "Yes", "YES", "on", "On", "ON"):
                    return True, True
                if value in ("n", "N", "no", "No", "NO", "off", "Off", "OFF"):
                    return True, False
        self.terror(node, tag, t)
        return False, None

    def sequence(self, node: _Node, t: Any, depth: int) -> tuple[bool, Any]:
        if t == _ANY:
            elem = _ANY
        elif isinstance(t, _Slice):
            elem = t.elem
        else:
            self.terror(node, "!!seq", t)
            return False, None
        out = []
        for item in node.content:
            ok, value = self.decode(item, elem, depth + 1)
            if ok:
                out.append(value)
        return True, out

    def mapping(self, node: _Node, t: Any, depth: int) -> tuple[bool, Any]:
        pairs = list(zip(node.content[::2], node.content[1::2], strict=True))
        before = len(self.errors)
        for i, (key, _) in enumerate(pairs):
            for other, _ in pairs[i + 1:]:
                if key.kind == other.kind and key.text == other.text and key.kind == "scalar":
                    self.errors.append(f"line {other.line}: mapping key {go_quote(other.text)} already defined at "
                                       f"line {key.line}")
        if len(self.errors) > before:
            return False, None
        if isinstance(t, _Struct):
            return self.struct(pairs, t, depth)
        if isinstance(t, _Map):
            return True, self.map_items(pairs, _STR, t.elem, depth)
        if t == _ANY:
            string_keys = all((key.kind == "scalar" and key.short_tag() in ("!!str", "!!merge")) or _is_merge(key)
                              for key, _ in pairs)
            items = self.map_items(pairs, _ANY, _ANY, depth)
            return True, (items if string_keys else GeneralMap(items))
        self.terror(node, "!!map", t)
        return False, None

    def map_items(self, pairs: list[tuple[_Node, _Node]], key_type: Any, elem: Any, depth: int) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        merges: list[_Node] = []
        for key, value in pairs:
            if _is_merge(key):
                merges.append(value)
                continue
            ok, name = self.decode(key, key_type, depth + 1)
            if not ok:
                continue
            ok, item = self.decode(value, elem, depth + 1)
            if ok or (value.kind == "scalar" and value.short_tag() == "!!null"):
                out[name] = item
        for merge in merges:
            for source in (merge.content if merge.kind == "seq" else [merge]):
                if source.kind != "map":
                    raise _Fail("map merge requires map or sequence of maps as the value")
                ok, items = self.mapping(source, _Map(elem) if key_type == _STR else _ANY, depth + 1)
                for name, item in (items or {}).items():
                    out.setdefault(name, item)
        return out

    def struct(self, pairs: list[tuple[_Node, _Node]], t: _Struct, depth: int,
               done: set[str] | None = None) -> tuple[bool, Any]:
        out: dict[str, Any] = {}
        seen: set[str] = set()
        merged = done if done is not None else None
        merge: _Node | None = None
        for key, value in pairs:
            if _is_merge(key):
                merge = value
                continue
            ok, name = self.decode(key, _STR, depth + 1)
            if not ok:
                continue
            if merged is not None:
                if name in merged:
                    continue
                merged.add(name)
            if name in t.fields:
                if name in seen:
                    self.errors.append(f"line {key.line}: field {name} already set in type {t.name}")
                    continue
                seen.add(name)
                ok, item = self.decode(value, t.fields[name], depth + 1)
                if ok:
                    out[name] = item
            elif self.strict:
                self.errors.append(f"line {key.line}: field {name} not found in type {t.name}")
        if merge is not None:
            names = set(out) | seen if merged is None else merged
            for source in (merge.content if merge.kind == "seq" else [merge]):
                if source.kind != "map":
                    raise _Fail("map merge requires map or sequence of maps as the value")
                source_pairs = list(zip(source.content[::2], source.content[1::2], strict=True))
                _, items = self.struct(source_pairs, t, depth + 1, names)
                for name, item in (items or {}).items():
                    out.setdefault(name, item)
        return True, out


def _is_merge(node: _Node) -> bool:
    return node.kind == "scalar" and node.text == "<<" and not node.quoted and \
        node.tag in (None, _TAG + "merge")


_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": 10**9, "m": 60 * 10**9,
          "h": 3600 * 10**9}
_DURATION_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)")


def _parse_duration(text: str) -> int:
    """Go's ``time.ParseDuration`` (nanoseconds); ValueError with Go's message."""
    bad = ValueError(f"time: invalid duration {go_quote(text)}")
    body = text
    sign = 1
    if body[:1] in "+-":
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    if body == "0":
        return 0
    if not body:
        raise bad
    total = 0.0
    at = 0
    while at < len(body):
        match = _DURATION_PART.match(body, at)
        if not match or match.group(1) in ("", "."):
            if match is None and re.match(r"[0-9.]+", body[at:]):
                raise ValueError(f"time: missing unit in duration {go_quote(text)}")
            raise bad
        total += float(match.group(1)) * _UNITS[match.group(2)]
        at = match.end()
    if total > 2**63 - 1:
        raise ValueError(f"time: invalid duration {go_quote(text)}")
    return sign * int(total)


def _struct(go_name: str, /, **fields: Any) -> _Struct:
    return _Struct("runconfig." + go_name, fields)


_STRS = _Slice(_STR)
_ENV = _Map(_STR)
_RUN = _struct("Run", name=_STR, engine=_STR, entrypoint=_STR, script=_STR, image=_STR, main_script=_STR,
               workload_kind=_STR, smoke_pairs=_Ptr(_INT), source=_Ptr(_struct("Source", image=_STR, path=_STR)),
               ttl_seconds_after_finished=_Ptr(_INT64), working_dir=_STR, working_dir_excludes=_STRS)
_WORKFLOW = _struct("Workflow", file=_STR, script=_STR, main_script=_STR, workload_kind=_STR,
                    extra_scripts=_STRS, upstream_checkpoint=_STR, secret_payload=_STR, smoke_pairs=_Ptr(_INT))
_RUNTIME = _struct("Runtime", image=_STR, working_dir=_STR, pip=_STRS, env=_ENV, env_secret=_ENV, env_kv=_ENV,
                   security=_struct("Security", mode=_STR))
_COMPUTE = _struct("Compute", workers=_Ptr(_INT), gpus=_Ptr(_INT), gpus_per_worker=_Ptr(_INT),
                   cpu_workers=_Ptr(_INT), **dict.fromkeys((
                       "workload_kind", "gpu_resource_mode", "mig_profile", "cpu_request", "memory_request",
                       "cpu_limit", "memory_limit", "head_cpu_request", "head_memory_request", "head_cpu_limit",
                       "head_memory_limit", "worker_cpu_request", "worker_memory_request", "worker_cpu_limit",
                       "worker_memory_limit"), _STR))
_POLICY = _struct("Policy", **dict.fromkeys((
    "workspace", "namespace", "profile", "queue", "team", "lane", "gpu_class", "mode", "topology", "shape",
    "priority", "priority_tier", "workload_profile_snapshot", "workload_priority_class", "pod_priority_class"),
    _STR), node_selector=_ENV, clear_node_selector=_BOOL, disable_default_priorities=_Ptr(_BOOL))
_IMAGE_ASSET = _struct("ImageAsset", name=_STR, image=_STR, source_path=_STR, mount_path=_STR)
_STORAGE = _struct("Storage", data_pvc=_STR, result_pvc=_STR, output=_STR, publish=_STR, volumes=_STRS,
                   mounts=_STRS, image_assets=_Slice(_IMAGE_ASSET), checkpoint=_STR)
_PROFILER = _struct("Profiler", mode=_STR, rank=_STR, warmup=_STR, duration=_STR)
_METRICS = _struct("Metrics", history=_STRS, offload=_struct("MetricsOffload", enabled=_BOOL))
_EXPERIMENT = _struct("Experiment", project=_STR, name=_STR, group=_STR, title=_STR)
_EXECUTION = _struct("Execution", launcher=_Ptr(_STR), processes_per_node=_Ptr(_INT), nodes=_Ptr(_INT), metric=_STR,
                     mode=_STR, num_samples=_Ptr(_INT), max_concurrent_trials=_Ptr(_INT), configs=_Map(_ANY),
                     allow_nccl_override=_BOOL)
_RESILIENCE = _struct("Resilience", max_retries=_INT, retry_on=_STRS, checkpoint_path=_STR,
                      backoff_initial=_DURATION, backoff_max=_DURATION)
_SECTIONS = dict(run=_RUN, workflow=_WORKFLOW, runtime=_RUNTIME, compute=_COMPUTE, policy=_POLICY, storage=_STORAGE,
                 profiler=_PROFILER, metrics=_METRICS, experiment=_EXPERIMENT, execution=_EXECUTION,
                 resilience=_RESILIENCE)
#: TauGrid's ``Config``: every key a direct run config may hold, with its Go type.
CONFIG = _struct("Config", schema_version=_ANY, name=_STR, engine=_STR, entrypoint=_STR, script=_STR, image=_STR,
                 **_SECTIONS)
# The managed-workflow projection keeps fewer runtime and storage keys (and decodes leniently).
_MANAGED = _struct("managedConfigProjection", **{
    **CONFIG.fields,
    "runtime": _Struct("struct { Image string \"yaml:\\\"image\\\"\"; WorkingDir string \"yaml:\\\"working_dir\\\"\"; "
                       "Pip []string \"yaml:\\\"pip\\\"\"; EnvKV map[string]string \"yaml:\\\"env_kv\\\"\" }",
                       {"image": _STR, "working_dir": _STR, "pip": _STRS, "env_kv": _ENV}),
    "storage": _Struct("struct { DataPVC string \"yaml:\\\"data_pvc\\\"\"; "
                       "ResultPVC string \"yaml:\\\"result_pvc\\\"\"; "
                       "Output string \"yaml:\\\"output\\\"\"; Publish string \"yaml:\\\"publish\\\"\"; "
                       "ImageAssets []runconfig.ImageAsset \"yaml:\\\"image_assets\\\"\" }",
                       {"data_pvc": _STR, "result_pvc": _STR, "output": _STR, "publish": _STR,
                        "image_assets": _Slice(_IMAGE_ASSET)}),
})
for _name in ("engine", "entrypoint", "script", "image"):
    del _MANAGED.fields[_name]
_MANAGED_PROBE = _Struct("struct { SchemaVersion interface {} \"yaml:\\\"schema_version\\\"\"; Engine string "
                         "\"yaml:\\\"engine\\\"\"; Run struct { Engine string \"yaml:\\\"engine\\\"\" } "
                         "\"yaml:\\\"run\\\"\" }",
                         {"schema_version": _ANY, "engine": _STR,
                          "run": _Struct("struct { Engine string \"yaml:\\\"engine\\\"\" }", {"engine": _STR})})
_EVAL_PROBE = _Struct("eval probe", {"task": _STR, "eval": _Map(_ANY), "run": _Struct("run probe", {"task": _STR})})
# Keys the managed manifest schema owns (TauGrid's managedPassthroughPaths): True = its children are schema too.
_PASSTHROUGH = {**dict.fromkeys(("eval", "artifacts", "research", "model", "resource_naming", "compute.cpus",
                                 "compute.cpu_limit", "compute.memory", "compute.memory_limit", "compute.worker_cpus",
                                 "compute.worker_cpu_limit", "compute.worker_memory", "compute.worker_memory_limit",
                                 "runtime.rdma.enabled", "runtime.rdma.resource_name", "runtime.rdma.count",
                                 "runtime.rdma.shm_size", "storage.mounts.name", "storage.mounts.mountPath",
                                 "storage.mounts.pvc", "storage.mounts.readOnly"), False),
                "runtime.rdma": True, "storage.mounts": True}


def _schema_paths(t: _Struct, prefix: str = "") -> dict[str, bool]:
    """TauGrid's ``configSchemaPaths``: every path of ``Config``, True for a nested struct (descend)."""
    out: dict[str, bool] = {}
    for name, ft in t.fields.items():
        path = f"{prefix}.{name}" if prefix else name
        inner = ft.elem if isinstance(ft, _Ptr) else ft
        nested = inner.elem if isinstance(inner, _Slice) and isinstance(inner.elem, _Struct) else inner
        if isinstance(nested, _Struct):
            out.update(_schema_paths(nested, path))
            out[path] = isinstance(inner, _Struct)
        else:
            out[path] = False
    return out


_SCHEMA_PATHS = _schema_paths(CONFIG)


def _unknown_keys(node: _Node | None, prefix: str, out: list[str]) -> None:
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


def _get(config: dict[str, Any], path: str, default: Any = None) -> Any:
    node: Any = config
    for part in path.split("."):
        if not isinstance(node, dict) or node.get(part) is None:
            return default
        node = node[part]
    return node


def _first_non_empty(*values: str) -> str:
    return next((v for v in values if _go_trim(v)), "")


def _decode_document(root: _Node | None, t: _Struct, *, strict: bool, where: str) -> dict[str, Any]:
    if root is None:
        return {}
    decoder = _Decoder(strict, ConfigBudget(where))
    try:
        _, value = decoder.decode(root, t)
    except (_Fail, ConfigError) as exc:
        raise _Refused("load", f"parse {where}: {exc}") from None
    if decoder.errors:
        raise _Refused("load", f"parse {where}: yaml: unmarshal errors:\n  " + "\n  ".join(decoder.errors))
    return value or {}


def _probe(root: _Node | None, t: _Struct, where: str) -> dict[str, Any] | None:
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
            root = _compose(text)
        except yaml.YAMLError as exc:
            raise _Refused("load", f"parse {source}: yaml: {exc}") from None
        except ConfigError as exc:
            raise _Refused("load", f"parse {source}: {exc}") from None
        config, warnings = _load(root, source)
        engine = _execution(config)
    except _Refused as refused:
        return Verdict(False, refused.stage, str(refused))
    return Verdict(True, engine=engine, identity=_identity(config), warnings=tuple(warnings), config=config)


def _load(root: _Node | None, source: str) -> tuple[dict[str, Any], list[str]]:
    probe = _probe(root, _EVAL_PROBE, source)
    if probe is not None:
        task = _go_lower(_go_trim(_first_non_empty(_get(probe, "run.task", ""), probe.get("task") or "")))
        evaluation = probe.get("eval") or {}
        if task == "eval" or "harness" in evaluation or "model" in evaluation:
            raise _Refused("load", f"validate {source}: task: eval, eval.harness, and eval.model were removed; "
                                   "evaluation is an ordinary run.")
    managed = _decode_document(root, _MANAGED_PROBE, strict=False, where=source)
    if managed.get("schema_version") is not None and not _first_non_empty(_get(managed, "run.engine", ""),
                                                                            managed.get("engine") or ""):
        config = _decode_document(root, _MANAGED, strict=False, where=source)
        unknown: list[str] = []
        _unknown_keys(root, "", unknown)
        return config, [f"warning: unknown config key {go_quote(path)} in {source} (ignored)"
                        for path in sorted(unknown)]
    config = _decode_document(root, CONFIG, strict=True, where=source)
    try:
        _validate_direct(config)
    except ValueError as exc:
        raise _Refused("load", f"validate {source}: {exc}") from None
    return config, []


def _identity(config: dict[str, Any]) -> dict[str, str]:
    experiment = config.get("experiment") or {}
    group = _go_trim(experiment.get("group") or "")
    resolved = _experiment_id(experiment)
    return {"project": _go_trim(experiment.get("project") or ""), "experiment": resolved, "group": group,
            "stellar_experiment": resolved or group}


def _experiment_id(experiment: dict[str, Any]) -> str:
    if name := _go_trim(experiment.get("name") or ""):
        return name
    if title := _go_trim(experiment.get("title") or ""):
        return id_from_title(title)
    return _go_trim(experiment.get("group") or "")


# -- ValidateDirect ---------------------------------------------------------------------


def _validate_direct(c: dict[str, Any]) -> None:
    gpus = _get(c, "compute.gpus")
    if gpus is not None and gpus < 0:
        raise ValueError("compute.gpus must be >= 0")
    _check_working_dir(_get(c, "runtime.working_dir", ""))
    source = _get(c, "run.source")
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
        if not sep or not _go_trim(secret) or not _go_trim(key) or _go_trim(spec) != spec or \
                _go_trim(secret) != secret or _go_trim(key) != key:
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
    conflicts = reserved_env_keys([*env, *secrets], allow_nccl=bool(_get(c, "execution.allow_nccl_override")))
    if conflicts:
        raise ValueError(f"runtime.env contains Tau-managed keys that cannot be overridden: {', '.join(conflicts)}; "
                         f"remove them from runtime.env (settable TAU_ keys: {', '.join(TAU_ENV_ALLOWED)})")
    if _go_trim(_get(c, "runtime.security.mode", "")) not in ("", "restricted"):
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
    if value and (_go_trim(value) != value or not value.startswith("/") or posixpath.normpath(value) != value
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
    history = _get(c, "metrics.history", [])
    for i, raw in enumerate(history):
        value = _go_trim(raw)
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
    if not _get(c, "metrics.offload.enabled", False):
        return
    offload = "when metrics.offload.enabled is true"
    if not history:
        raise ValueError(f"metrics.history requires at least one JSONL path {offload}")
    experiment = c.get("experiment") or {}
    project = _go_trim(experiment.get("project") or "")
    if not project:
        raise ValueError(f"experiment.project is required {offload}")
    resolved = _experiment_id(experiment)
    if not resolved:
        raise ValueError(f"experiment.name is required {offload}")
    for where, kind, value in (("experiment.project", "project", project), ("experiment.name", "experiment", resolved),
                               ("experiment.group", "group", _go_trim(experiment.get("group") or ""))):
        if where == "experiment.group" and not value:
            continue
        problem = validate_tau_id(kind, value)
        if problem:
            raise ValueError(f"{where}: {problem}")


def _check_storage(storage: dict[str, Any]) -> None:
    raw = storage.get("checkpoint") or ""
    checkpoint = _go_trim(raw)
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


# -- NormalizeEngine and ValidateExecution ------------------------------------------------


def _execution(c: dict[str, Any]) -> str:
    try:
        engine = normalize_engine(_first_non_empty(_get(c, "run.engine", ""), c.get("engine") or ""))
    except ValueError as exc:
        raise _Refused("engine", str(exc)) from None
    try:
        _validate_execution(c, engine)
    except ValueError as exc:
        raise _Refused("execution", str(exc)) from None
    return engine


def _validate_execution(c: dict[str, Any], engine: str) -> None:
    run = c.get("run") or {}
    managed = bool(_get(c, "workflow.file", "")) or (
        c.get("schema_version") is not None and not _first_non_empty(run.get("engine") or "", c.get("engine") or ""))
    working_dir = _get(c, "runtime.working_dir", "")
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
    if _go_trim(working_dir):
        if managed:
            raise ValueError("runtime.working_dir requires direct Job dispatch and cannot be used with workflow.file")
        if engine != "job":
            raise ValueError("runtime.working_dir requires engine: job")
        if source is not None:
            raise ValueError("runtime.working_dir and run.source cannot be used together; run.source fixes the "
                             "container working directory at /tau/source")
        if _go_trim(run.get("working_dir") or ""):
            raise ValueError("runtime.working_dir and run.working_dir cannot be used together; runtime.working_dir "
                             "sets a Job container path while run.working_dir ships a local project through Ray")
    if source is not None:
        if managed:
            raise ValueError("run.source requires direct Job dispatch and cannot be used with workflow.file")
        if engine != "job":
            raise ValueError("run.source requires engine: job")
        if _go_trim(run.get("working_dir") or ""):
            raise ValueError("run.source and run.working_dir cannot be used together")
        entrypoint = _go_trim(_first_non_empty(run.get("entrypoint") or "", run.get("script") or "",
                                               c.get("entrypoint") or "", c.get("script") or ""))
        if not entrypoint:
            raise ValueError("run.source requires entrypoint")
        if entrypoint.startswith("/") or entrypoint in (".", "..") or posixpath.normpath(entrypoint) != entrypoint \
                or entrypoint.startswith("../") or "\\" in entrypoint:
            raise ValueError(f"entrypoint {go_quote(entrypoint)} must be a clean relative path inside run.source")
    if _get(c, "storage.image_assets"):
        if managed:
            raise ValueError("storage.image_assets requires direct Job dispatch and cannot be used with workflow.file")
        if engine != "job":
            raise ValueError("storage.image_assets requires engine: job")
    execution = c.get("execution") or {}
    launcher = _go_lower(_go_trim(execution.get("launcher") or ""))
    nodes = execution.get("nodes")
    if nodes is not None and nodes < 1:
        raise ValueError(f"execution.nodes must be >= 1 (got {nodes})")
    _check_launcher(engine, launcher, nodes)
    if _get(c, "policy.clear_node_selector", False):
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
        if not isinstance(value, (str, bool, float)) and not (isinstance(value, int) and value <= _INT64_RANGE[1]):
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
