"""Experiment search from the run listings gives exactly what classifying every run gives (the old path)."""

from __future__ import annotations

import pytest

from fixtures.listing_store import build_listing_store
from tau_collector.expstore import StoreReader
from taunotebook.portal.params import ExperimentFilters
from taunotebook.portal.views.experiment_search import experiments_json, search_experiments
from taunotebook.portal.views.run import classify_run


class _Unlisted:
    """The same store read the old way: a reader without listings (as Kusto, or a store TauGrid wrote)."""

    def __init__(self, reader: StoreReader) -> None:
        self._reader = reader

    def __getattr__(self, name: str):
        if name in ("has_listings", "search_experiments", "experiment_details"):
            raise AttributeError(name)
        return getattr(self._reader, name)


@pytest.fixture(scope="module")
def reader(tmp_path_factory) -> StoreReader:
    return StoreReader(build_listing_store(tmp_path_factory.mktemp("listing") / "store"))


def _filters(**kw) -> ExperimentFilters:
    base = dict(query="", project="", lifecycle="", tags={}, metric_names=[], since="", start="", end="")
    return ExperimentFilters(**{**base, **kw})


def _search(reader, workspace: str, f: ExperimentFilters, scan_limit: int, include_config: bool = False):
    def lifecycle_of(run):
        return classify_run(run, reader.metric_summaries(run.run_id))[0]

    found, truncated = search_experiments(reader, workspace, f, lifecycle_of, scan_limit)
    bodies, warnings = experiments_json(reader, found, include_config, workspace)
    return bodies, [e.sort_at for e in found], truncated, warnings


CASES = [
    {}, {"project": "p0"}, {"project": "nope"}, {"lifecycle": "succeeded"}, {"lifecycle": "incomplete"},
    {"lifecycle": "failed"}, {"lifecycle": "running"}, {"tags": {"team": "a"}}, {"tags": {"team": "a", "max_step": "50"}},
    {"metric_names": ["errors"]}, {"metric_names": ["loss", "tau/run_status"]}, {"since": "2025-10-09T08:53:40Z"},
    {"since": "2999-01-01T00:00:00Z"}, {"start": "2025-10-09T08:53:30Z", "end": "2025-10-09T08:53:45Z"},
    {"project": "p1", "lifecycle": "incomplete", "tags": {"team": "b"}},
]


@pytest.mark.parametrize("workspace", ["default", "other", "nobody"])
@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
def test_the_indexed_search_equals_the_old_one(reader, workspace, case):
    assert reader.has_listings()
    f = _filters(**case)
    assert _search(reader, workspace, f, 1000) == _search(_Unlisted(reader), workspace, f, 1000)


def test_the_scan_limit_cuts_the_same_experiments_and_says_so(reader):
    indexed = _search(reader, "default", _filters(), 2)
    assert indexed == _search(_Unlisted(reader), "default", _filters(), 2)
    assert indexed[2] is True and len(indexed[0]) == 2


def test_config_spaces_come_from_the_same_runs(reader):
    assert _search(reader, "default", _filters(), 1000, True) == _search(_Unlisted(reader), "default", _filters(),
                                                                          1000, True)


def test_every_experiment_and_count_is_seen_at_least_once(reader):
    bodies = _search(reader, "default", _filters(), 1000)[0]
    assert {b["experiment_id"] for b in bodies} == {f"e{i}" for i in range(5)}
    assert all(b["run_count"] > 0 and b["lifecycle_counts"] for b in bodies)
