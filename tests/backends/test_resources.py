"""Job resources on every backend (TauGrid sections, Ray's Jobs API, local env) and the team's base ``tau.yaml``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from IPython.core.error import UsageError

from fixtures.local_backend import shell
from tau_collector.taugrid.direct_config import check_run_config
from taunotebook.backends import RunSpec, iter_records
from taunotebook.backends.ray import submit_job_kwargs
from taunotebook.backends.tau import render_config, to_yaml
from taunotebook.base_config import load_base_config
from taunotebook.resources import JobResources, local_environment
from taunotebook.submission import submit

EXAMPLES = Path(__file__).resolve().parents[1] / "conformance" / "taugrid_examples"


def spec(**over) -> RunSpec:
    values = {"run_id": "sgd-demo-abc123", "name": "sgd-demo", "project": "demo", "experiment": "lr-sweep",
              "group": "lr-sweep", "workspace": "team-a", "script": Path("train.py")}
    return RunSpec(**{**values, **over})


def taugrid_accepts(config) -> str:
    """TauGrid's verdict (the conformance-checked rules) on the YAML we would write: its engine."""
    verdict = check_run_config(to_yaml(config) + "\n", "tau.yaml")
    assert verdict.accepted, verdict.error
    return verdict.engine


# -- tau -------------------------------------------------------------------------------------------


def test_the_seed_example_is_expressible_with_flags_and_taugrid_accepts_it():
    resources = JobResources(engine="rayjob", workers=1, gpus_per_worker=1, cpu="500m", memory="1Gi", cpu_limit="1",
                             memory_limit="2Gi", queue="jobqueue")
    config = render_config(spec(resources=resources))
    assert taugrid_accepts(config) == "rayjob"
    assert config["compute"] == {"workers": 1, "gpus_per_worker": 1, "worker_cpu_request": "500m",
                                 "worker_cpu_limit": "1", "worker_memory_request": "1Gi", "worker_memory_limit": "2Gi"}
    assert config["policy"] == {"queue": "jobqueue"}


def test_a_multi_node_torchrun_job_with_image_pip_env_secrets_and_retries_renders_every_section():
    resources = JobResources(gpus=8, nodes=2, processes_per_node=4, image="ghcr.io/team/train:1.0", pip=("einops",),
                             secrets={"HF_TOKEN": "hf:token"}, profile="a100", retries=2,
                             checkpoint_path="/data/ckpt/run-1")
    config = render_config(spec(resources=resources, env={"WANDB_MODE": "offline"}))
    assert taugrid_accepts(config) == "job"
    assert config["engine"] == "job" and config["compute"] == {"gpus": 8}
    assert config["runtime"] == {"image": "ghcr.io/team/train:1.0", "pip": ["einops"], "env": {"WANDB_MODE": "offline"},
                                 "env_secret": {"HF_TOKEN": "hf:token"}}
    assert config["execution"] == {"launcher": "torchrun", "nodes": 2, "processes_per_node": 4}
    assert config["resilience"] == {"max_retries": 2, "checkpoint_path": "/data/ckpt/run-1"}
    assert config["policy"] == {"profile": "a100"}


def test_workers_without_an_engine_choose_rayjob_and_gpus_with_rayjob_is_refused_by_name():
    assert render_config(spec(resources=JobResources(workers=2)))["engine"] == "rayjob"
    with pytest.raises(ValueError, match=r"gpus \(--gpus 2\) is a job's total"):
        render_config(spec(resources=JobResources(gpus=2, engine="rayjob")))
    with pytest.raises(ValueError, match=r"--procs-per-node.*torchrun, which is for engine job"):
        render_config(spec(resources=JobResources(processes_per_node=2, engine="rayjob")))
    with pytest.raises(ValueError, match="add --engine rayjob"):
        render_config(spec(resources=JobResources(workers=2, engine="job")))


def test_a_reserved_environment_key_is_refused_as_taugrid_refuses_it(tau_home):
    out: list[str] = []
    with pytest.raises(Exception, match="Tau-managed keys that cannot be overridden: NCCL_DEBUG"):
        submit(code="print(1)\n", backend="tau", dry_run=True, env={"NCCL_DEBUG": "INFO"}, out=out.append)
    assert out == []


