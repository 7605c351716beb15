"""``tau-collector project``: the canonical MetricEvent NDJSON the collector would deliver for PATHs.

stdout is byte-for-byte what the collector spools and delivers (TauGrid's
``tau.experiment.metric.v1`` lines). stderr carries one JSON object per problem (bad rows,
corrupt event files) and per non-finite observation, which is kept by the local store but is
never a MetricEvent. Exit 0, or 3 when something could not be read, 2 on usage errors (an
identity or tag TauGrid refuses included). With ``-v`` each input and a summary are also logged on
stderr; a progress line is shown when stderr is a terminal (``--progress``/``--no-progress``).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time

import orjson

from tau_collector.cli import logging_setup as logs
from tau_collector.cli import progress
from tau_collector.cli.common import subcommand_parser, usage_error
from tau_collector.cli.dump import EXIT_CORRUPT, InputProgress, input_name, json_value
from tau_collector.cli.inputs import HistoryInput, RunInput, add_paths, resolve_inputs
from tau_collector.projection.projector import ProjectionConfig, ProjectionError, Projector
from tau_collector.sources.jsonl import history_metric_file_id, read_history_file
from tau_collector.sources.records import HistoryRow, ProblemKind, SourceProblem
from tau_collector.sources.tensorboard_run import read_run, to_history_row
from tau_collector.taugrid.gojson import GoJSONError, parse_time
from tau_collector.taugrid.ids import InvalidID, validate_id

log = logging.getLogger("tau_collector.project")

_EPILOG = """\
examples:
  tau-collector project runs/seed-1/history.jsonl --run seed-1 --project demo --experiment sweep --group lr
  tau-collector project logs/ --run r1 --project demo --experiment e --group g --tag team=vision \\
      --exported-at 2026-09-18T19:00:00Z
  tau-collector project logs/ --run r1 --project demo --experiment e --group g --progress -v > events.ndjson
