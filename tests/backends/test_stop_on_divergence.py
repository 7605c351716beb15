"""Stop on divergence through ``submit()``/``%%tau_submit`` on the local backend: a real diverging trainer stopped.

The trainer (``fixtures.local_backend.DIVERGING``) is plain gradient descent on a least-squares problem with a
step size too large for it: its loss grows geometrically, overflows to infinity, then NaN, and it would run
forever. The step at which each rule must fire is computed by the same arithmetic (``first_step``).
"""

from __future__ import annotations

import json
import math

import pytest
from IPython.core.error import UsageError

from fixtures.local_backend import DIVERGING, first_step, shell
from taunotebook.backends import BackendError, iter_records
from taunotebook.local_portal import ensure_portal
from taunotebook.submission import submit


def test_submit_stop_if_stops_a_diverging_trainer_and_the_run_answer_says_which_rule_at_which_step(tau_home):
    step, loss = first_step(lambda v: v > 1e6)
    run = submit(code=DIVERGING, name="diverge", stop_if="loss>1e6")
    assert run.wait(180) == "cancelled"
    completion = json.loads((run.run_dir / "completion.json").read_text())
    assert completion["reason"] == "metric-stop-rule"
    words = f"stopped by --stop-if 'loss>1e6': loss was {loss!r} at step {step}"
    assert completion["message"].startswith(words)
    with ensure_portal().client() as client:
        answer = client.run(run.run_id)
        assert answer.state == "cancelled"
        assert answer.tags["tau.status.reason"] == "metric-stop-rule"
        assert answer.tags["tau.status.message"].startswith(words)
        assert max(client.series(run.run_id, "loss").steps) >= step  # what came before the stop is kept


def test_stop_on_nan_in_the_magic_stops_at_the_first_infinite_loss(tau_home):
    step, loss = first_step(lambda v: not math.isfinite(v))
    spelled = "NaN" if math.isnan(loss) else ("Infinity" if loss > 0 else "-Infinity")
    ip = shell()
    ip.run_cell_magic("tau_submit", "--name nan-stop --no-pane --stop-on-nan loss --as job", DIVERGING)
    run = ip.user_ns["job"]
    assert run.wait(180) == "cancelled"
    message = json.loads((run.run_dir / "completion.json").read_text())["message"]
    assert message.startswith(f"stopped by --stop-on-nan loss: loss was {spelled} at step {step};")
    # Every stored point, the non-finite one included, as columns (the v2 series leaves it out).
    columns = run.series("loss", full=True)
    assert columns.step.tolist()[:step + 1] == list(range(step + 1))
    assert not math.isfinite(columns.value[step]) and columns.non_finite_count >= 1
    assert len(run.series("loss", full=True, start_step=step, end_step=step)) == 1


@pytest.mark.parametrize(("line", "message"), [
    ("--stop-if 'loss>>1'", "%tau_submit: --stop-if 'loss>>1': use METRIC>VALUE, METRIC<VALUE"),
    ("--stop-if loss", "%tau_submit: --stop-if 'loss': use METRIC>VALUE"),
    ("--stop-on-nan=loss<1", "%tau_submit: --stop-on-nan 'loss<1': takes a metric name"),
])
def test_a_bad_rule_in_the_magic_is_a_usage_error_naming_the_flag_and_submits_nothing(tau_home, line, message):
    with pytest.raises(UsageError) as caught:
        shell().run_cell_magic("tau_submit", line, "print(1)")
    assert message in str(caught.value)
    assert list(iter_records(tau_home)) == []


def test_a_bad_rule_in_submit_names_the_parameter(tau_home):
    with pytest.raises(ValueError, match="^stop_if 'loss=1': use METRIC>VALUE"):
        submit(code="print(1)\n", stop_if=["loss>1", "loss=1"])
    assert list(iter_records(tau_home)) == []


def test_the_tau_backend_refuses_stop_rules_before_anything_is_written(tau_home):
    with pytest.raises(BackendError, match="--stop-on-nan and --stop-if are not supported by the tau backend"):
        submit(code="print(1)\n", backend="tau", dry_run=True, stop_on_nan=True)
    assert list(iter_records(tau_home)) == []
