"""The ``local`` backend, run ids and records, the on-demand local Portal, and the magics' argument handling."""

from __future__ import annotations

import json
import os
import signal
import textwrap
import time

import pytest
from IPython.core.error import UsageError

from fixtures.local_backend import shell
from taunotebook.backends import NAME_MAX, iter_records, path_component, run_dir, validate_id
from taunotebook.backends.local import process_alive, start_ticks_of
from taunotebook.local_portal import ensure_portal, record_file, stop_portal
from taunotebook.submission import attach, runs, submit

from ..polling import DEADLINE


@pytest.mark.parametrize("good", ["a", "seed-1", "lr.0_1", "9x", "run-a1b2c3"])
def test_taugrid_ids_are_accepted(good):
    assert validate_id(good, "name") == good


INVALID = "is invalid (use lowercase alphanumerics with internal '-', '_' or '.')"
EDGE = "is invalid (must start and end with an alphanumeric)"


@pytest.mark.parametrize(("bad", "why"), [
    ("", "name is required"),
    ("Seed", f'name "Seed" {INVALID}'),
    ("-seed", f'name "-seed" {EDGE}'),
    ("seed.", f'name "seed." {EDGE}'),
    ("a b", f'name "a b" {INVALID}'),
    (" seed", f'name " seed" {INVALID}'),
    ("a/b", f'name "a/b" {INVALID}'),
    ("a\\b", f'name "a\\\\b" {INVALID}'),
    ("lösung", f'name "lösung" {INVALID}'),
])
def test_names_taugrid_rejects_are_refused(bad, why):
    with pytest.raises(ValueError) as raised:
        validate_id(bad, "name")
    assert str(raised.value) == why


def test_a_bad_name_submits_nothing(tau_home):
    with pytest.raises(ValueError, match=r'group "LR" is invalid \(use lowercase'):
        submit(code="print(1)\n", name="ok", group="LR")
    assert not tau_home.exists() or not list(tau_home.rglob("*"))


