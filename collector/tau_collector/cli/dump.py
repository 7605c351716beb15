"""``tau-collector dump``: print every scalar observation (or histogram, image or text) a history file, event file
or logdir holds.

stdout carries one JSON object per observation, in file order:
``{"file","metric","step","wall_time","value"}`` (non-finite values as "NaN"/"Infinity"/"-Infinity").
``--kind histograms|images|text`` prints the event files' values of that kind instead, one object per value,
``tag`` named as ``metric`` is (the run's directory below the logdir first):
``{"file","tag","step","wall_time","buckets":[[left,right,count],…]}`` (the buckets TensorBoard reads),
``{"file","tag","step","wall_time","width","height","images":[sha256 hex of each encoded image…],"content_type"}``
(``content_type`` is the images' MIME type; null without images, ``application/octet-stream`` when they differ),
``{"file","tag","step","wall_time","text":[…],"shape":[…]}`` (the strings in row-major order, the tensor's shape).
W&B runs are read too: a ``run-<id>.wandb`` log (its scalars, histograms and images), a run folder or ``wandb/``
directory (its logs and ``files/wandb-history.jsonl``), and any JSONL history's W&B-shaped histograms and
``image-file`` values (image paths relative to the file's directory; nested keys joined with ``.`` in a
``wandb-history.jsonl``), with the same objects; images carry their ``captions`` when the writer gave them.
stderr carries one JSON object per problem: ``{"file","offset"|"line","error","message"}``.
Exit 0 when everything readable was read (a truncated tail is not an error), 3 when a file is
corrupt or a row is bad, or a PATH is missing (after printing all that could be read), 2 on usage
errors. With ``-v`` each input and a summary are also logged on stderr; a progress line is shown
when stderr is a terminal (``--progress``/``--no-progress`` to choose).
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import math
import os
import sys
from collections.abc import Sequence
from itertools import repeat
from typing import BinaryIO

import numpy as np
import orjson

from tau_collector.cli import logging_setup as logs
from tau_collector.cli import progress
from tau_collector.cli.common import subcommand_parser, usage_error
from tau_collector.cli.inputs import HistoryInput, RunInput, WandbLogInput, add_paths, resolve_inputs
from tau_collector.collect.process_memory import bound_process_memory
from tau_collector.projection.projector import RowError, history_step, metric_number
from tau_collector.sources import read_limits as input_limits
from tau_collector.sources.base import Batch, Position, Source, SourceInput
from tau_collector.sources.event_columns import read_block_columns
from tau_collector.sources.history import HistorySource, history_input
from tau_collector.sources.jsonl import read_history
from tau_collector.sources.media import MEDIA_KINDS, OCTET_STREAM, MediaRecord, MediaRequest
from tau_collector.sources.records import ProblemKind, SourceProblem
from tau_collector.sources.tensorboard_run import RunMemory, apply_tensorboard_purge, in_read_order, read_run
from tau_collector.sources.wandb import WANDB_HISTORY, WandbLogSource, WandbSource

log = logging.getLogger("tau_collector.dump")

EXIT_CORRUPT = 3

_EPILOG = """\
examples:
  tau-collector dump runs/seed-1/history.jsonl
  tau-collector dump logs/                     # a TensorBoard logdir: every run below it
  tau-collector dump result.json --step-field training_iteration --time-field timestamp
  tau-collector dump logs/ 2>problems.jsonl | jq -c 'select(.metric=="train/loss")'
  tau-collector dump --progress -v big-logdir/ > points.jsonl   # progress and a summary on stderr
  tau-collector dump --kind histograms logs/ | jq -c 'select(.tag=="train/weights") | .step'
  tau-collector dump --kind images wandb/offline-run-20260101_120000-abc123/run-abc123.wandb
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subcommand_parser(
        subparsers, "dump", run,
        help="print the scalar observations (or histograms, images, text) of history files, event files or logdirs "
             "as JSON lines",
        description=__doc__, epilog=_EPILOG,
    )
    add_paths(parser)
    parser.add_argument("--step-field", default="_step", help="JSONL step field (default: _step)")
    parser.add_argument("--time-field", default="_timestamp", help="JSONL time field (default: _timestamp)")
    parser.add_argument("--kind", choices=("scalars", *MEDIA_KINDS), default="scalars",
                        help="what to print: scalar observations (default), or the histograms, images or text "
                             "of event files and W&B runs")
    parser.add_argument("--tensorboard-purge", action="store_true",
                        help="apply TensorBoard's restart purge (SessionLog.START) to event files, "
                             "printing exactly the points TensorBoard would show")
    input_limits.add_arguments(parser.add_argument_group("memory bounds"))
    logs.add_arguments(parser)
    progress.add_argument(parser)
    return parser


