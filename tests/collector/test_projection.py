"""JSONL history projection: TauGrid's rules, its golden events, and our non-finite extension."""

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tau_collector.projection.cards import is_standard_metric, metric_card
from tau_collector.projection.metric_event import decode_canonical_ndjson, encode_ndjson
from tau_collector.projection.projector import ProjectionConfig, ProjectionError, Projector, RowError
from tau_collector.projection.reference import project_row_reference
from tau_collector.sources.records import HistoryRow
from tau_collector.taugrid.gojson import parse_time

from .golden import HISTORY_EVENTS_GOLDEN, HISTORY_ROW

GOLDEN_CONFIG = ProjectionConfig(
    project="project-alpha",
    experiment_id="experiment-alpha",
    run_group_id="baseline",
    run_id="seed-1",
    exported_at=parse_time("2026-09-18T19:00:00Z"),
    workspace_id="workspace-a",
    cluster="cluster-a",
    source_store_id="store-a",
    metric_prefix="trial",
    source="captioner-jsonl",
    tags={" dataset ": " vision ", "recipe": "vit-enc"},
)
GOLDEN_FILE = dict(
    history_path="runs/seed-1/history.jsonl", metric_file_id="jsonl-seed-1", metric_file_path="metrics/seed-1.parquet"
)
SIMPLE = ProjectionConfig(project="p", experiment_id="e", run_group_id="g", run_id="r", exported_at=0)


def project(fields, config=SIMPLE, line=1, **file):
    return Projector(config, **(file or {"history_path": "h.jsonl"})).project(HistoryRow(fields, line, 0))


def test_golden_history_events_are_reproduced_byte_for_byte():
    out = project(json.loads(HISTORY_ROW), GOLDEN_CONFIG, line=9, **GOLDEN_FILE)
    assert b"".join(out.lines) == HISTORY_EVENTS_GOLDEN
    assert [encode_ndjson(e) for e in out.events] == out.lines
    assert out.non_finite == []


def test_reference_projection_reproduces_the_golden_too():
    events, non_finite = project_row_reference(json.loads(HISTORY_ROW), GOLDEN_CONFIG, history_line=9, **GOLDEN_FILE)
    assert b"".join(encode_ndjson(e) for e in events) == HISTORY_EVENTS_GOLDEN
    assert non_finite == []


@pytest.mark.parametrize(
    ("step", "expected"),
    [(7, 7), (7.0, 7), (1.75, 1), (0, 0), (-0.5, 0), (1e3, 1000), (2**63 - 1, 2**63 - 1)],
)
def test_step_rules(step, expected):
    assert project({"_step": step, "_timestamp": 1.5, "m": 1}).events[0].step == expected


@pytest.mark.parametrize(
    ("step", "message"),
    [
        (-1, "_step: must be nonnegative"),
        (-1.5, "_step: must be nonnegative"),
        (None, "_step: must be numeric and representable as int64"),
        ("3", "_step: must be numeric and representable as int64"),
        (True, "_step: must be numeric and representable as int64"),
        (math.nan, "_step: must be numeric and representable as int64"),
        (1e19, "_step: must be numeric and representable as int64"),
        (2**63, "_step: must be nonnegative"),
    ],
)
def test_bad_steps_are_row_errors_with_taugrids_messages(step, message):
    fields = {"_timestamp": 1.0, "m": 1}
    if step is not None:
        fields["_step"] = step
    with pytest.raises(RowError, match=f"^{message}$"):
        project(fields)


@pytest.mark.parametrize("ts", [None, "1.0", math.inf, math.nan, False])
def test_bad_timestamps_are_row_errors(ts):
    fields = {"_step": 1, "m": 1}
    if ts is not None:
        fields["_timestamp"] = ts
    with pytest.raises(RowError, match="^_timestamp: must be finite epoch seconds$"):
        project(fields)


def test_time_is_truncated_to_microseconds():
    event = project({"_step": 1, "_timestamp": 1790274612.1234567, "m": 1}).events[0]
    assert event.wall_time == 1_790_274_612_123_456_000


def test_underscore_keys_and_non_numbers_are_skipped_and_keys_sorted_and_trimmed():
    out = project({"_step": 1, "_timestamp": 1.0, "_runtime": 3, "z": 1, " a ": 2, "s": "x", "b": True,
                   "n": None, "l": [1], "o": {"x": 1}, "  ": 5})
    assert [(e.metric_name, e.tags["jsonl.raw_key"]) for e in out.events] == [("a", " a "), ("z", "z")]


def test_prefix_is_applied_before_the_card_is_computed():
    config = ProjectionConfig(project="p", experiment_id="e", run_group_id="g", run_id="r", exported_at=0,
                              metric_prefix="train/")
    event = project({"_step": 1, "_timestamp": 1.0, "loss": 1}, config).events[0]
    assert event.metric_name == "train/loss"
    assert event.tags["tau.metric.card"] == "World model"
    assert event.tags["tau.metric.standard"] == "true"


def test_custom_step_and_time_fields_for_ray_tune_results():
    config = ProjectionConfig(project="p", experiment_id="e", run_group_id="g", run_id="r", exported_at=0,
                              step_field="training_iteration", time_field="timestamp")
    out = project({"training_iteration": 3, "timestamp": 1700000000, "mean_loss": 0.5, "done": False}, config)
    assert [(e.metric_name, e.step, e.wall_time) for e in out.events] == [("mean_loss", 3, 1_700_000_000 * 10**9)]


