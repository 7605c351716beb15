"""What the collector records about a run besides its points: its configuration, the files it is read from,
the first non-finite value, the terminal status event,
and the result a run reports (the loop, :mod:`.loop`, spools and delivers them)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from tau_collector.collect.completion_file import RUN_STATUS_METRIC, Completion
from tau_collector.collect.delivery import Delivery, DeliveryError
from tau_collector.collect.options import TAU_CLUSTER_TAG, TAU_NAMESPACE_TAG, TAU_WORKSPACE_TAG, CollectorOptions
from tau_collector.projection.metric_event import MetricEvent, new_metric_event
from tau_collector.projection.projector import source_file, source_line
from tau_collector.sinks.base import RunConfigConflict, RunFile
from tau_collector.sources.base import Source, SourceInput
from tau_collector.sources.records import ProblemKind, SourceProblem
from tau_collector.taugrid.gojson import marshal

__all__ = ["CollectorResult", "first_non_finite", "run_files", "settle_config", "terminal_event"]


@dataclass(slots=True)
class CollectorResult:
    """TauGrid's status line (chunks, events, completed) plus our counts."""

    chunks: int = 0
    events: int = 0
    completed: bool = False
    non_finite: int = 0
    rejected_rows: int = 0
    non_scalars: int = 0
    media: int = 0  # histograms, images and text stored (never MetricEvents)
    corrupt_files: int = 0
    first_non_finite: dict[str, object] | None = None
    problems: list[SourceProblem] = field(default_factory=list)

    def status_line(self) -> bytes:
        return marshal({
            "chunks": self.chunks, "events": self.events, "completed": self.completed,
            "non_finite": self.non_finite, "rejected_rows": self.rejected_rows,
            "non_scalars": self.non_scalars, "corrupt_files": self.corrupt_files,
        })


def run_files(inputs: list[tuple[Source, SourceInput]]) -> list[RunFile]:
    """The run's input files as its artifacts: for TensorBoard the run's directory below the logdir and the file,
    for history the (attempt's) history directory and the file."""
    files = []
    for source, source_input in inputs:
        path = source_input.path
        if source.kind == "tensorboard":  # the run's directory below the logdir, then the file
            parts = (getattr(source_input.group, "relative", ""), os.path.basename(path))
        else:  # the history directory (an attempt's) and the file
            parts = tuple(path.replace(os.sep, "/").split("/")[-2:])
        files.append(RunFile(path, "/".join(p for p in parts if p), source.artifact_type))
    return files


def settle_config(options: CollectorOptions, sources: list[Source], delivery: Delivery,
                  report: Callable[[list[SourceProblem]], None], log: Callable[[str], None]) -> bool:
    """Store the run's configuration once: ``--run-config`` when given, else the first a source has; returns
    whether it is settled (stored, or found in conflict: not asked again).

    A file that cannot be read as a configuration, or a run that already has another one, is
    reported like any source problem; the metrics go on either way.
    """
    from tau_collector.taugrid.run_config import ConfigError, read_config_file

    candidates: list[tuple[str, Callable]] = []
    if options.run_config:
        path = options.run_config
        candidates.append((path, lambda: read_config_file(path)))
    else:
        candidates += [(source.kind, source.run_config) for source in sources]
    for where, read in candidates:
        try:
            config = read()
        except (ConfigError, OSError) as exc:
            text = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            report([SourceProblem(where, ProblemKind.BAD_CONFIG, f"configuration not stored: {text}")])
            return bool(options.run_config)  # a source may still write its config
        if config is None:
            continue
        try:
            delivery.put_run_config(options.run, config)
        except RunConfigConflict as exc:
            report([SourceProblem(config.uri, ProblemKind.CONFIG_CONFLICT, str(exc))])
        except DeliveryError as exc:
            log(f"{exc}; trying again on the next pass")
            return False
        return True
    return False


def first_non_finite(event: MetricEvent) -> dict[str, object]:
    """What the collector's result says of the first non-finite value it met."""
    return {
        "metric": event.metric_name, "step": event.step,
        "file": source_file(event),
        "line": source_line(event),
        "value": repr(event.value),
    }


def terminal_event(options: CollectorOptions, tags: dict[str, str], source_store_id: str, completion: Completion,
                   checkpoint_uri: str) -> MetricEvent:
    """The ``tau/run_status`` marker of a run that ended (``completion``), TauGrid's status tags included."""
    o = options
    tags = dict(tags)
    tags["tau.status.state"] = completion.state
    if completion.reason:
        tags["tau.status.reason"] = completion.reason
    if completion.message:
        tags["tau.status.message"] = completion.message
    if o.status_artifact_uri:
        tags["tau.status.artifact_uri"] = o.status_artifact_uri
    if checkpoint_uri:
        tags["tau.status.checkpoint_uri"] = checkpoint_uri
    return new_metric_event(
        workspace_id=tags.get(TAU_WORKSPACE_TAG, ""), cluster=tags.get(TAU_CLUSTER_TAG, ""),
        namespace=tags.get(TAU_NAMESPACE_TAG, ""), source_store_id=source_store_id,
        project=o.project, experiment_id=o.experiment, run_group_id=o.group, run_id=o.run,
        metric_name=RUN_STATUS_METRIC, step=0, wall_time=completion.completed_at, value=completion.value,
        source=o.source + "-status", tags=tags, exported_at=completion.completed_at,
    )
