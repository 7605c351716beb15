"""A pane comparing runs sends every run's checkpoints and retries: the primary run's as ``checkpoints``, each
compared run's that has any as ``compare_checkpoints`` (drawn in that run's colour by js/pane/metric_plot.js)."""

from __future__ import annotations

import pytest

from fixtures.pane import make_pane, wait_until
from fixtures.portal import TOKEN, event, serve
from tau_collector.expstore import open_store, record_run_events
from tau_collector.expstore.write.artifacts import record_artifacts
from tau_collector.expstore.write.writer import MetricWriter
from tau_collector.reads import RunEvent
from tau_collector.reads.rows import ArtifactRow

WS = {"tau_workspace": "default"}


@pytest.fixture(scope="module")
def portal(tmp_path_factory):
    root = tmp_path_factory.mktemp("cmp-ckpt") / "store"
    store = open_store(root, create=True)
    for run in ("run-a", "run-b", "run-c"):
        MetricWriter(store).write_chunk(run, [event(run, "loss", s, 1.0 / (s + 1), tags=WS) for s in range(0, 50, 5)],
                                        [], request_hash=run)
    record_artifacts(store, [ArtifactRow("run-a", "checkpoint", "/a/ckpt-10.pt", "/a/ckpt-10.pt", step=10,
                                         size_bytes=3),
                             ArtifactRow("run-b", "checkpoint", "/b/ckpt-20.pt", "/b/ckpt-20.pt", step=20,
                                         size_bytes=4)])
    record_run_events(store, [RunEvent("run-b", "2026-12-03T10:00:00Z", "retry", "taunotebook", "warning",
                                       "retry 1/2", {"attempt": 1, "max_retries": 2, "step": 20,
                                                     "resume_from": "/b/ckpt-20.pt"})])
    store.close()
    with serve(root) as server:
        yield f"http://127.0.0.1:{server.port}/?token={TOKEN}"


def test_each_compared_runs_checkpoints_reach_the_pane(portal):
    pane, _ = make_pane("run-a", portal, compare=["run-b", "run-c"])
    try:
        wait_until(lambda: pane.compare_checkpoints, "the compared runs' checkpoints")
        assert pane.checkpoints == {"checkpoints": [{"step": 10, "uri": "/a/ckpt-10.pt", "size_bytes": 3,
                                                     "deleted": False}], "retries": []}
        # run-c has none: left out; run-b's checkpoint and its retry, for markers in its colour.
        assert pane.compare_checkpoints == {"run-b": {
            "checkpoints": [{"step": 20, "uri": "/b/ckpt-20.pt", "size_bytes": 4, "deleted": False}],
            "retries": [{"step": 20, "attempt": 1, "max_retries": 2, "resume_from": "/b/ckpt-20.pt"}]}}
    finally:
        pane.close()
