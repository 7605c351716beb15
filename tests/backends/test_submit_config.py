"""A submitted run's hyperparameters: ``config=``/``--config k=v``/``--config-file``, the job's file, the stored config."""

from __future__ import annotations

import json
import textwrap

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from tau_collector.expstore import StoreReader
from taunotebook.submission import submit
from taunotebook.submit_config import build_config, parse_items

TRAIN = textwrap.dedent("""\
    import json, os
    config = json.load(open(os.environ["TAU_RUN_CONFIG"]))
    for step in range(3):
        print(json.dumps({"step": step, "loss": config["lr"] * (3 - step)}))
    print("batch", config["optimizer"]["batch"])
""")


def test_items_parse_as_json_values_else_text_and_dotted_keys_nest():
    assert parse_items(["lr=0.1", "bs=32", "on=true", "none=null", "name=adam", "q=\"7\"", "layers=[64, 64]",
                        "opt.beta=0.9", "opt.eps=1e-8", "word=NaN", "empty="]) == {
        "lr": 0.1, "bs": 32, "on": True, "none": None, "name": "adam", "q": "7", "layers": [64, 64],
        "opt": {"beta": 0.9, "eps": 1e-8}, "word": "NaN", "empty": ""}


@pytest.mark.parametrize(("items", "message"), [
    (["lr"], r"--config 'lr' must be KEY=VALUE"),
    (["=3"], r"--config '=3' must be KEY=VALUE"),
    (["a=1", "a.b=2"], r"--config 'a.b=2': 'a' already holds a value"),
    (["a..b=1"], r"the key 'a..b' has an empty part"),
])
def test_bad_items_are_refused_naming_the_item(items, message):
    with pytest.raises(ValueError, match=message):
        parse_items(items)


def test_items_override_the_mapping_which_overrides_the_file(tmp_path):
    path = tmp_path / "base.yaml"
    path.write_text("lr: 0.5\noptimizer:\n  name: sgd\n  batch: 8\nseed: 1\n")
    assert build_config({"optimizer": {"batch": 16}}, path, ["lr=0.1"]) == {
        "lr": 0.1, "optimizer": {"name": "sgd", "batch": 16}, "seed": 1}
    assert build_config() is None


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"config": {"lr": float("nan")}}, r"config value lr is nan: JSON cannot carry it"),
    ({"config": {"f": object()}}, r"config value f is a object"),
    ({"config": {1: 2}}, r"config key 1 at the top must be a string"),
    ({"config": [1, 2]}, r"config must be a mapping"),
    ({"config_file": "missing.json"}, r"--config-file missing\.json: cannot read it"),
    ({"config_file": "config.toml"}, r"--config-file config\.toml: give a \.json, \.yaml or \.yml file"),
])
def test_bad_configs_are_refused_before_anything_is_submitted(tau_home, tmp_path, monkeypatch, kwargs, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=message):
        submit(code="print(1)\n", name="cfg", **kwargs)
    assert not (tau_home / "projects").exists() or not any((tau_home / "projects").rglob("run.json"))


def test_a_bad_config_file_names_the_file_and_line(tau_home, tmp_path):
    path = tmp_path / "sweep.yaml"
    path.write_text("lr: 0.1\nlr: 0.2\n")
    with pytest.raises(ValueError, match=r"--config-file .*sweep\.yaml: line 2: mapping key 'lr' already defined"):
        submit(code="print(1)\n", name="cfg", config_file=path)


def test_the_job_reads_its_config_and_the_run_keeps_it(tau_home, tmp_path):
    run = submit(code=TRAIN, name="cfg", project="demo", group="lr-sweep", config={"optimizer": {"batch": 16}},
                 config_items=["lr=0.1"])
    assert run.wait(120) == "succeeded", run.logs()
    assert "batch 16" in run.logs()
    assert run.config == {"lr": 0.1, "optimizer": {"batch": 16}}
    path = run.run_dir / "config.json"
    assert json.loads(path.read_text()) == run.config
    reader = StoreReader(tau_home / "store")
    stored = reader.run_config(run.run_id)
    assert stored is not None
    assert (stored.format, stored.uri) == ("json", str(path))
    assert stored.values == {"lr": 0.1, "optimizer": {"batch": 16}}
    assert stored.fields == {"lr": 0.1, "optimizer.batch": 16}
    assert reader.run(run.run_id).config_hash == stored.config_hash
    assert reader.rows(run.run_id, "loss").value.tolist() == pytest.approx([0.3, 0.2, 0.1])


def test_tau_submit_config_flags_reach_the_job(tau_home, tmp_path):
    shell = InteractiveShell.instance()
    try:
        shell.run_line_magic("load_ext", "taunotebook")
        extra = tmp_path / "extra.json"
        extra.write_text(json.dumps({"optimizer": {"batch": 4, "name": "sgd"}}))
        shell.run_cell_magic("tau_submit", f"--name magic --no-pane --as r --config lr=0.03 "
                             f"--config optimizer.batch=8 --config-file {extra}", TRAIN)
        run = shell.user_ns["r"]
        assert run.wait(120) == "succeeded", run.logs()
        assert run.config == {"lr": 0.03, "optimizer": {"batch": 8, "name": "sgd"}}
        assert StoreReader(tau_home / "store").run_config(run.run_id).fields == {
            "lr": 0.03, "optimizer.batch": 8, "optimizer.name": "sgd"}
        with pytest.raises(UsageError, match=r"%tau_submit: --config 'lr' must be KEY=VALUE"):
            shell.run_cell_magic("tau_submit", "--name magic --no-pane --config lr", TRAIN)
    finally:
        InteractiveShell.clear_instance()
