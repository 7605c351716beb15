"""The run page marks a run's checkpoints and retries on its charts (headless Chromium against the real Portal)."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page

from fixtures.browser import open_ready
from fixtures.portal import TOKEN, event, serve
from tau_collector.expstore import open_store, record_run_events
from tau_collector.expstore.write.artifacts import record_artifacts
from tau_collector.expstore.write.writer import MetricWriter
from tau_collector.reads import RunEvent
from tau_collector.reads.rows import ArtifactRow

WS = {"tau_workspace": "default"}


@pytest.fixture(scope="module")
def checkpoint_store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ckpt-ui") / "store"
    store = open_store(root, create=True)
    MetricWriter(store).write_chunk("c", [event("ckpt-run", "train/loss", s, 1.0 / (s + 1), tags=WS)
                                          for s in range(0, 500, 5)], [], request_hash="h")
    MetricWriter(store).write_chunk("c2", [event("ckpt-other", "train/loss", s, 2.0 / (s + 1), tags=WS)
                                           for s in range(0, 500, 5)], [], request_hash="h2")
    record_artifacts(store, [ArtifactRow("ckpt-other", "checkpoint", "/other/ckpt-250.pt", "/other/ckpt-250.pt",
                                         step=250, digest="sha256:" + "ef" * 32, size_bytes=7)])
    record_artifacts(store, [
        ArtifactRow("ckpt-run", "checkpoint", f"/ckpt/ckpt-{s}.pt", f"/ckpt/ckpt-{s}.pt", step=s,
                    digest="sha256:" + "cd" * 32, size_bytes=s * 1_000_000) for s in (100, 200, 300)])
    record_run_events(store, [RunEvent("ckpt-run", "2026-12-03T10:00:00Z", "retry", "tau-collector-wrap", "warning",
                                       "retry 1/2", {"attempt": 1, "max_retries": 2, "step": 200,
                                                     "resume_from": "/ckpt/ckpt-200.pt"})])
    store.close()
    return root


def test_the_run_page_marks_each_checkpoint_and_the_retry_on_the_loss_chart(page: Page, checkpoint_store):
    with serve(checkpoint_store) as server:
        open_ready(page, f"http://127.0.0.1:{server.port}/stellar?target=ckpt-run&token={TOKEN}")
        section = page.locator('section.stellar-chart[data-metric="train/loss"]')
        section.wait_for(timeout=30_000)
        page.wait_for_function(
            """() => {
                const gd = document.querySelector('section.stellar-chart[data-metric="train/loss"] .stellar-plot');
                return gd && gd.data && gd.data.some((t) => t.meta && t.meta.role === "checkpoints");
            }""", timeout=30_000)
        marks = page.evaluate(
            """() => {
                const gd = document.querySelector('section.stellar-chart[data-metric="train/loss"] .stellar-plot');
                return gd.data.filter((t) => ["checkpoints", "retries"].includes(t.meta.role))
                    .map((t) => ({role: t.meta.role, x: Array.from(t.x), text: Array.from(t.text)}));
            }""")
        assert marks == [
            {"role": "checkpoints", "x": [100, 200, 300],
             "text": [f"checkpoint at step {s}<br>/ckpt/ckpt-{s}.pt<br>{s} MB" for s in (100, 200, 300)]},
            {"role": "retries", "x": [200], "text": ["retry 1/2 at step 200<br>resumed from /ckpt/ckpt-200.pt"]},
        ]
        # Drawn: plotly placed one marker per checkpoint in the plot's SVG.
        assert section.locator(".scatterlayer .trace .points path").count() >= 4
        card = page.locator('.stellar-run[data-run-id="ckpt-run"] .stellar-checkpoints')
        assert card.inner_text() == "3, the last at step 300 · 1 retry"
        # Hovering the first marker shows its path and size.
        section.scroll_into_view_if_needed()
        box = page.evaluate(
            """() => {
                const gd = document.querySelector('section.stellar-chart[data-metric="train/loss"] .stellar-plot');
                const i = gd.data.findIndex((t) => t.meta.role === "checkpoints");
                const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis2;
                const rect = gd.getBoundingClientRect();
                return {x: rect.left + xa._offset + xa.l2p(100), y: rect.top + ya._offset + ya.l2p(0.9), i};
            }""")
        page.mouse.move(box["x"] - 30, box["y"] + 30)
        page.mouse.move(box["x"], box["y"], steps=5)
        page.wait_for_selector(".hoverlayer .hovertext", timeout=10_000)
        hover = page.locator(".hoverlayer").text_content()
        assert "checkpoint at step 100" in hover and "/ckpt/ckpt-100.pt" in hover and "100 MB" in hover


def test_compared_runs_each_get_their_checkpoint_markers_in_their_colour(page: Page, checkpoint_store):
    with serve(checkpoint_store) as server:
        open_ready(page, f"http://127.0.0.1:{server.port}/stellar?target=ckpt-run&compare=ckpt-other&token={TOKEN}")
        page.wait_for_function(
            """() => {
                const gd = document.querySelector('section.stellar-chart[data-metric="train/loss"] .stellar-plot');
                return gd && gd.data && gd.data.filter((t) => t.meta && t.meta.role === "checkpoints").length === 2;
            }""", timeout=30_000)
        marks = page.evaluate(
            """() => {
                const gd = document.querySelector('section.stellar-chart[data-metric="train/loss"] .stellar-plot');
                const line = (run) => gd.data.find((t) => t.meta && t.meta.runId === run && t.meta.role === "raw");
                return gd.data.filter((t) => t.meta && t.meta.role === "checkpoints").map((t) => ({
                    run: t.meta.runId, x: Array.from(t.x), color: t.marker.color,
                    line: (line(t.meta.runId) || {line: {}}).line.color, first: t.text[0]}));
            }""")
        assert [(m["run"], m["x"]) for m in marks] == [("ckpt-run", [100, 200, 300]), ("ckpt-other", [250])]
        assert all(m["color"] == m["line"] and m["color"] for m in marks), marks  # each in its run's colour
        assert marks[0]["color"] != marks[1]["color"]
        assert marks[1]["first"] == "ckpt-other: checkpoint at step 250<br>/other/ckpt-250.pt<br>7 B"
