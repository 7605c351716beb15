"""The client's one decoder (``taunotebook.client.decode``): what a missing, null or wrongly typed value becomes."""

from __future__ import annotations

import math

import pytest

from taunotebook.client import MetricSummary, Run, RunTable, Tail, Tails
from taunotebook.client.decode import decode


def test_a_missing_or_null_value_is_the_fields_default_else_its_types_zero():
    table = decode(RunTable, {"runs": [{"run_id": "r", "tags": None, "config": None}]})
    (row,) = table.runs
    assert (row.project, row.tags, row.config, row.metrics, row.config_hash) == ("", {}, None, {}, None)
    assert table.metadata.provenance.served_sources == () and table.run_count == 0 and table.offset == 0
    assert table.metadata.generated_at is None and table.extra == {}


def test_a_required_key_that_is_missing_is_a_key_error_naming_it():
    with pytest.raises(KeyError, match="run_id"):
        decode(Run, {"project": "p"})


def test_a_value_of_the_wrong_json_type_is_a_type_error_naming_the_field():
    with pytest.raises(TypeError, match="metric_names: expected a JSON array, got dict"):
        decode(Run, {"run_id": "r", "metric_names": {"a": 1}})
    with pytest.raises(TypeError, match="tags: expected a JSON object, got list"):
        decode(Run, {"run_id": "r", "tags": ["a"]})


def test_a_metric_value_sent_as_null_or_text_is_nan_or_its_number():
    m = decode(MetricSummary, {"name": "loss", "latest_value": None, "min_value": "-Infinity", "count": 3})
    assert math.isnan(m.latest_value) and m.min_value == -math.inf and m.max_value is None and m.count == 3


def test_an_empty_optional_string_is_none_and_unknown_keys_stay_in_extra():
    run = decode(Run, {"run_id": "r", "experiment_id": "", "owner": "ana", "cost": 1.5})
    assert run.experiment_id is None and run.owner == "ana" and run.extra == {"cost": 1.5}


def test_keys_inside_a_nested_object_are_read_by_path():
    tails = decode(Tails, {"run": {"state": "running", "status_message": "warming up"},
                           "catalog": {"cursor": "c1", "total": 2},
                           "metrics": [{"name": "loss", "count": 2, "latest_step": 1, "step": [0, 1],
                                        "value": [1.0, None], "since": None}]})
    assert (tails.state, tails.status_message, tails.cursor, tails.total, tails.names) == (
        "running", "warming up", "c1", 2, None)
    (tail,) = tails.metrics
    assert isinstance(tail, Tail) and tail.changed and tail.summary.latest_step == 1 and tail.summary.extra == {}
    assert list(tail.steps) == [0, 1] and math.isnan(tail.values[1])
    with pytest.raises(ValueError, match="2 steps but 1 values"):
        decode(Tail, {"name": "loss", "step": [0, 1], "value": [1.0]})