def json_value(value: float) -> float | str:
    if math.isfinite(value):
        return value
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


class _Output:
    """JSON lines on stdout and stderr; counts problems that change the exit code.

    History observations gather in columns (:meth:`columns`) and are printed a batch at a time, and
    always before a problem, so problems follow the observations that precede them."""

    def __init__(self, out: BinaryIO, err: BinaryIO) -> None:
        self.out, self.err = out, err
        self.corrupt = False
        self.observations = 0
        self.problems = 0
        self._file = ""
        self._names: dict[str, int] = {}
        self._columns: tuple[list[int], list[int], list[float], list[float]] = ([], [], [], [])

    def columns(self, file: str) -> tuple[dict[str, int], list[int], list[int], list[float], list[float]]:
        """The columns to append ``file``'s observations to (metric index into the names, step, wall
        time, value); call :meth:`spill` after each row."""
        if file != self._file:
            self.flush()
            self._file = file
        return (self._names, *self._columns)

    def spill(self) -> None:
        if len(self._columns[0]) >= 16384:
            self.flush()

    def lines(self, data: bytes, count: int) -> None:
        """Print ``count`` observations already made into lines."""
        self.flush()
        self.observations += count
        self.out.write(data)

    def problem(self, problem: SourceProblem, file: str | None = None) -> None:
        self.flush()
        record = problem.to_json()
        if file is not None:
            record["file"] = file
        with progress.paused(sys.stderr):
            self.err.write(orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE))
            self.err.flush()
        self.problems += 1
        if problem.kind != ProblemKind.TRUNCATED:
            self.corrupt = True

    def flush(self) -> None:
        metric, steps, walls, values = self._columns
        if metric:
            self.observations += len(metric)
            self.out.write(_json_lines(self._file, list(self._names), metric, steps, walls, values))
            for column in self._columns:
                column.clear()
            self._names.clear()
        self.out.flush()


def _dump_history(item: HistoryInput, args: argparse.Namespace, output: _Output) -> None:
    limits = args.limits
    offset = lines = 0
    while True:
        read = read_history(item.path, offset, lines, final=True, max_bytes=limits.batch_bytes,
                            max_rows=limits.batch_records, max_line_bytes=limits.max_line_bytes,
                            max_fields=limits.max_row_fields)
        _dump_rows(item, args, output, read)
        if read.reached_end or read.offset == offset or any(p.kind == ProblemKind.UNREADABLE for p in read.problems):
            return
        offset, lines = read.offset, read.lines


def _dump_rows(item: HistoryInput, args: argparse.Namespace, output: _Output, read) -> None:
    step_field, time_field = args.step_field, args.time_field
    keys_by_shape: dict[tuple[str, ...], list[tuple[str, str]]] = {}
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
        shape = tuple(fields)
        keys = keys_by_shape.get(shape)
        if keys is None:  # (key, metric name) in name order; rows of one writer share a few shapes
            keys = [(key, key.strip()) for key in sorted(shape) if key != step_field and key != time_field
                    and not key.startswith("_") and key.strip()]
            if len(keys_by_shape) < 1024:
                keys_by_shape[shape] = keys
        names, metric, steps, walls, values = output.columns(item.path)
        for key, name in keys:
            value = metric_number(fields[key])
            if value is not None:
                index = names.get(name)
                if index is None:
                    index = names[name] = len(names)
                metric.append(index)
                steps.append(step)
                walls.append(wall_time)
                values.append(value)
        output.spill()


def _dump_run(item: RunInput, args: argparse.Namespace, output: _Output) -> None:
    limits = args.limits
    if args.tensorboard_purge:
        # TensorBoard's view needs the whole run: a restart purges points read before it.
        batches = read_run(item.run, limits.max_row_fields)
        kept = {id(obs) for obs in apply_tensorboard_purge(in_read_order(batches))}
        for batch in batches:
            _print_batch(item, output, batch, [obs for obs in batch.observations if id(obs) in kept])
        return
    for batch, columns in _blocks(item, limits):
        file = item.display_path(batch.path)
        output.lines(_json_lines(file, columns.names, columns.metric, columns.step, columns.wall_time,
                                 columns.value), len(columns))
        for problem in batch.problems:
            output.problem(problem, file)


def _blocks(item: RunInput, limits, media: MediaRequest | None = None):
    """Every bounded block of a run's event files, in file order: ``(batch, scalar columns)``."""
    memory = RunMemory()
    for segment in item.run.segments():
        offset = records = 0
        while True:
            batch, columns = read_block_columns(item.run, segment, memory=memory, offset=offset,
                                                records_before=records, max_bytes=limits.batch_bytes,
                                                max_record_bytes=limits.max_line_bytes,
                                                max_values=limits.max_row_fields, media=media)
            yield batch, columns
            if not batch.more:
                break
            offset, records = batch.checkpoint, batch.records


