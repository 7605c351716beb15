"""The loss pane's kernel side without a browser: its polling thread against a real Portal on 127.0.0.1.

The browser is replaced by a recorder of what ``LossPane.send`` would put on the wire (the header and
its two binary buffers), decoded exactly as the page decodes them (int64 / float64 little-endian).
"""

from __future__ import annotations

import math
import re
import threading
import time
from pathlib import Path

import pytest

from fixtures.pane import Recorder, make_pane, wait_until, without_page_data
from fixtures.portal import LOSS_POINTS, TOKEN, event, non_finite, serve
from fixtures.servers import ServerThread, free_port
from tau_collector.expstore import open_store
from tau_collector.expstore.write.writer import MetricWriter
from taunotebook import pane as pane_module
from taunotebook.client import PortalClient
from taunotebook.pane import LossPane
from taunotebook.portal.app import create_app


@pytest.fixture
def client(portal_server):
    with PortalClient(portal_server.base_url, portal_server.token, retries=0) as c:
        yield c


@pytest.fixture
def live_store(tmp_path: Path):
    """An empty store and a writer for a run that grows while the pane watches it."""
    store = open_store(tmp_path / "store", create=True)
    writer = MetricWriter(store)
    yield tmp_path / "store", writer
    store.close()


def write(writer: MetricWriter, name: str, run: str, steps, value=lambda s: 1.0 / (1 + s), metric="loss"):
    writer.write_chunk(name, [event(run, metric, s, value(s)) for s in steps], [], request_hash=name)


def test_bundle_is_built():
    assert pane_module.BUNDLE.is_file(), f"build the pane bundle: {pane_module.BUILD_HINT}"


def test_missing_bundle_says_how_to_build_it(monkeypatch, tmp_path):
    monkeypatch.setattr(pane_module, "BUNDLE", tmp_path / "pane.js")
    monkeypatch.setattr(pane_module, "_bundle_text", None)
    with pytest.raises(FileNotFoundError, match=r"npm --prefix js ci && npm --prefix js run build "):
        LossPane("run-a", portal="http://127.0.0.1:9", start=False)


def test_first_read_is_reduced_to_the_pane_width_and_matches_the_portal(portal_server, client):
    pane, rec = make_pane("run-a", client)
    try:
        reset = wait_until(lambda: rec.of("reset", "run-a", "train/loss"), "the first reset")[0]
        expected = client.series("run-a", "train/loss", max_points=4 * pane.width)
        assert reset["n"] == len(expected) <= 4 * pane.width < LOSS_POINTS
        assert reset["steps"] == list(expected.steps)
        assert reset["values"] == list(expected.values)
        assert reset["steps"][0] == 0 and reset["steps"][-1] == LOSS_POINTS - 1
    finally:
        pane.close()


def test_metrics_are_discovered_in_catalog_order_with_their_total(portal_server, client):
    pane, rec = make_pane("run-a", client)
    try:
        wait_until(lambda: pane.metrics, "the metric catalog")
        assert pane.metrics == ["eval/acc", "train/loss"]  # the catalog's order; tau/ markers left out
        assert pane.total_metrics == 2
        assert wait_until(lambda: rec.of("reset", "run-a", "eval/acc"), "eval/acc")[0]["n"] == 50
    finally:
        pane.close()


def test_terminal_drained_run_stops_polling(portal_server, client):
    pane, rec = make_pane("run-a", client)
    try:
        wait_until(lambda: not pane.polling, "polling to stop after a succeeded run")
        assert pane.state == "succeeded"
        assert pane.status["kind"] == "ok" and "polling stopped" in pane.status["message"]
        assert rec.of("reset", "run-a", "train/loss")
        sent = len(rec.messages)
        assert not pane._poller.wake.wait(1.0)  # parked: nothing wakes it on a timer
        assert len(rec.messages) == sent
    finally:
        pane.close()
    assert not pane._poller.thread.is_alive()


