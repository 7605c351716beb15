"""A pane that compares runs links the Stellar page comparing the same runs, and that page shows them all."""

from __future__ import annotations

import pytest

from taunotebook.pane import LossPane


@pytest.fixture
def outside_jupyter(monkeypatch):
    monkeypatch.delenv("JPY_PARENT_PID", raising=False)
    monkeypatch.delenv("JUPYTERHUB_SERVICE_PREFIX", raising=False)


def test_a_comparing_pane_links_the_compare_page(outside_jupyter):
    pane = LossPane("run-a", portal="http://127.0.0.1:9", project="proj", compare=["run-b", "run-a", "run-c"],
                    start=False)
    try:
        assert pane.stellar_href == "http://127.0.0.1:9/stellar?target=run-a&project=proj&compare=run-b,run-c"
    finally:
        pane.close()


def test_a_single_run_pane_links_the_run_page_only(outside_jupyter):
    pane = LossPane("run-a", portal="http://127.0.0.1:9/?token=secret", project="proj", start=False)
    try:
        assert pane.stellar_href == "http://127.0.0.1:9/stellar?target=run-a&project=proj"
    finally:
        pane.close()


def test_inside_jupyter_the_compare_link_goes_through_the_proxy(monkeypatch):
    monkeypatch.setenv("JUPYTERHUB_SERVICE_PREFIX", "/user/ada/")
    pane = LossPane("run-a", portal="http://127.0.0.1:9", project="proj", compare=["run-b"], start=False)
    try:
        assert pane.stellar_href == "/user/ada/tau-portal/stellar?target=run-a&project=proj&compare=run-b"
    finally:
        pane.close()
