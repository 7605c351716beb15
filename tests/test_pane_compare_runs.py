"""``compare=`` takes run, experiment and run group ids; the pane names the runs by what differs.

Against a real Portal over a sweep written by the real writer (tests/fixtures/sweep_store.py), and against a
Portal like TauGrid's (no local page data).
"""

from __future__ import annotations

import pytest

from fixtures.pane import make_pane, wait_until, without_page_data
from fixtures.portal import TOKEN, event, serve
from fixtures.servers import ServerThread
from fixtures.sweep_store import LRS, PROJECT, build_sweep_store, trial_id
from tau_collector.expstore import open_store
from tau_collector.expstore.write.writer import MetricWriter
from tau_collector.projection.metric_event import new_metric_event
from tau_collector.taugrid.run_config import run_config
from taunotebook import compare_runs, pane_poller
from taunotebook.client import PortalClient
from taunotebook.compare_runs import resolve_compare, run_configs
from taunotebook.portal.app import create_app

TRIALS = 6
TRIAL_IDS = [trial_id(i) for i in range(TRIALS)]


@pytest.fixture(scope="module")
def sweep_root(tmp_path_factory):
    root = build_sweep_store(tmp_path_factory.mktemp("sweep") / "store", trials=TRIALS)
    # A run whose id is also an experiment's ("sweep"): compare= takes it as the run.
    store = open_store(root, writable=True)
    try:
        event = new_metric_event(project=PROJECT, experiment_id="baseline", run_group_id="ref", run_id="sweep",
                                 metric_name="loss", step=0, wall_time=1, value=1.0, exported_at=1,
                                 source="history", tags={})
        MetricWriter(store).write_chunk("ambiguous", [event], [], request_hash="h")
    finally:
        store.close()
    return root


@pytest.fixture(scope="module")
def sweep_portal(sweep_root):
    with serve(sweep_root) as server:
        yield f"http://127.0.0.1:{server.port}"


@pytest.fixture
def client(sweep_portal):
    with PortalClient(sweep_portal, TOKEN, retries=0) as c:
        yield c


def test_run_ids_are_taken_as_given_after_the_panes_own_run(client):
    resolved = resolve_compare(client, "trial-000", ["trial-002", "trial-000", " trial-001 ", "trial-002"])
    assert resolved.run_ids == ["trial-000", "trial-002", "trial-001"]
    assert resolved.notes == [] and resolved.grows is False


def test_a_run_group_id_is_every_run_of_the_group_oldest_first(client):
    resolved = resolve_compare(client, "ref-0", ["lr-sweep"])
    assert resolved.run_ids == ["ref-0", *TRIAL_IDS]
    assert resolved.grows is True and resolved.notes == []


def test_an_id_that_names_a_run_and_an_experiment_is_the_run(client):
    assert resolve_compare(client, "ref-0", ["sweep"]).run_ids == ["ref-0", "sweep"]


def test_an_experiment_id_is_every_run_of_the_experiment(client):
    resolved = resolve_compare(client, "trial-000", ["baseline"])
    assert resolved.run_ids == ["trial-000", "ref-0", "ref-1", "sweep"]  # oldest first, then by id
    assert resolved.grows is True


def test_an_entry_naming_nothing_is_said_and_the_rest_still_drawn(client):
    resolved = resolve_compare(client, "trial-000", ["no-such-thing", "trial-001"])
    assert resolved.run_ids == ["trial-000", "trial-001"]
    assert resolved.notes == ["compare: 'no-such-thing' names no run, experiment or run group"]


def test_more_runs_than_the_limit_are_cut_and_said(client, monkeypatch):
    monkeypatch.setattr(compare_runs, "MAX_COMPARE_RUNS", 3)
    resolved = resolve_compare(client, "ref-0", ["lr-sweep"])
    # Three of the group (its newest; the sweep's runs were stored in the same second), oldest first.
    assert resolved.run_ids[0] == "ref-0" and len(resolved.run_ids) == 4
    assert set(resolved.run_ids[1:]) < set(TRIAL_IDS) and resolved.run_ids[1:] == sorted(resolved.run_ids[1:])
    assert resolved.notes == ["compare: group 'lr-sweep' has more than 3 runs; its 3 newest are drawn"]


def test_configs_come_in_one_request_and_a_run_without_one_is_none(client):
    configs = run_configs(client, ["ref-0", "trial-000", "trial-001"])
    assert configs["ref-0"] is None
    assert configs["trial-001"] == {"batch": 32, "lr": LRS[1], "optimizer.name": "sgd", "seed": 1}
    assert run_configs(client, ["trial-000"]) == {}  # one run alone is named by its id


