"""The client's models against the Portal's encoders (``taunotebook.portal.wire``): every key an encoder writes
is a field of the model with an agreeing type, every key its OpenAPI fragment allows is one too, and what the
encoder writes decodes back to the values it was given (nothing left in ``extra``)."""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from datetime import datetime
from typing import Any

import numpy as np
import pytest

from tau_collector.reads import ArtifactRow, HistogramSeries, MetricSummaryRow, RunRow
from tau_collector.reads import ImagesAt as ImagesAtRow
from tau_collector.reads import MediaTag as MediaTagRow
from tau_collector.reads import TextAt as TextAtRow
from tau_collector.taugrid.gojson import dumps_fast
from tau_collector.taugrid.run_config import RunConfig
from taunotebook.client import (
    Artifact,
    ArtifactPage,
    ExperimentFaultEvents,
    ExperimentList,
    ExperimentPage,
    ExperimentSummary,
    Metadata,
    MetricStats,
    MetricSummary,
    PointDetails,
    Run,
    RunCheckpoints,
    RunConfiguration,
    RunJob,
    RunMetrics,
    RunPage,
    RunTable,
    RunTableRow,
    Series,
    Tail,
    Tails,
)
from taunotebook.client.decode import decode, wire_keys
from taunotebook.client.importance_models import ParameterImportance, ParameterScore
from taunotebook.client.media_models import Histograms, ImageRef, ImagesAt, MediaTags, TextAt
from taunotebook.client.models import Experiment, RunResponse
from taunotebook.client.note_models import Note, NoteList, NoteWritten, NotificationList, RunTagsAnswer
from taunotebook.portal.errors import encode_json
from taunotebook.portal.importance import ParameterScore as ScoredParameter
from taunotebook.portal.params import SeriesParams
from taunotebook.portal.wire.artifacts import artifact_json, artifact_list_json
from taunotebook.portal.wire.experiment import experiment_json
from taunotebook.portal.wire.experiment_list import experiment_list_json
from taunotebook.portal.wire.media import histograms_json, images_json, media_tags_json, text_json
from taunotebook.portal.wire.metadata import metadata
from taunotebook.portal.wire.metric import catalog_json, metric_json
from taunotebook.portal.wire.parameter_importance import parameter_importance_json
from taunotebook.portal.wire.point_details import point_details_json
from taunotebook.portal.wire.run import run_json
from taunotebook.portal.wire.run_config import run_config_json
from taunotebook.portal.wire.run_table import metric_stats, run_table_row
from taunotebook.portal.wire.schemas import component_schemas
from taunotebook.portal.wire.series import series_json
from taunotebook.portal.wire.tails import missing_tail_json, tail_json, tails_json

SCHEMAS = component_schemas()


def _summary(name: str = "train/loss", **changes: Any) -> MetricSummaryRow:
    row = MetricSummaryRow(run_id="r1", metric_name=name, project="p", run_group_id="g", count=12, finite_count=10,
                           non_finite_count=2, min_step=0, max_step=11, latest_step=11,
                           latest_wall_time=1_790_000_000_000_000, latest_value=0.25, min_value=0.125, max_value=2.0,
                           updated_at="2026-12-03T10:00:00Z", latest_file_id=None)
    return dataclasses.replace(row, **changes)


RUN = RunRow(run_id="r1", project="p", experiment_id="e", run_group_id="g", parent_run_id="r0", state="completed",
             owner="ana", created_at="2026-12-01T00:00:00Z", started_at="2026-12-01T00:00:01Z",
             completed_at="2026-12-01T01:00:00Z", config_hash="c" * 64, code_sha="abc", image_digest="sha256:d",
             tau_command=None, result_uri="s3://r", tags={"tau_workspace": "default", "b": "2"},
             metric_names=("train/loss", "eval/acc"))
