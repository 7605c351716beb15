"""A store of runs with configurations, written by the real writer, for the config API tests.

Workspace ``default``, project ``proj``:

- experiment ``sweep`` (group ``sw``): ``lr-0.1``, ``lr-0.03``, ``lr-1e-05`` with configs
  ``{"lr": …, "batch": 32, "optimizer": {"name": "adam"}, "layers": [64, 64]}`` (``lr-1e-05`` has
  ``optimizer.name`` ``sgd``) and ``no-config`` without one; ``lr-0.1`` is tagged ``arm=base``;
- experiment ``plain`` (group ``pl``): ``plain-1``, no config, metric ``eval/acc``;
- experiment ``hidden`` (group ``hd``): ``hidden-1`` tagged ``tau_workspace=other``, with a config
  (``lr`` 0.1): invisible here.

Runs are written in this order, a few milliseconds apart, so "newest first" is visible.
"""

from __future__ import annotations

import time
from pathlib import Path

from tau_collector.expstore import StoreReader, open_store
from tau_collector.expstore.write.writer import MetricWriter
from tau_collector.projection.metric_event import new_metric_event
from tau_collector.taugrid.run_config import run_config

BASE_NS = 1_760_000_000_000_000_000
SWEEP = {"lr-0.1": 0.1, "lr-0.03": 0.03, "lr-1e-05": 1e-05}


def sweep_config(run: str):
    optimizer = "sgd" if run == "lr-1e-05" else "adam"
    return run_config({"lr": SWEEP[run], "batch": 32, "optimizer": {"name": optimizer}, "layers": [64, 64]},
                      format="json", uri=f"/sweeps/{run}/params.json")


def _write(writer: MetricWriter, run: str, experiment: str, group: str, metric: str = "train/loss",
           tags: dict[str, str] | None = None) -> None:
    events = [new_metric_event(project="proj", experiment_id=experiment, run_group_id=group, run_id=run,
                               metric_name=metric, step=s, wall_time=BASE_NS + s * 1_000_000, value=1.0 / (s + 1),
                               exported_at=BASE_NS, source="history", tags=dict(tags or {})) for s in range(3)]
    writer.write_chunk(f"{run}-chunk", events, [], request_hash="h")
    time.sleep(0.002)


def build_config_store(root: Path) -> Path:
    store = open_store(root, create=True)
    writer = MetricWriter(store)
    for run in SWEEP:
        writer.put_run_config(run, sweep_config(run))
        _write(writer, run, "sweep", "sw", tags={"arm": "base"} if run == "lr-0.1" else None)
    _write(writer, "no-config", "sweep", "sw")
    _write(writer, "plain-1", "plain", "pl", metric="eval/acc")
    writer.put_run_config("hidden-1", run_config({"lr": 0.1}, format="json", uri="/hidden/params.json"))
    _write(writer, "hidden-1", "hidden", "hd", tags={"tau_workspace": "other"})
    store.close()
    return root


class RunsOnlyReader:
    """Only :class:`~tau_collector.reads.ExperimentReader`'s methods of a store reader."""

    def __init__(self, reader: StoreReader) -> None:
        self._reader = reader

    def runs(self, workspace=None, *, project=None, experiment_id=None, run_group_id=None):
        return self._reader.runs(workspace, project=project, experiment_id=experiment_id, run_group_id=run_group_id)

    def run(self, run_id, project=None):
        return self._reader.run(run_id, project)

    def metric_summaries(self, run_id):
        return self._reader.metric_summaries(run_id)

    def metric_summary(self, run_id, metric):
        return self._reader.metric_summary(run_id, metric)

    def run_events(self, run_id, *, type=None):
        return self._reader.run_events(run_id, type=type)
