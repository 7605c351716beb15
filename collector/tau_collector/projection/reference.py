"""TauGrid's ``ProjectJSONLHistoryRow`` spelled out plainly, one row and one event at a time: the reference the
tests hold :class:`.projection.Projector`'s fast path to (same events, same bytes, same errors)."""

from __future__ import annotations

import math
from collections.abc import Mapping

from tau_collector.projection.cards import is_standard_metric, metric_card
from tau_collector.projection.metric_event import (
    METRIC_EVENT_SCHEMA_V1,
    MetricEvent,
    MetricEventError,
    new_metric_event,
)
from tau_collector.projection.projector import (
    JSONL_IMPORTER_VERSION,
    PROTECTED_JSONL_TAGS,
    ProjectionConfig,
    ProjectionError,
    RowError,
    compact_tags,
    go_base,
    history_step,
    history_time_ns,
    metric_number,
    prefixed,
)
from tau_collector.taugrid.gojson import encode_string

__all__ = ["project_row_reference"]


def project_row_reference(
    fields: Mapping[str, object],
    config: ProjectionConfig,
    *,
    history_path: str,
    history_line: int,
    metric_file_id: str = "",
    metric_file_path: str = "",
) -> tuple[list[MetricEvent], list[MetricEvent]]:
    """TauGrid's ``ProjectJSONLHistoryRow`` spelled out plainly: (events, non-finite observations)."""
    step_field = config.step_field or "_step"
    time_field = config.time_field or "_timestamp"
    if history_line < 1:
        raise RowError("history line must be positive")
    for key in config.tags:
        if key.strip() in PROTECTED_JSONL_TAGS:
            raise ProjectionError(f"tag {encode_string(key)} cannot override protected JSONL metadata")
    try:
        step = history_step(fields.get(step_field))
    except RowError as exc:
        raise RowError(f"{step_field}: {exc}") from None
    try:
        wall_ns = history_time_ns(fields.get(time_field))
    except RowError as exc:
        raise RowError(f"{time_field}: {exc}") from None
    events: list[MetricEvent] = []
    non_finite: list[MetricEvent] = []
    for raw_key in sorted(k for k in fields if k not in (step_field, time_field) and not k.startswith("_")):
        value = metric_number(fields[raw_key])
        if value is None:
            continue
        name = raw_key.strip()
        if not name:
            continue
        name = prefixed(config.metric_prefix, name)
        tags = compact_tags(config.tags)
        tags.update(
            {
                "jsonl.raw_key": raw_key,
                "jsonl.history_file": go_base(history_path),
                "jsonl.history_path": history_path,
                "jsonl.history_line": str(history_line),
                "jsonl.importer": JSONL_IMPORTER_VERSION,
                "tau.metric.card": metric_card(name),
                "tau.metric.standard": "true" if is_standard_metric(name) else "false",
            }
        )
        fields_ = dict(
            workspace_id=config.workspace_id,
            cluster=config.cluster,
            namespace=config.namespace,
            source_store_id=config.source_store_id,
            project=config.project,
            experiment_id=config.experiment_id,
            run_group_id=config.run_group_id,
            run_id=config.run_id,
            metric_name=name,
            step=step,
            wall_time=wall_ns,
            source=config.source or "jsonl",
            metric_file_id=metric_file_id,
            metric_file_path=metric_file_path,
            tags=tags,
            exported_at=config.exported_at,
        )
        if math.isfinite(value):
            try:
                events.append(new_metric_event(value=value, **fields_))
            except MetricEventError as exc:
                raise RowError(f"project metric {encode_string(raw_key)}: {exc}") from None
        else:
            observation = MetricEvent(value=value, schema_version=METRIC_EVENT_SCHEMA_V1, **fields_)
            observation.event_id = observation.deterministic_event_id()
            non_finite.append(observation)
    return events, non_finite
