"""The MetricEvent contract: TauGrid's golden line, validation messages, identity, strict decoding."""

import hashlib

import pytest

from tau_collector.projection.metric_event import (
    MetricEvent,
    MetricEventError,
    NotCanonicalError,
    decode_canonical_line,
    decode_canonical_ndjson,
    encode_ndjson,
    identity_json,
    new_metric_event,
)
from tau_collector.taugrid.gojson import ZERO_TIME_NS, parse_time

from .golden import IDENTITY_EVENT_ID, IDENTITY_PREIMAGE, METRIC_EVENT_GOLDEN


def golden_event(**changes):
    fields = dict(
        workspace_id="workspace-a",
        cluster="cluster-a",
        namespace="namespace-a",
        source_store_id="store-a",
        project="project-alpha",
        experiment_id="experiment-alpha",
        run_group_id="baseline",
        run_id="seed-1",
        metric_name="train/loss",
        step=42,
        wall_time=parse_time("2026-09-18T18:30:12.123456789Z"),
        value=0.125,
        unit="ratio",
        source="jsonl",
        split="train",
        metric_file_id="metrics-seed-1",
        metric_file_path="metrics/history.jsonl",
        tags={"zebra": "last", "alpha": "first", "html": "<ok>"},
        exported_at=parse_time("2026-09-18T18:31:00.987654321Z"),
    )
    fields.update(changes)
    return MetricEvent(**fields)


def test_golden_metric_event_line_is_reproduced_byte_for_byte():
    assert encode_ndjson(golden_event()) == METRIC_EVENT_GOLDEN


def test_identity_preimage_and_event_id_match_the_golden():
    event = golden_event()
    assert identity_json(
        event.workspace_id, event.cluster, event.namespace, event.source_store_id, event.metric_file_id,
        event.project, event.experiment_id, event.run_group_id, event.run_id, event.metric_name,
        event.step, event.wall_time,
    ) == IDENTITY_PREIMAGE
    assert "metric-" + hashlib.sha256(IDENTITY_PREIMAGE.encode()).hexdigest() == IDENTITY_EVENT_ID
    assert event.deterministic_event_id() == IDENTITY_EVENT_ID


def test_identity_excludes_value_tags_and_export_time():
    base = golden_event().deterministic_event_id()
    assert golden_event(value=9.0, tags={}, exported_at=0, unit="", split="").deterministic_event_id() == base
    assert golden_event(step=43).deterministic_event_id() != base
    assert golden_event(wall_time=golden_event().wall_time + 1).deterministic_event_id() != base


def test_identity_is_html_escaped_but_the_line_is_not():
    event = new_metric_event(**{**vars_of(golden_event()), "metric_name": "a<b>&c"})
    assert b'"metric_name":"a<b>&c"' in encode_ndjson(event)
    preimage = identity_json(
        "workspace-a", "cluster-a", "namespace-a", "store-a", "metrics-seed-1", "project-alpha",
        "experiment-alpha", "baseline", "seed-1", "a<b>&c", 42, event.wall_time,
    )
    assert '"metric_name":"a\\u003cb\\u003e\\u0026c"' in preimage
    assert event.event_id == "metric-" + hashlib.sha256(preimage.encode()).hexdigest()


def vars_of(event):
    return {name: getattr(event, name) for name in event.__slots__}


