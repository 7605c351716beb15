"""Stop on divergence: the rules' spelling, and a real trainer stopped by ``tau-collector wrap`` when one fires."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tau_collector.collect.stop_rules import StopRule, StopRuleError, StopWatch, parse_stop_if, parse_stop_on_nan
from tau_collector.expstore.read.reader import StoreReader
from tau_collector.expstore.store import ExpStore
from tau_collector.projection.columns import PointColumns
from tau_collector.sinks.base import Chunk


@pytest.mark.parametrize(("text", "rule"), [
    ("loss>10", StopRule("loss", ">", 10.0)),
    (" train/loss >= 1e3 ", StopRule("train/loss", ">=", 1000.0)),
    ("val/acc<0.1", StopRule("val/acc", "<", 0.1)),
    ("grad_norm<=-2.5", StopRule("grad_norm", "<=", -2.5)),
])
def test_a_comparison_rule_reads_metric_operator_and_threshold(text, rule):
    assert parse_stop_if(text) == rule


@pytest.mark.parametrize("text", ["loss", "loss>", ">10", "loss=>10", "loss>>10", "loss>ten", "loss>nan", "loss<inf",
                                  "loss==10"])
def test_a_bad_comparison_rule_names_the_flag_and_shows_the_spelling(text):
    with pytest.raises(StopRuleError) as caught:
        parse_stop_if(text)
    assert str(caught.value).startswith(f"--stop-if {text!r}: use METRIC>VALUE, METRIC<VALUE, METRIC>=VALUE or "
                                        "METRIC<=VALUE with a finite number, e.g. --stop-if 'loss>10'")


def test_stop_on_nan_takes_a_metric_name_or_none():
    assert parse_stop_on_nan(None) == StopRule("", "non-finite")
    assert parse_stop_on_nan("loss") == StopRule("loss", "non-finite")
    with pytest.raises(StopRuleError, match="--stop-on-nan 'loss>1': takes a metric name"):
        parse_stop_on_nan("loss>1")


# -- a real trainer under wrap ------------------------------------------------------------------------------

# Logs forever unless stopped; the loss grows by 0.5 a step and turns NaN at step 12 when asked to.
_DIVERGING = """
import json, sys, time
nan_at = int(sys.argv[1]) if len(sys.argv) > 1 else -1
step = 0
while True:
    loss = float("nan") if step == nan_at else 1.0 + 0.5 * step
    print(json.dumps({"step": step, "loss": loss, "acc": 0.5}), flush=True)
    step += 1
    time.sleep(0.02)
"""


def _wrap(tmp_path: Path, *rules: str, script: str = _DIVERGING, args: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    (tmp_path / "train.py").write_text(script)
    return subprocess.run(
        [sys.executable, "-m", "tau_collector", "wrap", "--run-dir", str(tmp_path / "run"), "--interval", "1s",
         "--system-interval", "0", "--run", "r1", "--project", "demo", "--experiment", "e", "--group", "g",
         "--store", str(tmp_path / "store"), *rules, "--", sys.executable, str(tmp_path / "train.py"), *args],
        capture_output=True, text=True, timeout=180)


def _run(tmp_path: Path):
    return StoreReader(ExpStore(tmp_path / "store")).run("r1")


def test_a_comparison_rule_stops_the_trainer_and_the_run_ends_cancelled_with_the_rule_in_words(tmp_path):
    out = _wrap(tmp_path, "--stop-if", "acc<0", "--stop-if", "loss>5")
    assert out.returncode == 143, out.stderr[-3000:]  # the trainer's SIGTERM
    completion = json.loads((tmp_path / "run" / "completion.json").read_text())
    words = "stopped by --stop-if 'loss>5': loss was 5.5 at step 9"
    assert completion["state"] == "cancelled" and completion["reason"] == "metric-stop-rule"
    assert completion["message"].startswith(words + "; entrypoint exited with code")
    run = _run(tmp_path)
    assert run.state == "cancelled"
    assert run.tags["tau.status.reason"] == "metric-stop-rule"
    assert run.tags["tau.status.message"].startswith(words)
    assert f"{words}; stopping the trainer" in out.stderr


def test_stop_on_nan_fires_on_a_non_finite_value_that_never_becomes_an_event(tmp_path):
    out = _wrap(tmp_path, "--stop-on-nan", args=("12",))
    assert out.returncode == 143, out.stderr[-3000:]
    run = _run(tmp_path)
    assert run.state == "cancelled"
    assert run.tags["tau.status.message"].startswith("stopped by --stop-on-nan: loss was NaN at step 12")
    request = json.loads((tmp_path / "run" / "collector" / "stop-request.json").read_text())
    assert request == {"rule": "--stop-on-nan", "metric": "loss", "step": 12, "value": "NaN",
                       "reason": "metric-stop-rule", "message": "stopped by --stop-on-nan: loss was NaN at step 12"}
    # The observation is kept as a non-finite row (DESIGN §5), and the points before it as they were.
    reader = StoreReader(ExpStore(tmp_path / "store"))
    assert reader.metric_summary("r1", "loss").non_finite_count == 1
    rows = reader.rows("r1", "loss")
    assert any(math.isnan(float(v)) for v in rows.value)


def test_stop_on_nan_for_one_metric_ignores_another_metrics_nan(tmp_path):
    script = """