@pytest.mark.parametrize(("options", "message"), [
    ({"gpus": -1}, "gpus must be a whole number >= 0"),
    ({"cpu": "2 cores"}, "cpu '2 cores'"),
    ({"memory": "4GB"}, "memory '4GB'"),
    ({"time_limit": "soon"}, "time_limit 'soon'"),
    ({"gpus": 1, "gpus_per_worker": 1}, "not both"),
    ({"checkpoint_path": "/data/c"}, "give retries too"),
    ({"secrets": {"TOKEN": "no-key"}}, "ENV_NAME=SECRET:KEY"),
    ({"gpu": 2}, "unknown resource option"),
])
def test_bad_resource_values_name_the_option(options, message):
    with pytest.raises(ValueError, match=message):
        JobResources.from_options(options)


# -- ray ---------------------------------------------------------------------------------------------


def test_ray_gets_entrypoint_resources_and_runtime_env():
    resources = JobResources(gpus=2, cpu="500m", memory="4Gi", pip=("torch==2.4.0",), image="ghcr.io/team/ray:2.54")
    kwargs = submit_job_kwargs(spec(resources=resources), "python -m x", "/tmp/wd", {"A": "1"})
    assert kwargs == {"entrypoint": "python -m x", "submission_id": "sgd-demo-abc123",
                      "runtime_env": {"working_dir": "/tmp/wd", "env_vars": {"A": "1"}, "pip": ["torch==2.4.0"],
                                      "image_uri": "ghcr.io/team/ray:2.54"},
                      "metadata": {"tau_project": "demo", "tau_group": "lr-sweep"},
                      "entrypoint_num_gpus": 2, "entrypoint_num_cpus": 0.5, "entrypoint_memory": 4 * 2**30}


@pytest.mark.parametrize(("options", "named"), [
    ({"queue": "gpu"}, "queue (--queue)"), ({"workers": 2}, "workers (--workers)"),
    ({"profile": "a100"}, "profile (--profile)"), ({"secrets": {"T": "s:k"}}, "secrets (--secrets)"),
])
def test_ray_refuses_what_its_jobs_api_has_no_field_for(options, named):
    with pytest.raises(ValueError, match=rf"{named.replace('(', '[(]').replace(')', '[)]')}: not available on the ray"):
        submit_job_kwargs(spec(resources=JobResources(**options)), "x", "/wd", {})


def test_ray_takes_retries_as_resubmissions_not_as_a_jobs_api_field():
    kwargs = submit_job_kwargs(spec(resources=JobResources(retries=2, checkpoint_path="ckpt")), "x", "/wd", {})
    assert "retries" not in json.dumps(kwargs) and kwargs["submission_id"] == "sgd-demo-abc123"


def test_ray_dry_run_prints_the_exact_submit_job_kwargs_and_submits_nothing(tau_home):
    pytest.importorskip("ray.job_submission")
    out: list[str] = []
    run = submit(code="print(1)\n", backend="ray", ray_address="http://127.0.0.1:1", dry_run=True, gpus=2, name="r",
                 pip=["einops"], out=out.append)
    header, _, body = out[0].partition("\n")
    assert header == "# JobSubmissionClient('http://127.0.0.1:1').submit_job(**kwargs) with kwargs:"
    kwargs = json.loads(body)
    assert kwargs == run.record["submit_job"] and kwargs["entrypoint_num_gpus"] == 2
    assert kwargs["runtime_env"]["pip"] == ["einops"] and kwargs["submission_id"] == run.run_id
    assert list(iter_records(tau_home)) == [] and not list((tau_home / "projects").rglob("*.py"))


# -- local ---------------------------------------------------------------------------------------------


def test_local_gpus_become_cuda_visible_devices_unless_the_env_names_them():
    assert local_environment(JobResources(gpus=2), {}) == {"CUDA_VISIBLE_DEVICES": "0,1"}
    assert local_environment(JobResources(gpus=0), {}) == {"CUDA_VISIBLE_DEVICES": ""}
    assert local_environment(JobResources(gpus=2), {"CUDA_VISIBLE_DEVICES": "3"}) == {}