BARE_RUN = RunRow(run_id="r2", project="p", experiment_id="", run_group_id="g", parent_run_id=None, state="running",
                  owner=None, created_at="2026-12-02T00:00:00Z", started_at=None, completed_at=None, config_hash=None,
                  code_sha=None, image_digest=None, tau_command=None, result_uri=None)
META = metadata("local", ["local"], True, ["collector: one bad row"])


def _wire(body: Any) -> Any:
    """The bytes the Portal sends, read back as a client reads them."""
    return json.loads(encode_json(body))


# -- names and types --------------------------------------------------------------------------------------


def _agrees(tp: Any, value: Any) -> bool:
    """Whether a JSON value can be a field of type ``tp``."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return any(_agrees(a, value) for a in typing.get_args(tp))
    if tp is Any:
        return True
    if tp is type(None):
        return value is None
    if dataclasses.is_dataclass(tp):
        return isinstance(value, dict) and not _stray_keys(tp, value)
    if tp is str:
        return isinstance(value, str)
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if tp is datetime:
        return isinstance(value, str) and datetime.fromisoformat(value) is not None
    if origin in (tuple, list):
        return isinstance(value, list) and all(_agrees(typing.get_args(tp)[0], v) for v in value)
    if origin is dict:
        return isinstance(value, dict) and all(_agrees(typing.get_args(tp)[1], v) for v in value.values())
    raise AssertionError(f"no rule for {tp!r}")


def _keys(model: type) -> dict[str, Any]:
    keys = wire_keys(model)
    if model is Tail:  # a tail is its metric's catalog entry and its points
        keys = {**wire_keys(MetricSummary), **keys, "returned_points": int}
    return keys


def _stray_keys(model: type, obj: dict) -> list[str]:
    """Keys of ``obj`` that are no field of ``model`` or whose value disagrees with the field's type."""
    return _stray(_keys(model), obj)


def _stray(keys: dict[str, Any], obj: dict) -> list[str]:
    out = []
    for k, v in obj.items():
        if isinstance(keys.get(k), dict):  # a nested object the model reads key by key
            out += [f"{k}.{s}" for s in (_stray(keys[k], v) if isinstance(v, dict) else ["(not an object)"])]
        elif k not in keys or not _agrees(keys[k], v):
            out.append(k)
    return out


SHAPES = [
    ("Metadata", Metadata), ("Run", Run), ("RunDetail", RunResponse), ("RunList", RunPage), ("Metric", MetricSummary),
    ("MetricCatalog", RunMetrics), ("Series", Series), ("RunConfig", RunConfiguration),
    ("Experiment", ExperimentSummary), ("ExperimentSearch", ExperimentPage), ("PointDetails", PointDetails),
    ("Tail", Tail), ("Tails", Tails), ("RunTable", RunTable), ("RunTableRow", RunTableRow),
    ("MetricStats", MetricStats), ("ExperimentList", ExperimentList), ("Note", Note), ("NoteList", NoteList),
    ("NoteWritten", NoteWritten), ("RunTags", RunTagsAnswer), ("Notifications", NotificationList),
    ("RunJob", RunJob), ("ExperimentFaultEvents", ExperimentFaultEvents), ("RunCheckpoints", RunCheckpoints),
    ("Artifact", Artifact),
    ("ArtifactList", ArtifactPage),
    ("ParameterImportance", ParameterImportance), ("ParameterScore", ParameterScore),
    ("MediaTags", MediaTags), ("Histograms", Histograms), ("ImagesAt", ImagesAt), ("TextAt", TextAt),
]


@pytest.mark.parametrize(("schema", "model"), SHAPES, ids=[s for s, _ in SHAPES])
def test_each_openapi_fragment_names_the_fields_of_its_client_model(schema, model):
    assert set(SCHEMAS[schema]["properties"]) == set(_keys(model)), schema


def test_every_shape_of_the_document_has_a_client_model():
    assert set(SCHEMAS) - {s for s, _ in SHAPES} == {"ErrorEnvelope"}  # errors are PortalError, not a model
    assert set(SCHEMAS["ExperimentList"]["properties"]["experiments"]["items"]["properties"]) == set(
        wire_keys(Experiment))


