"""The ``tau`` backend: TauGrid's run config rendered and validated, ``--dry-run``, and ``tau run`` via a stand-in."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from taunotebook.backends import BackendError, BackendUnavailable, RunSpec
from taunotebook.backends.tau import render_config, to_yaml, validate_config
from taunotebook.submission import runs, submit

OFFLOAD = "when metrics.offload.enabled is true"


@pytest.fixture
def tau_home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("TAU_HOME", str(home))
    monkeypatch.delenv("TAU_DATA_PVC", raising=False)
    monkeypatch.delenv("TAU_PORTAL_URL", raising=False)
    return home


@pytest.fixture
def stand_in(tmp_path, monkeypatch) -> Path:
    """A recording `tau` on PATH: it writes its argv, cwd and the config it was given to calls.jsonl."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls.jsonl"
    script = bin_dir / "tau"
    script.write_text(textwrap.dedent(f"""\
        #!{sys.executable}
        import json, os, sys
        argv = sys.argv[1:]
        config = argv[argv.index("--config") + 1] if "--config" in argv else None
        with open({str(calls)!r}, "a") as f:
            f.write(json.dumps({{"argv": argv, "cwd": os.getcwd(),
                                 "config": open(config).read() if config else None}}) + "\\n")
        if os.environ.get("TAU_STAND_IN_FAIL"):
            print("tau: workspace quota exceeded", file=sys.stderr)
            sys.exit(3)
        print("run submitted")
    """))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return calls


def spec(**over) -> RunSpec:
    values = {"run_id": "sgd-demo-abc123", "name": "sgd-demo", "project": "demo", "experiment": "lr-sweep",
              "group": "lr-sweep", "workspace": "team-a", "script": Path("train.py")}
    return RunSpec(**{**values, **over})


def test_the_rendered_config_enables_offload_with_the_history_glob_and_the_experiment_identity():
    assert render_config(spec(), data_pvc="blob-training") == {
        "name": "sgd-demo-abc123",
        "engine": "job",
        "entrypoint": "tau_entry.py",
        "storage": {"data_pvc": "blob-training", "output": "/data/projects/team-a/runs/sgd-demo-abc123"},
        "metrics": {"history": ["metrics-history-attempt-0/*.jsonl"], "offload": {"enabled": True}},
        "experiment": {"project": "demo", "name": "lr-sweep", "group": "lr-sweep"},
    }
    assert validate_config(render_config(spec())) == []


def test_the_config_is_written_as_block_yaml_with_quoted_strings():
    assert to_yaml(render_config(spec(), data_pvc="blob-training")) == textwrap.dedent("""\
        name: "sgd-demo-abc123"
        engine: "job"
        entrypoint: "tau_entry.py"
        storage:
          data_pvc: "blob-training"
          output: "/data/projects/team-a/runs/sgd-demo-abc123"
        metrics:
          history:
            - "metrics-history-attempt-0/*.jsonl"
          offload:
            enabled: true
        experiment:
          project: "demo"
          name: "lr-sweep"
          group: "lr-sweep\"""")


V = "validate tau.yaml: "


