"""The conformance cases put to TauGrid's run-config code: configs we render, one-rule mutations, TauGrid's examples,
typed-field and YAML edges, ids, titles and values our YAML writer must carry.

Each case is ``{"id", "kind", "text"}`` (``kind``: ``config`` a whole ``tau.yaml``, ``yaml`` a document our writer
made from ``value``, ``title`` an experiment title, ``id`` a candidate id). :mod:`regenerate` runs them through
TauGrid's Go code and writes the table; the test reads the table only.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tau_collector.taugrid.yaml_writer import dump_yaml
from taunotebook.backends import RunSpec
from taunotebook.backends.tau import render_config

EXAMPLES = Path(__file__).parent / "taugrid_examples"


def typed(value: Any) -> Any:
    """``value`` with its Go type kept, in the driver's tagged form (``{"str": ...}``, ``{"map": [[k, v], ...]}``)."""
    if value is None:
        return {"null": True}
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": str(value)}
    if isinstance(value, float):
        return {"float": "NaN" if math.isnan(value) else repr(value)}
    if isinstance(value, str):
        return {"str": value}
    if isinstance(value, dict):
        return {"map": [[k, typed(value[k])] for k in sorted(value, key=lambda k: k.encode("utf-8"))]}
    return {"seq": [typed(v) for v in value]}


def spec(**over: Any) -> RunSpec:
    values: dict[str, Any] = {"run_id": "sgd-demo-abc123", "name": "sgd-demo", "project": "demo",
                              "experiment": "lr-sweep", "group": "lr-sweep", "workspace": "team-a",
                              "script": Path("train.py")}
    return RunSpec(**{**values, **over})


def base() -> dict[str, Any]:
    return render_config(spec())


def _config(case_id: str, config: dict[str, Any]) -> dict[str, Any]:
    return {"id": case_id, "kind": "config", "text": dump_yaml(config) + "\n"}


def _text(case_id: str, text: str) -> dict[str, Any]:
    return {"id": case_id, "kind": "config", "text": text}


