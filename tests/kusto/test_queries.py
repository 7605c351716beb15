"""The query texts the reader sends: TauGrid's shapes (KUSTO-READS §1.3) with values as parameters, locked by golden files.

A change to a golden file is a change to what every ADX cluster is asked: review it as such
(``tests/kusto/golden/``; regenerate with ``TAU_UPDATE_GOLDEN=1``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from taunotebook.portal.kusto.queries import (
    MILESTONE_PREFIXES,
    run_metrics_query,
    runs_query,
    series_query,
)

GOLDEN = Path(__file__).parent / "golden"
HOSTILE = ["o'brien", "x\\", "a' or '1'=='1", "line\nbreak", "ünïcødé ✓", "}; .drop table T", "'"]

CASES = {
    "series-seed-1-train-loss-8000": lambda: series_query("workspace-a", "seed-1", "train/loss", max_points=8000),
    "series-window-interval-project-100": lambda: series_query(
        "workspace-a", "seed-1", "train/loss", max_points=100, project="demo", start_step=10, end_step=2000,
        step_interval=5),
    "runs-by-run-id": lambda: runs_query("workspace-a", run_id="seed-1"),
    "runs-experiment-listing": lambda: runs_query("workspace-a", experiment_id="sgd", project="demo"),
    "run-metrics-by-run-id": lambda: run_metrics_query("workspace-a", ["seed-1"]),
    "run-metrics-page-in-project": lambda: run_metrics_query("workspace-a", ["seed-1", "seed-2"], project="demo"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_query_text_is_the_golden_one(name):
    text = CASES[name]().text + "\n"
    path = GOLDEN / f"{name}.kql"
    if os.environ.get("TAU_UPDATE_GOLDEN") == "1":
        path.write_text(text)
    assert text == path.read_text()


def test_the_series_query_keeps_taugrids_shape():
    text = CASES["series-seed-1-train-loss-8000"]().text
    assert text.startswith("declare query_parameters(p_workspace:string, p_run:string, p_metric:string);\n")
    assert "TauExpMetricEventRows()\n| where wall_time > ago(365d)\n| where workspace_id == p_workspace\n" in text
    assert "let scoped = materialize(" in text and "| where isnotnull(step) and isnotnull(value)" in text
    for prefix in MILESTONE_PREFIXES:
        assert f"metric_name startswith '{prefix}'" in text


@pytest.mark.parametrize(("max_points", "buckets"), [(1, 1), (3, 1), (4, 1), (100, 25), (400, 100), (8000, 2000),
                                                    (12000, 3000)])
def test_max_points_become_m4_buckets(max_points, buckets):
    text = series_query("w", "r", "m", max_points=max_points).text
    assert f"case(kept_points <= {max_points}, step - first_step, " in text
    assert f"(step - first_step) * {buckets} / span" in text


def test_windows_and_intervals_are_integers_in_the_text():
    text = CASES["series-window-interval-project-100"]().text
    assert "| where step >= 10\n| where step <= 2000\n" in text and "% 5 == 0" in text
    assert "| where ['project'] == p_project" in text


@pytest.mark.parametrize("value", HOSTILE)
def test_string_values_never_enter_the_text(value):
    def build(v: str) -> list:
        return [series_query(v, v, v, max_points=10, project=v),
                runs_query(v, run_id=v, experiment_id=v, project=v, run_group_id=v),
                run_metrics_query(v, [v, v], project=v)]

    for hostile, plain in zip(build(value), build("x"), strict=True):
        assert hostile.text == plain.text  # the text does not depend on the values at all
        assert set(hostile.parameters.values()) == {value}


def test_a_run_metrics_query_names_between_one_and_a_page_of_runs():
    assert "| where run_id in (p_run0, p_run1, p_run2)\n" in run_metrics_query("w", ["a", "b", "c"]).text
    for run_ids in ([], ["r"] * 201):
        with pytest.raises(ValueError, match="between 1 and 200 run ids"):
            run_metrics_query("w", run_ids)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"max_points": 0}, "max_points must be at least 1"),
    ({"max_points": 10, "step_interval": 0}, "step_interval must be at least 1"),
    ({"max_points": 10, "start_step": True}, "start_step must be a 64-bit integer"),
    ({"max_points": 10, "end_step": 2**63}, "end_step must be a 64-bit integer"),
    ({"max_points": 10, "lookback": "365d | take 1"}, "look-back must be a number of days"),
])
def test_bad_arguments_are_refused_before_any_text_is_built(kwargs, message):
    with pytest.raises(ValueError, match=message):
        series_query("w", "r", "m", **kwargs)