def _dump_media(item: RunInput, args: argparse.Namespace, output: _Output) -> None:
    """The histograms, images or text (``args.kind``) of a run's event files, in file order."""
    limits = args.limits
    request = MediaRequest(frozenset({args.kind}), limits.max_tensor_values)
    if args.tensorboard_purge:
        batches = read_run(item.run, limits.max_row_fields, media=request, max_record_bytes=limits.max_line_bytes)
        kept = {id(record) for record in apply_tensorboard_purge(in_read_order(batches, media=True))}
        for batch in batches:
            _print_media(item, output, batch, [record for record in batch.media if id(record) in kept])
        return
    for batch, _scalars in _blocks(item, limits, request):
        _print_media(item, output, batch, batch.media)


def _history_source(item: HistoryInput | WandbLogInput, args: argparse.Namespace) -> tuple[Source, SourceInput]:
    """The source that reads a history file's (or W&B log's) media as the collector does, and its input."""
    path = os.path.abspath(item.path)
    if isinstance(item, WandbLogInput):
        return WandbLogSource(os.path.dirname(path), limits=args.limits), SourceInput(path, path, path)
    if path.endswith(os.sep + WANDB_HISTORY):
        return WandbSource(os.path.dirname(os.path.dirname(path)), limits=args.limits), history_input(path)
    source = HistorySource([path], step_field=args.step_field, time_field=args.time_field, limits=args.limits)
    return source, history_input(path)


def _history_batches(item: HistoryInput | WandbLogInput, args: argparse.Namespace):
    """Every bounded batch of a history file or W&B log, read to its end as a finished run's."""
    source, source_input = _history_source(item, args)
    start = Position()
    while True:
        batch = source.read(source_input, start, final=True)
        yield batch
        if not batch.more or batch.end == start or batch.unreadable or batch.stopped:
            return
        start = batch.end


def _dump_history_media(item: HistoryInput | WandbLogInput, args: argparse.Namespace, output: _Output) -> None:
    """The histograms or images (``args.kind``) of a history file or W&B log, in file order."""
    for batch in _history_batches(item, args):
        records = [record for record in batch.media if record.kind == args.kind]
        output.lines(b"".join(orjson.dumps(media_json(item.path, record), option=orjson.OPT_APPEND_NEWLINE)
                              for record in records), len(records))
        for problem in batch.problems:
            output.problem(problem, item.path)


def _dump_wandb_log(item: WandbLogInput, args: argparse.Namespace, output: _Output) -> None:
    """The scalar observations of a W&B log's history rows (flattened with ``.``, as the collector reads them)."""
    for batch in _history_batches(item, args):
        _dump_rows(HistoryInput(item.path), args, output, batch)


def _print_media(item: RunInput, output: _Output, batch: Batch, records: list[MediaRecord]) -> None:
    file = item.display_path(batch.path)
    output.lines(b"".join(orjson.dumps(media_json(file, record), option=orjson.OPT_APPEND_NEWLINE)
                          for record in records), len(records))
    for problem in batch.problems:
        output.problem(problem, file)


def media_json(file: str, record: MediaRecord) -> dict:
    """The JSON object ``dump --kind`` prints for one histogram, image or text record."""
    out = {"file": file, "tag": record.name, "step": record.step, "wall_time": record.wall_time}
    if record.kind == "histograms":
        buckets = record.buckets
        rows = buckets.tolist()
        if not np.isfinite(buckets).all():
            rows = [[json_value(number) for number in row] for row in rows]
        out["buckets"] = rows
    elif record.kind == "images":
        types = set(record.content_types)
        out.update(width=record.width, height=record.height,
                   images=[hashlib.sha256(image).hexdigest() for image in record.images],
                   content_type=types.pop() if len(types) == 1 else (OCTET_STREAM if types else None))
        if record.captions:
            out["captions"] = list(record.captions)
    else:
        out.update(text=list(record.text), shape=list(record.shape))
    return out


def _print_batch(item: RunInput, output: _Output, batch, observations: list) -> None:
    file = item.display_path(batch.path)
    output.lines(_observation_lines(file, observations), len(observations))
    for problem in batch.problems:
        output.problem(problem, file)


def _observation_lines(file: str, observations: list) -> bytes:
    """The JSON lines of observations (``--tensorboard-purge``'s path): one ``orjson.dumps`` per object, the
    reference :func:`_json_lines` matches."""
    return b"".join(orjson.dumps({"file": file, "metric": metric, "step": step, "wall_time": wall_time,
                                  "value": json_value(value)}, option=orjson.OPT_APPEND_NEWLINE)
                    for metric, step, wall_time, value, _record, _offset in observations)


