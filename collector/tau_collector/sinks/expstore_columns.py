"""Points in columns (:class:`~tau_collector.projection.columns.PointColumns`) as the expstore writer's
:class:`~tau_collector.expstore.write.writer.RunColumns`: the same rows the writer makes of MetricEvents.

Rows are put in the order the store keeps them (metric name, step, wall time, arrival), so the
tags column is built once in place; each row's tags are its key's JSON text with its history line.
"""

from __future__ import annotations

import numpy as np

from tau_collector.collect.completion_file import RUN_STATUS_METRIC
from tau_collector.expstore.format.parquet_encoder import PlainTexts
from tau_collector.expstore.write.writer import RunColumns, run_status_of
from tau_collector.projection.columns import PointColumns

__all__ = ["run_columns"]


def run_columns(points: PointColumns) -> RunColumns:
    unique: dict[str, int] = {}
    name_of_key = np.array([unique.setdefault(name, len(unique)) for name in points.names], dtype=np.int32)
    names = list(unique)
    rank = np.empty(len(names), dtype=np.int64)
    rank[np.argsort(np.array(names, dtype=object), kind="stable")] = np.arange(len(names))
    order = np.lexsort((points.wall_us, points.step, rank[name_of_key[points.key]]))
    key = points.key[order]
    wall_us = points.wall_us[order]
    step = points.step[order]
    value = points.value[order]
    texts = points.tag_texts
    line = points.line[order]
    # In bulk where rows come in runs of one key (a wide row's metrics, each over many lines), else row by row.
    tags = PlainTexts.around_numbers(texts, key, line)
    if tags is None:
        tags = [f"{texts[k][0]}{n}{texts[k][1]}" for k, n in zip(key.tolist(), line.tolist(), strict=True)]
    metric = name_of_key[key]
    status = None
    status_code = unique.get(RUN_STATUS_METRIC)
    if status_code is not None:
        at = np.flatnonzero(metric == status_code)
        at = at[np.lexsort((at, wall_us[at], step[at]))]
        status = run_status_of(value[at], [int(w) * 1000 for w in wall_us[at].tolist()])
    used = np.unique(points.key).tolist()
    return RunColumns(
        project=points.project, experiment_id=points.experiment_id, run_group_id=points.run_group_id,
        run_id=points.run_id, names=names, metric=metric, step=step, wall_time=wall_us, value=value, tags=tags,
        tag_sets=[points.tag_sets[k] for k in used], source=points.source,
        first_wall_ns=int(wall_us.min()) * 1000, status=status,
    )
