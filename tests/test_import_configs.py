"""Run configurations from real writers: torch/tensorboardX ``add_hparams``, W&B, Tune; import vs collect; re-imports."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from tau_collector.cli import main as collector_main
from tau_collector.expstore import StoreReader
from taunotebook import cli
from taunotebook.importer import discover_sources, import_paths

HPARAMS = {"lr": 0.1, "batch_size": 32, "optimizer": "adam", "dropout": 0.25}
METRICS = {"hparam/accuracy": 0.875, "hparam/loss": 0.125}


def _write_hparams_run(writer_kind: str, directory: Path, hparams: dict, loss_scale: float) -> None:
    if writer_kind == "torch":
        from torch.utils.tensorboard import SummaryWriter

        writer = SummaryWriter(log_dir=str(directory))
    else:
        from tensorboardX import SummaryWriter

        writer = SummaryWriter(logdir=str(directory))
    for step in range(5):
        writer.add_scalar("train/loss", loss_scale / (step + 1), step)
    writer.add_hparams(hparams, METRICS)
    writer.close()


def _configs(store: Path) -> list[tuple]:
    with sqlite3.connect(store / "index.sqlite") as conn:
        return conn.execute("SELECT config_hash, run_id, format, uri, normalized_json, indexed_fields FROM configs "
                            "ORDER BY run_id").fetchall()


@pytest.mark.parametrize("writer_kind", ["torch", "tensorboardx"])
def test_add_hparams_is_the_config_of_the_run_that_wrote_it(tmp_path: Path, writer_kind: str) -> None:
    logdir = tmp_path / "runs"
    _write_hparams_run(writer_kind, logdir / "lr-0.1", HPARAMS, 1.0)
    _write_hparams_run(writer_kind, logdir / "lr-0.03", {**HPARAMS, "lr": 0.03}, 2.0)
    found = discover_sources([str(logdir)])
    assert [r.run_id for r in found] == ["lr-0.03", "lr-0.1"]  # the add_hparams sub-directories are not runs
    store = tmp_path / "store"
    summary = import_paths([str(logdir)], store)
    assert summary.configs == 2
    reader = StoreReader(store)
    config = reader.run_config("lr-0.1")
    assert config is not None and config.format == "tensorboard-hparams"
    (sub,) = [p for p in (logdir / "lr-0.1").iterdir() if p.is_dir()]
    assert Path(config.uri).parent == sub  # the event file that holds the session
    assert config.values == HPARAMS
    assert config.fields == {"batch_size": 32, "dropout": 0.25, "lr": 0.1, "optimizer": "adam"}
    assert reader.run("lr-0.1").config_hash == config.config_hash
    # the add_hparams metric values are the run's metrics under their own tags, comparable across runs
    assert set(reader.run("lr-0.1").metric_names) == {"train/loss", "hparam/accuracy", "hparam/loss"}
    assert reader.rows("lr-0.03", "hparam/accuracy").value.tolist() == [0.875]
    assert reader.run_config("lr-0.03").fields["lr"] == 0.03


def test_collect_and_import_make_the_same_configs_rows(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs" / "seed-1"
    _write_hparams_run("torch", run_dir, HPARAMS, 1.0)
    imported = tmp_path / "imported"
    import_paths([str(run_dir)], imported)
    collected = tmp_path / "collected"
    assert collector_main(["collect", "--run", "seed-1", "--project", "default", "--experiment", "imported",
                           "--group", "imported", "--out", str(tmp_path / "spool"), "--tfevents", str(run_dir),
                           "--store", str(collected), "--no-progress"]) == 0
    assert _configs(collected) == _configs(imported)
    assert len(_configs(imported)) == 1
    names = {r: set(StoreReader(s).run("seed-1").metric_names) for r, s in (("i", imported), ("c", collected))}
    assert names["i"] == names["c"] == {"train/loss", "hparam/accuracy", "hparam/loss"}


def _wandb_run(root: Path, config: dict) -> Path:
    """A W&B run folder: a real offline ``wandb.init`` run, with ``files/config.yaml`` by W&B's own writer.

    wandb 0.31 in offline mode keeps the config and the history only in ``run-<id>.wandb`` (its core's
    record log); ``files/config.yaml`` and ``files/wandb-history.jsonl`` are what W&B lays out when a run
    is synced (its documented run-folder layout). So the run is real, ``config.yaml`` is written with
    ``wandb.sdk.lib.config_util.save_config_file_from_dict`` -- the function W&B writes it with -- from
    the config as ``wandb.init`` normalized it, and the history as W&B documents its rows.
    """
    wandb = pytest.importorskip("wandb")
    from wandb.sdk.lib import config_util

    os.environ.setdefault("WANDB_SILENT", "true")
    run = wandb.init(project="demo", dir=str(root), mode="offline", config=config)
    rows = []
    for step in range(4):
        run.log({"loss": 1.0 / (step + 1)})
        rows.append({"_step": step, "_timestamp": 1_700_000_000.5 + step, "_runtime": step, "loss": 1.0 / (step + 1)})
    values = dict(run.config)
    run.finish()
    (folder,) = (root / "wandb").glob("offline-run-*")
    files = folder / "files"
    config_util.save_config_file_from_dict(
        str(files / "config.yaml"),
        {**{k: {"desc": None, "value": v} for k, v in values.items()},
         "_wandb": {"desc": None, "value": {"cli_version": wandb.__version__, "python_version": "3.11"}}})
    (files / "wandb-history.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_a_wandb_runs_config_is_its_values_without_bookkeeping(tmp_path: Path) -> None:
    folder = _wandb_run(tmp_path, {"lr": 0.001, "model": {"depth": 4, "act": "gelu"}, "tags": ["a", "b"]})
    assert "wandb_version: 1" in (folder / "files" / "config.yaml").read_text()
    store = tmp_path / "store"
    import_paths([str(folder)], store)
    (run,) = StoreReader(store).runs()
    config = StoreReader(store).run_config(run.run_id)
    assert config is not None and config.format == "yaml"
    assert config.uri == str(folder / "files" / "config.yaml")
    assert config.values == {"lr": 0.001, "model": {"depth": 4, "act": "gelu"}, "tags": ["a", "b"]}
    assert config.fields == {"lr": 0.001, "model.act": "gelu", "model.depth": 4, "tags": '["a","b"]'}


def _tune_trial(root: Path, lr: float) -> Path:
    trial = root / f"train_fn_{int(lr * 1000):04d}"
    trial.mkdir(parents=True)
    (trial / "result.json").write_text("".join(json.dumps(
        {"training_iteration": i, "timestamp": 1_700_000_000 + i, "loss": lr / i}) + "\n" for i in range(1, 4)))
    (trial / "params.json").write_text(json.dumps({"lr": lr, "layers": [64, 64]}))
    return trial


def test_reimport_is_idempotent_and_a_changed_config_is_a_reported_conflict(tmp_path: Path, capsys) -> None:
    sweep = tmp_path / "sweep"
    trials = [_tune_trial(sweep, lr) for lr in (0.1, 0.01)]
    store = tmp_path / "store"
    argv = ["import", str(sweep), "--store", str(store), "-q"]
    assert cli.main(argv) == 0
    assert "2 run configurations stored" in capsys.readouterr().out
    first = _configs(store)
    assert [json.loads(r[4]) for r in first] == [{"layers": [64, 64], "lr": 0.01}, {"layers": [64, 64], "lr": 0.1}]
    assert cli.main(argv) == 0
    assert "run configurations stored" not in capsys.readouterr().out
    assert _configs(store) == first
    # the trial's config is edited afterwards: the metrics are unchanged, the config is not stored
    (trials[0] / "params.json").write_text(json.dumps({"lr": 0.5, "layers": [64, 64]}))
    assert cli.main(argv) == 1
    captured = capsys.readouterr()
    assert "1 runs already had another configuration" in captured.out
    assert "experiment store write conflict: run 'train_fn_0100' already has config" in captured.err
    assert _configs(store) == first
    events = StoreReader(store).run_events("train_fn_0100")
    assert any("write conflict" in e.message for e in events)


def test_a_broken_config_file_is_reported_and_the_metrics_imported(tmp_path: Path) -> None:
    trial = _tune_trial(tmp_path / "sweep", 0.1)
    (trial / "params.json").write_text('{"lr": NaN}')
    store = tmp_path / "store"
    summary = import_paths([str(trial)], store)
    assert summary.points == 3 and summary.configs == 0
    assert any("params.json: not valid JSON: NaN is not JSON" in p for p in summary.problems)
    assert StoreReader(store).run_config("train_fn_0100") is None