@pytest.mark.parametrize(("options", "named"), [
    ({"image": "x/y:1"}, "image (--image)"), ({"queue": "q"}, "queue (--queue)"),
    ({"pip": ["einops"]}, "pip (--pip)"), ({"memory": "1Gi"}, "memory (--memory)"),
    ({"processes_per_node": 2}, "processes_per_node (--procs-per-node)"),
])
def test_local_refuses_what_cannot_apply_here_and_writes_nothing(tau_home, options, named):
    with pytest.raises(ValueError, match=rf"{named.replace('(', '[(]').replace(')', '[)]')}: not available on the "
                                         "local backend"):
        submit(code="print(1)\n", **options)
    assert not (tau_home / "projects").exists()


def test_a_local_job_sees_its_gpus_and_env_and_is_stopped_at_its_time_limit(tau_home):
    seen = submit(code="import os\nprint(os.environ['CUDA_VISIBLE_DEVICES'], os.environ['MY_FLAG'])\n",
                  gpus=2, env={"MY_FLAG": "on"}, name="gpus")
    slow = submit(code="import time\ntime.sleep(120)\n", time_limit=1, name="slow")
    assert seen.record["resources"] == {"gpus": 2} and slow.record["resources"] == {"time_limit": 1}
    assert seen.wait(120) == "succeeded" and seen.logs() == "0,1 on\n"
    assert slow.wait(120) == "failed"


def test_the_magic_takes_resource_flags_and_names_a_bad_one(tau_home, capsys):
    ip = shell()
    ip.run_cell_magic("tau_submit", "--backend tau --dry-run --gpus 2 --env A=1 --secret T=s:k --queue gpu "
                      "--retries 1 --checkpoint-path /data/ckpt --image ghcr.io/t/i:1", "print(1)\n")
    text = capsys.readouterr().out
    config = check_run_config(text.split("\n$ tau run")[0], "tau.yaml")
    assert config.accepted and config.config["compute"] == {"gpus": 2}
    assert config.config["runtime"]["env"] == {"A": "1"} and config.config["policy"] == {"queue": "gpu"}
    with pytest.raises(UsageError, match=r"--memory '4GB'"):
        ip.run_cell_magic("tau_submit", "--memory 4GB", "print(1)\n")
    with pytest.raises(UsageError, match=r"--env 'A' must be NAME=VALUE"):
        ip.run_cell_magic("tau_submit", "--env A", "print(1)\n")


# -- base configs ----------------------------------------------------------------------------------------

REFUSED = {"market-policy.yaml": "TauGrid refuses it", "aks-cpu-quickstart.yaml": "managed workflow manifest"}
# experiment.project "Tau Local" is fine without offload, but TauGrid requires an id there once metrics are offloaded
NO_OFFLOAD_PROJECT = ("kind-smoke.yaml", "kind-smoke-ray.yaml")


@pytest.mark.parametrize("example", NO_OFFLOAD_PROJECT)
def test_a_base_whose_project_cannot_carry_offloaded_metrics_is_refused_naming_the_file(tau_home, example):
    with pytest.raises(ValueError) as caught:
        submit(code="print(1)\n", backend="tau", dry_run=True, base_config=EXAMPLES / example, out=print)
    assert 'project "Tau Local" is invalid' in str(caught.value) and example in str(caught.value)


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.yaml") if p.name not in NO_OFFLOAD_PROJECT))
def test_taugrids_examples_load_and_render_as_bases_with_every_section_passed_through(example):
    path = EXAMPLES / example
    if example in REFUSED:
        with pytest.raises(ValueError, match=REFUSED[example]):
            load_base_config(path)
        return
    base = load_base_config(path)
    identity = {"project": "demo", "group": "g", **base.identity()}
    identity.setdefault("experiment", identity["group"])
    config = render_config(spec(base_config=base, **identity))
    taugrid_accepts(config)
    for section, value in base.config.items():
        if section in ("name", "engine", "entrypoint", "script", "run"):
            continue
        if isinstance(value, dict):
            assert {k: config[section][k] for k in value} == value, section
        else:
            assert config[section] == value, section
    assert config["entrypoint"] == "tau_entry.py" and config["name"] == "sgd-demo-abc123"