def test_a_drained_pane_still_answers_a_page_that_says_hello(portal_server, client):
    pane, rec = make_pane("run-a", client)
    try:
        wait_until(lambda: not pane.polling, "polling to stop after a succeeded run")
        before = len(rec.of("reset", "run-a", "train/loss"))
        pane._poller.on_message({"type": "hello", "width": 500})
        wait_until(lambda: len(rec.of("reset", "run-a", "train/loss")) > before, "the resend for the new page")
        wait_until(lambda: not pane.polling, "polling to stop again")
        assert pane._poller.thread.is_alive()
    finally:
        pane.close()


def test_non_finite_points_are_sent_as_marks_with_the_catalog_count(portal_server, client):
    pane, rec = make_pane("run-b", client)
    try:
        marks = wait_until(lambda: rec.of("nonfinite", "run-b", "train/loss"), "non-finite marks")[0]
        assert marks["steps"] == [3, 7]
        assert math.isnan(marks["values"][0]) and marks["values"][1] == math.inf
        wait_until(lambda: pane.runs.get("run-b"), "the catalog")
        assert pane.runs["run-b"]["metrics"]["train/loss"]["non_finite_count"] == 2
        reset = rec.of("reset", "run-b", "train/loss")[0]
        assert 3 not in reset["steps"] and 7 not in reset["steps"]
        assert reset["values"][reset["steps"].index(5)] == 0.55  # last write wins
    finally:
        pane.close()


def test_tail_reads_append_new_points_with_last_wins(live_store):
    store, writer = live_store
    write(writer, "c0", "live", range(10))
    with ServerThread(create_app(store, token=TOKEN)) as server:
        portal = PortalClient(f"http://127.0.0.1:{server.port}", TOKEN, retries=0)
        pane, rec = make_pane("live", portal)
        try:
            reset = wait_until(lambda: rec.of("reset", "live", "loss"), "the first read")[0]
            assert reset["steps"] == list(range(10))
            assert pane.state == "running" and pane.polling
            write(writer, "c1", "live", range(10, 15))
            appended = wait_until(lambda: rec.of("append", "live", "loss"), "a tail read")
            assert [s for m in appended for s in m["steps"]] == list(range(10, 15))
            # Step 14 again with a new value: the tail starts at the last seen step, the new value wins.
            time.sleep(0.01)
            writer.write_chunk("c2", [event("live", "loss", 14, 42.0, wall_ns=time.time_ns())], [],
                               request_hash="c2")
            redo = wait_until(lambda: [m for m in rec.of("append", "live", "loss") if 42.0 in m["values"]],
                              "the rewritten step")[0]
            assert redo["steps"] == [14] and redo["values"] == [42.0]
            assert list(pane._poller.held[("live", "loss")].steps) == list(range(15))
            writer.write_chunk("end", [event("live", "tau/run_status", 15, 1.0)], [], request_hash="end")
            wait_until(lambda: not pane.polling, "the thread to stop once the run succeeded")
            assert pane.state == "succeeded"
            assert "tau/run_status" not in pane.metrics
        finally:
            pane.close()
            portal.close()


def test_portal_unreachable_is_said_in_words_with_growing_backoff_then_recovers(portal_store):
    port = free_port()
    pane, rec = make_pane("run-a", PortalClient(f"http://127.0.0.1:{port}", TOKEN, retries=0, timeout=2))
    try:
        wait_until(lambda: pane.status["kind"] == "unreachable", "the unreachable status")
        assert "Portal unreachable at http://127.0.0.1:" in pane.status["message"]
        assert "retrying" in pane.status["message"]
        first = pane.status["retry_in"]
        wait_until(lambda: pane.status["retry_in"] >= 2 * first, "a longer retry delay")
        assert not rec.messages
        with ServerThread(create_app(portal_store, token=TOKEN), port=port):
            wait_until(lambda: rec.of("reset", "run-a", "train/loss"), "data after the Portal came back")
            assert pane.status["kind"] == "ok"
    finally:
        pane.close()


def test_wrong_token_is_unauthorized_in_words(portal_server):
    pane, _ = make_pane("run-a", PortalClient(portal_server.base_url, "wrong", retries=0))
    try:
        wait_until(lambda: pane.status["kind"] == "unauthorized", "the 401 status")
        assert "401" in pane.status["message"] and "TAU_PORTAL_TOKEN" in pane.status["message"]
    finally:
        pane.close()