def _json_lines(file: str, names: list[str], metric: Sequence[int] | np.ndarray,
                *columns: Sequence[float] | np.ndarray) -> bytes:
    """The JSON lines of many observations of ``file`` (the hot path of dump), byte for byte what
    :func:`_observation_lines` makes: ``metric`` indexes ``names``; ``columns`` are the steps, wall times
    and values. Each column's numbers are formatted by one ``orjson.dumps`` of the whole column and the
    lines joined in C, with no Python per line."""
    if not len(metric):
        return b""
    steps, walls, values = (_numbers(column) for column in columns)
    raw_values = np.asarray(columns[2], dtype=np.float64)
    for index in np.flatnonzero(~np.isfinite(raw_values)).tolist():  # orjson writes null for these
        values[index] = b'"' + json_value(float(raw_values[index])).encode() + b'"'
    head = b'{"file":' + orjson.dumps(file) + b',"metric":'
    heads = np.array([head + orjson.dumps(name) + b',"step":' for name in names], dtype=object)
    return b"".join(map(b"".join, zip(heads[np.asarray(metric, dtype=np.intp)], steps, repeat(b',"wall_time":'),
                                      walls, repeat(b',"value":'), values, repeat(b"}\n"))))


def _numbers(column: Sequence[float] | np.ndarray) -> list[bytes]:
    """Each number of a column as orjson writes it in a JSON object."""
    return orjson.dumps(column.tolist() if isinstance(column, np.ndarray) else column)[1:-1].split(b",")


def input_size(item: HistoryInput | RunInput | WandbLogInput | SourceProblem) -> int:
    """Bytes an input holds (for the progress line); 0 when it cannot be read."""
    try:
        if isinstance(item, HistoryInput | WandbLogInput):
            return os.path.getsize(item.path)
        if isinstance(item, RunInput):
            return sum(os.path.getsize(path) for path in item.run.segments())
    except OSError:
        pass
    return 0


def input_name(item: HistoryInput | RunInput | WandbLogInput | SourceProblem) -> str:
    if isinstance(item, HistoryInput | WandbLogInput):
        return item.path
    if isinstance(item, RunInput):
        return os.path.join(item.argument, item.run.relative) if item.run.relative else item.argument
    return item.path


class InputProgress:
    """``N/M inputs, read/total bytes, …`` for dump and project."""

    def __init__(self, label: str, items: list, flag: bool | None) -> None:
        self.sizes = [input_size(item) for item in items]
        self.total = sum(self.sizes)
        self.done_bytes = 0
        self.count = len(items)
        self.bar = progress.Progress(label, enabled=progress.wanted(flag))

    def advance(self, index: int, extra: str) -> None:
        self.done_bytes += self.sizes[index]
        self.bar.update(self.text(index + 1, extra))

    def text(self, done: int, extra: str) -> str:
        return (f"{done}/{self.count} inputs, {progress.human_bytes(self.done_bytes)}/"
                f"{progress.human_bytes(self.total)}, {extra}")

    def close(self, extra: str) -> None:
        self.bar.close(self.text(self.count, extra))


def run(args: argparse.Namespace) -> int:
    logs.configure_from(args)
    bound_process_memory()
    try:
        args.limits = input_limits.from_args(args)
    except input_limits.LimitsError as exc:
        return usage_error(args, str(exc))
    output = _Output(sys.stdout.buffer, sys.stderr.buffer)
    items = list(resolve_inputs(args.paths, wandb=True))
    bar = InputProgress("dump", items, args.progress)
    try:
        for index, item in enumerate(items):
            before = output.observations
            if isinstance(item, SourceProblem):
                output.problem(item)
            elif isinstance(item, HistoryInput | WandbLogInput):
                if args.kind == "scalars":
                    (_dump_wandb_log if isinstance(item, WandbLogInput) else _dump_history)(item, args, output)
                elif args.kind == "text":
                    log.info("history file passed over: it holds no text this reader knows", extra={"input": item.path})
                else:
                    _dump_history_media(item, args, output)
            elif args.kind == "scalars":
                _dump_run(item, args, output)
            else:
                _dump_media(item, args, output)
            log.info("input read", extra={"input": input_name(item), "observations": output.observations - before})
            bar.advance(index, f"{output.observations} observations")
        output.flush()
    except BrokenPipeError:  # `dump … | head` is fine
        return 0
    finally:
        bar.close(f"{output.observations} observations")
    log.info("dump finished", extra={"inputs": len(items), "observations": output.observations,
                                     "problems": output.problems})
    return EXIT_CORRUPT if output.corrupt else 0