def test_a_script_runs_with_its_args_in_the_callers_directory_and_is_listed_and_reattached(tau_home, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""\
        import json, os, sys
        print("args", sys.argv[1:], "cwd", os.getcwd())
        print("run dir", os.environ["TAU_RUN_DIR"])
    """))
    first = submit(script, project="demo", args=["--lr", "0.1"], cwd=tmp_path)
    second = submit(code="print('second')\n", project="demo", name="train")
    assert first.run_id.startswith("train-") and second.run_id.startswith("train-")
    assert first.run_id != second.run_id
    assert first.wait(120) == "succeeded" and second.wait(120) == "succeeded"
    assert first.logs().splitlines() == [f"args ['--lr', '0.1'] cwd {tmp_path}", f"run dir {first.run_dir}"]
    assert first.run_dir == tau_home / "projects" / "default" / "runs" / first.run_id
    assert [r.run_id for r in runs()] == [second.run_id, first.run_id]  # newest first
    again = attach(first.run_id)
    assert (again.state, again.project, again.run_group_id, again.experiment_id) == ("succeeded", "demo", "train", "train")
    with pytest.raises(KeyError, match="no run 'nope'"):
        attach("nope")


def test_an_id_too_long_for_a_file_name_gets_a_short_distinct_directory():
    assert path_component("a" * NAME_MAX) == "a" * NAME_MAX
    long_a, long_b = "a" * 300, "a" * 299 + "b"
    assert len(path_component(long_a)) <= NAME_MAX and path_component(long_a).startswith("a" * 200 + "-")
    assert path_component(long_a) != path_component(long_b)
    assert path_component(long_a) == path_component("a" * 300)
    assert run_dir(long_a, long_b).parts[-3:] == (path_component(long_b), "runs", path_component(long_a))


def test_a_run_whose_ids_exceed_a_file_name_runs_is_listed_attached_and_served(tau_home):
    name, workspace, project = "n" * 300, "w" * 400, "p" * 500
    try:
        run = submit(code="import json\nfor s in range(3):\n    print(json.dumps({'step': s, 'loss': 1.0 / (s + 1)}))\n",
                     name=name, workspace=workspace, project=project)
        assert run.run_id.startswith(name + "-")
        assert run.wait(120) == "succeeded"
        assert all(len(part.encode()) <= NAME_MAX for part in run.run_dir.parts)
        assert [r.run_id for r in runs(workspace=workspace)] == [run.run_id]
        assert attach(run.run_id, workspace=workspace).project == project
        assert list(run.series("loss").values) == [1.0, 0.5, 1.0 / 3]
    finally:
        stop_portal(workspace, home=tau_home)


def test_a_job_killed_without_an_outcome_is_failed_and_its_orphaned_collector_finishes(tau_home):
    run = submit(code="import json, time\nprint(json.dumps({'step': 0, 'loss': 1.0}), flush=True)\n"
                      "time.sleep(600)\n", name="doomed")
    while "loss" not in run.metrics():
        assert run.state in ("pending", "running")
        time.sleep(0.2)
    os.killpg(run.record["pid"], signal.SIGKILL)  # wrapper and trainer; the collector has its own session
    assert run.wait(DEADLINE) == "failed"
    completion = json.loads((run.run_dir / "completion.json").read_text())
    assert (completion["state"], completion["reason"]) == ("failed", "workload-wrapper-lost")
    done = run.run_dir / "collector" / "done"
    deadline = time.monotonic() + DEADLINE
    while not done.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert done.read_text() == "done\n"  # the collector saw the outcome, published it and stopped
    with ensure_portal().client() as client:
        assert client.run(run.run_id).state == "failed"
        assert list(client.series(run.run_id, "tau/run_status").values) == [-1.0]


def test_a_reused_pid_is_not_taken_for_the_recorded_process():
    assert not process_alive(os.getpid(), start_ticks_of(os.getpid()) + 1)
    assert process_alive(os.getpid(), start_ticks_of(os.getpid()))


def test_the_local_portal_is_started_once_reused_and_replaced_when_its_process_is_gone(tau_home):
    first = ensure_portal()
    recorded = json.loads(record_file(home=tau_home).read_text())
    assert (recorded["pid"], recorded["port"], recorded["token"]) == (first.pid, first.port, first.token)
    assert oct(record_file(home=tau_home).stat().st_mode & 0o777) == "0o600"
    assert ensure_portal() == first
    other = ensure_portal("team-a")
    assert other.pid != first.pid and record_file("team-a", tau_home).name == "portal-team-a.json"
    assert stop_portal() is True
    replacement = ensure_portal()
    assert replacement.pid != first.pid and replacement.token != first.token
    with replacement.client() as client:
        assert client.experiment_runs("none").runs == ()


@pytest.mark.parametrize(("line", "cell", "message"), [
    ("--epochs 3", "print(1)", "%tau_submit: unrecognized arguments: --epochs"),
    ("--backend slurm", "print(1)", "argument --backend: invalid choice: 'slurm'"),
    ("--name Bad", "print(1)", '%tau_submit: name "Bad" is invalid (use lowercase alphanumerics'),
    ("--project a/b", "print(1)", '%tau_submit: project "a/b" is invalid (use lowercase alphanumerics'),
    ("--as 1x", "print(1)", "--as '1x' is not a Python identifier"),
    ("--dry-run", "print(1)", "--dry-run is for the tau backend"),
    ("train.py", "print(1)", "unexpected argument 'train.py': the cell body is the script"),
    ("--proj demo", "print(1)", "unrecognized arguments: --proj"),  # no abbreviations
])
def test_magic_usage_problems_are_one_line_usage_errors_and_submit_nothing(tau_home, line, cell, message):
    with pytest.raises(UsageError) as caught:
        shell().run_cell_magic("tau_submit", line, cell)
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert list(iter_records(tau_home)) == []


def test_the_line_form_submits_a_script_with_its_args_and_binds_the_handle(tau_home, tmp_path, capsys):
    script = tmp_path / "train.py"
    script.write_text("import sys\nprint('got', sys.argv[1:])\n")
    ip = shell()
    ip.run_line_magic("tau_submit", f"--name line --no-pane --as job {script} --lr 0.1 --epochs 2")
    run = ip.user_ns["job"]
    assert capsys.readouterr().out.startswith(f"run {run.run_id} submitted (local; project default, group line)")
    assert run.wait(120) == "succeeded"
    assert run.logs() == "got ['--lr', '0.1', '--epochs', '2']\n"
    with pytest.raises(UsageError, match="give a script"):
        ip.run_line_magic("tau_submit", "--name x")
    with pytest.raises(UsageError, match="no run 'missing'"):
        ip.run_line_magic("tau_logs", "missing")


def test_an_extra_tfevents_logdir_is_watched_beside_the_runs_own(tau_home, tmp_path):
    logdir = tmp_path / "tb"
    script = tmp_path / "tb_train.py"
    script.write_text(textwrap.dedent(f"""\
        from tensorboardX import SummaryWriter
        writer = SummaryWriter({str(logdir)!r})
        for step in range(5):
            writer.add_scalar("eval/acc", step / 4, step)
        writer.close()
    """))
    run = submit(script, name="tb-extra", tfevents=[str(logdir)])
    assert run.record["tfevents"] == [str(logdir)]
    assert run.wait(180) == "succeeded"
    series = run.series("eval/acc")
    assert list(series.steps) == [0, 1, 2, 3, 4]
    assert list(series.values) == [0.0, 0.25, 0.5, 0.75, 1.0]


def test_a_run_cancelled_right_after_submission_ends_cancelled(tau_home):
    run = submit(code="import time\ntime.sleep(600)\n", name="early")
    run.cancel()  # before the collector is ready
    assert run.wait(120) == "cancelled"
    assert json.loads((run.run_dir / "completion.json").read_text())["reason"] == "workload-termination"
