"""The middle of the data path, shared by the sidecar and the import: a source's batch, projected.

``sources → projection → spool → sinks``: :class:`Pipeline` takes one bounded
:class:`~.sources.base.Batch` and gives a :class:`Projected` batch: the canonical NDJSON lines
(when a spool or an NDJSON sink needs them), the non-finite observations, the finite points in
columns (for sinks that keep points), and the rows the projection rejected as problems. The
collector (:mod:`.collector`) spools and delivers it under TauGrid's pending-manifest protocol;
``taunotebook import`` (:mod:`.store_import`) delivers it to the expstore directly. Both read the
same sources through the same projection, so both make the same store from the same files.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from tau_collector.projection.columns import PointColumns, point_columns, project_scalar_columns
from tau_collector.projection.metric_event import MetricEvent
from tau_collector.projection.projector import ProjectionConfig, Projector
from tau_collector.sources.base import Batch, Source, SourceInput
from tau_collector.sources.records import ProblemKind, SourceProblem

__all__ = ["Pipeline", "ProjectedBatch", "merge_points"]


@dataclass(slots=True)
class ProjectedBatch:
    """``ndjson`` holds ``event_count`` canonical lines in blocks; without lines it is empty and
    ``event_count`` counts the finite points."""

    batch: Batch
    ndjson: list[bytes]
    event_count: int
    non_finite: list[MetricEvent]
    points: PointColumns | None
    rejected: list[SourceProblem] = field(default_factory=list)

    def take_ndjson(self) -> list[bytes]:
        """The lines' blocks (joined once, by whoever takes them), letting go of them here."""
        ndjson, self.ndjson = self.ndjson, []
        return ndjson

    @property
    def problems(self) -> list[SourceProblem]:
        """What the source could not read, then what the projection refused."""
        return self.batch.problems + self.rejected

    @property
    def bad_rows(self) -> int:
        return sum(1 for p in self.batch.problems if p.kind in ProblemKind.REJECTED) + len(self.rejected)


class Pipeline:
    """Projects batches for one run identity; one projector per input (its path is in every event's tags)."""

    def __init__(self, config: ProjectionConfig, *, lines: bool = True, points: bool = True) -> None:
        self.config = config
        self.lines = lines
        self.points = points
        self._projectors: dict[tuple[str, str], Projector] = {}

    def projector(self, source: Source, source_input: SourceInput) -> Projector:
        key = (source.kind, source_input.path)
        projector = self._projectors.get(key)
        if projector is None:
            config = self.config
            if (config.step_field, config.time_field) != (source.step_field, source.time_field):
                config = dataclasses.replace(config, step_field=source.step_field, time_field=source.time_field)
            projector = self._projectors[key] = Projector(
                config, history_path=source_input.path, metric_file_id=source_input.metric_file_id,
                metric_file_path=source_input.metric_file_path, with_events=False, with_lines=self.lines)
        return projector

    def release(self, source: Source, source_input: SourceInput) -> None:
        """Forget ``source_input``'s projector (its templates and per-metric fragments): the input is read for this
        pass. A drain over thousands of closed files holds one projector at a time, not one per file."""
        self._projectors.pop((source.kind, source_input.path), None)

    def project(self, source: Source, batch: Batch) -> ProjectedBatch:
        projector = self.projector(source, batch.input)
        if batch.columns is not None:
            projected, errors, points = project_scalar_columns(projector, batch.columns, points=self.points,
                                                               joined=True)
        else:
            projected, errors = projector.project_rows(batch.rows, points=self.points, joined=True)
            points = point_columns(projector, projected.points)
        path = batch.input.path
        rejected = [SourceProblem(path, ProblemKind.BAD_ROW, str(exc), line=row.line, offset=row.offset)
                    for row, exc in errors]
        assert projected.ndjson is not None
        # Without lines, the events a chunk holds are its finite points.
        count = projected.line_count if self.lines else len(points) if points is not None else 0
        return ProjectedBatch(batch, projected.ndjson, count, projected.non_finite, points, rejected)


def merge_points(parts: list[PointColumns | None]) -> PointColumns | None:
    """One run's points from several batches (several files read together) as one set of columns.

    None when some batch has no columns (the sink then reads the chunk's NDJSON instead).
    """
    if not parts or any(p is None for p in parts):
        return None
    if len(parts) == 1:
        return parts[0]
    columns: list[PointColumns] = parts  # type: ignore[assignment]
    first = columns[0]
    offsets, at = [], 0
    for p in columns:
        offsets.append(at)
        at += len(p.names)
    return PointColumns(
        first.project, first.experiment_id, first.run_group_id, first.run_id, first.source,
        names=[n for p in columns for n in p.names],
        tag_texts=[t for p in columns for t in p.tag_texts],
        tag_sets=[t for p in columns for t in p.tag_sets],
        key=np.concatenate([p.key + off for p, off in zip(columns, offsets, strict=True)]).astype(np.int32),
        step=np.concatenate([p.step for p in columns]),
        wall_us=np.concatenate([p.wall_us for p in columns]),
        value=np.concatenate([p.value for p in columns]),
        line=np.concatenate([p.line for p in columns]),
    )