def _mutated(case_id: str, change: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    config = copy.deepcopy(base())
    change(config)
    return _config(case_id, config)


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(config: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = config
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return change


def _drop(path: str) -> Callable[[dict[str, Any]], None]:
    def change(config: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = config
        for part in parents:
            node = node[part]
        node.pop(last, None)
    return change


UNICODE = {
    "nel": "a\u0085b", "ls": "a\u2028b", "ps": "a\u2029b", "nbsp": "a\u00a0b", "bom": "\ufeffa", "emoji": "run 🚀",
    "combining": "e\u0301", "rtl": "\u05e9\u05dc\u05d5\u05dd", "cjk": "日本語", "dotted-i": "İstanbul",
    "sigma": "ΣΑΣ", "sharp-s": "straße", "fullwidth": "ＡＢＣ", "tab": "a\tb", "newline": "a\nb", "cr": "a\rb",
    "nul": "a\x00b", "del": "a\x7fb", "esc": "a\x1bb", "c1": "a\x9bb", "fffe": "a\ufffeb", "private": "a\ue000b",
    "astral": "a\U0010fffdb", "quote": 'say "hi"', "backslash": "a\\b", "colon-space": "a: b", "hash": "#x",
    "dash": "- x", "question": "? x", "lead-space": " x", "trail-space": "x ", "empty": "", "yes": "yes",
    "true": "true", "null": "null", "tilde": "~", "hex": "0x1F", "float": "1e3", "octal": "017", "date": "2026-01-02",
    "anchor": "&a", "alias": "*a", "tag": "!t", "pipe": "|", "gt": ">", "brace": "{a}", "bracket": "[a]",
    "percent": "%x", "at": "@x", "backtick": "`x", "comma": "a, b",
}


def rendered() -> Iterator[dict[str, Any]]:
    yield _config("rendered/base", base())
    yield _config("rendered/data-pvc", render_config(spec(), data_pvc="blob-training"))
    for name, s in {
        "dotted-ids": spec(project="team.a", experiment="exp_1.v2", group="g-1"),
        "long-run-id": spec(run_id="r" * 300),
        "long-experiment": spec(experiment="e" * 600, group="e" * 600),
        "group-differs": spec(experiment="sweep", group="baseline"),
        "workspace-odd": spec(workspace="ws with space"),
        "digits": spec(project="1", experiment="2", group="3"),
    }.items():
        yield _config(f"rendered/{name}", render_config(s))
    envs: dict[str, dict[str, str]] = {
        "plain": {"LR": "0.1", "BATCH": "32"},
        "tau-reserved": {"TAU_FOO": "x"},
        "tau-lowercase": {"tau_resume_from": "x"},
        "tau-allowed": {"TAU_RESUME_FROM": "/data/ckpt", "TAU_RETRY_ATTEMPT": "1", "TAU_RETRY_MAX": "3",
                        "TAU_RETRY_REASON": "x"},
        "tau-metrics": {"TAU_METRICS_OFFLOAD_IMAGE": "x"},
        "nccl": {"NCCL_DEBUG": "INFO"},
        "nccl-lower": {"nccl_ib_disable": "1"},
        "master-addr": {"MASTER_ADDR": "10.0.0.1"},
        "master-port-lower": {"master_port": "29500"},
        "several-reserved": {"TAU_X": "1", "NCCL_Y": "2", "MASTER_ADDR": "3", "OK": "4"},
        "value-64k": {"BLOB": "x" * 65536},
        "value-over-64k": {"BLOB": "x" * 65537},
        "total-over-128k": {"A": "x" * 60000, "B": "x" * 60000, "C": "x" * 20000},
        "total-at-128k": {"A": "x" * (65536 - 4), "B": "x" * (65536 - 4)},
        "multibyte-over-64k": {"BLOB": "é" * 32769},
        "key-colon": {"A: B": "1"},
        "key-hash": {"#X": "1"},
        "key-null": {"null": "x"},
        "key-true": {"true": "x"},
        "key-merge": {"<<": "x"},
        "key-empty": {"": "x"},
        "key-long": {"K" * 1100: "v"},
        "key-nel": {"K\u0085": "v"},
        "key-digits": {"123": "v"},
        "key-dash": {"- a": "v"},
    }
    for label, value in UNICODE.items():
        envs[f"value-{label}"] = {"V": value}
    for label, env in envs.items():
        yield _config(f"rendered/env-{label}", render_config(spec(env=env)))


def mutations() -> Iterator[dict[str, Any]]:
    history = {
        "empty-list": [], "blank": [" "], "outside-data": ["/scratch/h/*.jsonl"], "data-root": ["/data"],
        "data-dotdot": ["/data/../etc/x"], "escape": ["../other/*.jsonl"], "inner-escape": ["a/../../x"],
        "double-slash": ["//data/x"], "dot": ["./x/*.jsonl"], "padded": [" /data/x.jsonl "], "second-empty": ["a", ""],
        "datax": ["/datax/y"], "dot-only": ["."],
    }
    for label, value in history.items():
        yield _mutated(f"mutation/history-{label}", _set("metrics.history", value))
    identity: dict[str, dict[str, Any]] = {
        "project-empty": {"project": ""},
        "project-padded": {"project": " demo "},
        "project-upper": {"project": "Demo"},
        "project-space": {"project": "Tau Local"},
        "project-slash": {"project": "a/b"},
        "project-tab": {"project": "demo\t"},
        "project-nel": {"project": "demo\u0085"},
        "project-nbsp": {"project": "\u00a0demo"},
        "name-padded": {"name": "  lr-sweep  "},
        "name-upper": {"name": "LR"},
        "name-edge-dot": {"name": ".x"},
        "name-edge-underscore": {"name": "x_"},
        "name-inner": {"name": "a.b_c-d"},
        "name-unicode": {"name": "é"},
        "name-long": {"name": "n" * 700},
        "name-empty-title": {"name": "", "title": "My Sweep #2"},
        "name-blank-title": {"name": "   ", "title": "Another Title"},
        "title-only": {"name": None, "title": "My Sweep #2"},
        "title-symbols": {"name": None, "title": "###"},
        "title-long": {"name": None, "title": "A very long experiment title " * 5},
        "title-keeps": {"name": None, "title": "Run_v1.2 Final"},
        "title-unicode": {"name": None, "title": "İstanbul Σweep"},
        "title-blank-group": {"name": None, "title": "   ", "group": "grp"},
        "group-only": {"name": None, "group": "grp"},
        "group-padded": {"group": " grp "},
        "group-empty": {"group": ""},
        "group-upper": {"group": "A"},
        "group-slash": {"group": "a/b"},
        "nothing": {"name": None, "group": None},
    }
    for label, changes in identity.items():
        def change(config: dict[str, Any], changes: dict[str, Any] = changes) -> None:
            for key, value in changes.items():
                if value is None:
                    config["experiment"].pop(key, None)
                else:
                    config["experiment"][key] = value
        yield _mutated(f"mutation/experiment-{label}", change)
        yield _mutated(f"mutation/no-offload-experiment-{label}",
                       lambda c, change=change: (change(c), c["metrics"]["offload"].update(enabled=False)))
    for engine in ("job", "Job", " rayjob ", "ray", "RAY", "rayjob", "", "kubernetes", "ray-job", "torch", "jobs"):
        yield _mutated(f"mutation/engine-{engine.strip() or 'empty'}-{len(engine)}", _set("engine", engine))
    yield _mutated("mutation/engine-run-overrides", _set("run.engine", "rayjob"))
    yield _mutated("mutation/engine-run-invalid", _set("run.engine", "spark"))
    yield _mutated("mutation/engine-run-blank", lambda c: (c.update(engine="rayjob"), c.setdefault("run", {})
                                                            .update(engine="  ")))
    unknown = {"top": ("image_pull", "always"), "offload": ("metrics.offload.mode", "fast"),
               "experiment": ("experiment.tags", "x"), "storage": ("storage.foo", "x"), "compute": ("compute.cpus", 2),
               "runtime": ("runtime.envs", "x"), "policy-preset": ("policy.preset", "x"),
               "execution": ("execution.foo", 1), "resilience": ("resilience.foo", 1), "profiler": ("profiler.foo", 1),
               "run": ("run.foo", 1), "workflow": ("workflow.foo", 1), "security": ("runtime.security.foo", 1),
               "source": ("run.source.foo", 1), "eval-key": ("eval", {"x": 1}), "metrics": ("metrics.foo", 1)}
    for label, (path, value) in unknown.items():
        yield _mutated(f"mutation/unknown-{label}", _set(path, value))
    sections: dict[str, tuple[str, Any]] = {
        "compute": ("compute", {"workers": 2, "gpus": 1, "gpus_per_worker": 1, "cpu_request": "2",
                                "memory_limit": "8Gi", "gpu_resource_mode": "mig", "mig_profile": "1g.18gb"}),
        "compute-negative-gpus": ("compute", {"gpus": -1}),
        "policy": ("policy", {"workspace": "team-a", "namespace": "ns", "profile": "p", "queue": "q", "team": "t",
                              "lane": "training", "gpu_class": "any", "mode": "fixed", "topology": "independent",
                              "shape": "8xa100-80gb", "priority": "default", "priority_tier": "priority",
                              "workload_profile_snapshot": "s", "workload_priority_class": "w",
                              "pod_priority_class": "p", "node_selector": {"kubernetes.io/os": "linux"},
                              "clear_node_selector": False, "disable_default_priorities": True}),
        "policy-clear-selector": ("policy", {"clear_node_selector": True}),
        "runtime": ("runtime", {"image": "python:3.12", "working_dir": "/app", "pip": ["torch==2.4.0"],
                                "env": {"A": "1"}, "env_secret": {"B": "secret:key"}, "security": {"mode": "restricted"}}),
        "runtime-security-bad": ("runtime", {"security": {"mode": "strict"}}),
        "runtime-working-dir-relative": ("runtime", {"working_dir": "work"}),
        "runtime-working-dir-trailing": ("runtime", {"working_dir": "/app/"}),
        "runtime-env-kv": ("runtime", {"env_kv": {"K": "vault/secret"}}),
        "runtime-env-kv-conflict": ("runtime", {"env": {"K": "1"}, "env_kv": {"K": "vault/secret"}}),
        "secret-bad-spec": ("runtime", {"env_secret": {"B": "nocolon"}}),
        "secret-padded": ("runtime", {"env_secret": {"B": " s:k"}}),
        "secret-bad-name": ("runtime", {"env_secret": {"1B": "s:k"}}),
        "secret-conflict": ("runtime", {"env": {"B": "1"}, "env_secret": {"B": "s:k"}}),
        "secret-reserved": ("runtime", {"env_secret": {"TAU_TOKEN": "s:k"}}),
        "storage": ("storage", {"output": "/data/x", "checkpoint": "last.safetensors", "publish": "staged",
                                "volumes": ["v"], "mounts": ["m"], "result_pvc": "r"}),
        "storage-publish-bad": ("storage", {"output": "/data/x", "publish": "eager"}),
        "checkpoint-abs": ("storage", {"output": "/data/x", "checkpoint": "/etc/passwd"}),
        "checkpoint-dotdot": ("storage", {"output": "/data/x", "checkpoint": "../victim/model.bin"}),
        "checkpoint-padded": ("storage", {"output": "/data/x", "checkpoint": " last "}),
        "checkpoint-double": ("storage", {"output": "/data/x", "checkpoint": "a//b"}),
        "image-asset": ("storage", {"output": "/data/x", "image_assets": [{
            "name": "weights", "image": "mcr.microsoft.com/x/weights@sha256:" + "a" * 64, "source_path": "/w",
            "mount_path": "/models"}]}),
        "image-asset-unpinned": ("storage", {"output": "/data/x", "image_assets": [{
            "name": "weights", "image": "mcr.microsoft.com/x/weights:1", "source_path": "/w",
            "mount_path": "/models"}]}),
        "image-asset-short-name": ("storage", {"output": "/data/x", "image_assets": [{
            "name": "weights", "image": "ubuntu@sha256:" + "a" * 64, "source_path": "/w", "mount_path": "/models"}]}),
        "image-asset-reserved-mount": ("storage", {"output": "/data/x", "image_assets": [{
            "name": "weights", "image": "mcr.microsoft.com/x/weights@sha256:" + "a" * 64, "source_path": "/w",
            "mount_path": "/data/models"}]}),
        "image-asset-bad-name": ("storage", {"output": "/data/x", "image_assets": [{
            "name": "Weights", "image": "mcr.microsoft.com/x/w@sha256:" + "a" * 64, "source_path": "/w",
            "mount_path": "/models"}]}),
        "profiler": ("profiler", {"mode": "nsys", "rank": "0", "warmup": "10s", "duration": "30s"}),
        "resilience": ("resilience", {"max_retries": 3, "retry_on": ["Preempted", "Evicted"],
                                      "checkpoint_path": "/data/ckpt", "backoff_initial": "30s", "backoff_max": "5m"}),
        "resilience-bad-duration": ("resilience", {"backoff_initial": "soon"}),
        "resilience-duration-no-unit": ("resilience", {"backoff_max": "30"}),
        "resilience-duration-compound": ("resilience", {"backoff_max": "1h30m"}),
        "workflow": ("workflow", {"file": "wf.yaml", "script": "s.py", "extra_scripts": ["a.py"]}),
        "run": ("run", {"name": "n", "entrypoint": "train.py", "working_dir": ".", "working_dir_excludes": ["*.ckpt"],
                        "ttl_seconds_after_finished": 3600, "workload_kind": "job", "smoke_pairs": 2}),
        "run-ttl-zero": ("run", {"ttl_seconds_after_finished": 0}),
        "run-ttl-huge": ("run", {"ttl_seconds_after_finished": 2**31}),
        "run-source": ("run", {"source": {"image": "mcr.microsoft.com/src@sha256:" + "b" * 64, "path": "/src"}}),
        "run-source-bad-path": ("run", {"source": {"image": "mcr.microsoft.com/src@sha256:" + "b" * 64,
                                                   "path": "/tau-source/x"}}),
        "top-level-aliases": ("script", "train.py"),
        "schema-version-with-engine": ("schema_version", 1),
    }
    for label, (path, value) in sections.items():
        yield _mutated(f"mutation/section-{label}", _set(path, value))
    yield _mutated("mutation/section-ttl-rayjob",
                   lambda c: (c.update(engine="rayjob"), c.update(run={"ttl_seconds_after_finished": 60})))
    yield _mutated("mutation/section-working-dir-rayjob",
                   lambda c: (c.update(engine="rayjob"), c.update(runtime={"working_dir": "/app"})))
    yield _mutated("mutation/section-clear-selector-rayjob",
                   lambda c: (c.update(engine="rayjob"), c.update(policy={"clear_node_selector": True})))
    execution: dict[str, tuple[str, dict[str, Any]]] = {
        "torchrun": ("job", {"launcher": "torchrun", "processes_per_node": 2, "nodes": 2}),
        "torchrun-upper": ("job", {"launcher": " TorchRun "}),
        "python": ("job", {"launcher": "python", "configs": {"lr": 0.1, "epochs": 3, "flag": "", "on": True}}),
        "ray-train-on-job": ("job", {"launcher": "ray-train"}),
        "bogus-on-job": ("job", {"launcher": "deepspeed"}),
        "python-on-rayjob": ("rayjob", {"launcher": "python"}),
        "torchrun-on-rayjob": ("rayjob", {"launcher": "torchrun"}),
        "bogus-on-rayjob": ("rayjob", {"launcher": "mpi"}),
        "ray-train-on-empty": ("", {"launcher": "ray-tune"}),
        "bogus-on-empty": ("", {"launcher": "mpi"}),
        "ppn-without-torchrun": ("job", {"processes_per_node": 2}),
        "ppn-one": ("job", {"processes_per_node": 1}),
        "nodes-zero": ("job", {"nodes": 0}),
        "nodes-rayjob": ("rayjob", {"nodes": 2}),
        "tune-fields-without-tune": ("rayjob", {"metric": "loss"}),
        "tune-without-metric": ("rayjob", {"launcher": "ray-tune", "configs": {"lr": [0.1]}}),
        "tune-without-configs": ("rayjob", {"launcher": "ray-tune", "metric": "loss"}),
        "tune-bad-mode": ("rayjob", {"launcher": "ray-tune", "metric": "loss", "mode": "avg", "configs": {"lr": [1]}}),
        "tune-ok": ("rayjob", {"launcher": "ray-tune", "metric": "loss", "mode": "MAX", "num_samples": 4,
                               "max_concurrent_trials": 2, "configs": {"lr": [0.1, 0.01]}}),
        "torchrun-managed-flag": ("job", {"launcher": "torchrun", "configs": {"nnodes": 2}}),
        "torchrun-managed-underscore": ("job", {"launcher": "torchrun", "configs": {"nproc_per_node": 2}}),
        "torchrun-ok-flag": ("job", {"launcher": "torchrun", "configs": {"max_restarts": 3}}),
        "job-config-bad-key": ("job", {"configs": {"-lr": 1}}),
        "job-config-null": ("job", {"configs": {"lr": None}}),
        "job-config-list": ("job", {"configs": {"lr": [1, 2]}}),
        "job-config-map": ("job", {"configs": {"lr": {"a": 1}}}),
        "ray-train-bad-section": ("rayjob", {"configs": {"bogus": {}}}),
        "ray-train-scalar-section": ("rayjob", {"configs": {"torch_config": 1}}),
        "ray-train-managed": ("rayjob", {"configs": {"scaling_config": {"num_workers": 4}}}),
        "ray-train-ok": ("rayjob", {"launcher": "ray-train", "configs": {"failure_config": {"max_failures": 2}}}),
        "nccl-override": ("job", {"allow_nccl_override": True}),
    }
    for label, (engine, value) in execution.items():
        yield _mutated(f"mutation/execution-{label}",
                       lambda c, engine=engine, value=value: (c.update(engine=engine), c.update(execution=value)))
    yield _mutated("mutation/execution-nccl-allowed", lambda c: (
        c.update(execution={"allow_nccl_override": True}), c.update(runtime={"env": {"NCCL_DEBUG": "INFO"}})))
    yield _mutated("mutation/execution-nccl-allowed-tau-still-refused", lambda c: (
        c.update(execution={"allow_nccl_override": True}), c.update(runtime={"env": {"TAU_X": "1"}})))
    yield _mutated("mutation/drop-offload", _drop("metrics.offload"))
    yield _mutated("mutation/drop-experiment", _drop("experiment"))
    yield _mutated("mutation/drop-storage", _drop("storage"))


BASE_TEXT = """\
name: "sgd-demo-abc123"
engine: "job"
entrypoint: "tau_entry.py"
storage:
  output: "/data/projects/team-a/runs/sgd-demo-abc123"
metrics:
  history:
    - "metrics-history-attempt-0/*.jsonl"
  offload:
    enabled: {enabled}
experiment:
  project: "demo"
  name: {name}
  group: "lr-sweep"
"""


def typed_fields() -> Iterator[dict[str, Any]]:
    for label, enabled in {
        "true": "true", "quoted-true": '"true"', "yes": "yes", "quoted-yes": '"yes"', "on": "on", "one": "1",
        "True": "True", "TRUE": "TRUE", "y": "y", "null": "~", "false": "false", "quoted-false": "'false'",
        "no": "no", "list": "[true]", "map": "{a: 1}", "tagged-bool": "!!bool true", "tagged-str": "!!str true",
    }.items():
        yield _text(f"typed/enabled-{label}", BASE_TEXT.format(enabled=enabled, name='"lr-sweep"'))
    for label, name in {
        "int": "123", "bool": "true", "null": "~", "float": "1.50", "hex": "0x1F", "list": "[a]", "map": "{a: 1}",
        "plain": "lr-sweep", "single-quoted": "'lr-sweep'", "literal": "|\n    lr-sweep", "folded": ">-\n    lr-sweep",
        "date": "2026-01-02",
    }.items():
        yield _text(f"typed/name-{label}", BASE_TEXT.format(enabled="true", name=name))
    plain = BASE_TEXT.format(enabled="true", name='"lr-sweep"')
    for label, workers in {
        "int": "2", "quoted": '"2"', "float": "2.5", "float-integral": "2.0", "bool": "true", "exp": "1e3",
        "hex": "0x10", "null": "~", "negative": "-1", "huge": "99999999999999999999", "list": "[2]",
        "underscore": "1_000",
    }.items():
        yield _text(f"typed/workers-{label}", plain + f"compute:\n  workers: {workers}\n")
    extras: dict[str, str | None] = {
        "history-scalar": None,
        "retries-quoted": "resilience:\n  max_retries: \"3\"\n",
        "retries-float": "resilience:\n  max_retries: 2.9\n",
        "backoff-int": "resilience:\n  backoff_initial: 30\n",
        "backoff-null": "resilience:\n  backoff_initial: ~\n",
        "backoff-map": "resilience:\n  backoff_initial: {a: 1}\n",
        "nccl-quoted": "execution:\n  allow_nccl_override: \"true\"\n",
        "priorities-no": "policy:\n  disable_default_priorities: no\n",
        "priorities-null": "policy:\n  disable_default_priorities: null\n",
        "env-int": "runtime:\n  env:\n    A: 1\n",
        "env-null": "runtime:\n  env:\n    A: ~\n",
        "env-list": "runtime:\n  env:\n    A: [1]\n",
        "env-key-int": "runtime:\n  env:\n    1: x\n",
        "env-scalar": "runtime:\n  env: x\n",
        "pip-scalar": "runtime:\n  pip: torch\n",
        "pip-null-item": "runtime:\n  pip: [torch, ~]\n",
        "node-selector-bool": "policy:\n  node_selector:\n    gpu: true\n",
        "compute-scalar": "compute: 4\n",
        "compute-null": "compute:\n",
        "compute-list": "compute: [1]\n",
        "ttl-string": "run:\n  ttl_seconds_after_finished: \"60\"\n",
        "launcher-null": "execution:\n  launcher: ~\n",
        "launcher-int": "execution:\n  launcher: 1\n",
        "configs-scalar": "execution:\n  configs: 3\n",
        "configs-int-key": None,
        "schema-version-null": "schema_version: ~\n",
    }
    for label, extra in extras.items():
        if label == "history-scalar":
            text = plain.replace('  history:\n    - "metrics-history-attempt-0/*.jsonl"\n', '  history: "x/*.jsonl"\n')
        elif label == "configs-int-key":
            text = plain + "execution:\n  configs:\n    1: x\n"
        else:
            text = plain + (extra or "")
        yield _text(f"typed/{label}", text)
    documents = {
        "empty": "", "comment-only": "# nothing\n", "null-document": "~\n", "explicit-empty": "---\n...\n",
        "scalar-document": "hello\n", "list-document": "- a\n- b\n", "two-documents": plain + "---\nname: x\n",
        "duplicate-top": "name: a\nname: b\n", "duplicate-nested": "metrics:\n  history: [a]\n  history: [b]\n",
        "duplicate-env": "runtime:\n  env:\n    A: '1'\n    A: '2'\n",
        "duplicate-quoted": "name: a\n\"name\": b\n",
        "tab-indent": "compute:\n\tworkers: 1\n", "unclosed-quote": "name: \"abc\n", "bad-indent": "a:\n  b: 1\n c: 2\n",
        "anchor-alias": "experiment: &e\n  project: demo\n  name: x\nmetrics:\n  history: [a]\n  offload: {enabled: true}\n"
                        "runtime:\n  env:\n    A: &v hello\n    B: *v\n",
        "merge-key": "base: &b\n  gpus: 1\ncompute:\n  <<: {gpus: 2, workers: 3}\n  workers: 4\n",
        "merge-key-direct": "compute:\n  <<: {gpus: 2, workers: 3}\n  workers: 4\n",
        "flow-style": "{name: x, engine: job, compute: {gpus: 0}}\n",
        "task-eval": "name: x\ntask: eval\n", "run-task-eval": "name: x\nrun:\n  task: Eval\n",
        "eval-harness": "name: x\neval:\n  harness: lm-eval\n", "eval-other": "name: x\neval:\n  other: 1\n",
        "managed": "schema_version: 1\nname: m\ncompute:\n  cpus: 2\n  bogus: 1\nresource_naming: {prefix: t}\n"
                   "scheduling:\n  node_selector: {a: b}\n",
        "managed-env-ignored": "schema_version: 1\nname: m\nruntime:\n  env:\n    TAU_X: '1'\n",
        "managed-with-run-engine": "schema_version: 1\nrun:\n  engine: job\ncompute:\n  cpus: 2\n",
        "managed-workflow-ttl": "schema_version: v1\nrun:\n  ttl_seconds_after_finished: 10\n",
        "crlf": plain.replace("\n", "\r\n"),
        "bom": "\ufeff" + plain,
        "nel-in-plain-value": "name: a\u0085b\n",
        "nel-in-quoted-value": 'name: "a\u0085b"\n',
        "escaped-nel": 'name: "a\\Nb"\n',
        "ls-in-quoted-value": 'name: "a\u2028b"\n',
        "long-key": ("K" * 1100) + ": v\n",
    }
    for label, text in documents.items():
        yield _text(f"document/{label}", text)


def examples() -> Iterator[dict[str, Any]]:
    for path in sorted(EXAMPLES.glob("*.yaml")):
        yield _text(f"example/{path.stem}", path.read_text(encoding="utf-8"))


YAML_KEYS = [
    "A: B", "#X", "a #b", "a:b", "- x", "-x", "? q", "?q", ":x", "null", "Null", "~", "true", "False", "yes", "on",
    "<<", "", " lead", "trail ", "x\ny", "key\u0085", "key\u2028", "é", "123", "1.5", "0x1F", "0o7", ".inf", ".NaN",
    "&anchor", "*alias", "!tag", "%dir", "@at", "`bt", "'q", '"dq', "{f", "[s", "|lit", ">fold", "tab\tkey", "a,b",
    "K" * 1100, "🚀", "\ufeffbom", "a\\b", "plain_key", "dotted.key", "dash-key", "_under", "2026-01-02",
]


def yaml_values() -> Iterator[dict[str, Any]]:
    values: list[tuple[str, Any]] = [(f"key-{i}", {key: "v"}) for i, key in enumerate(YAML_KEYS)]
    for code in [*range(0x00, 0x21), 0x7F, *range(0x80, 0xA1), 0xAD, 0x2028, 0x2029, 0xFEFF, 0xFFFD, 0xFFFE, 0xFFFF,
                 0xE000, 0xD7FF, 0x10000, 0x10FFFF, 0x1F680, 0x0301, 0x200B]:
        values.append((f"char-{code:04x}", {"v": f"a{chr(code)}b", "edge": chr(code)}))
    for label, value in UNICODE.items():
        values.append((f"string-{label}", {"v": value}))
    values += [
        ("numbers", {"int": 1, "neg": -7, "big": 2**63 - 1, "zero": 0, "f": 0.1, "tiny": 1e-7, "huge": 1e21,
                     "negzero": -0.0, "max": 1.7976931348623157e308, "e16": 1e16, "third": 1 / 3}),
        ("specials", {"inf": math.inf, "ninf": -math.inf, "nan": math.nan, "null": None, "t": True, "f": False}),
        ("nested", {"a": {"b": [1, "x", {"c": None}], "d": [], "e": {}}, "l": [[1, 2], ["a: b"]]}),
        ("list-of-tricky", {"h": ["#x", "- y", "a: b", "", "yes", "\u0085"]}),
    ]
    for label, value in values:
        yield {"id": f"yaml/{label}", "kind": "yaml", "text": dump_yaml(value) + "\n", "value": typed(value)}


TITLES = [
    "My Sweep #2", "  spaced  ", "", "   ", "###", "UPPER case", "a_b.c", "_lead", "trail.", "é", "İstanbul", "ΣΑΣ",
    "x" * 63, "x" * 64, "x" * 100, "a-" * 40, "日本語", "emoji 🚀 run", "a\u0085b", "a\u00a0b", "Tab\there", "..", "-",
    "a" * 50 + "." * 20, "x" * 60 + "-" + "y" * 10, "x" * 50 + " " + "y" * 20, "Run_v1.2 Final", "lr=0.1, bs=32",
    "straße", "ǅ", "\u212a", "ﬃ", "a\u0301", "x" * 49 + "_" * 10 + "y" * 10, "." * 70, "a" + "." * 70 + "b",
    "\u2028", "\ufeffTitle", "Z" * 200, "ok", "A/B\\C", "q" * 50 + "é" * 20,
]

IDS = [
    "", "a", "A", "a-b", "-a", "a-", "a.b", "a_b", "_a", "a_", ".a", "a.", "a/b", "a\\b", " a", "a ", "a\u0085",
    "\u00a0a", "a\tb", "a b", "é", "a" * 512, "0", "0-0", "a--b", "a..b", "a__b", "ab\x00", "A1", "run-20240101",
    "x" * 200, "a\u2028", "ǆ", "a\u200bb", "-", ".", "..", "a\nb", "\ufeffa", "a:b",
]


def all_cases() -> list[dict[str, Any]]:
    cases = [*rendered(), *mutations(), *typed_fields(), *examples(), *yaml_values()]
    cases += [{"id": f"title/{i:02d}", "kind": "title", "text": title} for i, title in enumerate(TITLES)]
    cases += [{"id": f"id/{i:02d}", "kind": "id", "text": value} for i, value in enumerate(IDS)]
    seen: set[str] = set()
    for case in cases:
        if case["id"] in seen:
            raise ValueError(f"duplicate case id {case['id']}")
        seen.add(case["id"])
    return cases