@pytest.mark.parametrize(("change", "problem"), [
    (lambda c: c["metrics"].update(history=[]), f"{V}metrics.history requires at least one JSONL path {OFFLOAD}"),
    (lambda c: c["metrics"].update(history=[" "]), f"{V}metrics.history[0] must not be empty"),
    (lambda c: c["metrics"].update(history=["/scratch/h/*.jsonl"]),
     f'{V}metrics.history[0] "/scratch/h/*.jsonl": absolute paths must be under /data'),
    (lambda c: c["metrics"].update(history=["../other/*.jsonl"]),
     f'{V}metrics.history[0] "../other/*.jsonl": relative paths must not escape storage.output'),
    (lambda c: c["experiment"].update(project=""), f"{V}experiment.project is required {OFFLOAD}"),
    (lambda c: c["experiment"].update(name="", group=""), f"{V}experiment.name is required {OFFLOAD}"),
    (lambda c: c["experiment"].update(project="Demo"),
     f"{V}experiment.project: project \"Demo\" is invalid (use lowercase alphanumerics with internal '-', '_' or '.')"),
    (lambda c: c["experiment"].update(group="a/b"),
     f"{V}experiment.group: group \"a/b\" is invalid (use lowercase alphanumerics with internal '-', '_' or '.')"),
    (lambda c: c.update(image_pull="always"),
     "parse tau.yaml: yaml: unmarshal errors:\n  line 15: field image_pull not found in type runconfig.Config"),
    (lambda c: c["metrics"]["offload"].update(mode="fast"),
     "parse tau.yaml: yaml: unmarshal errors:\n  line 11: field mode not found in type runconfig.MetricsOffload"),
    (lambda c: c.update(runtime={"env": {"NCCL_DEBUG": "INFO", "TAU_TOKEN": "x", "LR": "0.1"}}),
     f"{V}runtime.env contains Tau-managed keys that cannot be overridden: NCCL_DEBUG, TAU_TOKEN; remove them from "
     "runtime.env (settable TAU_ keys: TAU_RESUME_FROM, TAU_RETRY_ATTEMPT, TAU_RETRY_MAX, TAU_RETRY_REASON)"),
    (lambda c: c.update(runtime={"env": {"BLOB": "x" * 65537}}),
     f'{V}literal environment variable "BLOB" is 65537 bytes; maximum is 65536 bytes: publish source or artifacts '
     "once and reference a digest-pinned OCI image with run.source instead of embedding content in environment "
     "variables"),
    (lambda c: c.update(engine="kubernetes"), 'engine "kubernetes" is not valid; use job or rayjob'),
])
def test_the_run_config_rules_of_taugrid_are_enforced(change, problem):
    config = render_config(spec())
    change(config)
    assert validate_config(config) == [problem]


def test_the_whole_schema_of_taugrid_passes_and_engine_aliases_are_taken():
    config = render_config(spec())
    config.update(engine="ray", compute={"workers": 2, "gpus_per_worker": 1, "worker_memory_limit": "8Gi"},
                  policy={"queue": "q", "profile": "p"}, resilience={"max_retries": 2, "backoff_initial": "30s"},
                  execution={"launcher": "ray-train"}, profiler={"mode": "nsys"}, run={"working_dir": "."})
    assert validate_config(config) == []


def test_experiment_name_falls_back_to_the_slugged_title_then_the_group():
    config = render_config(spec())
    config["experiment"] = {"project": "demo", "title": "My Sweep #2", "group": "g"}
    assert validate_config(config) == []
    config["experiment"] = {"project": "demo", "group": "g"}
    assert validate_config(config) == []


def test_dry_run_prints_the_config_and_the_command_and_submits_nothing(tau_home, monkeypatch):
    monkeypatch.setenv("PATH", "")  # no tau CLI needed for a dry run
    printed: list[str] = []
    run = submit(code="print(1)\n", backend="tau", project="demo", name="sgd-demo", group="lr-sweep",
                 dry_run=True, out=printed.append)
    config_text, command = printed
    assert config_text == "# tau.yaml\n" + to_yaml(run.record["config"]) + "\n"
    assert run.record["config"]["experiment"] == {"project": "demo", "name": "lr-sweep", "group": "lr-sweep"}
    assert command == "$ tau run --workspace default --config tau.yaml"
    assert run.record["dry_run"] is True
    assert runs() == []
    assert not (tau_home / "projects" / "default" / "runs" / run.run_id).exists()


def test_a_dry_run_with_ids_longer_than_a_file_name_prints_the_config(tau_home, monkeypatch):
    monkeypatch.setenv("PATH", "")
    printed: list[str] = []
    name, workspace = "n" * 300, "w" * 400
    run = submit(code="print(1)\n", backend="tau", project="demo", name=name, workspace=workspace, dry_run=True,
                 out=printed.append)
    assert run.record["name"] == name and printed[1] == f"$ tau run --workspace {workspace} --config tau.yaml"
    output = run.record["config"]["storage"]["output"]
    assert all(len(part) <= 255 for part in output.split("/"))
    assert validate_config(run.record["config"]) == []
    assert runs() == []


