"""``%%tau_submit`` end to end in real kernels: cells become local runs whose series the local Portal serves."""

from __future__ import annotations

import math
import re

import pytest

from fixtures.notebook_kernel import KERNEL, execute, notebook, text, usage_errors
from taunotebook.local_portal import ensure_portal
from taunotebook.submission import attach

pytestmark = pytest.mark.slow


def portal_series(run_id: str, metric: str, workspace: str = "default"):
    """The stored series through the local Portal the kernel started (recorded in TAU_HOME/portal.json)."""
    with ensure_portal(workspace).client() as client:
        return client.series(run_id, metric)


def submitted_run_id(cell) -> str:
    match = re.search(r"run (\S+) submitted", text(cell))
    assert match, text(cell)
    return match.group(1)


def test_rows_printed_by_a_cell_reach_the_store_and_the_portal_serves_them(tau_home, tmp_path):
    nb = execute(notebook(
        "%load_ext taunotebook",
        """
        %%tau_submit --project demo --name sgd-demo --group lr-sweep
        import json, math
        print("starting")
        for step in range(200):
            print(json.dumps({"step": step, "loss": 2.0 * math.exp(-step / 400)}))
        """,
        "print(tau_run.wait(120), tau_run.run_id)",
        "print(tau_run.logs())",
        "%tau_runs",
    ), tmp_path)
    run_id = submitted_run_id(nb.cells[1])
    assert re.fullmatch(r"sgd-demo-[0-9a-f]{6}", run_id)
    # Beneath the cell: the live loss pane (a widget view), or, where the pane cannot be built, one status line.
    widget = [o for o in nb.cells[1].outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    status = [line for line in text(nb.cells[1]).splitlines() if line.startswith("(no loss pane: ")]
    assert len(widget) + len(status) == 1, nb.cells[1].outputs
    assert text(nb.cells[2]).split() == ["succeeded", run_id]
    assert text(nb.cells[3]).strip() == "starting"  # non-JSON lines are the job log; rows are not
    listing = text(nb.cells[4]).splitlines()
    assert listing[0].split()[:5] == ["RUN", "STATE", "BACKEND", "PROJECT", "GROUP"]
    assert listing[1].split()[:5] == [run_id, "succeeded", "local", "demo", "lr-sweep"]

    series = portal_series(run_id, "loss")
    assert list(series.steps) == list(range(200))
    assert list(series.values) == [2.0 * math.exp(-s / 400) for s in range(200)]
    run = attach(run_id)
    assert (run.project, run.run_group_id, run.experiment_id) == ("demo", "lr-sweep", "lr-sweep")
    assert list(run.series("loss").steps) == list(range(200))  # the same series through the Run handle
    assert (tau_home / "projects" / "default" / "runs" / run_id / "metrics-history-attempt-0").is_dir()


def test_a_torch_summary_writer_on_tau_tensorboard_dir_is_collected(tau_home, tmp_path):
    nb = execute(notebook(
        "%load_ext taunotebook",
        """
        %%tau_submit --project demo --name tb --no-pane --as tb_run
        import os
        from torch.utils.tensorboard import SummaryWriter
        writer = SummaryWriter(os.environ["TAU_TENSORBOARD_DIR"])
        for step in range(30):
            writer.add_scalar("train/loss", 1.0 / (step + 1), step)
        writer.close()
        """,
        "print(tb_run.wait(180))",
    ), tmp_path, timeout=240)
    run_id = submitted_run_id(nb.cells[1])
    assert text(nb.cells[2]).strip() == "succeeded"
    series = portal_series(run_id, "train/loss")
    assert list(series.steps) == list(range(30))
    assert [round(v, 6) for v in series.values] == [round(1.0 / (s + 1), 6) for s in range(30)]  # float32


def test_a_failing_cell_ends_failed_with_its_rows_and_traceback_kept(tau_home, tmp_path):
    nb = execute(notebook(
        "%load_ext taunotebook",
        """
        %%tau_submit --name crash --no-pane
        import json
        for step in range(5):
            print(json.dumps({"step": step, "loss": 1.0 + step}))
        raise RuntimeError("diverged at step 5")
        """,
        "%tau_logs {tau_run.run_id} --follow",
        "print(tau_run.state)",
    ), tmp_path)
    run_id = submitted_run_id(nb.cells[1])
    assert "RuntimeError: diverged at step 5" in text(nb.cells[2])  # followed to the end of the run
    assert text(nb.cells[3]).strip() == "failed"
    assert list(portal_series(run_id, "loss").values) == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert list(portal_series(run_id, "tau/run_status").values) == [-1.0]


def test_tau_cancel_stops_a_running_cell_and_the_run_ends_cancelled(tau_home, tmp_path):
    nb = execute(notebook(
        "%load_ext taunotebook",
        """
        %%tau_submit --name forever --no-pane
        import json, time
        step = 0
        while True:
            print(json.dumps({"step": step, "loss": 1.0}), flush=True)
            step += 1
            time.sleep(0.02)
        """,
        """
        import time
        while tau_run.state != "running" or "loss" not in tau_run.metrics():
            time.sleep(0.2)
        print(tau_run.state)
        """,
        "%tau_cancel {tau_run.run_id}",
        "print(tau_run.wait(120))",
        "%tau_cancel {tau_run.run_id}",
    ), tmp_path)
    run_id = submitted_run_id(nb.cells[1])
    assert text(nb.cells[2]).strip() == "running"
    assert text(nb.cells[3]).strip() == f"cancelling run {run_id}"
    assert text(nb.cells[4]).strip() == "cancelled"
    assert text(nb.cells[5]).strip() == f"run {run_id} already ended: cancelled"
    assert list(portal_series(run_id, "tau/run_status").values) == [-2.0]
    assert len(portal_series(run_id, "loss")) > 0


def test_a_run_outlives_a_kernel_restart_and_is_reattached_by_id(tau_home, tmp_path):
    from nbclient import NotebookClient
    from nbclient.util import run_sync

    nb = notebook(
        "%load_ext taunotebook",
        """
        %%tau_submit --name survivor --no-pane
        import json, os, time
        for step in range(150):
            print(json.dumps({"step": step, "loss": 0.5 ** (step / 50)}), flush=True)
            time.sleep(0.04)
        while not os.path.exists(RELEASE):  # ends once the test saw it running after the restart, however slow
            time.sleep(0.05)
        """.replace("RELEASE", repr(str(tmp_path / "release"))),
        """
        import time
        while tau_run.state != "running":
            time.sleep(0.1)
        print(tau_run.run_id)
        """,
        # after the restart: a new kernel finds the run, still running, and waits for it
        "%load_ext taunotebook",
        "%tau_runs",
        "import taunotebook\nprint(taunotebook.attach('RUN_ID').state)",
        "%tau_pane RUN_ID --as again",
        "print(again.wait(120))",
    )
    client = NotebookClient(nb, kernel_name=KERNEL, timeout=180, resources={"metadata": {"path": str(tmp_path)}})
    with client.setup_kernel():
        for index in range(3):
            client.execute_cell(nb.cells[index], index)
        run_id = text(nb.cells[2]).strip()
        kernel_pid = client.km.provisioner.process.pid
        run_sync(client.km.restart_kernel)(now=True)  # SIGKILL to the kernel's process group, then a new kernel
        assert client.km.provisioner.process.pid != kernel_pid
        run_sync(client.kc.wait_for_ready)(timeout=60)
        for index in range(3, len(nb.cells)):
            nb.cells[index].source = nb.cells[index].source.replace("RUN_ID", run_id)
            client.execute_cell(nb.cells[index], index)
            if index == 5:  # the new kernel has seen the job running: let it end
                (tmp_path / "release").write_text("")
    assert run_id in text(nb.cells[4])
    assert text(nb.cells[5]).strip() == "running"  # the job did not die with the kernel
    assert text(nb.cells[7]).strip() == "succeeded"
    series = portal_series(run_id, "loss")
    assert list(series.steps) == list(range(150))


def test_usage_errors_in_a_kernel_are_one_line_and_submit_nothing(tau_home, tmp_path):
    nb = execute(notebook(
        "%load_ext taunotebook",
        "%%tau_submit --name Bad_Name\nprint(1)",
        "%%tau_submit --epochs 3\nprint(1)",
        "%%tau_submit --backend tau --project demo\nprint(1)",
        "%%tau_submit --backend tau --dry-run --project demo --name sgd --group lr\nprint(1)",
    ), tmp_path, allow_errors=True)
    assert usage_errors(nb.cells[1]) == [
        "%tau_submit: name \"Bad_Name\" is invalid (use lowercase alphanumerics with internal '-', '_' or '.')"]
    assert usage_errors(nb.cells[2]) == ["%tau_submit: unrecognized arguments: --epochs"]
    [message] = usage_errors(nb.cells[3])
    assert message.startswith("%tau_submit: the `tau` CLI is not on PATH")
    dry = text(nb.cells[4])
    assert dry.startswith('# tau.yaml\nname: "sgd-')
    assert 'experiment:\n  project: "demo"\n  name: "lr"\n  group: "lr"\n' in dry
    assert dry.rstrip().endswith("$ tau run --workspace default --config tau.yaml")
    assert not (tau_home / "projects").exists() or not any((tau_home / "projects").rglob("run.json"))


def test_tau_submit_config_reaches_the_job_the_store_and_the_portal(tau_home, tmp_path):
    (tmp_path / "base.yaml").write_text("optimizer:\n  name: sgd\n  momentum: 0.9\nepochs: 3\n")
    nb = execute(notebook(
        "%load_ext taunotebook",
        """
        %%tau_submit --project demo --name cfg --group lr-sweep --no-pane --config lr=0.03 --config optimizer.name=adam --config-file base.yaml
        import json, os
        config = json.load(open(os.environ["TAU_RUN_CONFIG"]))
        for step in range(config["epochs"]):
            print(json.dumps({"step": step, "loss": config["lr"] * (3 - step)}))
        print("optimizer", config["optimizer"]["name"], config["optimizer"]["momentum"])
        """,
        "print(tau_run.wait(120), tau_run.run_id)",
        "print(tau_run.logs())",
        "%%tau_submit --project demo --name bad --no-pane --config lr\nprint(1)",
        "%%tau_submit --project demo --name bad --no-pane --config-file missing.json\nprint(1)",
    ), tmp_path, allow_errors=True)
    run_id = submitted_run_id(nb.cells[1])
    assert text(nb.cells[2]).split() == ["succeeded", run_id]
    assert text(nb.cells[3]).strip() == "optimizer adam 0.9"  # --config wins over the file's value
    assert usage_errors(nb.cells[4]) == ["%tau_submit: --config 'lr' must be KEY=VALUE, e.g. --config lr=0.1"]
    [missing] = usage_errors(nb.cells[5])
    assert missing.startswith("%tau_submit: --config-file ") and "missing.json" in missing

    with ensure_portal("default").client() as client:
        config = client.run_config(run_id)
        assert config.available and config.format == "json"
        assert config.config == {"epochs": 3, "lr": 0.03, "optimizer": {"momentum": 0.9, "name": "adam"}}
        assert config.fields == {"epochs": 3, "lr": 0.03, "optimizer.momentum": 0.9, "optimizer.name": "adam"}
        assert client.run(run_id).config_hash == config.config_hash
        (listed,) = client.experiment_runs("lr-sweep", config={"lr": 0.03}, include_config=True).runs
        assert listed.run_id == run_id and listed.config == config.fields
        assert client.experiment_runs("lr-sweep", config={"lr": 0.1}).runs == ()
