"""Microsoft's Kusto.Language checks every shipped asset and every query the reader builds, and their result schemas."""

from __future__ import annotations

import pytest

from taunotebook.portal.kusto.queries import run_metrics_query, runs_query, series_query

HOSTILE = "o'brien\\' | take 1 //"

QUERIES = {
    "run by id": runs_query("ws-a", run_id="seed-1"),
    "experiment listing": runs_query("ws-a", experiment_id="sgd", project="demo", run_group_id="lr"),
    "hostile workspace": runs_query(HOSTILE, run_id=HOSTILE),
    "run with its metrics": run_metrics_query("ws-a", ["seed-1"]),
    "a page of runs' metrics": run_metrics_query("ws-a", ["seed-1", HOSTILE], project="demo"),
    "series": series_query("ws-a", "seed-1", "train/loss", max_points=8000),
    "series window": series_query("ws-a", "seed-1", "train/loss", max_points=400, start_step=10, end_step=20,
                                  step_interval=5, project="demo"),
    "tail": series_query("ws-a", "seed-1", "train/loss", max_points=8000, start_step=4990),
    "series max_points 1": series_query("ws-a", "seed-1", HOSTILE, max_points=1),
}

RUN_COLUMNS = [
    ("project", "string"), ("experiment_id", "string"), ("run_group_id", "string"), ("run_id", "string"),
    ("first_metric_at", "datetime"), ("latest_metric_at", "datetime"), ("latest_exported_at", "datetime"),
    ("metric_names", "dynamic"), ("tags", "dynamic"), ("terminal_state", "string"),
    ("terminal_at", "datetime"), ("terminal_reason", "string"), ("terminal_message", "string"),
]
RUN_METRIC_COLUMNS = [
    ("project", "string"), ("experiment_id", "string"), ("run_group_id", "string"), ("run_id", "string"),
    ("first_metric_at", "datetime"), ("tags", "dynamic"), ("terminal_state", "string"), ("terminal_at", "datetime"),
    ("terminal_reason", "string"), ("terminal_message", "string"), ("metric_name", "string"), ("count", "long"),
    ("min_step", "long"), ("max_step", "long"), ("min_value", "real"), ("max_value", "real"),
    ("latest_step", "long"), ("latest_wall_time", "datetime"), ("latest_value", "real"), ("updated_at", "datetime"),
]
SERIES_COLUMNS = [("step", "long"), ("wall_time", "datetime"), ("value", "real"), ("source_points", "long"),
                  ("milestone", "bool")]


def test_every_shipped_asset_checks_clean(kusto_language, assets):
    for name, command in assets.commands:
        check = kusto_language.check(command)
        assert check.kind == "Command", name
        assert check.errors == [], name


def test_the_dedup_view_returns_every_column_but_event_id_first(kusto_language, assets):
    (view,) = assets.views
    names = [name for name, _ in kusto_language.check(view.query).columns]
    assert names[0] == "event_id" and sorted(names) == sorted(name for name, _ in assets.columns)


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_every_built_query_checks_clean(kusto_language, name):
    check = kusto_language.check(QUERIES[name].text)
    assert (check.kind, check.errors) == ("Query", [])


def test_result_schemas_are_what_the_reader_decodes(kusto_language):
    assert kusto_language.check(QUERIES["run by id"].text).columns == RUN_COLUMNS
    assert kusto_language.check(QUERIES["run with its metrics"].text).columns == RUN_METRIC_COLUMNS
    assert kusto_language.check(QUERIES["series"].text).columns == SERIES_COLUMNS
    assert kusto_language.check(QUERIES["series max_points 1"].text).columns == SERIES_COLUMNS


def test_the_checker_catches_a_wrong_column_and_an_unknown_function(kusto_language):
    typo = QUERIES["series"].text.replace("| where metric_name == p_metric", "| where metric_nam == p_metric")
    assert any(e.startswith("KS142") for e in kusto_language.check(typo).errors)
    unknown = QUERIES["run by id"].text.replace("TauExpMetricEventRows()", "TauExpRunCatalogRows()")
    assert any(e.startswith("KS211") for e in kusto_language.check(unknown).errors)