def test_unknown_run_is_not_found_in_words(portal_server, client):
    pane, _ = make_pane("no-such-run", client)
    try:
        wait_until(lambda: pane.status["kind"] == "not_found", "the 404 status")
        assert "'no-such-run' was not found in the Portal (404)" in pane.status["message"]
        assert pane.polling  # a run just submitted may not be indexed yet: keep looking
    finally:
        pane.close()


def test_a_submitted_runs_lifecycle_and_resources_are_in_the_header_before_the_portal_knows_it(portal_server, client):
    from taunotebook.lifecycle import Lifecycle

    asked: list[int] = []

    def job() -> Lifecycle:
        asked.append(1)
        return Lifecycle("queued", "Job has not started yet. It may be waiting for resources")

    pane, _ = make_pane("not-yet-running", client, job=job, resources={"gpus": 4, "pip": ("einops",)})
    try:
        assert pane.resources == {"gpus": 4, "pip": ["einops"]}
        wait_until(lambda: pane.status["kind"] == "not_found", "the 404 status")
        assert pane.lifecycle == {"phase": "queued", "reason": "Job has not started yet. It may be waiting for "
                                  "resources", "retries": 0, "text": "queued: Job has not started yet. It may be "
                                  "waiting for resources"}
        assert "'not-yet-running' queued: Job has not started yet" in pane.status["message"]
        assert asked  # asked at every poll while the job has not ended
    finally:
        pane.close()


def test_close_stops_the_thread(live_store):
    store, writer = live_store
    write(writer, "c0", "live", range(3))
    with serve(store) as server:
        pane, rec = make_pane("live", PortalClient(f"http://127.0.0.1:{server.port}", TOKEN, retries=0))
        wait_until(lambda: rec.of("reset"), "the first read")
        assert pane.polling
        thread = pane._poller.thread
        pane.close()
        assert not thread.is_alive()
        assert not pane.polling


def test_zoom_refetches_the_visible_range_at_full_fidelity(portal_server, client):
    pane, rec = make_pane("run-a", client)
    try:
        wait_until(lambda: rec.of("reset", "run-a", "train/loss"), "the first read")
        pane._poller.on_message({"type": "zoom", "metric": "train/loss", "start_step": 1000, "end_step": 1400})
        ranged = wait_until(lambda: rec.of("range", "run-a", "train/loss"), "the zoomed read")[0]
        assert ranged["start_step"] == 1000 and ranged["end_step"] == 1400
        assert ranged["steps"] == list(range(1000, 1401))
        held = pane._poller.held[("run-a", "train/loss")]
        assert [s for s in held.steps if 1000 <= s <= 1400] == list(range(1000, 1401))
        assert list(held.steps) == sorted(held.steps)
    finally:
        pane.close()


def test_hello_from_a_page_resends_every_series(portal_server, client):
    pane, rec = make_pane("run-b", client, compare=["run-a"])
    try:
        wait_until(lambda: rec.of("reset", "run-a", "train/loss") and rec.of("reset", "run-b", "train/loss"),
                   "both runs")
        before = len(rec.of("reset"))
        pane._poller.on_message({"type": "hello", "width": 300})
        wait_until(lambda: len(rec.of("reset")) > before, "a resend after hello")
        assert pane._poller.width == 300
        seqs = [m["seq"] for m in rec.messages]
        assert seqs == list(range(1, len(seqs) + 1))
    finally:
        pane.close()


def test_stellar_link_outside_jupyter_is_the_portals(portal_server, client, monkeypatch):
    monkeypatch.delenv("JPY_PARENT_PID", raising=False)
    monkeypatch.delenv("JUPYTERHUB_SERVICE_PREFIX", raising=False)
    pane = LossPane("run-a", portal=client, project="proj", start=False)
    assert pane.stellar_href == f"{portal_server.base_url}/stellar?target=run-a&project=proj"
    pane.close()


