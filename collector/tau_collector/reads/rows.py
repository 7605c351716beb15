"""The rows every reader answers with: runs, experiments, metric summaries, points, reduced series, run events.

The shapes follow TauGrid's expstore tables (``runs``, ``experiments``, ``metric_summaries``, ``events``)
because the local store holds exactly those, but they are the read contract's words: the Kusto reader
builds the same rows from its queries. Arrays are numpy arrays; this module does not import numpy (a
reader that answers with them has loaded it).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "RUN_SORTS",
    "SOURCE_PROBLEM",
    "WORKSPACE_TAG",
    "ArtifactRow",
    "ExperimentDetails",
    "ExperimentListingRow",
    "ExperimentRow",
    "MetricSummaryRow",
    "MetricValueRow",
    "NoteRow",
    "ReducedSeries",
    "Rows",
    "RunEvent",
    "RunRow",
]

WORKSPACE_TAG = "tau_workspace"  # the run tag naming the workspace a run belongs to (untagged: every workspace)
SOURCE_PROBLEM = "collector.source_problem"  # the run event type of a problem met reading a run's sources
# The orders a runs table may ask a listing for (``sort=``).
RUN_SORTS = ("created_at", "run_id", "state", "project", "experiment_id", "run_group_id",
             "metric:latest", "metric:min", "metric:max")


@dataclass(frozen=True, slots=True)
class RunRow:
    """One row of the store's ``runs`` table, with its tags and metric names."""

    run_id: str
    project: str
    experiment_id: str
    run_group_id: str
    parent_run_id: str | None
    state: str
    owner: str | None
    created_at: str
    started_at: str | None
    completed_at: str | None
    config_hash: str | None
    code_sha: str | None
    image_digest: str | None
    tau_command: str | None
    result_uri: str | None
    tags: dict[str, str] = field(default_factory=dict)
    metric_names: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ExperimentRow:
    """One row of the store's ``experiments`` table."""

    experiment_id: str
    project: str
    name: str
    description: str | None
    source: str
    created_at: str
    updated_at: str


@dataclass(frozen=True, slots=True)
class Rows:
    """Columnar points sorted by step, one per step. ``wall_time`` in µs since the epoch, UTC."""

    step: np.ndarray  # int64
    wall_time: np.ndarray  # int64
    value: np.ndarray  # float64; may hold NaN/±Inf (non-finite observations)

    def __len__(self) -> int:
        return int(self.step.size)


@dataclass(frozen=True, slots=True)
class ReducedSeries:
    """A reduced series: ``source_points`` in range after dedupe, ``partial`` when fewer were returned."""

    step: np.ndarray
    wall_time: np.ndarray
    value: np.ndarray
    non_finite: np.ndarray  # bool per returned point, for the caller to mark
    source_points: int
    partial: bool

    @property
    def returned_points(self) -> int:
        return int(self.step.size)


@dataclass(frozen=True, slots=True)
class MetricSummaryRow:
    """One ``metric_summaries`` row (``latest_wall_time`` in microseconds since the epoch, UTC)."""

    run_id: str
    metric_name: str
    project: str | None
    run_group_id: str | None
    count: int
    finite_count: int
    non_finite_count: int
    min_step: int | None
    max_step: int | None
    latest_step: int | None
    latest_wall_time: int | None
    latest_value: float | None
    min_value: float | None
    max_value: float | None
    updated_at: str
    latest_file_id: str | None


@dataclass(frozen=True, slots=True)
class MetricValueRow:
    """One run with one metric's summary values and its config's fields: what parameter importance reads.

    The summary's columns are ``None`` for a run without the metric; ``fields`` is ``None`` for a run without a
    configuration (else its flattened fields, as :class:`~tau_collector.taugrid.run_config.RunConfig` has them).
    """

    run_id: str
    state: str
    finite_count: int | None
    latest_value: float | None
    min_value: float | None
    max_value: float | None
    fields: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class RunEvent:
    """One row of the store's ``events`` table: something that happened to a run besides its metrics."""

    run_id: str
    time: str  # RFC3339
    type: str
    source: str
    severity: str  # "error" | "warning" | "info"
    message: str
    payload: dict | None = None

    @property
    def event_id(self) -> str:
        """Stable for the same occurrence, so recording it again (a restarted collector) is a no-op."""
        key = orjson.dumps([self.run_id, self.type, self.source, self.message, self.payload],
                           option=orjson.OPT_SORT_KEYS)
        return "event-" + hashlib.sha256(key).hexdigest()


@dataclass(frozen=True, slots=True)
class NoteRow:
    """One row of TauGrid's ``observations`` table about a run: a note someone wrote on it, and when."""

    observation_id: str
    run_id: str  # the row's scope_id (scope_type "run")
    author: str
    text: str
    created_at: str  # RFC3339, seconds (TauGrid's stamp)
    source: str = "human"
    type: str = "observation"
    idempotency_key: str | None = None


@dataclass(frozen=True, slots=True)
class ExperimentListingRow:
    """An experiment as a search lists it, before its page details are read."""

    experiment_id: str
    project: str
    name: str
    description: str
    created_at: str
    updated_at: str
    latest_run_at: str
    sort_at: str


@dataclass(slots=True)
class ExperimentDetails:
    """What a listed experiment's answer counts over its runs in the workspace."""

    run_count: int
    run_group_count: int
    state_counts: dict[str, int]
    lifecycle_counts: dict[str, int]
    metric_names: list[str]
    run_ids: list[str] | None = None  # only when asked for (a config space needs them)


@dataclass(frozen=True, slots=True)
class ArtifactRow:
    """One row of TauGrid's ``artifacts`` table: a file that belongs to a run (checkpoint, image, history file)."""

    run_id: str
    type: str  # TauGrid's words: "checkpoint", "image", "metrics-jsonl", "tensorboard", …
    uri: str  # store-relative for bytes the store keeps, else the file's own URI or path
    name: str
    step: int | None = None
    digest: str | None = None  # "sha256:<hex>"
    size_bytes: int | None = None
    content_type: str | None = None
    caption: str | None = None
    created_at: str | None = None
    tags: dict | None = None
    rank: int | None = None
    artifact_id: str = ""

    def __post_init__(self) -> None:
        if not self.artifact_id:
            key = orjson.dumps([self.run_id, self.type, self.name, self.step])
            object.__setattr__(self, "artifact_id", "artifact-" + hashlib.sha256(key).hexdigest()[:32])

    def tags_json(self) -> str | None:
        return orjson.dumps(self.tags, option=orjson.OPT_SORT_KEYS).decode() if self.tags is not None else None

    @classmethod
    def from_row(cls, row: dict) -> ArtifactRow:
        tags = row.get("tags")
        return cls(run_id=row["run_id"], type=row["type"], uri=row["uri"], name=row["name"], step=row.get("step"),
                   digest=row.get("digest"), size_bytes=row.get("size_bytes"), content_type=row.get("content_type"),
                   caption=row.get("caption"), created_at=row.get("created_at"),
                   tags=orjson.loads(tags) if tags else None, rank=row.get("rank"),
                   artifact_id=row["artifact_id"])
