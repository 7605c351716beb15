"""``taunotebook import``: argument parsing, the progress bar and the final summary.

stdout carries the summary; stderr the progress bar (only when stderr is a terminal, unless
``--progress``) and log lines (warnings and errors; ``-v`` adds each source and each problem).
Usage errors exit 2, a store that refuses the import exits 1.
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Sequence

from tau_collector.cli import logging_setup as logs
from tau_collector.cli import progress
from tau_collector.cli.common import command_parser
from tau_collector.collect.process_memory import bound_process_memory
from tau_collector.sources import read_limits as input_limits

from .backends import validate_id

log = logging.getLogger("taunotebook.import")

__all__ = ["main"]

EXAMPLES = """examples:
  taunotebook import runs/                        # a TensorBoard logdir: every run directory becomes a Tau run
  taunotebook import wandb/run-20240101_120000-abc123 --project vision
  taunotebook import ~/ray_results/my_sweep --experiment sweep-1 --group lr-search
  taunotebook import history.jsonl --store /tmp/store
  taunotebook import runs/ && taunotebook import runs/   # the second import changes nothing
  taunotebook import runs/ -v --log-format json --no-progress 2>import-log.jsonl   # each source logged

sources: TensorBoard event files (Tune trials included), W&B run folders (files/wandb-history.jsonl, or
the run-<id>.wandb log that today's wandb writes offline and online; such a run is named by its W&B
display name, else its W&B run id; histograms and media are counted as dropped),
Ray Tune trials (result.json: training_iteration is the step, the time from the trial's event file
to the microsecond, else result.json's whole-second timestamp), JSONL history files.

configurations (hyperparameters), stored with each run: a Tune trial's params.json, a W&B run's
files/config.yaml (its values) or, without it, the config its run-<id>.wandb log holds, a TensorBoard
run's HParams session (SummaryWriter.add_hparams writes it into a sub-directory, which is read as part
of the run it was written from). Importing again
changes nothing; a run whose configuration changed since keeps its first one, and the import says so
and exits 1.

run ids: each source's path relative to PATH (PATH's own name when PATH is the source; a history file's
name without .jsonl), lowercased, every run of characters other than a-z 0-9 . _ - made one '-', leading
and trailing . _ - dropped. Sources that would share an id, and ids over 200 characters, end in '-'
and 8 hex digits of SHA-256 of their absolute path. Each source -> run id is printed.
The store defaults to <TAU_HOME>/store; see it with `taunotebook portal`.
"""


def _parser() -> argparse.ArgumentParser:
    parser = command_parser(
        "taunotebook import",
        description="Import existing TensorBoard, W&B, Ray Tune and JSONL history into a Tau expstore, "
                    "idempotently: importing the same files again changes nothing.",
        epilog=EXAMPLES,
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="logdir, run folder, experiment or .jsonl file")
    parser.add_argument("--store", metavar="DIR", help="expstore directory (default: <TAU_HOME>/store)")
    parser.add_argument("--project", default="default", help="project of the imported runs (default: default)")
    parser.add_argument("--experiment", metavar="E", help="experiment id (default: the group)")
    parser.add_argument("--group", metavar="G", help="run group id (default: the experiment, else 'imported')")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar (same as --no-progress)")
    progress.add_argument(parser)
    input_limits.add_arguments(parser.add_argument_group("memory bounds"), input_limits.IMPORT_LIMITS)
    logs.add_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)  # usage errors exit 2
    logs.configure_from(args)
    bound_process_memory()  # before the expstore imports pyarrow
    for what in ("project", "experiment", "group"):
        value = getattr(args, what)
        if value is not None:
            try:
                validate_id(value, f"--{what}")
            except ValueError as exc:
                parser.error(str(exc))
    try:
        limits = input_limits.from_args(args, defaults=input_limits.IMPORT_LIMITS)
    except input_limits.LimitsError as exc:
        parser.error(str(exc))
    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        parser.error(f"no such file or directory: {', '.join(missing)}")
    from .importer import discover_sources, import_paths

    runs = discover_sources(args.paths, limits)
    if not runs:
        parser.error("nothing to import: no event files, files/wandb-history.jsonl, run-*.wandb, result.json or "
                     "*.jsonl under " + ", ".join(args.paths))
    if args.store:
        store = args.store
    else:
        from .quickstart import tau_home

        store = str(tau_home() / "store")

    def announce(source) -> None:
        # through the log handler, which clears the progress line around it
        log.info("importing", extra={"kind": source.kind, "source": str(source.location), "run": source.run_id})

    from tau_collector.expstore.store import StoreError, StoreReadOnlyError
    from tau_collector.sinks.base import SinkError

    try:
        summary = import_paths(args.paths, store, project=args.project, experiment=args.experiment,
                               group=args.group, progress=not args.quiet and progress.wanted(args.progress),
                               on_source=announce, limits=limits)
    except StoreReadOnlyError as exc:
        log.error(f"{exc}; import into a store you can write (--store DIR)")
        return 1
    except (SinkError, StoreError) as exc:
        log.error(f"{exc}; runs imported before this one are kept; a run id already in the store under another "
                  "project/experiment/group needs the same --project/--experiment/--group, or import into "
                  "another --store")
        return 1
    except OSError as exc:
        log.error(f"cannot import: {exc}; check that the sources are readable and that the store directory "
                  f"{store} is writable (and its filesystem not full), then run the same import again: "
                  "what was imported is kept and not imported twice")
        return 1
    for problem in summary.problems:
        log.info(f"problem: {problem}")
    for run in runs:
        print(f"{run.location} -> {run.run_id}")
    print(summary.text())
    print(f"store: {store}")
    if summary.clustering is not None:
        log.info(f"rewriting the imported runs' files by metric in the background (pid {summary.clustering.pid}); "
                 "the runs read right meanwhile")
    if summary.corrupt_files or summary.rejected_rows:
        print("some rows or files could not be read; run with -v to list them (the rest was imported)")
    if summary.config_conflicts:
        for conflict in summary.config_conflicts:
            log.error(conflict)
        print(f"{len(summary.config_conflicts)} runs already had another configuration in the store: their "
              "metrics were imported, their new configuration was not (a changed configuration is a new run: "
              "import the changed files into another --store, or from another directory so they get new run ids)")
        return 1
    return 0
