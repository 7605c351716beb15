"""A real W&B offline run for the tests, written once per session by ``wandb`` itself, and wandb's own decoding.

The run is written in a child process (``WANDB_MODE=offline``: no account, no network), so the test
process never holds wandb's service or global run state. What the script logged is saved beside the
run as JSON, for the tests to compare with what is read back.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

STEPS = 40
LONG = "x" * 70_000  # a config value whose record spans three 32 KiB blocks (FIRST, MIDDLE, LAST)
IMAGE_STEPS = (0, 10, 20, 30)  # the steps of ``samples/one`` (a 8x12 image captioned ``step N``)
GRID_STEP = 5  # the step of ``samples/grid``: three 6x4 images captioned ``cell 0..2``

_SCRIPT = r"""
import json, math, sys
import numpy as np
import wandb

out = sys.argv[1]
config = {"lr": 0.01, "optimizer": {"name": "adam", "betas": [0.9, 0.999]}, "layers": 4, "long": sys.argv[2]}
run = wandb.init(project="wandblog-proj", name="wandblog-run", config=config)
rows = []
for step in range(int(sys.argv[3])):
    row = {"loss": 1.0 / (step + 1), "val": {"acc": step / 100, "deep": {"f1": step * 0.5}}, "epoch": step // 10}
    if step == 7:
        row["loss"] = math.inf
    media = {}
    if step % 10 == 0:  # one image, with a caption
        pixels = (np.arange(12 * 8 * 3).reshape(12, 8, 3) * (step + 1) % 256).astype(np.uint8)
        media["samples/one"] = wandb.Image(pixels, caption=f"step {step}")
    if step == 5:  # a list of images: wandb writes images/separated
        media["samples/grid"] = [wandb.Image(np.full((4, 6, 3), 40 * i, np.uint8), caption=f"cell {i}")
                                 for i in range(3)]
    wandb.log({**row, "weights": wandb.Histogram(np.arange(step + 3)), "note": "text", **media})
    rows.append(row)
run.config.update({"late": 5})
run.summary["best"] = 0.25
json.dump({"run_id": run.id, "config": config, "late": {"late": 5}, "rows": rows}, open(out, "w"))
wandb.finish()
"""


@dataclass(frozen=True)
class WandbRun:
    folder: Path  # the offline run folder (``wandb/offline-run-<time>-<id>``)
    log: Path  # its ``run-<id>.wandb``
    logged: dict[str, Any]  # what the script logged: run_id, config, late, rows


def write_offline_run(root: Path) -> WandbRun:
    env = {**os.environ, "WANDB_MODE": "offline", "WANDB_DIR": str(root), "WANDB_SILENT": "true",
           "WANDB_DISABLE_GIT": "true", "WANDB_CONSOLE": "off"}
    env.pop("WANDB_API_KEY", None)
    logged = root / "logged.json"
    subprocess.run([sys.executable, "-c", _SCRIPT, str(logged), LONG, str(STEPS)], env=env, check=True,
                   timeout=300, cwd=root)
    (folder,) = (root / "wandb").glob("offline-run-*")
    (log,) = folder.glob("run-*.wandb")
    return WandbRun(folder, log, json.loads(logged.read_text()))


@pytest.fixture(scope="session", name="wandb_run")
def wandb_run_fixture(tmp_path_factory: pytest.TempPathFactory) -> WandbRun:
    """The session's offline run (import ``wandb_run_fixture`` into a test module to use ``wandb_run``)."""
    pytest.importorskip("wandb")
    return write_offline_run(tmp_path_factory.mktemp("wandb-offline"))


def wandb_records(payloads: list[bytes]) -> list[Any]:
    """The payloads decoded by wandb's own generated ``Record`` class."""
    from wandb.proto import wandb_internal_pb2

    return [wandb_internal_pb2.Record.FromString(p) for p in payloads]


def wandb_items(items: Any) -> dict[str, Any]:
    """wandb's ``HistoryItem``/``ConfigItem``/``SummaryItem`` messages as a nested dict (wandb's own fields)."""
    out: dict[str, Any] = {}
    for item in items:
        path = list(item.nested_key) or [item.key]
        node = out
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = json.loads(item.value_json)
    return out