def _encoded_shapes() -> list[tuple[str, type, Any]]:
    """(what, model, the JSON an encoder wrote) for every encoder, with every optional key present."""
    full, bare = _summary(), _summary("bare", finite_count=0, latest_step=None, updated_at="", min_step=None,
                                      max_step=None, latest_wall_time=None)
    steps, values = np.array([1, 2, 3], np.int64), np.array([0.5, 1.0, 1e-7])
    config = RunConfig("h" * 64, "yaml", "file:///c.yaml", {"lr": 0.1, "opt": {"name": "adam"}},
                       {"lr": 0.1, "opt.name": "adam", "layers": "[64,64]", "flag": True, "none": None})
    _, catalog = catalog_json([full, bare])
    row, _ = run_table_row(RUN, config.fields, {"train/loss": full, "eval/acc": None})
    marks = type("Marks", (), {"step": np.array([4]), "value": np.array([math.inf]), "wall_time": np.array([9])})()
    sample = type("Sample", (), {"step": steps, "wall_time": np.array([7.0, 8.0, 9.0])})()
    experiment = experiment_json(experiment_id="e", project="p", name="E", description="d", created_at="a",
                                 updated_at="b", run_count=2, run_group_count=1, state_counts={"running": 2},
                                 lifecycle_counts={"running": 2}, latest_run_at="c", metric_names=["m"],
                                 config={"lr": [0.1, 0.2]})
    tails = tails_json(META, "r1", RUN, "succeeded", "cur", 2, None,
                       [tail_json(full, 3, True, 3, steps, values), missing_tail_json("nope", None)])
    return [
        ("metadata", Metadata, _wire(META)),
        ("metric entry", MetricSummary, json.loads(metric_json(full))),
        ("catalog", RunMetrics, _wire({"metadata": META, "run_id": "r1", "metrics": catalog})),
        ("run", Run, _wire(run_json(RUN, [full], "local", config.fields, with_config=True))),
        ("run detail", RunResponse, _wire({"metadata": META, "run": run_json(RUN, [full], "local")})),
        ("series", Series, _wire(series_json(META, "e", "r1", "train/loss", SeriesParams(500, 1, 3, 1), 3, steps,
                                             values))),
        ("tail", Tail, _wire(tails)["metrics"][0]),
        ("tails", Tails, {**_wire(tails), "catalog": {"cursor": "c", "total": 2, "names": ["a", "b"]}}),
        ("runs-table row", RunTableRow, json.loads(dumps_fast(row))),
        ("metric stats", MetricStats, json.loads(dumps_fast(metric_stats(full)))),
        ("run config", RunConfiguration, _wire(run_config_json(META, "r1", config))),
        ("experiment", ExperimentSummary, _wire(experiment)),
        ("point details", PointDetails, _wire(point_details_json(META, "r1", "m", 1, marks, sample))),
        ("experiment list", ExperimentList, _wire(experiment_list_json(META, {("e", "p"): 2}))),
        ("artifact list", ArtifactPage, _wire(artifact_list_json(META, "r1", [artifact_json(ArtifactRow(
            "r1", "image", "artifacts/sha256/ab/ab", "sample", step=3, digest="sha256:ab", size_bytes=9,
            content_type="image/png", caption="c", created_at="t", tags={"width": 2}, rank=1), "present")], "a1"))),
        ("parameter importance", ParameterImportance, _wire(parameter_importance_json(
            META, "loss", "best", "min", 12, 10, {"runs": 10000, "parameters": 64, "min_runs": 3},
            [ScoredParameter("lr", "numeric", 10, 0.75, -0.5, -0.25, None),
             ScoredParameter("opt", "categorical", 9, 0.25, 0.125, None, "adam")]))),
        ("media tags", MediaTags, _wire(media_tags_json(META, "r1", [MediaTagRow("histograms", "w", 3, 0, 9)], None))),
        ("histograms", Histograms, _wire(histograms_json(META, "r1", _HISTOGRAMS))),
        ("images", ImagesAt, _wire(images_json(META, "r1", 4, ImagesAtRow("sample", 3, (ArtifactRow(
            "r1", "image", "artifacts/sha256/ab/ab", "sample", step=3, digest="sha256:" + "ab" * 32, size_bytes=9,
            content_type="image/png", caption="c", tags={"width": 2, "height": 3}, rank=0),))))),
        ("text", TextAt, _wire(text_json(META, "r1", 4, TextAtRow("note", 3, 1.5, ("a", "b"), (2,))))),
    ]


