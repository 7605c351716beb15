"""Every answer shape's OpenAPI fragment, by component name, for the Portal's OpenAPI document."""

from __future__ import annotations

import copy

from . import (
    artifacts,
    checkpoints,
    experiment,
    experiment_list,
    fault_events,
    job,
    media,
    metadata,
    metric,
    notes,
    parameter_importance,
    point_details,
    run,
    run_config,
    run_table,
    series,
    tails,
)

__all__ = ["component_schemas"]


def component_schemas() -> dict[str, dict]:
    """The ``components.schemas`` of the OpenAPI document (a fresh copy: callers may edit it)."""
    return copy.deepcopy({
        "ErrorEnvelope": metadata.ERROR_ENVELOPE,
        "Metadata": metadata.METADATA,
        "Run": run.RUN,
        "RunConfig": run_config.RUN_CONFIG,
        "RunCheckpoints": checkpoints.RUN_CHECKPOINTS,
        "Artifact": artifacts.ARTIFACT,
        "ArtifactList": artifacts.ARTIFACT_LIST,
        "MediaTags": media.MEDIA_TAGS,
        "Histograms": media.HISTOGRAMS,
        "ImagesAt": media.IMAGES_AT,
        "TextAt": media.TEXT_AT,
        "Experiment": experiment.EXPERIMENT,
        "ExperimentSearch": experiment.EXPERIMENT_SEARCH,
        "RunDetail": run.RUN_DETAIL,
        "Metric": metric.METRIC,
        "MetricCatalog": metric.METRIC_CATALOG,
        "Series": series.SERIES,
        "RunList": run.RUN_LIST,
        "PointDetails": point_details.POINT_DETAILS,
        "Tail": tails.TAIL,
        "Tails": tails.TAILS,
        "RunTable": run_table.RUN_TABLE,
        "RunTableRow": run_table.RUN_TABLE_ROW,
        "MetricStats": run_table.METRIC_STATS,
        "ExperimentList": experiment_list.EXPERIMENT_LIST,
        "Note": notes.NOTE,
        "NoteList": notes.NOTE_LIST,
        "NoteWritten": notes.NOTE_WRITTEN,
        "RunTags": notes.RUN_TAGS,
        "Notifications": notes.NOTIFICATIONS,
        "ExperimentFaultEvents": fault_events.EXPERIMENT_FAULTS,
        "RunJob": job.RUN_JOB,
        "ParameterImportance": parameter_importance.PARAMETER_IMPORTANCE,
        "ParameterScore": parameter_importance.PARAMETER_SCORE,
    })