def test_non_finite_write_appears_while_running(live_store):
    store, writer = live_store
    write(writer, "c0", "live", range(5))
    with serve(store) as server:
        pane, rec = make_pane("live", PortalClient(f"http://127.0.0.1:{server.port}", TOKEN, retries=0))
        try:
            wait_until(lambda: rec.of("reset"), "the first read")
            writer.write_chunk("nan", [event("live", "loss", 6, 0.5)], [non_finite("live", "loss", 5, math.nan)],
                               request_hash="nan")
            marks = wait_until(lambda: [m for m in rec.of("nonfinite", "live", "loss") if m["n"]], "the NaN mark")
            assert marks[-1]["steps"] == [5] and math.isnan(marks[-1]["values"][0])
        finally:
            pane.close()


def test_failed_run_is_said_in_words_and_stops_polling(live_store):
    store, writer = live_store
    write(writer, "c0", "doomed", range(5))
    writer.write_chunk("end", [event("doomed", "tau/run_status", 5, -1.0)], [], request_hash="end")
    with serve(store) as server:
        pane, rec = make_pane("doomed", PortalClient(f"http://127.0.0.1:{server.port}", TOKEN, retries=0))
        try:
            wait_until(lambda: not pane.polling, "polling to stop for a failed run")
            assert pane.state == "failed"
            assert rec.of("reset", "doomed", "loss")[0]["steps"] == list(range(5))
            assert pane.status["message"].startswith("run failed: all points loaded")
        finally:
            pane.close()


def test_a_new_pane_reattaches_to_a_running_run_where_the_portal_is(live_store):
    store, writer = live_store
    write(writer, "c0", "long", range(20))
    with serve(store) as server:
        url = f"http://127.0.0.1:{server.port}"
        first, rec1 = make_pane("long", PortalClient(url, TOKEN, retries=0))
        wait_until(lambda: rec1.of("reset"), "the first pane's read")
        first.close()  # e.g. the kernel restarted, or the cell is run again
        write(writer, "c1", "long", range(20, 30))
        again, rec2 = make_pane("long", PortalClient(url, TOKEN, retries=0))
        try:
            reset = wait_until(lambda: rec2.of("reset", "long", "loss"), "the new pane's read")[0]
            assert reset["steps"] == list(range(30))
            write(writer, "c2", "long", range(30, 33))
            appended = wait_until(lambda: rec2.of("append", "long", "loss"), "tails after re-attaching")
            assert [s for m in appended for s in m["steps"]] == [30, 31, 32]
        finally:
            again.close()


def test_a_much_wider_pane_rereads_the_full_range_for_its_width(portal_server, client):
    pane, rec = make_pane("run-a", client)
    try:
        wait_until(lambda: rec.of("reset", "run-a", "train/loss"), "the first read")
        assert rec.of("reset", "run-a", "train/loss")[0]["n"] <= 4 * 800
        pane.width = 2000
        wider = wait_until(lambda: [m for m in rec.of("reset", "run-a", "train/loss") if m["n"] > 4 * 800],
                           "a read sized for 2000 px")[0]
        assert wider["n"] <= 4 * 2000
    finally:
        pane.close()


def test_a_corrupt_source_reported_by_the_collector_is_said_in_words(live_store):
    from tau_collector.expstore.write.run_events import record_run_events
    from tau_collector.reads import SOURCE_PROBLEM, RunEvent

    store, writer = live_store
    write(writer, "c0", "bumpy", range(5))
    record_run_events(writer.store, [RunEvent(
        "bumpy", "2026-11-30T10:00:00Z", SOURCE_PROBLEM, "tau-collector", "error",
        "tb/events.out.tfevents.1 at byte 4242: CRC mismatch", {"error": "crc_mismatch", "offset": 4242})])
    with serve(store) as server:
        pane, _rec = make_pane("bumpy", PortalClient(f"http://127.0.0.1:{server.port}", TOKEN, retries=0))
        try:
            wait_until(lambda: "CRC mismatch" in pane.status.get("message", ""), "the corrupt source in the status")
            assert "collector: tb/events.out.tfevents.1 at byte 4242" in pane.status["message"]
        finally:
            pane.close()