_HISTOGRAMS = HistogramSeries("w", np.array([1, 2], np.int64), np.array([1.5, 2.5]),
                              np.array([[3.0, 0.0, 1.0, *[0.5] * 9], [0.0, *[math.nan] * 11]]),
                              [np.array([[-math.inf, 0.0, 1.0], [0.0, 1.0, 2.0]]), np.zeros((0, 3))], 5, True,
                              (0, 5000, 10000))


def test_media_answers_decode_to_what_they_encode():
    got = decode(Histograms, _wire(histograms_json(META, "r1", _HISTOGRAMS)))
    assert got.steps == (1, 2) and got.wall_times == (1.5, 2.5) and (got.total, got.reduced) == (5, True)
    assert got.summary[0] == (3.0, 0.0, 1.0, *[0.5] * 9) and math.isnan(got.summary[1][1])
    assert got.buckets[0][1] == (0.0, 1.0, 2.0) and got.buckets[0][0][1:] == (0.0, 1.0) and got.buckets[1] == ()
    assert math.isnan(got.buckets[0][0][0])  # an infinite edge is null on the wire
    images = decode(ImagesAt, _wire(images_json(META, "r/1", 4, ImagesAtRow("s", 3, (ArtifactRow(
        "r/1", "image", "u", "s", step=3, digest="sha256:" + "ab" * 32, rank=0),)))))
    assert images.images == (ImageRef(0, "sha256:" + "ab" * 32, "/api/v2/stellar/runs/r%2F1/images/" + "ab" * 32,
                                      "/api/v2/stellar/runs/r%2F1/images/" + "ab" * 32 + "?thumbnail=1"),)


@pytest.mark.parametrize(("what", "model", "obj"), _encoded_shapes(), ids=[w for w, _, _ in _encoded_shapes()])
def test_every_key_an_encoder_writes_is_a_field_of_the_model_with_its_type(what, model, obj):
    assert _stray_keys(model, obj) == [], what
    got = decode(model, obj)
    assert getattr(got, "extra", {}) == {}, what


# -- round trips --------------------------------------------------------------------------------------------


def test_a_metric_entry_decodes_to_the_summary_it_encodes():
    for row in (_summary(), _summary("nan-only", finite_count=0, latest_step=None, updated_at="")):
        m = decode(MetricSummary, json.loads(metric_json(row)))
        assert m.name == row.metric_name
        for key in ("count", "finite_count", "non_finite_count", "min_step", "max_step", "latest_step",
                    "latest_wall_time"):
            assert getattr(m, key) == getattr(row, key), key
        finite = row.finite_count > 0
        assert (m.latest_value, m.min_value, m.max_value) == (
            (row.latest_value, row.min_value, row.max_value) if finite else (None, None, None))
        assert m.updated_at == (row.updated_at or None)


def test_a_run_decodes_to_the_row_it_encodes():
    for row in (RUN, BARE_RUN):
        run = decode(Run, _wire(run_json(row, [], "local")))
        for key in ("run_id", "project", "run_group_id", "state", "created_at", "owner", "parent_run_id",
                    "started_at", "completed_at", "config_hash", "code_sha", "image_digest", "result_uri"):
            assert getattr(run, key) == getattr(row, key), key
        assert run.experiment_id == (row.experiment_id or None)
        assert run.tags == row.tags and set(run.metric_names) == set(row.metric_names) and run.source == "local"
        assert run.config is None and run.extra == {}


