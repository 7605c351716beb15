"""A metric as the loss pane's x axis, kernel side: ``LossPane(x="tokens")`` and the ``x_axis`` trait make the
poller read that metric beside the plotted ones (and for a zoomed window); bad axes are refused in words."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from fixtures.pane import make_pane, wait_until
from taunotebook.client import PortalClient
from taunotebook.magics import _check_x
from taunotebook.pane import LossPane, axis_metric, x_axis_value


@pytest.fixture
def client(portal_server):
    with PortalClient(portal_server.base_url, portal_server.token, retries=0) as c:
        yield c


@pytest.mark.parametrize(("given", "trait"), [
    (None, ""), ("step", "step"), ("relative", "relative"), ("wall", "wall"), ("tokens", "metric:tokens"),
    ("metric:tokens", "metric:tokens"), (" train/tokens ", "metric:train/tokens"),
])
def test_x_names_an_axis_or_a_metric(given, trait):
    assert x_axis_value(given) == trait
    assert axis_metric(trait) == (trait[len("metric:"):] if trait.startswith("metric:") else None)


@pytest.mark.parametrize("bad", ["", "  ", "metric:", 3])
def test_a_bad_x_is_refused_naming_the_parameter(bad):
    with pytest.raises(ValueError, match=r"x"):
        x_axis_value(bad)
    with pytest.raises(ValueError, match=r"^x"):
        LossPane("run-a", portal="http://127.0.0.1:9", x=bad, start=False)


def test_the_magics_check_x_before_submitting():
    with pytest.raises(UsageError, match=r"%tau_submit: --x: x='metric:' names no metric"):
        _check_x("%tau_submit", "metric:")
    _check_x("%tau_pane", "tokens")
    _check_x("%tau_pane", None)


def test_the_x_metric_is_polled_beside_the_plotted_ones(portal_server, client):
    # metrics= limits the plots to train/loss; the x axis's metric is read all the same.
    pane, rec = make_pane("run-a", client, metrics=["train/loss"], x="eval/acc")
    try:
        assert pane.x_axis == "metric:eval/acc"
        x = wait_until(lambda: rec.of("reset", "run-a", "eval/acc"), "the x metric's first read")[0]
        assert x["steps"] == [10 * i for i in range(50)]
        assert pane.metrics == ["train/loss"]  # polled, not listed as a plot
        # A zoom reads the x metric for the same window: the join is at full detail there.
        pane._poller.on_message({"type": "zoom", "metric": "train/loss", "start_step": 100, "end_step": 200})
        ranged = wait_until(lambda: rec.of("range", "run-a", "eval/acc"), "the x metric's zoomed read")[0]
        assert ranged["start_step"] == 100 and ranged["steps"] == list(range(100, 201, 10))
    finally:
        pane.close()


def test_a_browser_choosing_a_metric_axis_starts_polling_it(portal_server, client):
    pane, rec = make_pane("run-a", client, metrics=["train/loss"])
    try:
        wait_until(lambda: rec.of("reset", "run-a", "train/loss"), "the first read")
        assert not rec.of("reset", "run-a", "eval/acc")
        pane.set_state({"x_axis": "parsecs"})  # not an axis: ignored
        assert pane.x_axis == ""
        pane.set_state({"x_axis": "metric:eval/acc"})
        wait_until(lambda: rec.of("reset", "run-a", "eval/acc"), "the x metric's read after the choice")
    finally:
        pane.close()
