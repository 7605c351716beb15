"""The loss pane's points mirror (taunotebook/pane_points.py) on its own: resets and appends with last-wins, the
page data after an answer's points, a Portal without page data, zoomed ranges; a fake client counts the reads."""

from __future__ import annotations

from array import array
from types import SimpleNamespace

import pytest

from taunotebook.client import NotFoundError
from taunotebook.pane_points import PanePoints, max_points
from taunotebook.pane_reads import ROUTE_NOT_FOUND


def _tail(name, steps, values, *, since=None, changed=True, count=None, non_finite=0):
    summary = SimpleNamespace(count=len(steps) if count is None else count, non_finite_count=non_finite)
    return SimpleNamespace(name=name, summary=summary, since=since, changed=changed,
                           steps=array("q", steps), values=array("d", values))


class _Client:
    def __init__(self, *, details_error=None):
        self.details_error = details_error
        self.details = []
        self.series_reads = []

    def point_details(self, run, metric, *, project=None, source=None):
        self.details.append((run, metric, project, source))
        if self.details_error is not None:
            raise self.details_error
        nf = [SimpleNamespace(step=3, value=float("nan"))]
        return SimpleNamespace(non_finite=nf, wall_time_steps=[0, 4], wall_times=[10, 20])

    def series(self, run, metric, *, project=None, source=None, start_step, end_step, max_points):
        self.series_reads.append((run, metric, start_step, end_step, max_points))
        steps = list(range(start_step, end_step + 1))
        return SimpleNamespace(steps=steps, values=[float(s) * 10 for s in steps])


def _points(client):
    sent = []
    points = PanePoints(client, "local", lambda header, data: sent.append((header, data)),
                        lambda run: "proj" if run == "a" else None)
    return points, sent


def test_an_answer_sends_every_reset_before_any_page_data_and_only_what_was_asked():
    client = _Client()
    points, sent = _points(client)
    asked = {"loss": (None, None), "lr": (None, None)}
    tails = [_tail("loss", [0, 1, 2], [1.0, 0.5, 0.25]), _tail("lr", [0, 1], [0.1, 0.1]),
             _tail("other", [0], [9.0])]
    assert points.apply_answer("a", tails, asked, False, 800)
    ops = [(h["op"], h["metric"]) for h, _ in sent]
    assert ops[:2] == [("reset", "loss"), ("reset", "lr")]
    assert set(ops[2:]) == {("nonfinite", "loss"), ("walltime", "loss"), ("nonfinite", "lr"), ("walltime", "lr")}
    assert [h["seq"] for h, _ in sent] == list(range(1, len(sent) + 1))
    assert set(points.held) == {("a", "loss"), ("a", "lr")}
    assert [d[:3] for d in client.details] == [("a", "loss", "proj"), ("a", "lr", "proj")]
    assert points.requests == 2


def test_an_append_drops_the_point_already_held_and_a_moved_value_is_kept():
    points, sent = _points(_Client())
    points.apply_answer("b", [_tail("loss", [0, 1], [1.0, 0.5])], {"loss": (None, None)}, False, 800)
    sent.clear()
    # The tail from the last step held: that point unchanged, then two new ones.
    assert points.apply_answer("b", [_tail("loss", [1, 2, 3], [0.5, 0.4, 0.3], since=1, count=4)],
                               {"loss": (1, 2)}, False, 800)
    assert [h["op"] for h, _ in sent] == ["append"] and sent[0][0]["n"] == 2
    assert list(points.held[("b", "loss")].steps) == [0, 1, 2, 3]
    assert points.held[("b", "loss")].count == 4
    sent.clear()
    # Unchanged: nothing sent, nothing new.
    assert not points.apply_answer("b", [_tail("loss", [], [], since=3, changed=False, count=4)],
                                   {"loss": (3, 4)}, False, 800)
    assert sent == []


def test_a_portal_without_page_data_is_asked_once():
    client = _Client(details_error=NotFoundError(404, "NOT_FOUND", ROUTE_NOT_FOUND, "permanent", False))
    points, sent = _points(client)
    points.apply_answer("a", [_tail("loss", [0], [1.0])], {"loss": (None, None)}, False, 800)
    points.apply_answer("a", [_tail("lr", [0], [1.0])], {"lr": (None, None)}, False, 800)
    assert not points.extras_available and len(client.details) == 1
    assert [h["op"] for h, _ in sent] == ["reset", "reset"]


def test_a_missing_run_s_page_data_error_is_raised():
    client = _Client(details_error=NotFoundError(404, "NOT_FOUND", "run x not found", "permanent", False))
    points, _ = _points(client)
    with pytest.raises(NotFoundError):
        points.apply_answer("a", [_tail("loss", [0], [1.0])], {"loss": (None, None)}, False, 800)
    assert points.extras_available


def test_a_zoom_reads_each_drawn_run_and_the_x_metric_for_the_window():
    client = _Client()
    points, sent = _points(client)
    for run in ("a", "b"):
        points.apply_answer(run, [_tail("loss", list(range(10)), [1.0] * 10), _tail("epoch", list(range(10)),
                                                                                     [0.0] * 10)],
                            {"loss": (None, None), "epoch": (None, None)}, False, 800)
    sent.clear()
    points.zoom({"metric": "loss", "start_step": 2, "end_step": 4}, {"loss", "epoch"}, 300, ["a", "b"], "epoch")
    assert [(h["op"], h["run"], h["metric"], h["start_step"]) for h, _ in sent] == [
        ("range", "a", "loss", 2), ("range", "a", "epoch", 2), ("range", "b", "loss", 2), ("range", "b", "epoch", 2)]
    assert all(r[4] == max_points(300) for r in client.series_reads)
    assert list(points.held[("a", "loss")].values)[2:5] == [20.0, 30.0, 40.0]
    sent.clear()
    points.zoom({"metric": "loss", "start_step": 5, "end_step": 1}, {"loss"}, 300, ["a"], None)  # backwards
    points.zoom({"metric": "gone", "start_step": 1, "end_step": 5}, {"loss"}, 300, ["a"], None)  # not shown
    assert sent == []


def test_forget_drops_what_the_rule_says_no_to():
    points, _ = _points(_Client())
    points.apply_answer("a", [_tail("loss", [0], [1.0]), _tail("lr", [0], [1.0])],
                        {"loss": (None, None), "lr": (None, None)}, False, 800)
    points.forget(lambda k: k[1] == "loss")
    assert list(points.held) == [("a", "loss")]