def test_omitempty_fields_and_empty_tags_are_left_out():
    line = encode_ndjson(
        MetricEvent(project="p", experiment_id="e", run_group_id="g", run_id="r", metric_name="m",
                    step=0, wall_time=0, value=1.0, exported_at=0)
    )
    assert line == (
        b'{"schema_version":"tau.experiment.metric.v1","event_id":"'
        + MetricEvent(project="p", experiment_id="e", run_group_id="g", run_id="r", metric_name="m",
                      wall_time=0).deterministic_event_id().encode()
        + b'","project":"p","experiment_id":"e","run_group_id":"g","run_id":"r","metric_name":"m","step":0,'
        b'"wall_time":"1970-01-01T00:00:00Z","value":1,"exported_at":"1970-01-01T00:00:00Z"}\n'
    )


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"schema_version": "tau.experiment.metric.v0"}, 'unknown metric schema "tau.experiment.metric.v0"'),
        ({"project": "  "}, "project is required"),
        ({"experiment_id": ""}, "experiment_id is required"),
        ({"run_group_id": ""}, "run_group_id is required"),
        ({"run_id": ""}, "run_id is required"),
        ({"metric_name": "\t"}, "metric_name is required"),
        ({"step": -1}, "step must be nonnegative"),
        ({"wall_time": None}, "wall_time is required"),
        ({"wall_time": ZERO_TIME_NS}, "wall_time is required"),
        ({"wall_time": parse_time("9999-12-31T23:59:59Z") + 10**9},
         r"wall_time is invalid: Time.MarshalJSON: year outside of range \[0,9999\]"),
        ({"exported_at": None}, "exported_at is required"),
        ({"value": float("nan")}, "value must be finite"),
        ({"value": float("-inf")}, "value must be finite"),
        ({"tags": {" run_id ": "x"}}, 'tag " run_id " cannot override a protected metric field'),
        ({"event_id": "metric-00"}, 'event_id "metric-00" does not match deterministic identity "metric-'),
    ],
)
def test_validation_rejects_with_taugrids_messages(changes, message):
    with pytest.raises(MetricEventError, match=message):
        encode_ndjson(golden_event(**changes))


def test_golden_line_decodes_and_round_trips():
    event = decode_canonical_line(METRIC_EVENT_GOLDEN)
    assert event.event_id == IDENTITY_EVENT_ID
    assert event.tags == {"alpha": "first", "html": "<ok>", "zebra": "last"}
    assert encode_ndjson(event) == METRIC_EVENT_GOLDEN


@pytest.mark.parametrize("value", [-0.0, 0.0, -1e-7, 5e-324])
def test_a_value_of_any_sign_and_size_round_trips_through_the_strict_decoder(value):
    line = encode_ndjson(golden_event(value=value))
    decoded = decode_canonical_line(line)
    assert repr(decoded.value) == repr(value)
    assert encode_ndjson(decoded) == line


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda s: s.replace(b'"unit":"ratio",', b'"unit":"ratio","colour":"red",'), 'unknown field "colour"'),
        (lambda s: s.replace(b'"value":0.125', b'"value":0.1250'), "chunk line 1 is not canonical"),
        (lambda s: s.replace(b'"step":42', b'"step": 42'), "chunk line 1 is not canonical"),
        (lambda s: s.replace(b'"tags":{"alpha":"first","html":"<ok>"', b'"tags":{"html":"<ok>","alpha":"first"'),
         "chunk line 1 is not canonical"),
        (lambda s: s.replace(b"<ok>", b"\\u003cok\\u003e"), "chunk line 1 is not canonical"),
        (lambda s: s.replace(b".123456789Z", b".123456789+00:00"), "chunk line 1 is not canonical"),
        (lambda s: s.replace(b'"step":42', b'"step":42.0'), "step must be an integer"),
        (lambda s: s.replace(b'"value":0.125', b'"value":"0.125"'), "value must be a number"),
        (lambda s: s.replace(b'"value":0.125', b'"value":NaN'), "invalid JSON"),
        (lambda s: s.replace(b"metric-047e", b"metric-147e"), "does not match deterministic identity"),
        (lambda s: s.replace(b'"project":"project-alpha"', b'"project":""'), "project is required"),
        (lambda s: b"[1,2]\n", "not a JSON object"),
    ],
)
def test_strict_decoder_rejects_non_canonical_lines(mutate, message):
    with pytest.raises(NotCanonicalError, match=message):
        decode_canonical_line(mutate(METRIC_EVENT_GOLDEN))


def test_decoder_names_the_failing_line_of_a_chunk():
    bad = METRIC_EVENT_GOLDEN.replace(b'"step":42', b'"step":042')
    with pytest.raises(NotCanonicalError, match="chunk line 2"):
        decode_canonical_ndjson(METRIC_EVENT_GOLDEN + bad)
    with pytest.raises(NotCanonicalError, match="does not end with a newline"):
        decode_canonical_ndjson(METRIC_EVENT_GOLDEN + METRIC_EVENT_GOLDEN[:-1])
    assert len(decode_canonical_ndjson(METRIC_EVENT_GOLDEN * 3)) == 3