def test_against_a_portal_without_page_data_the_pane_draws_without_marks(portal_store):
    with ServerThread(without_page_data(create_app(portal_store, token=TOKEN))) as server:
        pane, rec = make_pane("run-b", f"http://127.0.0.1:{server.port}/?token={TOKEN}")
        try:
            reset = wait_until(lambda: rec.of("reset", "run-b", "train/loss"), "the first draw")[0]
            assert 5 in reset["steps"] and 3 not in reset["steps"]
            wait_until(lambda: not pane._poller.extras_available, "page data given up")
            assert rec.of("nonfinite") == [] and pane.status["kind"] == "ok"
            assert pane.runs["run-b"]["metrics"]["train/loss"]["non_finite_count"] == 2  # the catalog still counts
        finally:
            pane.close()


# -- issue 20's contract: only the visible metrics are fetched and polled (see /docs and pane.py's docstring)

WIDE = 1000  # metrics of the wide run


def wide_names() -> list[str]:
    """1,000 metrics as a small language model logs them: per-layer norms, then train/loss and train/lr."""
    names = [f"grad_norm/layer_{i:03d}" for i in range(WIDE - 4)]
    return [*names, "train/loss", "train/lr", "eval/loss", "system/gpu_util"]


class Recording:
    """An ASGI wrapper that records every request's path and decoded query, then serves it."""

    def __init__(self, app) -> None:
        self.app = app
        self.requests: list[tuple[str, list[tuple[str, str]]]] = []
        self.lock = threading.Lock()

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            from urllib.parse import parse_qsl

            with self.lock:
                self.requests.append((scope["path"], parse_qsl(scope["query_string"].decode(),
                                                               keep_blank_values=True)))
        await self.app(scope, receive, send)

    def metrics_named(self) -> set[str]:
        with self.lock:
            return {v for _, q in self.requests for k, v in q if k == "metric"}

    def count(self) -> int:
        with self.lock:
            return len(self.requests)


@pytest.fixture(scope="module")
def wide_store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("wide") / "store"
    store = open_store(root, create=True)
    writer = MetricWriter(store)
    names = wide_names()
    events = [event("wide", name, s, float(i + s)) for s in range(3) for i, name in enumerate(names)]
    writer.write_chunk("w0", events, [], request_hash="w0")
    store.close()
    return root


@pytest.fixture
def wide_portal(wide_store):
    recording = Recording(create_app(wide_store, token=TOKEN))
    with ServerThread(recording) as server:
        with PortalClient(f"http://127.0.0.1:{server.port}", TOKEN, retries=0) as c:
            yield c, recording


DEFAULT_WIDE = ["eval/loss", "train/loss", "grad_norm/layer_000", "grad_norm/layer_001", "grad_norm/layer_002",
                "grad_norm/layer_003", "grad_norm/layer_004", "grad_norm/layer_005"]


def test_default_visible_set_is_loss_like_then_the_first_others_at_most_8():
    from taunotebook.pane_poller import default_visible

    names = wide_names()
    names.sort()  # the catalog's order
    assert default_visible(names, None) == ["eval/loss", "train/loss", "grad_norm/layer_000", "grad_norm/layer_001",
                                            "grad_norm/layer_002", "grad_norm/layer_003", "grad_norm/layer_004",
                                            "grad_norm/layer_005"]
    assert default_visible(["a", "LossScale", "tau/run_status", "b"], None) == ["LossScale", "a", "b"]
    assert default_visible(names, [f"m{i}" for i in range(12)]) == [f"m{i}" for i in range(8)]


def test_a_wide_run_without_a_browser_fetches_only_the_default_visible_set(wide_portal):
    client, recording = wide_portal
    pane, rec = make_pane("wide", client)
    try:
        expected = set(DEFAULT_WIDE)
        wait_until(lambda: {m["metric"] for m in rec.of("reset")} == expected, "the default set's resets")
        seen = recording.count()
        wait_until(lambda: recording.count() >= seen + 3, "three more polls")
        assert {m["metric"] for m in rec.messages} == expected
        assert recording.metrics_named() == expected  # the other 992 metrics were never asked for
        assert len(pane.metrics) == WIDE and pane.total_metrics == WIDE  # every name, for the picker
        assert set(pane.runs["wide"]["metrics"]) == expected  # catalog entries of the visible ones only
        assert not any(path.endswith("/metrics") for path, _ in recording.requests)  # never the whole catalog
    finally:
        pane.close()


