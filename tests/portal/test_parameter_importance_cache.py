"""Parameter importance's speed-ups keep its answers: the scores are kept in the answer cache until the store
changes (a new run changes the answer), the listing query reads what the per-run reads read, and the forest's
sample and scores do not depend on the order the runs come in."""

from __future__ import annotations

import hashlib
import json
import random

import pytest

from fixtures.sweep_store import LRS, build_sweep_store, trial_config
from tau_collector.expstore import StoreReader, open_store
from tau_collector.expstore.write.writer import MetricWriter
from tau_collector.projection.metric_event import new_metric_event
from tau_collector.taugrid.run_config import run_config
from taunotebook.portal import importance
from taunotebook.portal.context import Portal
from taunotebook.portal.dispatch import respond
from taunotebook.portal.params import Query
from taunotebook.portal.routes import data_routes
from taunotebook.portal.sources import Sources
from taunotebook.portal.views import parameter_importance as view

ROUTE = "/api/v2/stellar/parameter-importance"
ASK = [("metric", "loss"), ("experiment_id", "sweep")]


@pytest.fixture
def sweep_root(tmp_path):
    return build_sweep_store(tmp_path / "store", trials=12)


def _ask(portal: Portal, pairs=ASK) -> dict:
    response = respond(data_routes(portal), ROUTE, "GET", Query(pairs))
    assert response.status_code == 200, response.body[:300]
    body = json.loads(response.body)
    body["metadata"].pop("generated_at")
    body["metadata"]["freshness"].pop("as_of")
    return body


def _add_trial(root, i: int) -> None:
    store = open_store(root, create=True)
    writer = MetricWriter(store)
    run = f"trial-{i:03d}"
    writer.put_run_config(run, run_config(trial_config(i), format="json", uri=f"file:///sweep/{run}/params.json"))
    events = [new_metric_event(project="sweeps", experiment_id="sweep", run_group_id="lr-sweep", run_id=run,
                               metric_name=metric, step=step, wall_time=1_760_000_000_000_000_000 + step,
                               value=value, exported_at=0, source="history", tags={})
              for metric, step, value in (("loss", 0, 2.0), ("loss", 1, 0.5), ("tau/run_status", 2, 1.0))]
    writer.write_chunk(f"late-{i}", events, [], request_hash="h")
    store.close()


def test_the_scores_are_kept_until_a_new_run_changes_them(sweep_root, monkeypatch):
    calls = []
    score = view._score
    monkeypatch.setattr(view, "_score", lambda *a: calls.append(a) or score(*a))
    portal = Portal(Sources(StoreReader(sweep_root)))
    first = _ask(portal)
    assert _ask(portal) == first and len(calls) == 1  # the unchanged store: answered from the cache
    assert first["run_count"] == 12 and first["valued_run_count"] == 12
    # Another reduction is another answer.
    assert _ask(portal, [*ASK, ("reduction", "latest")])["reduction"] == "latest" and len(calls) == 2
    _add_trial(sweep_root, 12)
    after = _ask(portal)
    assert len(calls) == 3
    assert after["run_count"] == 13 and after["valued_run_count"] == 13
    assert after["parameters"] != first["parameters"]


def test_two_portals_answer_the_same_bytes(sweep_root):
    assert _ask(Portal(Sources(StoreReader(sweep_root)))) == _ask(Portal(Sources(StoreReader(sweep_root))))


@pytest.mark.parametrize("reduction", ["final", "best", "latest"])
def test_the_listing_query_reads_what_the_per_run_reads_read(sweep_root, reduction):
    listed = StoreReader(sweep_root)
    assert listed.has_listings()
    unlisted = StoreReader(sweep_root)
    unlisted.has_listings = lambda: False  # the path of a source without listings
    for project, experiments, run_ids in (("", ["sweep"], []), ("sweeps", [], ["trial-001", "ref-0"]),
                                          ("", [], [])):
        a = view._selected(listed, "default", project, experiments, run_ids, "loss")
        b = view._selected(unlisted, "default", project, experiments, run_ids, "loss")
        assert a == b and a[0] == len(a[1]) > 0


def test_the_forest_sample_is_the_smallest_hashes_and_the_order_of_runs_does_not_matter(monkeypatch):
    monkeypatch.setattr(importance, "FOREST_ROWS", 20)
    ids = [f"run-{i}" for i in range(60)]
    rows = importance.forest_rows(len(ids), ids)
    assert rows == sorted(range(60), key=lambda i: hashlib.sha256(ids[i].encode()).hexdigest())[:20]
    configs = [{"lr": LRS[i % 4], "opt": "adam" if i % 3 else "sgd", "seed": i % 5} for i in range(60)]
    values = [10 * c["lr"] + (0.1 if c["opt"] == "sgd" else 0) for c in configs]
    scores = importance.score_parameters(configs, values, ids)
    order = list(range(60))
    random.Random(7).shuffle(order)
    shuffled = importance.score_parameters([configs[i] for i in order], [values[i] for i in order],
                                           [ids[i] for i in order])
    assert [(s.name, s.importance) for s in shuffled] == [(s.name, s.importance) for s in scores]
    assert scores[0].name == "lr"


def test_columns_are_read_alike_for_full_partial_and_single_key_configs():
    configs = [{"a": 1, "b": "x"}, {"a": 2}, {}, {"b": "y", "a": 3}]
    assert importance._columns(configs, ["a", "b"]) == [(1, 2, importance._ABSENT, 3),
                                                       ("x", importance._ABSENT, importance._ABSENT, "y")]
    assert importance._columns([{"a": 1}, {}], ["a"]) == [(1, importance._ABSENT)]
    assert importance._columns([], ["a"]) == [()] and importance._columns([{}], []) == []
