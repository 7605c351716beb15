"""Which sources lie under some paths: the paths provider of a one-shot import.

Every source found becomes one run: a TensorBoard run (a directory holding event files; an
``add_hparams`` sub-directory of one is part of it, see :mod:`.hparams`), a W&B run folder
(``files/wandb-history.jsonl``, else the ``run-<id>.wandb`` log of today's clients), a Ray Tune
trial (a directory holding ``result.json``; one that also holds event files is its result rows only,
so the trial is one run), or a JSONL history file
(given directly, or found in a directory that is none of the above). ``name`` is the text a
run id is derived from: the source's path relative to the given path (the given path's own name
when it is the source), the file name without ``.jsonl`` for a history file, and a W&B log's run its
display name (else its W&B run id) as its run record gives it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from tau_collector.sources.base import Source
from tau_collector.sources.history import HistorySource
from tau_collector.sources.hparams import scan_hparams
from tau_collector.sources.logdir import run_of_file
from tau_collector.sources.read_limits import DEFAULT_LIMITS, Limits
from tau_collector.sources.tensorboard import TensorBoardSource
from tau_collector.sources.tensorboard_run import TensorBoardRun, is_event_file, metric_file_id
from tau_collector.sources.tune import TUNE_RESULT, TuneSource
from tau_collector.sources.wandb import WandbLogSource, WandbSource
from tau_collector.taugrid.run_config import ConfigError

__all__ = ["Found", "discover"]


@dataclass(slots=True)
class Found:
    kind: str  # tensorboard | wandb | tune | jsonl
    name: str
    location: str  # the run directory or the history file (absolute)
    source: Source

    def files(self) -> list[str]:
        return [i.path for i in self.source.inputs()]


def _tensorboard(directory: str, name: str, limits: Limits) -> Found:
    run = TensorBoardRun(directory, "", metric_file_id(directory))
    return Found("tensorboard", name, directory, TensorBoardSource(runs=[run], limits=limits))


def _source_in(directory: str, name: str, limits: Limits) -> Found | None:
    """What ``directory`` itself is (possibly nothing)."""
    if WandbSource.detect(directory):
        return Found("wandb", name, directory, WandbSource(directory, limits=limits))
    if WandbLogSource.detect(directory):
        source = WandbLogSource(directory, limits=limits)
        try:
            info = source.run_info()
        except (ConfigError, OSError):
            info = None  # the import reports what it cannot read; the run keeps its path's name
        if info is not None and (info.display_name or info.run_id):
            name = info.display_name or info.run_id
        return Found("wandb", name, directory, source)
    if TuneSource.detect(directory):
        return Found("tune", name, directory, TuneSource(directory, limits=limits))
    try:
        has_events = any(e.is_file() and is_event_file(e.name) for e in os.scandir(directory))
    except OSError:
        return None
    return _tensorboard(directory, name, limits) if has_events else None


def discover(paths: Iterable[str], limits: Limits = DEFAULT_LIMITS) -> list[Found]:
    """Every source under ``paths`` (files or directories), in a stable order."""
    found: list[Found] = []
    tensorboard: dict[str, Found] = {}  # directory -> the TensorBoard run found there
    for given in paths:
        root = os.path.abspath(given)
        base = os.path.basename(root.rstrip(os.sep)) or "run"
        if os.path.isfile(root):
            name = os.path.basename(root)
            parent = os.path.dirname(root)
            if is_event_file(name):
                run = run_of_file(root)
                found.append(Found("tensorboard", os.path.basename(parent), parent,
                                   TensorBoardSource(runs=[run], limits=limits)))
            elif name == TUNE_RESULT:
                found.append(Found("tune", os.path.basename(parent), parent, TuneSource(parent, limits=limits)))
            else:
                found.append(Found("jsonl", os.path.splitext(name)[0], root, HistorySource([root], limits=limits)))
            continue
        for directory, dirs, files in os.walk(root):
            dirs.sort()
            rel = os.path.relpath(directory, root)
            name = base if rel == os.curdir else rel.replace(os.sep, "/")
            here = _source_in(directory, name, limits)
            if here is not None and here.kind == "tensorboard":
                parent = tensorboard.get(os.path.dirname(directory))
                run = here.source.runs()[0]  # type: ignore[attr-defined]
                segments = run.segments()
                if parent is not None and segments and scan_hparams(segments[0]).attached:
                    parent.source.attach(TensorBoardRun(directory, os.path.basename(directory),  # type: ignore
                                                        run.metric_file_id))
                    continue
                tensorboard[directory] = here
            if here is not None:
                found.append(here)
                if here.kind == "wandb":
                    dirs[:] = []  # the W&B run folder's own files/ is not another source
                continue
            for file_name in sorted(files):
                if file_name.endswith(".jsonl"):
                    stem = os.path.splitext(file_name)[0]
                    path = os.path.join(directory, file_name)
                    found.append(Found("jsonl", stem if rel == os.curdir else f"{name}/{stem}", path,
                                       HistorySource([path], limits=limits)))
    return found
