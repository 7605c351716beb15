"""What one collector is asked to do: its options, their checks, and what derives from them alone.

Derived here: the run's tags (``--tag`` plus the workspace/namespace/cluster from the environment),
the configuration identity and source store id (TauGrid's ``collect``; additions join the identity
only when used), the projection settings, and how long the watch loop waits between drains (the CPU
budget).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tau_collector.projection.metric_event import METRIC_EVENT_SCHEMA_V1
from tau_collector.projection.projector import ProjectionConfig
from tau_collector.sinks.base import Chunk, Sink
from tau_collector.sources.base import Source
from tau_collector.sources.history import HistorySource
from tau_collector.sources.read_limits import DEFAULT_LIMITS, Limits
from tau_collector.sources.tensorboard import TensorBoardSource
from tau_collector.sources.wandb import WandbLogSource
from tau_collector.spool.manifest import MANIFEST_SCHEMA_V1
from tau_collector.taugrid.gojson import GoMap, marshal

TAU_WORKSPACE_TAG = "tau_workspace"
TAU_NAMESPACE_TAG = "tau_namespace"
TAU_CLUSTER_TAG = "tau_cluster"


class CollectorError(RuntimeError):
    """A fatal collector condition; the message says what and where."""


@dataclass(slots=True)
class CollectorOptions:
    run: str
    project: str
    experiment: str
    group: str
    out: str
    sinks: list[Sink]
    history: list[str] = field(default_factory=list)
    tfevents: list[str] = field(default_factory=list)
    wandb: list[str] = field(default_factory=list)
    source: str = "stellar-online"
    tags: dict[str, str] = field(default_factory=dict)
    completion_file: str = ""
    interval: float = 60.0
    # Watch mode (ours): after a drain that spent C seconds of CPU on files read before, the next one starts
    # no sooner than max(batch_wait, min(MAX_BUDGET_WAIT, C / cpu_budget)) after it; changes meanwhile join
    # it. A job appending ten times a second is then read in fewer, larger chunks and draining it stays near
    # ``cpu_budget`` of a core, while a cheap drain (a few rows) waits only a few tens of milliseconds. New
    # files wait too, at most NEW_FILES_MAX_WAIT: closed files that arrive meanwhile are read together, as one
    # chunk.
    batch_wait: float = 0.0
    cpu_budget: float = 0.03  # the CLI's default too (--cpu-budget 3%)
    baseline_existing_history: bool = False
    ready_file: str = ""
    done_file: str = ""
    status_artifact_uri: str = ""
    status_checkpoint_uri: str = ""
    # Globs of the job's checkpoints (ours, not in identity): registered as checkpoint artifacts with their step
    # (collect/checkpoints.py); the last one is the terminal status's checkpoint_uri unless given above.
    checkpoints: list[str] = field(default_factory=list)
    checkpoint_settle: float = 2.0
    watch: bool = False
    max_iterations: int = 0
    step_field: str = "_step"
    time_field: str = "_timestamp"
    retry_backoff: float = 1.0  # first sleep after a retryable sink failure (doubles, capped)
    drain_budget: float = 600.0  # how long a shutdown may spend on the final drain
    limits: Limits = DEFAULT_LIMITS  # batch bounds and input size limits (not part of the config identity)
    run_config: str = ""  # the run's configuration file (JSON or YAML), e.g. what %%tau_submit --config wrote
    on_delivered: Callable[[Chunk], object] | None = None  # sees each delivered chunk (stop rules); not in identity
    # A history file unchanged this long, completely read and followed by ``keep_entries`` later-named files is
    # folded into its directory's complete-through checkpoint entry (see complete_through).
    closed_after: float = 60.0
    keep_entries: int = 64
    # How history chunks are spooled (ours, not in identity): "manifest" is TauGrid's pending manifest (canonical
    # NDJSON), "columns" our column record (every sink must keep points, see column_spool), "auto" columns when
    # every sink keeps points, else the manifest. A start replays whichever record it finds.
    spool_format: str = "auto"


MAX_BUDGET_WAIT = 1.0  # seconds: the CPU budget never delays a drain longer than this
SPOOL_FORMATS = ("auto", "manifest", "columns")
NEW_FILES_MAX_WAIT = 0.3  # seconds: nor one after a drain of new files only (the pane's latency)


def validate(options: CollectorOptions) -> None:
    """Raise :class:`CollectorError` naming the first flag that is missing or out of range."""
    for name in ("run", "project", "experiment", "group", "source", "out"):
        if not getattr(options, name).strip():
            raise CollectorError(f"--{name} is required")
    if not options.history and not options.tfevents and not options.wandb:
        raise CollectorError("--history is required (or --tfevents, or --wandb)")
    if options.interval <= 0:
        raise CollectorError("--interval must be positive")
    if options.max_iterations < 0:
        raise CollectorError("--max-iterations must be nonnegative")
    if options.baseline_existing_history and not options.ready_file.strip():
        raise CollectorError("--ready-file is required with --baseline-existing-history")
    if not options.sinks:
        raise CollectorError("at least one --sink is required")
    if options.spool_format not in SPOOL_FORMATS:
        raise CollectorError(f"--spool-format must be one of {', '.join(SPOOL_FORMATS)}, not {options.spool_format!r}")
    if options.spool_format == "columns" and not all(sink.keeps_points for sink in options.sinks):
        events = ", ".join(sink.name for sink in options.sinks if not sink.keeps_points)
        raise CollectorError(f"--spool-format columns needs sinks that keep points (expstore); {events} "
                             "sends events: use --spool-format manifest or auto")


def collector_sources(options: CollectorOptions) -> list[Source]:
    """The sources the options ask for, in reading order: JSONL history, TensorBoard logdirs, W&B directories."""
    sources: list[Source] = []
    if options.history:
        sources.append(HistorySource(options.history, step_field=options.step_field, time_field=options.time_field,
                                     limits=options.limits))
    if options.tfevents:
        sources.append(TensorBoardSource(options.tfevents, limits=options.limits))
    sources.extend(WandbLogSource(directory, watched=True, limits=options.limits) for directory in options.wandb)
    return sources


def spools_columns(options: CollectorOptions) -> bool:
    """Whether history chunks are spooled as column records rather than TauGrid's manifests."""
    return options.spool_format == "columns" or (
        options.spool_format == "auto" and all(sink.keeps_points for sink in options.sinks))


