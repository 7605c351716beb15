"""``tau-collector dump``: print every scalar observation a history file, event file or logdir holds.

stdout carries one JSON object per observation, in file order:
``{"file","metric","step","wall_time","value"}`` (non-finite values as "NaN"/"Infinity"/"-Infinity").
stderr carries one JSON object per problem: ``{"file","offset"|"line","error","message"}``.
Exit 0 when everything readable was read (a truncated tail is not an error), 3 when a file is
corrupt or a row is bad (after printing all that could be read), 2 on usage errors.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import BinaryIO

import orjson

from ..projection import RowError, history_step, metric_number
from ..records import ProblemKind, SourceProblem
from ..sources.jsonl import read_history_file
from ..sources.tfevents import apply_tensorboard_purge, in_read_order, read_run
from .inputs import HistoryInput, RunInput, resolve_inputs

EXIT_CORRUPT = 3

_EPILOG = """\
examples:
  tau-collector dump runs/seed-1/history.jsonl
  tau-collector dump logs/                     # a TensorBoard logdir: every run below it
  tau-collector dump result.json --step-field training_iteration --time-field timestamp
  tau-collector dump logs/ 2>problems.jsonl | jq -c 'select(.metric=="train/loss")'
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "dump",
        help="print the scalar observations of history files, event files or logdirs as JSON lines",
        description=__doc__,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="JSONL history file, TensorBoard event file, or logdir")
    parser.add_argument("--step-field", default="_step", help="JSONL step field (default: _step)")
    parser.add_argument("--time-field", default="_timestamp", help="JSONL time field (default: _timestamp)")
    parser.add_argument("--tensorboard-purge", action="store_true",
                        help="apply TensorBoard's restart purge (SessionLog.START) to event files, "
                             "printing exactly the points TensorBoard would show")
    parser.set_defaults(func=run)
    return parser


def _value(value: float) -> float | str:
    if math.isfinite(value):
        return value
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


class _Output:
    """Buffered JSON-lines writers for stdout and stderr; counts problems that change the exit code."""

    def __init__(self, out: BinaryIO, err: BinaryIO) -> None:
        self.out, self.err = out, err
        self.buffer: list[bytes] = []
        self.corrupt = False

    def observation(self, file: str, metric: str, step: int, wall_time: float, value: float) -> None:
        self.buffer.append(orjson.dumps(
            {"file": file, "metric": metric, "step": step, "wall_time": wall_time, "value": _value(value)},
            option=orjson.OPT_APPEND_NEWLINE,
        ))
        if len(self.buffer) >= 4096:
            self.flush()

    def raw(self, data: bytes) -> None:
        self.flush()
        self.out.write(data)

    def problem(self, problem: SourceProblem, file: str | None = None) -> None:
        self.flush()  # problems follow the observations that precede them
        record = problem.to_json()
        if file is not None:
            record["file"] = file
        self.err.write(orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE))
        self.err.flush()
        if problem.kind != ProblemKind.TRUNCATED:
            self.corrupt = True

    def flush(self) -> None:
        if self.buffer:
            self.out.write(b"".join(self.buffer))
            self.buffer.clear()
        self.out.flush()


def _dump_history(item: HistoryInput, args: argparse.Namespace, output: _Output) -> None:
    read = read_history_file(item.path)
    step_field, time_field = args.step_field, args.time_field
    # Rows and the source's own problems (bad JSON, not an object) interleaved in line order.
    entries = sorted([*read.rows, *read.problems], key=lambda entry: entry.line or 0)
    for entry in entries:
        if isinstance(entry, SourceProblem):
            output.problem(entry)
            continue
        fields = entry.fields
        try:
            step = history_step(fields.get(step_field))
        except RowError as exc:
            output.problem(SourceProblem(item.path, ProblemKind.BAD_ROW, f"{step_field}: {exc}",
                                         line=entry.line, offset=entry.offset))
            continue
        wall_time = metric_number(fields.get(time_field))
        if wall_time is None or not math.isfinite(wall_time):
            output.problem(SourceProblem(item.path, ProblemKind.BAD_ROW,
                                         f"{time_field}: must be finite epoch seconds",
                                         line=entry.line, offset=entry.offset))
            continue
        for key in sorted(k for k in fields if k != step_field and k != time_field and not k.startswith("_")):
            value = metric_number(fields[key])
            name = key.strip()
            if value is not None and name:
                output.observation(item.path, name, step, wall_time, value)


def _dump_run(item: RunInput, args: argparse.Namespace, output: _Output) -> None:
    batches = read_run(item.run)
    if args.tensorboard_purge:
        kept = {id(obs) for obs in apply_tensorboard_purge(in_read_order(batches))}
    for batch in batches:
        file = item.display_path(batch.path)
        observations = batch.observations
        if args.tensorboard_purge:
            observations = [obs for obs in observations if id(obs) in kept]
        output.raw(_observation_lines(file, observations))
        for problem in batch.problems:
            output.problem(problem, file)


def _observation_lines(file: str, observations: list) -> bytes:
    """The JSON lines of many observations, built from cached pieces (the hot path of dump).

    Equal to ``orjson.dumps`` of each object: Python's float repr is valid JSON and round-trips.
    """
    head = '{"file":' + orjson.dumps(file).decode() + ',"metric":'
    names: dict[str, str] = {}
    lines = []
    for metric, step, wall_time, value, _record, _offset in observations:
        name = names.get(metric)
        if name is None:
            name = names[metric] = head + orjson.dumps(metric).decode() + ',"step":'
        if value - value == 0.0:
            lines.append(f'{name}{step},"wall_time":{wall_time!r},"value":{value!r}}}\n')
        else:
            lines.append(f'{name}{step},"wall_time":{wall_time!r},"value":"{_value(value)}"}}\n')
    return "".join(lines).encode()


def run(args: argparse.Namespace) -> int:
    output = _Output(sys.stdout.buffer, sys.stderr.buffer)
    try:
        for item in resolve_inputs(args.paths):
            if isinstance(item, SourceProblem):
                output.problem(item)
            elif isinstance(item, HistoryInput):
                _dump_history(item, args, output)
            else:
                _dump_run(item, args, output)
        output.flush()
    except BrokenPipeError:  # `dump … | head` is fine
        return 0
    return EXIT_CORRUPT if output.corrupt else 0
