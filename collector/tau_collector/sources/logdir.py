"""A logdir: the TensorBoard runs under a directory (or the one run of a single event file).

rustboard ``logdir.rs``.
"""

from __future__ import annotations

import os

from tau_collector.sources.tensorboard_run import TensorBoardRun, is_event_file, metric_file_id

__all__ = ["discover_runs", "run_in", "run_of_file"]


def discover_runs(logdir: str | os.PathLike[str]) -> list[TensorBoardRun]:
    """Every directory under ``logdir`` (itself included) that holds event files, sorted by relative path.

    ``logdir`` may also be one event file: it is then a run of that one file, in its directory.
    Symbolic links to directories are not followed, so a link cycle cannot trap the walk.
    """
    root = os.path.abspath(os.fspath(logdir))
    if os.path.isfile(root):
        return [run_of_file(root)] if is_event_file(root) else []
    runs = []
    for directory, _dirs, files in os.walk(root):
        if any(is_event_file(name) for name in files):
            runs.append(run_in(root, directory))
    runs.sort(key=lambda run: run.relative)
    return runs


def run_in(root: str, directory: str) -> TensorBoardRun:
    """The run of ``directory`` below the logdir ``root`` (both absolute)."""
    rel = os.path.relpath(directory, root)
    relative = "" if rel == os.curdir else rel.replace(os.sep, "/")
    return TensorBoardRun(directory, relative, metric_file_id(directory))


def run_of_file(path: str) -> TensorBoardRun:
    """The run of one event file given by itself: that file is its only segment."""
    path = os.path.abspath(path)
    directory = os.path.dirname(path)
    return TensorBoardRun(directory, "", metric_file_id(directory), only_file=path)