@pytest.mark.parametrize("key", ["jsonl.raw_key", " tau.metric.card "])
def test_user_tags_may_not_override_jsonl_metadata(key):
    config = ProjectionConfig(project="p", experiment_id="e", run_group_id="g", run_id="r", exported_at=0,
                              tags={key: "x"})
    with pytest.raises(ProjectionError, match="cannot override protected JSONL metadata"):
        Projector(config, history_path="h")


def test_user_tags_may_not_override_metric_fields():
    config = ProjectionConfig(project="p", experiment_id="e", run_group_id="g", run_id="r", exported_at=0,
                              tags={"step": "x"})
    with pytest.raises(ProjectionError, match='tag "step" cannot override a protected metric field'):
        Projector(config, history_path="h")


def test_blank_identity_is_a_configuration_error():
    config = ProjectionConfig(project=" ", experiment_id="e", run_group_id="g", run_id="r", exported_at=0)
    with pytest.raises(ProjectionError, match="project is required"):
        Projector(config, history_path="h")


def test_non_finite_values_become_observations_not_events():
    out = project({"_step": 2, "_timestamp": 1.0, "loss": math.nan, "acc": math.inf, "lr": -math.inf, "ok": 1})
    assert [e.metric_name for e in out.events] == ["ok"]
    assert [(e.metric_name, repr(e.value)) for e in out.non_finite] == [
        ("acc", "inf"), ("loss", "nan"), ("lr", "-inf")]
    assert all(e.event_id.startswith("metric-") and e.step == 2 for e in out.non_finite)
    assert len(out.lines) == 1


def test_integers_beyond_float64_are_infinite_observations():
    out = project({"_step": 1, "_timestamp": 1.0, "huge": 10**400})
    assert out.events == [] and out.non_finite[0].value == math.inf


def test_a_bad_row_among_many_does_not_stop_the_others():
    projector = Projector(SIMPLE, history_path="h.jsonl")
    rows = [HistoryRow({"_step": i, "_timestamp": 1.0, "m": i}, i + 1, 0) for i in range(3)]
    rows[1].fields["_step"] = -4
    out, errors = projector.project_rows(rows)
    assert [e.step for e in out.events] == [0, 2]
    assert [(row.line, str(err)) for row, err in errors] == [(2, "_step: must be nonnegative")]


def test_invalid_wall_time_year_is_a_row_error():
    with pytest.raises(RowError, match='project metric "m": wall_time is invalid'):
        project({"_step": 1, "_timestamp": 1e12, "m": 1})


@pytest.mark.parametrize(
    ("name", "card", "standard"),
    [
        ("train/return", "Outcome", True),
        ("Eval/Score", "Outcome", True),
        ("train/loss", "World model", True),
        ("wm/anything", "World model", False),
        ("train/lr_schedule", "Optimization", False),
        ("train/step_time_s", "Optimization", True),
        ("train/examples_seen", "Throughput", True),
        ("my_tokens_per_s", "Throughput", False),
        ("gpu/memory_allocated_gb", "Systems", True),
        ("system/gpu_util", "Systems", True),
        ("checkpoint/bytes", "Checkpoint", True),
        ("feature/x", "Model diagnostics", True),
        ("eval/accuracy", "Model diagnostics", False),
        ("policy/entropy", "Behavior", True),
        ("loss", "Other metrics", False),
    ],
)
def test_card_mapping(name, card, standard):
    assert metric_card(name) == card
    assert is_standard_metric(name) is standard


keys = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
values = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.text(max_size=4),
)


@settings(max_examples=300, deadline=None)
@given(
    fields=st.dictionaries(keys, values, max_size=6),
    step=st.one_of(st.integers(min_value=0, max_value=2**63 - 1), st.floats(min_value=0, max_value=1e18)),
    ts=st.floats(min_value=-6e10, max_value=2.5e11),
    prefix=st.sampled_from(["", "trial_1", "a/b/"]),
    tag_value=st.text(max_size=6),
    line=st.integers(min_value=1, max_value=10**6),
)
def test_fast_projection_equals_the_reference_spelling(fields, step, ts, prefix, tag_value, line):
    config = ProjectionConfig(project="p<&>", experiment_id="e", run_group_id="g", run_id="r",
                              exported_at=1_000, metric_prefix=prefix, tags={"k": tag_value},
                              namespace="ns\u2028")
    row = {**fields, "_step": step, "_timestamp": ts}
    file = dict(history_path="dir/h.jsonl", metric_file_id="history-0", metric_file_path="/abs/h.jsonl")
    try:
        expected, expected_nf = project_row_reference(row, config, history_line=line, **file)
    except RowError as exc:
        with pytest.raises(RowError) as raised:
            Projector(config, **file).project(HistoryRow(row, line, 0))
        assert str(raised.value) == str(exc)
        return
    out = Projector(config, **file).project(HistoryRow(row, line, 0))
    assert out.lines == [encode_ndjson(e) for e in expected]
    assert out.events == expected
    assert [(e.event_id, e.metric_name, repr(e.value), e.tags) for e in out.non_finite] == [
        (e.event_id, e.metric_name, repr(e.value), e.tags) for e in expected_nf]
    assert decode_canonical_ndjson(b"".join(out.lines)) == expected