def drain_wait(options: CollectorOptions, appended_cpu: float, drain_cpu: float,
               background_cpu: float = 0.0) -> float:
    """How long after a drain's start the next may begin (see ``batch_wait`` and ``cpu_budget``).

    ``appended_cpu``: the drain's CPU seconds on files read before, delivering them included; ``drain_cpu``: the
    whole drain's; ``background_cpu``: what the rest of the process spent since the previous drain ended (the
    compaction thread's merges, the watcher), so that the budget holds the whole process, not only its drains.
    """
    wait = options.batch_wait
    budget = options.cpu_budget
    if budget > 0:
        wait = max(wait, min(NEW_FILES_MAX_WAIT, (drain_cpu + background_cpu) / budget))
        if appended_cpu > 0:  # the longer bound only for a drain of appends (new files stay within 0.3 s)
            wait = max(wait, min(MAX_BUDGET_WAIT, (appended_cpu + background_cpu) / budget))
    return wait


def _clean_tags(tags: dict[str, str]) -> dict[str, str]:
    return {key.strip(): value.strip() for key, value in tags.items()}


def run_tags(options: CollectorOptions) -> dict[str, str]:
    """``--tag`` values, with the workspace, namespace and cluster from the environment where not given."""
    tags = _clean_tags(options.tags)
    for key, env in ((TAU_WORKSPACE_TAG, "TAU_WORKSPACE"), (TAU_NAMESPACE_TAG, "POD_NAMESPACE"),
                     (TAU_CLUSTER_TAG, "TAU_CLUSTER")):
        value = os.environ.get(env, "").strip()
        if not tags.get(key, "").strip() and value:
            tags[key] = value
    return tags


def config_identity(o: CollectorOptions, tags: dict[str, str]) -> str:
    sink = "\x01".join(s.name + "\x00" + s.identity() for s in o.sinks)
    doc: dict[str, object] = {
        "version": MANIFEST_SCHEMA_V1, "run": o.run, "project": o.project, "experiment": o.experiment,
        "group": o.group, "source": o.source, "history": list(o.history) or None,
        "completion_file": o.completion_file, "tags": GoMap(tags),
        "status_artifact_uri": o.status_artifact_uri, "status_checkpoint_uri": o.status_checkpoint_uri,
        "sink": sink,
    }
    # Our additions join the identity only when used, so a TauGrid-equivalent
    # configuration keeps TauGrid's identity.
    if o.tfevents:
        doc["tfevents"] = list(o.tfevents)
    if o.wandb:
        doc["wandb"] = list(o.wandb)
    if o.run_config:
        doc["run_config"] = o.run_config
    if o.step_field != "_step" or o.time_field != "_timestamp":
        doc["step_field"], doc["time_field"] = o.step_field, o.time_field
    return hashlib.sha256(marshal(doc)).hexdigest()


def source_store_id(o: CollectorOptions, tags: dict[str, str]) -> str:
    raw = marshal({
        "schema": METRIC_EVENT_SCHEMA_V1, "workspace_id": tags.get(TAU_WORKSPACE_TAG, ""),
        "cluster": tags.get(TAU_CLUSTER_TAG, ""), "namespace": tags.get(TAU_NAMESPACE_TAG, ""),
        "out": os.path.normpath(o.out),
    })
    return "tau-metrics-" + hashlib.sha256(raw).hexdigest()[:16]


def projection_config(o: CollectorOptions, tags: dict[str, str], store_id: str) -> ProjectionConfig:
    return ProjectionConfig(
        project=o.project, experiment_id=o.experiment, run_group_id=o.group, run_id=o.run,
        exported_at=time.time_ns(), workspace_id=tags.get(TAU_WORKSPACE_TAG, ""),
        cluster=tags.get(TAU_CLUSTER_TAG, ""), namespace=tags.get(TAU_NAMESPACE_TAG, ""),
        source_store_id=store_id, source=o.source, tags=tags,
        step_field=o.step_field, time_field=o.time_field,
    )
