"""The PATH arguments of ``dump`` and ``project``: declared once, resolved into history files and TensorBoard runs
(and, for ``dump``, W&B run logs)."""

from __future__ import annotations

import argparse
import glob
import os
from collections.abc import Iterator
from dataclasses import dataclass

from tau_collector.sources.logdir import discover_runs
from tau_collector.sources.records import ProblemKind, SourceProblem
from tau_collector.sources.tensorboard_run import TensorBoardRun, is_event_file
from tau_collector.sources.wandb import WANDB_HISTORY, wandb_logs

__all__ = ["HistoryInput", "RunInput", "WandbLogInput", "add_paths", "resolve_inputs"]

# Where a directory holds W&B runs: it is a run folder, holds run folders (``wandb/``), or holds ``wandb/``.
_WANDB_DEPTHS = ((), ("*",), ("wandb", "*"))


def add_paths(parser: argparse.ArgumentParser) -> None:
    """The ``PATH...`` positional argument (``args.paths``), one or more."""
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="JSONL history file, TensorBoard event file, or logdir (dump: also a W&B run-<id>.wandb "
                         "log, or a W&B run folder or wandb/ directory)")


@dataclass(frozen=True, slots=True)
class HistoryInput:
    """A JSONL history file, ``path`` as the user gave it."""

    path: str


@dataclass(frozen=True, slots=True)
class WandbLogInput:
    """A W&B run's ``run-<id>.wandb`` transaction log, ``path`` as found from the argument."""

    path: str


@dataclass(frozen=True, slots=True)
class RunInput:
    """A TensorBoard run found under (or given as) a PATH argument."""

    run: TensorBoardRun
    argument: str  # the PATH argument as given
    root: str  # its absolute form

    def display_path(self, segment: str) -> str:
        """A segment's path spelled relative to the argument, as the user would write it."""
        if os.path.isfile(self.root):
            return self.argument
        return os.path.join(self.argument, os.path.relpath(segment, self.root))


def _wandb_runs(directory: str) -> list[WandbLogInput | HistoryInput]:
    """The W&B logs and ``files/wandb-history.jsonl`` files of a run folder, a ``wandb/`` directory or its parent."""
    found: list[WandbLogInput | HistoryInput] = [WandbLogInput(p) for p in wandb_logs(directory, _WANDB_DEPTHS)]
    for parts in _WANDB_DEPTHS:
        pattern = os.path.join(glob.escape(directory), *parts, WANDB_HISTORY)
        found += [HistoryInput(p) for p in sorted(glob.glob(pattern))
                  if not (parts and os.path.islink(os.path.dirname(os.path.dirname(p))))]
    return found


def resolve_inputs(paths: list[str], *, wandb: bool = False) -> Iterator[HistoryInput | RunInput | WandbLogInput |
                                                                         SourceProblem]:
    """In argument order: a directory is a TensorBoard logdir, a ``*tfevents*`` file an event file,
    any other file a JSONL history; a missing path is a problem. With ``wandb``, a ``run-<id>.wandb`` file is a
    W&B log, and a directory without event files is searched for W&B runs (their logs and history files)."""
    for path in paths:
        if os.path.isdir(path):
            root = os.path.abspath(path)
            runs = discover_runs(path)
            found = _wandb_runs(path) if wandb and not runs else []
            yield from found
            if not runs and not found:
                yield SourceProblem(
                    path, ProblemKind.UNREADABLE,
                    "directory holds no TensorBoard event files (names containing 'tfevents'); "
                    "pass a logdir, an event file or a JSONL history file",
                )
            for run in runs:
                yield RunInput(run, path, root)
        elif os.path.isfile(path):
            if is_event_file(path):
                yield RunInput(discover_runs(path)[0], path, os.path.abspath(path))
            elif wandb and os.path.basename(path).startswith("run-") and path.endswith(".wandb"):
                yield WandbLogInput(path)
            else:
                yield HistoryInput(path)
        else:
            yield SourceProblem(path, ProblemKind.UNREADABLE,
                                "no such file or directory; check the path (a JSONL history file, an event "
                                "file or a TensorBoard logdir)")