def test_one_poll_round_of_a_wide_run_makes_a_bounded_number_of_requests(wide_portal):
    client, recording = wide_portal
    pane = LossPane("wide", portal=client, start=False)
    rec = Recorder()
    pane.send = rec  # type: ignore[method-assign]
    poller = pane._poller
    poller._poll()  # the first round: the catalog, then the default set's resets and their page data
    first = recording.count()
    assert first <= 2 + 2 * len(DEFAULT_WIDE)  # 2 tails reads + a point-details read per series
    assert poller.requests == first  # the pane's own count of its reads agrees with the Portal's
    before = recording.count()
    poller._poll()  # steady state: one request, whatever the run's width
    assert recording.count() - before == 1 and poller.requests == first + 1
    path, query = recording.requests[-1]
    assert path == "/stellar/data/runs/wide/tails"
    assert sorted(v for k, v in query if k == "metric") == sorted(DEFAULT_WIDE)
    assert dict(query)["catalog_since"]  # the names are not sent again
    pane.close()


def test_a_metric_entering_visible_gets_a_reset_and_one_leaving_is_no_longer_polled(wide_portal):
    client, recording = wide_portal
    pane = LossPane("wide", portal=client, start=False)
    rec = Recorder()
    pane.send = rec  # type: ignore[method-assign]
    poller = pane._poller
    poller._poll()
    assert not rec.of("reset", metric="train/lr")
    pane.set_state({"visible": ["train/loss", "train/lr"]})  # what the browser sends
    poller._poll()
    lr = rec.of("reset", "wide", "train/lr")
    assert len(lr) == 1 and lr[0]["steps"] == [0, 1, 2]
    assert set(pane.runs["wide"]["metrics"]) == {"train/loss", "train/lr"}
    assert set(k[1] for k in poller.held) == {"train/loss", "train/lr"}  # the rest is forgotten
    before = recording.count()
    poller._poll()
    assert recording.count() - before == 1
    assert sorted(v for k, v in recording.requests[-1][1] if k == "metric") == ["train/loss", "train/lr"]
    # train/loss stays visible: no second reset; train/lr leaves, then comes back: a fresh reset
    pane.set_state({"visible": ["train/loss"]})
    poller._poll()
    assert [k[1] for k in poller.held] == ["train/loss"]
    pane.set_state({"visible": ["train/loss", "train/lr"]})
    poller._poll()
    assert len(rec.of("reset", "wide", "train/lr")) == 2
    assert len([m for m in rec.of("reset", "wide", "train/loss") if m["seq"] > lr[0]["seq"]]) == 0
    pane.close()


def test_a_browser_showing_nothing_polls_no_metric(wide_portal):
    client, recording = wide_portal
    pane = LossPane("wide", portal=client, start=False)
    pane.send = Recorder()  # type: ignore[method-assign]
    pane.set_state({"visible": []})  # equal to the default: still the browser's word
    pane._poller._poll()
    assert recording.metrics_named() == set() and pane._poller.held == {}
    assert pane.runs["wide"]["metrics"] == {} and pane.total_metrics == WIDE
    pane.close()


def test_metrics_is_resent_only_when_the_set_changes(live_store):
    store, writer = live_store
    write(writer, "c0", "grow", range(5))
    with serve(store) as server:
        pane = LossPane("grow", portal=PortalClient(f"http://127.0.0.1:{server.port}", TOKEN, retries=0),
                        start=False)
        pane.send = Recorder()  # type: ignore[method-assign]
        changes = []
        pane.observe(lambda change: changes.append(change["new"]), names="metrics")
        pane._poller._poll()
        write(writer, "c1", "grow", range(5, 10))
        pane._poller._poll()
        pane._poller._poll()
        assert changes == [["loss"]]
        write(writer, "c2", "grow", range(10, 12), metric="lr")
        pane._poller._poll()
        assert changes == [["loss"], ["loss", "lr"]]
        pane.close()


