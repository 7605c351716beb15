"""The run page shows what a run's job asked for, where it is in its lifecycle and its faults (headless Chromium)."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page

from fixtures.browser import open_ready
from fixtures.portal import TOKEN, event, serve
from tau_collector.expstore import open_store, record_run_events
from tau_collector.expstore.write.writer import MetricWriter
from tau_collector.job.faults import fault_event
from taunotebook.lifecycle import submission_event


@pytest.fixture(scope="module")
def job_store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("job") / "store"
    store = open_store(root, create=True)
    rows = [event("run-k", "train/loss", s, 1.0 / (s + 1)) for s in range(5)]
    rows.append(event("run-k", "tau/run_status", 5, -1.0))
    MetricWriter(store).write_chunk("k", rows, [], request_hash="h")
    record_run_events(store, [
        submission_event("run-k", "local", {"gpus": 2, "image": "repo/train:1", "queue": "gpu-a"}),
        fault_event("run-k", "2026-12-03T14:10:00Z", "signal", "entrypoint killed by SIGKILL (exit 137)",
                    node="node-1", signal="SIGKILL", exit_code=137),
    ])
    store.close()
    return root


def test_the_run_card_shows_the_resources_the_lifecycle_and_the_fault(page: Page, job_store):
    with serve(job_store) as server:
        open_ready(page, f"http://127.0.0.1:{server.port}/stellar?target=run-k&token={TOKEN}")
        page.wait_for_selector("#stellar[data-job=loaded]", timeout=30_000)
        card = page.locator('section.stellar-run[data-run-id="run-k"]')
        lifecycle = card.locator("dd.stellar-lifecycle")
        assert lifecycle.text_content() == "failed: killed by SIGKILL (exit 137)"
        assert lifecycle.get_attribute("data-phase") == "failed"
        resources = card.locator("dd.stellar-resources").text_content()
        assert resources == "2 GPUs · image repo/train:1 · queue gpu-a (local)"
        assert card.locator("dd.stellar-fault").text_content() == "entrypoint killed by SIGKILL (exit 137)"
