"""``GET /api/v2/stellar/parameter-importance``: the parameter that drives the metric ranks first, a constant one
scores 0, values come from the summaries by reduction, and bad input is answered in words."""

from __future__ import annotations

import httpx
import pytest

from fixtures.portal import TOKEN, serve
from fixtures.sweep_store import LRS, build_sweep_store
from taunotebook.portal import importance
from taunotebook.portal.views import parameter_importance as view

ROUTE = "/api/v2/stellar/parameter-importance"


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    root = build_sweep_store(tmp_path_factory.mktemp("importance") / "store", trials=24)
    importance.warm_up().join()  # as the Portal's command does at start: no first request waits for scikit-learn
    with serve(root) as server, httpx.Client(base_url=f"http://127.0.0.1:{server.port}",
                                            headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        yield client


def _scores(body):
    return {p["name"]: p for p in body["parameters"]}


def test_the_driving_parameter_ranks_first_and_a_constant_one_scores_zero(sweep):
    body = sweep.get(ROUTE, params={"metric": "loss", "experiment_id": "sweep"}).json()
    assert body["reduction"] == "final" and body["goal"] == "min"
    assert body["run_count"] == 24 and body["valued_run_count"] == 24
    names = [p["name"] for p in body["parameters"]]
    assert names[0] == "lr"
    scores = _scores(body)
    assert scores["lr"]["importance"] > 0.5
    # A larger lr makes the loss fall faster: the final loss falls as lr rises.
    assert scores["lr"]["correlation"] < -0.5 and scores["lr"]["spearman"] < -0.5
    assert scores["batch"] == {"name": "batch", "kind": "constant", "runs": 24, "importance": 0,
                               "correlation": None, "spearman": None, "correlation_value": None}
    assert scores["optimizer.name"]["kind"] == "categorical"
    assert scores["optimizer.name"]["correlation_value"] in ("adam", "sgd")
    total = sum(p["importance"] for p in body["parameters"])
    assert total == pytest.approx(1.0, abs=1e-4)


def test_best_follows_the_goal_and_accuracy_is_maximised_by_default(sweep):
    body = sweep.get(ROUTE, params={"metric": "accuracy", "reduction": "best", "experiment_id": "sweep"}).json()
    assert body["goal"] == "max"
    assert body["parameters"][0]["name"] == "lr" and body["parameters"][0]["correlation"] > 0.5
    worst = sweep.get(ROUTE, params={"metric": "loss", "reduction": "best", "goal": "max",
                                     "experiment_id": "sweep"}).json()
    # The largest loss is the first step's, which lr does not move: lr explains less of it than of the final loss.
    assert worst["goal"] == "max" and _scores(worst)["lr"]["importance"] < 0.5


def test_runs_are_chosen_by_run_id_and_too_few_are_said_in_words(sweep):
    body = sweep.get(ROUTE, params=[("metric", "loss"), ("run_id", "trial-000"), ("run_id", "trial-001")])
    assert body.status_code == 200
    payload = body.json()
    assert payload["parameters"] == [] and payload["run_count"] == 2
    assert payload["metadata"]["availability"]["state"] == "unavailable"
    assert ("only 2 of the 2 runs selected have a final value (the latest value of a run that has ended) of "
            "loss; parameter importance needs at least 3") in payload["metadata"]["availability"]["reasons"]


def test_final_values_are_those_of_ended_runs_and_latest_of_any(sweep):
    # The baseline's two runs never ended (no tau/run_status): they have a latest value but no final one.
    final = sweep.get(ROUTE, params={"metric": "loss", "experiment_id": "baseline"}).json()
    assert final["parameters"] == [] and final["valued_run_count"] == 0
    latest = sweep.get(ROUTE, params={"metric": "loss", "experiment_id": "baseline", "reduction": "latest"}).json()
    assert latest["valued_run_count"] == 2
    assert latest["metadata"]["availability"]["reasons"][-1].startswith("only 2 of the 2 runs selected have a latest")


def test_the_run_cap_and_parameter_cap_are_said(sweep, monkeypatch):
    monkeypatch.setattr(view, "RUNS_LIMIT", 10)
    monkeypatch.setattr(view, "PARAMETERS_LIMIT", 2)
    body = sweep.get(ROUTE, params={"metric": "loss", "experiment_id": "sweep"}).json()
    assert body["run_count"] == 10 and len(body["parameters"]) == 2
    assert "26 runs match; the newest 10 are scored" not in body["metadata"]["warnings"]
    assert "24 runs match; the newest 10 are scored" in body["metadata"]["warnings"]
    assert "the runs have 4 parameters; the 2 most runs have are scored" in body["metadata"]["warnings"]


@pytest.mark.parametrize(("params", "message"), [
    ({}, "metric is required: the metric whose value the parameters explain"),
    ({"metric": "loss", "reduction": "median"}, "reduction must be one of final, best, latest"),
    ({"metric": "loss", "goal": "up"}, "goal must be min or max"),
    ({"metric": "nope", "experiment_id": "sweep"}, "metric 'nope' was logged by none of the 24 runs selected"),
    ({"metric": "a\x01b"}, "metric must be a metric name of at most 512 printable characters"),
])
def test_bad_input_is_400_in_words(sweep, params, message):
    r = sweep.get(ROUTE, params=params)
    assert r.status_code == 400
    assert r.json()["error"] == {**r.json()["error"], "code": "INVALID_ARGUMENT", "message": message}


def test_an_experiment_without_runs_is_said_and_the_route_is_get_only_and_token_protected(sweep):
    body = sweep.get(ROUTE, params={"metric": "loss", "experiment_id": "nope"}).json()
    assert body["run_count"] == 0 and body["metadata"]["availability"]["reasons"][-1].startswith("only 0 of the 0")
    assert sweep.post(ROUTE, params={"metric": "loss"}).status_code == 405
    assert httpx.get(str(sweep.base_url) + ROUTE, params={"metric": "loss"}).status_code == 401


def test_missing_numeric_values_and_constants_in_the_scorer():
    configs = [{"lr": lr, "seed": 1, "tag": "x"} if i % 5 else {"seed": 1, "tag": "x"}
               for i, lr in enumerate(LRS * 5)]
    values = [10 * c.get("lr", 0.05) for c in configs]
    scores = {s.name: s for s in importance.score_parameters(configs, values)}
    assert scores["lr"].kind == "numeric" and scores["lr"].runs == 16 and scores["lr"].importance == 1.0
    assert scores["seed"].importance == 0 and scores["tag"].kind == "constant"


def test_the_default_goal():
    assert [view.default_goal(m) for m in ("loss", "eval/accuracy", "val/f1", "reward_loss", "perplexity")] == [
        "min", "max", "max", "min", "min"]


def test_the_portal_does_not_import_scikit_learn_until_asked():
    import subprocess
    import sys

    code = ("import sys, taunotebook.portal.app, taunotebook.portal.routes; "
            "print(sorted(m for m in ('sklearn', 'scipy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_client_reads_the_scores_as_typed_rows(sweep):
    from taunotebook.client import PortalClient

    with PortalClient(str(sweep.base_url), token=TOKEN) as client:
        answer = client.parameter_importance("loss", experiment_ids=["sweep"])
    assert answer.parameters[0].name == "lr" and answer.valued_run_count == 24 and answer.extra == {}