"""


def parse_tag(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"tag {text!r} must be KEY=VALUE")
    return key, value


def parse_rfc3339(text: str) -> int:
    try:
        return parse_time(text)
    except GoJSONError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subcommand_parser(
        subparsers, "project", run,
        help="print the canonical MetricEvent NDJSON the collector would deliver",
        description=__doc__, epilog=_EPILOG,
    )
    add_paths(parser)
    identity = parser.add_argument_group("run identity (required)")
    identity.add_argument("--run", required=True, help="run_id")
    identity.add_argument("--project", required=True)
    identity.add_argument("--experiment", required=True, help="experiment_id")
    identity.add_argument("--group", required=True, help="run_group_id")
    scope = parser.add_argument_group("scope and provenance")
    scope.add_argument("--workspace-id", default="")
    scope.add_argument("--cluster", default="")
    scope.add_argument("--namespace", default="")
    scope.add_argument("--source-store-id", default="")
    scope.add_argument("--source", default="stellar-online",
                       help="event source field (default: stellar-online, the collector's default)")
    scope.add_argument("--metric-prefix", default="", help="prefix for every metric name")
    scope.add_argument("--tag", action="append", type=parse_tag, default=[], metavar="KEY=VALUE",
                       help="event tag, repeatable")
    scope.add_argument("--exported-at", type=parse_rfc3339, default=None, metavar="RFC3339",
                       help="export time (default: now); fix it to get reproducible output")
    scope.add_argument("--metric-file-id", default=None,
                       help="override the metric_file_id (default: history-<hash> / tfevents-<hash>)")
    scope.add_argument("--metric-file-path", default=None,
                       help="override the metric_file_path (default: the absolute file or run directory)")
    parser.add_argument("--step-field", default="_step", help="JSONL step field (default: _step)")
    parser.add_argument("--time-field", default="_timestamp", help="JSONL time field (default: _timestamp)")
    logs.add_arguments(parser)
    progress.add_argument(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    logs.configure_from(args)
    for flag, kind in (("run", "run_id"), ("project", "project"), ("experiment", "experiment_id"),
                       ("group", "run_group_id")):
        if not getattr(args, flag).strip():
            return usage_error(args, f"--{flag} must not be empty")
        try:
            validate_id(kind, getattr(args, flag))
        except InvalidID as exc:
            return usage_error(args, f"--{flag}: {exc}")
    config = ProjectionConfig(
        project=args.project,
        experiment_id=args.experiment,
        run_group_id=args.group,
        run_id=args.run,
        exported_at=args.exported_at if args.exported_at is not None else time.time_ns(),
        workspace_id=args.workspace_id,
        cluster=args.cluster,
        namespace=args.namespace,
        source_store_id=args.source_store_id,
        metric_prefix=args.metric_prefix,
        source=args.source,
        tags=dict(args.tag),
        step_field=args.step_field,
        time_field=args.time_field,
    )
    out, err = sys.stdout.buffer, sys.stderr.buffer
    failed = False
    counts = {"events": 0, "problems": 0, "non_finite": 0}

    def problem_line(record: dict) -> None:
        with progress.paused(sys.stderr):
            err.write(orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE))
            err.flush()

    def report(problem: SourceProblem, file: str | None = None) -> None:
        nonlocal failed
        record = problem.to_json()
        if file is not None:
            record["file"] = file
        problem_line(record)
        counts["problems"] += 1
        if problem.kind != ProblemKind.TRUNCATED:
            failed = True

    def emit(projector: Projector, file: str, rows: list[HistoryRow]) -> None:
        projected, errors = projector.project_rows(rows)
        out.write(b"".join(projected.lines))
        counts["events"] += len(projected.lines)
        for row, exc in errors:
            report(SourceProblem(file, ProblemKind.BAD_ROW, str(exc), line=row.line, offset=row.offset))
        for obs in projected.non_finite:
            counts["non_finite"] += 1
            problem_line(
                {"file": file, "line": int(obs.tags["jsonl.history_line"]), "error": "non_finite",
                 "metric": obs.metric_name, "step": obs.step, "value": json_value(obs.value),
                 "message": "non-finite value: kept by the local store, not a MetricEvent"})

    items = list(resolve_inputs(args.paths))
    bar = InputProgress("project", items, args.progress)
    try:
        for index, item in enumerate(items):
            before = counts["events"]
            if isinstance(item, SourceProblem):
                report(item)
            elif isinstance(item, HistoryInput):
                read = read_history_file(item.path)
                absolute = os.path.abspath(item.path)
                projector = Projector(
                    config, history_path=item.path,
                    metric_file_id=args.metric_file_id or history_metric_file_id(item.path),
                    metric_file_path=args.metric_file_path or absolute,
                    with_events=False,
                )
                emit(projector, item.path, read.rows)
                for problem in read.problems:
                    report(problem)
            else:
                assert isinstance(item, RunInput)
                for batch in read_run(item.run):
                    file = item.display_path(batch.path)
                    projector = Projector(
                        config, history_path=file,
                        metric_file_id=args.metric_file_id or item.run.metric_file_id,
                        metric_file_path=args.metric_file_path or item.run.directory,
                        with_events=False,
                    )
                    emit(projector, file, [to_history_row(obs) for obs in batch.observations])
                    for problem in batch.problems:
                        report(problem, file)
            log.info("input projected", extra={"input": input_name(item), "events": counts["events"] - before})
            bar.advance(index, f"{counts['events']} events")
        out.flush()
    except ProjectionError as exc:  # an identity, tag or prefix TauGrid refuses: the flags are wrong
        return usage_error(args, f"--{exc}" if str(exc).startswith("tag ") else str(exc))
    except BrokenPipeError:
        return 0
    finally:
        bar.close(f"{counts['events']} events")
    log.info("project finished", extra={"inputs": len(items), **counts})
    return EXIT_CORRUPT if failed else 0