def test_the_seed_base_gives_the_identity_and_our_resources_merge_in(tau_home, capsys):
    out: list[str] = []
    submit(code="print(1)\n", backend="tau", dry_run=True, base_config=EXAMPLES / "portal-ray-stellar.yaml",
           env={"A": "1"}, pip=["einops"], out=out.append)
    verdict = check_run_config(out[0].removeprefix("# tau.yaml\n"), "tau.yaml")
    assert verdict.accepted, verdict.error
    assert verdict.identity["project"] == "portal-demo" and verdict.identity["experiment"] == "ray-plus-stellar"
    assert verdict.config["compute"]["gpus_per_worker"] == 1 and verdict.config["policy"]["queue"] == "jobqueue"
    assert verdict.config["runtime"] == {"pip": ["einops"], "env": {"A": "1"}}
    assert verdict.config["storage"]["output"] == "/data/projects/taugrid-default/runs/portal-ray-stellar"


@pytest.mark.parametrize(("change", "options", "words"), [
    ("", {"experiment": "other"}, ["experiment.name", "'ray-plus-stellar'", "'other'"]),
    ("", {"engine": "job"}, ["engine", "'rayjob'", "'job'"]),
    ("", {"queue": "fast"}, ["policy.queue", "'jobqueue'", "--queue", "'fast'"]),
    ("    - other/*.jsonl\n", {}, ["metrics.history", "other/*.jsonl", "metrics-history-attempt-0/*.jsonl"]),
])
def test_a_conflict_with_the_base_is_one_error_naming_both_values(tau_home, tmp_path, change, options, words):
    text = (EXAMPLES / "portal-ray-stellar.yaml").read_text()
    if change:
        text = text.replace("    - metrics-history-attempt-0/*.jsonl\n", change)
    base = tmp_path / "tau.yaml"
    base.write_text(text)
    with pytest.raises(ValueError) as caught:
        submit(code="print(1)\n", backend="tau", dry_run=True, base_config=base, out=print, **options)
    for word in words:
        assert word in str(caught.value)
    assert "never overridden" in str(caught.value)


def test_a_base_config_is_for_the_tau_backend_only(tau_home):
    with pytest.raises(ValueError, match="it is for the tau backend, not local"):
        submit(code="print(1)\n", base_config=EXAMPLES / "portal-ray-stellar.yaml")


def test_a_torchrun_rank_other_than_0_runs_the_trainer_without_writing_history(tmp_path):
    import os
    import subprocess

    from taunotebook.backends.tau import ENTRY, HISTORY_DIR, LAUNCHER

    (tmp_path / "train.py").write_text("import json\nprint(json.dumps({'step': 1, 'loss': 0.5}))\n")
    (tmp_path / ENTRY).write_text(LAUNCHER.format(output="/nonexistent", history=HISTORY_DIR, script="train.py",
                                                  args=[], time_limit=None, checkpoints=[], identity=[],
                                                  store="store"))
    env = {**os.environ, "RANK": "1", "TAU_RUN_OUTPUT": str(tmp_path / "out")}
    done = subprocess.run([sys.executable, str(tmp_path / ENTRY)], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and done.stdout == '{"step": 1, "loss": 0.5}\n'
    assert list((tmp_path / "out" / HISTORY_DIR).iterdir()) == []


def test_ray_dry_run_prints_exactly_the_kwargs_the_submission_sends(tau_home, monkeypatch):
    """The same submission twice, as a dry run and for real (same run id) to a recording client: the printed
    kwargs are the JSON of exactly what ``submit_job`` received."""
    import taunotebook.backends.ray as ray_backend

    sent: list[dict] = []

    class Recording:
        def submit_job(self, **kwargs):
            sent.append(kwargs)
            return kwargs["submission_id"]

    monkeypatch.setattr(ray_backend, "_client", lambda address: Recording())
    monkeypatch.setattr("taunotebook.submission.new_run_id", lambda name, workspace, home=None: "r-fixed1")
    options = dict(code="print(1)\n", backend="ray", ray_address="http://127.0.0.1:1", name="r", gpus=2, cpu="500m",
                   memory="1Gi", pip=["einops"], image="repo/train:1", env={"MODE": "a"})
    out: list[str] = []
    submit(**options, dry_run=True, out=out.append)
    submit(**options)
    [kwargs] = sent
    assert out == ["# JobSubmissionClient('http://127.0.0.1:1').submit_job(**kwargs) with kwargs:\n"
                   + json.dumps(kwargs, indent=2, sort_keys=True)]
    assert kwargs["entrypoint_num_gpus"] == 2 and kwargs["entrypoint_num_cpus"] == 0.5
    assert kwargs["runtime_env"]["image_uri"] == "repo/train:1" and kwargs["runtime_env"]["env_vars"]["MODE"] == "a"