def test_a_pane_comparing_a_group_draws_every_run_with_its_config_and_links_them(sweep_portal):
    pane, rec = make_pane("ref-0", f"{sweep_portal}/?token={TOKEN}", project=PROJECT, compare=["lr-sweep"])
    try:
        wait_until(lambda: pane.run_ids == ["ref-0", *TRIAL_IDS], "compare= resolved")
        assert pane.compare == ["lr-sweep"]  # as given
        assert pane.configs["trial-003"]["lr"] == LRS[3] and pane.configs["ref-0"] is None
        assert pane.stellar_href.endswith("&compare=" + ",".join(TRIAL_IDS))
        for run in TRIAL_IDS:
            wait_until(lambda run=run: rec.of("reset", run, "loss"), f"{run}'s loss drawn")
        assert pane.status["kind"] == "ok"
    finally:
        pane.close()


def test_a_pane_says_which_compare_entry_names_nothing(sweep_portal):
    pane, rec = make_pane("trial-000", f"{sweep_portal}/?token={TOKEN}", compare=["nope", "trial-001"])
    try:
        wait_until(lambda: "'nope' names no run" in pane.status.get("message", ""), "the note in the status")
        assert pane.run_ids == ["trial-000", "trial-001"]
        wait_until(lambda: rec.of("reset", "trial-001", "loss"), "the other run drawn")
        # Both runs ended: the pane stops polling, and still says what compare= could not find.
        wait_until(lambda: "polling stopped" in pane.status["message"], "polling stopped")
        assert pane.status["message"].endswith("— compare: 'nope' names no run, experiment or run group")
    finally:
        pane.close()


def test_against_a_portal_without_page_data_a_group_is_found_in_the_runs_experiment(sweep_root):
    with ServerThread(without_page_data(create_app(sweep_root, token=TOKEN))) as server, \
            PortalClient(f"http://127.0.0.1:{server.port}", TOKEN, retries=0) as client:
        resolved = resolve_compare(client, "trial-000", ["lr-sweep"])
        assert resolved.run_ids == TRIAL_IDS
        # No page data: no configs, the runs keep their ids as names.
        assert run_configs(client, resolved.run_ids) == {}


def test_a_sweeps_new_run_joins_a_pane_comparing_its_experiment(tmp_path, monkeypatch):
    monkeypatch.setattr(pane_poller, "RESOLVE_SECONDS", 0.2)
    store = open_store(tmp_path / "store", create=True)
    writer = MetricWriter(store)

    def trial(run: str, lr: float) -> None:
        writer.put_run_config(run, run_config({"lr": lr}, format="json", uri=f"file:///{run}.json"))
        writer.write_chunk(run, [event(run, "loss", s, lr * s, experiment="grow", group="grow") for s in range(5)],
                           [], request_hash=run)

    trial("grow-1", 0.1)
    trial("grow-2", 0.03)
    try:
        with ServerThread(create_app(tmp_path / "store", token=TOKEN)) as server:
            pane, rec = make_pane("grow-1", f"http://127.0.0.1:{server.port}/?token={TOKEN}", compare=["grow"])
            try:
                wait_until(lambda: pane.run_ids == ["grow-1", "grow-2"], "the experiment's two runs")
                trial("grow-3", 0.01)  # a new trial of the sweep, while the pane watches (its runs still running)
                wait_until(lambda: pane.run_ids == ["grow-1", "grow-2", "grow-3"], "the new run listed")
                assert pane.configs["grow-3"] == {"lr": 0.01}
                wait_until(lambda: rec.of("reset", "grow-3", "loss"), "the new run drawn")
            finally:
                pane.close()
    finally:
        store.close()


def test_a_parked_pane_comparing_an_experiment_wakes_for_the_sweeps_next_run(tmp_path, monkeypatch):
    monkeypatch.setattr(pane_poller, "RESOLVE_SECONDS", 0.2)
    store = open_store(tmp_path / "store", create=True)
    writer = MetricWriter(store)

    def trial(run: str, lr: float) -> None:
        writer.put_run_config(run, run_config({"lr": lr}, format="json", uri=f"file:///{run}.json"))
        events = [event(run, "loss", s, lr * s, experiment="seq", group="seq") for s in range(5)]
        events.append(event(run, "tau/run_status", 5, 1.0, experiment="seq", group="seq"))  # succeeded
        writer.write_chunk(run, events, [], request_hash=run)

    trial("seq-1", 0.1)
    trial("seq-2", 0.03)
    try:
        with ServerThread(create_app(tmp_path / "store", token=TOKEN)) as server:
            pane, rec = make_pane("seq-1", f"http://127.0.0.1:{server.port}/?token={TOKEN}", compare=["seq"])
            try:
                # Every run ended and drawn: the pane stops polling the runs.
                wait_until(lambda: pane.run_ids == ["seq-1", "seq-2"] and not pane.polling, "the pane parked")
                trial("seq-3", 0.01)  # the sweep's next trial, after the others ended
                wait_until(lambda: pane.run_ids == ["seq-1", "seq-2", "seq-3"], "the next trial listed")
                wait_until(lambda: rec.of("reset", "seq-3", "loss"), "the next trial drawn")
                assert pane.configs["seq-3"] == {"lr": 0.01}
                wait_until(lambda: not pane.polling, "parked again once it is drawn")
            finally:
                pane.close()
    finally:
        store.close()