def test_a_series_decodes_to_its_points():
    steps, values = np.array([0, 5, 2**40], np.int64), np.array([0.1, 1.0, -3.5e300])
    s = decode(Series, _wire(series_json(META, "e", "r1", "m", SeriesParams(100, None, None, 0), 7, steps, values)))
    assert list(s.steps) == steps.tolist() and list(s.values) == values.tolist()
    assert (s.source_points, s.returned_points, s.max_points, s.start_step, s.step_interval) == (7, 3, 100, None, None)
    assert s.partial and s.metadata.warnings == ("collector: one bad row",) and s.point_extra == ()


def test_tails_decode_to_their_entries_points_and_run():
    steps, values = np.array([10, 11], np.int64), np.array([0.5, 0.25])
    body = tails_json(META, "r1", RUN, "succeeded", "cur", 2, None,
                      [tail_json(_summary(), 10, True, 5, steps, values), missing_tail_json("nope", 4)])
    got = decode(Tails, _wire(body))
    assert (got.state, got.lifecycle_state, got.project, got.cursor, got.total, got.names) == (
        "completed", "succeeded", "p", "cur", 2, None)
    loss, nope = got.metrics
    assert loss.summary == decode(MetricSummary, json.loads(metric_json(_summary())))
    assert (loss.since, loss.changed, loss.source_points, loss.returned_points) == (10, True, 5, 2)
    assert list(loss.steps) == [10, 11] and list(loss.values) == [0.5, 0.25]
    assert nope.summary is None and nope.since == 4 and not nope.changed and len(nope.steps) == 0


def test_a_runs_table_row_decodes_to_its_run_config_and_statistics():
    fields = {"lr": 0.1, "name": "x" * 300, "inf": math.inf, "n": 3}
    row, cut = run_table_row(RUN, fields, {"train/loss": _summary(), "gone": None})
    got = decode(RunTableRow, json.loads(dumps_fast(row)))
    assert cut and got.config == {"inf": "+Inf", "lr": 0.1, "n": 3, "name": "x" * 255 + "…"}
    assert (got.run_id, got.experiment_id, got.config_hash, got.tags) == ("r1", "e", RUN.config_hash, RUN.tags)
    assert got.metrics == {"train/loss": MetricStats(12, 2, 11, 0.25, 0.125, 2.0)}
    bare, _ = run_table_row(BARE_RUN, None, {})
    got = decode(RunTableRow, json.loads(dumps_fast(bare)))
    assert got.config is None and got.config_hash is None and got.metrics == {}


def test_a_run_config_and_an_experiment_decode_to_what_they_encode():
    config = RunConfig("h" * 64, "json", "file:///c.json", {"lr": 0.1}, {"lr": 0.1, "x": None})
    got = decode(RunConfiguration, _wire(run_config_json(META, "r1", config)))
    assert (got.config_hash, got.format, got.uri, got.config, got.fields) == (
        config.config_hash, "json", config.uri, {"lr": 0.1}, {"lr": 0.1, "x": None})
    missing = decode(RunConfiguration, _wire(run_config_json(META, "r1", None, "abc")))
    assert not missing.available and missing.config_hash == "abc" and missing.fields == {}
    e = decode(ExperimentSummary, _wire(experiment_json(
        experiment_id="e", project="p", name="E", description="", created_at="a", updated_at="b", run_count=3,
        run_group_count=2, state_counts={"running": 3}, lifecycle_counts={}, latest_run_at="", metric_names=["m"])))
    assert (e.experiment_id, e.run_count, e.run_group_count, e.state_counts, e.lifecycle_counts) == (
        "e", 3, 2, {"running": 3}, {})
    assert e.description == "" and e.latest_run_at is None and e.metric_names == ("m",) and e.config is None