import json
for step in range(5):
    print(json.dumps({"step": step, "loss": 1.0, "acc": float("nan") if step == 2 else 0.5}))
"""
    out = _wrap(tmp_path, "--stop-on-nan", "loss", script=script)
    assert out.returncode == 0, out.stderr[-3000:]
    assert _run(tmp_path).state == "succeeded"
    assert not (tmp_path / "run" / "collector" / "stop-request.json").exists()


def test_a_rule_that_never_holds_lets_the_trainer_finish(tmp_path):
    script = 'import json\nfor s in range(5):\n    print(json.dumps({"step": s, "loss": 1.0 / (s + 1)}))\n'
    out = _wrap(tmp_path, "--stop-if", "loss>2", "--stop-on-nan", script=script)
    assert out.returncode == 0, out.stderr[-3000:]
    assert _run(tmp_path).state == "succeeded"


@pytest.mark.parametrize(("flag", "value", "message"), [
    ("--stop-if", "loss>>1", "--stop-if 'loss>>1': use METRIC>VALUE"),
    ("--stop-on-nan", "loss<1", "--stop-on-nan 'loss<1': takes a metric name"),
])
def test_wrap_refuses_a_bad_rule_before_anything_starts(tmp_path, flag, value, message):
    out = _wrap(tmp_path, flag, value)
    assert out.returncode == 2
    assert message in out.stderr
    assert not (tmp_path / "run").exists()


def test_collect_refuses_a_bad_rule_as_a_usage_error(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "tau_collector", "collect", "--run", "r", "--project", "p", "--experiment", "e",
         "--group", "g", "--out", str(tmp_path / "out"), "--store", str(tmp_path / "store"),
         "--history", str(tmp_path / "h.jsonl"), "--stop-if", "loss"],
        capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "tau-collector collect: error: --stop-if 'loss': use METRIC>VALUE" in out.stderr


def test_a_stop_request_that_cannot_be_written_is_said_and_never_stops_the_metrics(tmp_path):
    blocked = tmp_path / "out"
    blocked.write_text("a file where the --out directory should be")
    said: list[str] = []
    watch = StopWatch([parse_stop_if("loss>1")], str(blocked), log=said.append)
    points = PointColumns("p", "e", "g", "r", "jsonl", ["loss"], [("", "")], [{}], np.zeros(2, np.int32),
                          np.array([4, 5]), np.zeros(2, np.int64), np.array([0.5, 2.0]), np.zeros(2, np.int64))
    firing = watch.check(Chunk(1, "history", "d", b"", 2, points=points))
    assert (firing.metric, firing.step, firing.value) == ("loss", 5, 2.0)
    assert said and "the stop request could not be written" in said[0] and said[0].endswith("the job keeps running")