def test_without_the_tau_cli_the_submission_is_refused_before_anything_is_written(tau_home, monkeypatch):
    monkeypatch.setenv("PATH", "")
    with pytest.raises(BackendUnavailable, match=r"the `tau` CLI is not on PATH"):
        submit(code="print(1)\n", backend="tau", project="demo")
    assert not (tau_home / "projects").exists()


def test_tau_run_is_called_with_the_workspace_and_the_rendered_config(tau_home, stand_in, tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import json\nfor s in range(3):\n    print(json.dumps({'step': s, 'loss': 1.0 / (s + 1)}))\n"
                      "print('done training')\n")
    run = submit(script, backend="tau", project="demo", name="sgd", group="lr", workspace="team-a",
                 args=["--lr", "0.1"])
    [call] = [json.loads(line) for line in stand_in.read_text().splitlines()]
    stage = tau_home / "projects" / "team-a" / "runs" / run.run_id / "tau"
    assert call["argv"] == ["run", "--workspace", "team-a", "--config", str(stage / "tau.yaml")]
    assert call["cwd"] == str(stage)
    assert call["config"] == to_yaml(run.record["config"]) + "\n"
    assert run.record["config"]["storage"]["output"] == f"/data/projects/team-a/runs/{run.run_id}"
    assert run.state == "submitted"  # no TAU_PORTAL_URL to ask
    assert run.lifecycle.text == "submitted: set TAU_PORTAL_URL to follow the run on TauGrid's Portal"
    assert run.resources == {}
    assert run.uses_local_store is False  # its series come from TauGrid's Portal
    assert [r.run_id for r in runs()] == [run.run_id]

    # The staged entrypoint runs the script with its args and writes house history rows under the output.
    output = tmp_path / "output"
    done = subprocess.run([sys.executable, str(stage / "tau_entry.py")], capture_output=True, text=True,
                          env={**os.environ, "TAU_RUN_OUTPUT": str(output)}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "done training\n"
    rows = [json.loads(line) for chunk in sorted((output / "metrics-history-attempt-0").glob("chunk-*.jsonl"))
            for line in chunk.read_text().splitlines()]
    assert [(r["_step"], r["loss"]) for r in rows] == [(0, 1.0), (1, 0.5), (2, 1.0 / 3)]
    assert all(isinstance(r["_timestamp"], float) and r["_timestamp"] > 0 for r in rows)


def test_the_staged_entrypoint_samples_the_trainer_as_system_metrics(tau_home, stand_in, tmp_path):
    # The trainer ends once the launcher's sampler has written its first system/ row.
    script = tmp_path / "train.py"
    script.write_text("import glob, os, time\n"
                      "pattern = os.path.join(os.environ['TAU_RUN_OUTPUT'], 'metrics-history-attempt-0', 'chunk-*')\n"
                      "while not any('system/rss_bytes' in open(p).read() for p in glob.glob(pattern)):\n"
                      "    time.sleep(0.05)\n")
    run = submit(script, backend="tau", project="demo", name="sgd", group="lr", workspace="team-a")
    stage = tau_home / "projects" / "team-a" / "runs" / run.run_id / "tau"
    output = tmp_path / "output"
    done = subprocess.run([sys.executable, str(stage / "tau_entry.py")], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TAU_RUN_OUTPUT": str(output), "TAU_COLLECTOR_SYSTEM_INTERVAL": "0.2"})
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for chunk in sorted((output / "metrics-history-attempt-0").glob("chunk-*.jsonl"))
            for line in chunk.read_text().splitlines()]
    assert rows[0]["_step"] == 0 and rows[0]["system/process_count"] >= 1 and rows[0]["system/rss_bytes"] > 0


def test_a_bad_system_interval_in_the_job_is_said_and_the_trainer_runs(tau_home, stand_in, tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import json\nprint(json.dumps({'step': 0, 'loss': 1.0}))\n")
    run = submit(script, backend="tau", project="demo", name="sgd", group="lr", workspace="team-a")
    stage = tau_home / "projects" / "team-a" / "runs" / run.run_id / "tau"
    done = subprocess.run([sys.executable, str(stage / "tau_entry.py")], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TAU_RUN_OUTPUT": str(tmp_path / "output"),
                               "TAU_COLLECTOR_SYSTEM_INTERVAL": "often"})
    assert done.returncode == 0, done.stderr
    assert "tau_entry: $TAU_COLLECTOR_SYSTEM_INTERVAL: invalid duration 'often'" in done.stderr
    assert "; sampling every 10s" in done.stderr


@pytest.mark.parametrize(("value", "system"), [("200ms", True), ("1m30s", False), ("0", False)])
def test_the_job_reads_the_system_interval_in_the_one_duration_syntax(tau_home, stand_in, tmp_path, value, system):
    # With 200ms the trainer waits for the sampler's first row; 1m30s (no row before the trainer ends) and 0
    # (off) are taken without the warning a bad value gets.
    script = tmp_path / "train.py"
    script.write_text("import glob, json, os, sys, time\n"
                      "pattern = os.path.join(os.environ['TAU_RUN_OUTPUT'], 'metrics-history-attempt-0', 'chunk-*')\n"
                      "while sys.argv[1] == 'wait' and not any('system/' in open(p).read() "
                      "for p in glob.glob(pattern)):\n"
                      "    time.sleep(0.05)\n"
                      "print(json.dumps({'step': 0, 'loss': 1.0}))\n")
    run = submit(script, backend="tau", project="demo", name="sgd", group="lr", workspace="team-a",
                 args=["wait" if system else "go"])
    stage = tau_home / "projects" / "team-a" / "runs" / run.run_id / "tau"
    output = tmp_path / "output"
    done = subprocess.run([sys.executable, str(stage / "tau_entry.py")], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TAU_RUN_OUTPUT": str(output), "TAU_COLLECTOR_SYSTEM_INTERVAL": value})
    assert done.returncode == 0, done.stderr
    assert "tau_entry:" not in done.stderr
    text = "".join(chunk.read_text() for chunk in (output / "metrics-history-attempt-0").glob("chunk-*.jsonl"))
    assert ("system/" in text) is system and '"loss"' in text


def test_a_failing_tau_run_is_reported_with_its_last_line_and_leaves_no_run(tau_home, stand_in, monkeypatch):
    monkeypatch.setenv("TAU_STAND_IN_FAIL", "1")
    with pytest.raises(BackendError, match=r"`tau run` exited with 3: tau: workspace quota exceeded"):
        submit(code="print(1)\n", backend="tau", project="demo")
    assert runs() == []


def test_the_dry_run_prints_exactly_the_file_tau_run_is_given(tau_home, stand_in, monkeypatch):
    """The same submission twice, as a dry run and for real (same run id): the printed config is byte for byte the
    file the stand-in `tau` recorded, and the printed command is the call with the staged file's name."""
    monkeypatch.setattr("taunotebook.submission.new_run_id", lambda name, workspace, home=None: "sgd-fixed1")
    options = dict(code="print(1)\n", backend="tau", project="demo", name="sgd", group="lr", workspace="team-a",
                   gpus=2, image="repo/train:1", queue="gpu-a", env={"MODE": "a: b #c"})
    printed: list[str] = []
    submit(**options, dry_run=True, out=printed.append)
    submit(**options)
    [call] = [json.loads(line) for line in stand_in.read_text().splitlines()]
    config_text, command = printed
    assert config_text == "# tau.yaml\n" + call["config"]
    assert command.split() == ["$", "tau", *call["argv"][:-1], "tau.yaml"]
    assert call["argv"][-1].endswith("/tau.yaml")


def test_checkpoints_are_registered_in_the_job_by_wrap_with_their_step(tau_home, stand_in, tmp_path):
    """``--checkpoints`` on tau: the config sent to `tau run` reads the history where wrap writes it, the staged
    launcher runs the script under `tau-collector wrap --checkpoints`, and running it here registers each
    checkpoint with its step in the run's own store under the output."""
    from tau_collector.expstore import StoreReader, open_store

    script = tmp_path / "train.py"
    script.write_text("import json, os\nos.makedirs('ckpt', exist_ok=True)\n"
                      "for step in (10, 20):\n"
                      "    open(f'ckpt/ckpt-{step}.pt', 'wb').write(b'w' * step)\n"
                      "    print(json.dumps({'step': step, 'loss': 1.0 / step}))\n")
    run = submit(script, backend="tau", project="demo", name="sgd", group="lr", workspace="team-a",
                 checkpoints="ckpt/ckpt-*.pt")
    [call] = [json.loads(line) for line in stand_in.read_text().splitlines()]
    assert call["config"] == to_yaml(run.record["config"]) + "\n"
    assert run.record["config"]["metrics"]["history"] == ["taunotebook/metrics-history-attempt-0/*.jsonl"]
    assert '"taunotebook/metrics-history-attempt-0/*.jsonl"' in call["config"]
    stage = tau_home / "projects" / "team-a" / "runs" / run.run_id / "tau"
    entry = (stage / "tau_entry.py").read_text()
    assert "checkpoints = ['ckpt/ckpt-*.pt']" in entry and '"wrap"' in entry

    output, workdir = tmp_path / "output", tmp_path / "pod"
    workdir.mkdir()
    done = subprocess.run([sys.executable, str(stage / "tau_entry.py")], capture_output=True, text=True, timeout=180,
                          cwd=workdir, env={**os.environ, "TAU_RUN_OUTPUT": str(output),
                                            "TAU_COLLECTOR_SYSTEM_INTERVAL": "0"})
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for chunk in (output / "taunotebook" / "metrics-history-attempt-0").glob("chunk-*.jsonl")
            for line in chunk.read_text().splitlines()]
    assert sorted(r["_step"] for r in rows) == [10, 20]
    reader = StoreReader(open_store(output / "store"))
    saved = reader.artifacts(run.run_id, type="checkpoint")
    assert [(a.step, a.uri, a.size_bytes) for a in saved] == [
        (10, str(workdir / "ckpt" / "ckpt-10.pt"), 10), (20, str(workdir / "ckpt" / "ckpt-20.pt"), 20)]
    assert reader.run(run.run_id).tags["tau.status.checkpoint_uri"] == str(workdir / "ckpt" / "ckpt-20.pt")


def test_the_configs_checkpoint_path_and_storage_checkpoint_are_the_checkpoints(tau_home, stand_in, tmp_path):
    base = tmp_path / "tau.yaml"
    base.write_text('name: "team"\nengine: "job"\nentrypoint: "x.py"\nstorage:\n  checkpoint: "last.safetensors"\n'
                    'resilience:\n  max_retries: 2\n  checkpoint_path: "/data/ckpt/team"\n')
    run = submit(code="print(1)\n", backend="tau", project="demo", base_config=base, dry_run=True, out=lambda _: None)
    assert run.record["config"]["resilience"] == {"max_retries": 2, "checkpoint_path": "/data/ckpt/team"}
    assert run.record["config"]["metrics"]["history"] == ["taunotebook/metrics-history-attempt-0/*.jsonl"]
    from taunotebook.backends.tau import checkpoint_globs

    assert checkpoint_globs(spec(base_config=run_base(base))) == ["/data/ckpt/team/*",
                                                                   "/data/ckpt/team/last.safetensors"]
    only_named = tmp_path / "named.yaml"
    only_named.write_text('name: "team"\nengine: "job"\nentrypoint: "x.py"\nstorage:\n  checkpoint: "m/last.bin"\n')
    assert checkpoint_globs(spec(base_config=run_base(only_named))) == [
        "/data/checkpoints/finetunes/sgd-demo-abc123/m/last.bin"]
    assert checkpoint_globs(spec()) == []  # no checkpoints: the launcher's own history, no wrap
    assert render_config(spec())["metrics"]["history"] == ["metrics-history-attempt-0/*.jsonl"]


def run_base(path):
    from taunotebook.base_config import load_base_config

    return load_base_config(path)
