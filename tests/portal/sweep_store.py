"""A hyperparameter sweep in a store, written by the real writer: the runs table's, compare page's and parallel
coordinates' test data (and the runs-table benchmark's).

``build_sweep_store(root, trials=N)`` writes, in workspace ``default``, project ``sweeps``:

- experiment ``sweep``, group ``lr-sweep``: ``trial-000`` … with configs
  ``{"lr": LRS[i % 4], "batch": 32, "optimizer": {"name": "adam" | "sgd"}, "seed": i % 3}`` (``batch``
  the same in all: a constant column), ``loss`` (:data:`STEPS` points, falling faster for larger ``lr``,
  see :func:`final_loss`) and ``accuracy``; every trial ends with ``tau/run_status`` 1 (succeeded), and
  every 7th trial also has one NaN loss;
- experiment ``baseline``, group ``ref``: ``ref-0`` and ``ref-1``, ``loss`` only and no config.
"""

from __future__ import annotations

import math
from pathlib import Path

from tau_collector.expstore import open_store
from tau_collector.expstore.write.writer import MetricWriter
from tau_collector.projection.metric_event import new_metric_event
from tau_collector.taugrid.run_config import run_config

BASE_NS = 1_760_000_000_000_000_000
LRS = [0.1, 0.03, 0.01, 0.001]
STEPS = 20
PROJECT = "sweeps"


def trial_id(i: int) -> str:
    return f"trial-{i:03d}"


def trial_config(i: int) -> dict:
    return {"lr": LRS[i % 4], "batch": 32, "optimizer": {"name": "adam" if i % 2 == 0 else "sgd"}, "seed": i % 3}


def loss_at(i: int, step: int) -> float:
    lr = LRS[i % 4]
    return 2.0 * math.exp(-step * lr * 5) + 0.01 * (i % 5) + 0.05


def final_loss(i: int) -> float:
    return loss_at(i, STEPS - 1)


def _event(run: str, experiment: str, group: str, metric: str, step: int, value: float, offset_ns: int):
    return new_metric_event(project=PROJECT, experiment_id=experiment, run_group_id=group, run_id=run,
                            metric_name=metric, step=step, wall_time=BASE_NS + offset_ns + step * 1_000_000,
                            value=value, exported_at=BASE_NS, source="history", tags={})


def build_sweep_store(root: Path, trials: int = 12, *, batch: int = 200) -> Path:
    """The sweep above with ``trials`` trials (written ``batch`` runs per chunk: a 1,000-run store in seconds)."""
    store = open_store(root, create=True)
    writer = MetricWriter(store)
    for i in range(trials):
        writer.put_run_config(trial_id(i), run_config(trial_config(i), format="json",
                                                      uri=f"file:///sweep/{trial_id(i)}/params.json"))
    for start in range(0, trials, batch):
        events, bad = [], []
        for i in range(start, min(trials, start + batch)):
            run = trial_id(i)
            offset = i * 10**9  # trial i starts i seconds after the first (wall time; created_at is when stored)
            for step in range(STEPS):
                e = _event(run, "sweep", "lr-sweep", "loss", step, loss_at(i, step), offset)
                if i % 7 == 3 and step == 5:
                    e.value = math.nan
                    bad.append(e)
                else:
                    events.append(e)
                events.append(_event(run, "sweep", "lr-sweep", "accuracy", step, 1 - loss_at(i, step) / 3, offset))
            events.append(_event(run, "sweep", "lr-sweep", "tau/run_status", STEPS, 1.0, offset))
        writer.write_chunk(f"sweep-{start}", events, bad, request_hash="h")
    writer.write_chunk("baseline", [_event(f"ref-{r}", "baseline", "ref", "loss", s, 1.0 + r, 0)
                                    for r in range(2) for s in range(STEPS)], [], request_hash="h")
    store.close()
    return root
