"""The stand-in cluster's one liberty with the shipped function (identity casts elided) changes no answer.

``services/kusto_cluster.py`` registers ``TauExpMetricEventRows()`` with ``tolong(step)``-style casts over
the already typed view written as the bare column (DuckDB would otherwise evaluate duckdb-kql's
run-time type dispatch on every row before any filter). Every read the reader makes answers the same
through the verbatim function.
"""

from __future__ import annotations

import numpy as np

from fixtures.kusto import reader_for
from fixtures.kusto_events import fixture_events
from services.kusto_cluster import KustoCluster
from tau_collector.projection.metric_event import encode_ndjson_many


def test_elided_casts_answer_exactly_as_the_shipped_function():
    data = encode_ndjson_many(fixture_events())
    answers = []
    for typed in (True, False):
        with KustoCluster(typed_casts=typed) as cluster:
            cluster.ingest_ndjson(data)
            reader = reader_for(cluster, max_age_s=0)
            full = reader.series("seed-1", "train/loss", max_points=400)
            tail = reader.series("seed-1", "train/loss", start_step=4990)
            answers.append((reader.runs(), reader.run("seed-1"), reader.metric_summaries("seed-1"),
                            full.step.tolist(), full.value.tolist(), full.wall_time.tolist(), full.source_points,
                            tail.step.tolist(), np.asarray(tail.value).tolist()))
            assert cluster.errors == []
    typed, verbatim = answers
    assert typed == verbatim
    assert "tolong(step)" in KustoCluster().assets.functions[0].command  # the shipped text is untouched
