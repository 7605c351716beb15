"""A real Ray Tune sweep on a real local Ray head: each imported trial keeps its config (Tune's ``params.json``).

Starts Ray: run under ``flock /tmp/taunotebook-ray.lock`` like the other Ray tests. The sweep runs in a
child Python (``ray.init(address="local")``, two grid points, one CPU) whose Ray files live under a
short temporary ``RAY_TMPDIR`` of this test; whatever still mentions it afterwards is stopped by PID.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from fixtures.processes import stop_processes_mentioning
from tau_collector.expstore import StoreReader
from taunotebook.importer import import_paths

pytestmark = pytest.mark.slow

SWEEP = textwrap.dedent("""\
    import sys
    import ray
    from ray import tune

    ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False)

    def train(config):
        for step in range(3):
            tune.report({"loss": config["lr"] * (3 - step)})

    tuner = tune.Tuner(
        train,
        param_space={"lr": tune.grid_search([0.01, 0.1]), "model": {"depth": 2, "act": "gelu"}},
        tune_config=tune.TuneConfig(trial_dirname_creator=lambda t: f"lr{t.config['lr']}-{t.trial_id}"),
        run_config=tune.RunConfig(name="cfg-sweep", storage_path=sys.argv[1], verbose=0),
    )
    grid = tuner.fit()
    ray.shutdown()
    print(len(grid), grid.num_errors)
""")


def _configs_rows(store: Path) -> list[tuple]:
    with sqlite3.connect(store / "index.sqlite") as conn:
        return conn.execute("SELECT * FROM configs ORDER BY run_id").fetchall()


def test_a_tune_sweeps_trials_keep_their_configs(tmp_path):
    ray_tmp = Path(tempfile.mkdtemp(prefix="tau-ray-", dir="/tmp"))  # short: Ray's socket paths
    results = tmp_path / "results"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(RAY_TMPDIR=str(ray_tmp), RAY_USAGE_STATS_ENABLED="0", PYTHONUNBUFFERED="1")
    try:
        done = subprocess.run([sys.executable, "-c", SWEEP, str(results)], env=env, capture_output=True, text=True,
                              timeout=600, check=False)
    finally:
        stop_processes_mentioning(ray_tmp)
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.split()[-2:] == ["2", "0"], done.stdout

    store = tmp_path / "store"
    summary = import_paths([str(results)], store, project="demo", group="cfg-sweep")
    assert len(summary.run_ids) == 2
    reader = StoreReader(store)
    configs = reader.run_configs(summary.run_ids)
    assert set(configs) == set(summary.run_ids)  # one read for every trial
    by_lr = {}
    for run_id, config in configs.items():
        assert config.format == "json" and config.uri.endswith("params.json") and Path(config.uri).is_file()
        assert config.values == {"lr": config.values["lr"], "model": {"act": "gelu", "depth": 2}}
        assert config.fields == {"lr": config.values["lr"], "model.act": "gelu", "model.depth": 2}
        assert reader.run(run_id).config_hash == config.config_hash
        assert reader.rows(run_id, "loss").value.tolist() == pytest.approx([config.values["lr"] * k for k in (3, 2, 1)])
        by_lr[config.values["lr"]] = run_id
    assert sorted(by_lr) == [0.01, 0.1]
    assert configs[by_lr[0.01]].config_hash != configs[by_lr[0.1]].config_hash

    rows = _configs_rows(store)
    import_paths([str(results)], store, project="demo", group="cfg-sweep")  # a re-import changes nothing
    assert _configs_rows(store) == rows
