"""Metric file paths: TauGrid's layout for ordinary ids, a bounded readable name for ids of any length."""

from __future__ import annotations

import os

from hypothesis import given
from hypothesis import strategies as st

from tau_collector.expstore.format.metric_files import MAX_ID_COMPONENT_BYTES, id_component, metric_file_path

valid_ids = st.from_regex(r"[a-z0-9]([a-z0-9._-]{0,6000}[a-z0-9])?", fullmatch=True)


def test_ordinary_ids_keep_taugrids_layout():
    assert metric_file_path("proj", "exp-a", "baseline", "seed-1", "metrics-0") == \
        "metrics/project=proj/experiment=exp-a/group=baseline/run=seed-1/metrics-0.parquet"
    assert metric_file_path("proj", "", "g", "r", "f").split("/")[2] == "experiment=none"


def test_an_id_of_exactly_the_limit_is_kept_whole():
    run = "r" * MAX_ID_COMPONENT_BYTES
    assert id_component(run) == run


def test_a_long_id_becomes_its_prefix_and_a_digest():
    run = "seed-" + "x" * 300
    component = id_component(run)
    assert len(component) == MAX_ID_COMPONENT_BYTES
    assert component.startswith("seed-xxxx") and "~" in component
    assert component == id_component(run)  # deterministic: a run's files share one directory
    assert id_component(run + "y") != component


@given(valid_ids)
def test_every_valid_id_fits_a_file_name_and_a_reasonable_path(run):
    path = metric_file_path(run, run, run, run, "metrics-" + "0" * 32)
    for part in path.split("/"):
        assert 0 < len(part.encode()) <= 255
    assert len(path.encode()) < 600
    assert os.path.normpath(path) == path  # no "..", no empty part


@given(valid_ids, valid_ids)
def test_distinct_ids_get_distinct_directories(a, b):
    if a != b:
        assert id_component(a) != id_component(b)


def test_ids_that_are_not_path_safe_stay_inside_their_directory():
    assert id_component("../x") == "%2E.%2Fx"
    long_odd = "/" * 200
    component = id_component(long_odd)
    assert "/" not in component and len(component) <= MAX_ID_COMPONENT_BYTES
    assert not component.split("~")[0].endswith(("%", "%2"))  # never half an escape