def test_metrics_given_are_exactly_the_metrics_and_the_first_8_are_polled(wide_portal):
    client, recording = wide_portal
    chosen = [f"grad_norm/layer_{i:03d}" for i in range(10)]
    pane = LossPane("wide", chosen, portal=client, start=False)
    pane.send = Recorder()  # type: ignore[method-assign]
    pane._poller._poll()
    assert pane.metrics == chosen
    assert recording.metrics_named() == set(chosen[:8])
    pane.set_state({"visible": [chosen[9], "train/loss"]})  # a name outside metrics= is not drawn
    pane._poller._poll()
    assert {k[1] for k in pane._poller.held} == {chosen[9]}
    pane.close()


def test_browser_state_traits_are_synced_and_kept(wide_portal):
    client, _ = wide_portal
    pane = LossPane("wide", portal=client, start=False)
    pane.set_state({"pinned": ["train/lr"], "filter": "/layer_0[0-4]/", "sections": {"grad_norm": True}})
    state = pane.get_state()
    assert state["pinned"] == ["train/lr"] and state["filter"] == "/layer_0[0-4]/"
    assert state["sections"] == {"grad_norm": True} and state["visible"] == [] and state["total_metrics"] == 0
    pane.close()


def test_compared_runs_are_polled_for_the_same_visible_metrics(portal_server, client):
    pane = LossPane("run-b", portal=client, compare=["run-a"], start=False)
    rec = Recorder()
    pane.send = rec  # type: ignore[method-assign]
    pane.set_state({"visible": ["train/loss"]})
    pane._poller._poll()
    assert {(m["run"], m["metric"]) for m in rec.of("reset")} == {("run-b", "train/loss"), ("run-a", "train/loss")}
    assert pane.metrics == ["train/loss", "eval/acc"]  # run-b's names, then what only run-a has
    assert pane.total_metrics == 1  # the primary run's
    assert set(pane.runs) == {"run-a", "run-b"} and set(pane.runs["run-a"]["metrics"]) == {"train/loss"}
    pane.set_state({"visible": ["eval/acc"]})  # a metric only the compared run has
    pane._poller._poll()
    assert {(m["run"], m["metric"]) for m in rec.of("reset")} >= {("run-a", "eval/acc")}
    assert not rec.of("reset", "run-b", "eval/acc") and set(pane._poller.held) == {("run-a", "eval/acc")}
    pane.close()


def test_compared_runs_can_be_drawn_as_one_line_with_a_band():
    pane = LossPane("run-a", portal="http://127.0.0.1:9", compare=["seeds"], aggregate="median", band="std",
                    start=False)
    try:
        assert (pane.aggregate, pane.band) == ("median", "std")
        pane.aggregate = "mean"  # the pane's own control sets the trait the same way
        assert pane.aggregate == "mean"
    finally:
        pane.close()
    plain = LossPane("run-a", portal="http://127.0.0.1:9", start=False)
    try:
        assert (plain.aggregate, plain.band) == ("", "minmax")
    finally:
        plain.close()


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"aggregate": "mode"}, "aggregate must be one of '', 'mean', 'median', got 'mode'"),
    ({"band": "iqr"}, "band must be one of 'minmax', 'std', 'none', got 'iqr'"),
])
def test_an_unknown_aggregate_or_band_is_refused_by_name(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        LossPane("run-a", portal="http://127.0.0.1:9", start=False, **kwargs)


def test_the_panes_note_action_posts_to_the_runs_notes_and_answers_in_words(tmp_path):
    from fixtures.portal import build_store

    root = build_store(tmp_path / "store")
    with serve(root) as server, PortalClient(f"http://127.0.0.1:{server.port}", TOKEN, retries=0) as c:
        pane = LossPane("run-b", portal=c, start=False)
        answers: list[dict] = []
        pane.send = lambda content, buffers=None: answers.append(content)  # type: ignore[method-assign]
        try:
            pane._handle_custom_msg({"type": "note", "text": "spotted in the pane"}, [])
            wait_until(lambda: answers, "the note's answer")
            assert answers[0]["type"] == "note-result" and answers[0]["ok"] is True, answers
            assert [n.text for n in c.notes("run-b")] == ["spotted in the pane"]
            pane._handle_custom_msg({"type": "note", "text": "   "}, [])
            wait_until(lambda: len(answers) == 2, "the refusal")
            assert answers[1]["ok"] is False and "text is empty" in answers[1]["message"]
        finally:
            pane.close()
