"""The PATH arguments of ``dump`` and ``project``: declared once, resolved into history files and TensorBoard runs."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from dataclasses import dataclass

from tau_collector.sources.logdir import discover_runs
from tau_collector.sources.records import ProblemKind, SourceProblem
from tau_collector.sources.tensorboard_run import TensorBoardRun, is_event_file

__all__ = ["HistoryInput", "RunInput", "add_paths", "resolve_inputs"]


def add_paths(parser: argparse.ArgumentParser) -> None:
    """The ``PATH...`` positional argument (``args.paths``), one or more."""
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="JSONL history file, TensorBoard event file, or logdir")


@dataclass(frozen=True, slots=True)
class HistoryInput:
    """A JSONL history file, ``path`` as the user gave it."""

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


def resolve_inputs(paths: list[str]) -> Iterator[HistoryInput | RunInput | SourceProblem]:
    """In argument order: a directory is a TensorBoard logdir, a ``*tfevents*`` file an event file,
    any other file a JSONL history; a missing path is a problem."""
    for path in paths:
        if os.path.isdir(path):
            root = os.path.abspath(path)
            runs = discover_runs(path)
            if not runs:
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
            else:
                yield HistoryInput(path)
        else:
            yield SourceProblem(path, ProblemKind.UNREADABLE,
                                "no such file or directory; check the path (a JSONL history file, an event "
                                "file or a TensorBoard logdir)")
