"""``tau-collector store``: inspect an expstore (runs, a run's metrics, raw rows, a reduced series) or compact it.

stdout carries JSON lines:
- ``runs``: one run per line (the run's columns, ``tags`` and ``metric_names``), newest first;
- ``metrics``: one summary per metric of ``--run`` (``name``, counts, steps, values; absent when NULL);
- ``rows``: ``{"metric","step","wall_time","value"}`` per point of ``--metric``, one per step
  (last wins), wall_time as RFC3339Nano, non-finite values as "NaN"/"Infinity"/"-Infinity",
  read and written in bounded batches;
  with ``--format csv``: ``step,wall_time,value`` lines after that header, every stored point (wall_time
  in seconds since the epoch, non-finite values as NaN/Infinity/-Infinity), read and written in
  bounded batches whatever the series' length (the Portal's export, the same text);
- ``series``: the same point lines after M4 reduction to ``--max-points``, then one line
  ``{"source_points","returned_points","partial"}``;
- ``compact``: merge the small files of ``--run`` (every run without it) with pyarrow, whatever Parquet writer made
  them, and sweep what killed writers left; one ``{"run_id","merges"}`` line per run. What the sidecar leaves
  (another writer's files: docs/data-path.md), run outside it.
Exit 0 on success, 1 when the store or run is missing or cannot be read, 2 on usage errors.
Every command is one indexed query (``rows``/``series`` read one run's Parquet files): there is
no progress line. ``-v`` logs what was read and how long it took.
"""

from __future__ import annotations

import argparse
import logging
import math
import sqlite3
import sys
import time

import orjson

from tau_collector.cli import logging_setup as logs
from tau_collector.cli.common import EXIT_USAGE, subcommand_parser, usage_error
from tau_collector.expstore.store import ExpStore, StoreError, StoreNotFoundError
from tau_collector.taugrid.gojson import MAX_TIME_NS, MIN_TIME_NS, encode_float, encode_string, format_time

log = logging.getLogger("tau_collector.store")

_EPILOG = """\
examples:
  tau-collector store runs --store ~/.local/share/tau/store
  tau-collector store metrics --store ~/.local/share/tau/store --run seed-1
  tau-collector store rows --store ~/.local/share/tau/store --run seed-1 --metric train/loss --start-step 100
  tau-collector store rows --store ~/.local/share/tau/store --run seed-1 --metric train/loss --format csv > loss.csv
  tau-collector store series --store ~/.local/share/tau/store --run seed-1 --metric train/loss --max-points 400
  tau-collector store runs --store ~/.local/share/tau/store --workspace default | jq -r .run_id
  tau-collector store compact --store ~/.local/share/tau/store --run seed-1
"""

EXIT_MISSING = 1
__all__ = ["EXIT_MISSING", "EXIT_USAGE", "add_parser", "run"]


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subcommand_parser(
        subparsers, "store", run,
        help="inspect an expstore: runs, metrics, rows, series (JSON lines)",
        description=__doc__, epilog=_EPILOG,
    )
    parser.add_argument("what", choices=("runs", "metrics", "rows", "series", "compact"),
                        help="what to print (compact: merge small files, outside the sidecar)")
    parser.add_argument("--store", required=True, metavar="DIR",
                        help="the store directory (holds manifest.json)")
    parser.add_argument("--run", metavar="RUN_ID", help="run id (metrics, rows, series)")
    parser.add_argument("--project", help="only a run of this project")
    parser.add_argument("--workspace", help="runs: only runs tagged tau_workspace=WORKSPACE or untagged")
    parser.add_argument("--metric", metavar="NAME", help="metric name (rows, series)")
    parser.add_argument("--start-step", type=int, metavar="N", help="first step to include")
    parser.add_argument("--end-step", type=int, metavar="N", help="last step to include")
    parser.add_argument("--format", choices=("jsonl", "csv"), default="jsonl",
                        help="rows: JSON lines (default) or CSV (step,wall_time,value)")
    parser.add_argument("--max-points", type=int, default=8000, metavar="N",
                        help="series: at most N points (default 8000, as the Portal)")
    logs.add_arguments(parser)
    return parser


def _value_json(value: float) -> str:
    if math.isnan(value):
        return '"NaN"'
    if math.isinf(value):
        return '"Infinity"' if value > 0 else '"-Infinity"'
    return encode_float(value)


def _wall_json(wall_us: int) -> str:
    """RFC 3339 text, or null for a time the text cannot say: none (the reader's INT64_MIN) or outside the
    years 0-9999 (a store holds any int64 microseconds)."""
    if not MIN_TIME_NS <= wall_us * 1000 <= MAX_TIME_NS:
        return "null"
    return '"' + format_time(wall_us * 1000) + '"'


def _point_line(metric: str, step: int, wall_us: int, value: float) -> str:
    return (
        '{"metric":' + encode_string(metric) + ',"step":' + str(step)
        + ',"wall_time":' + _wall_json(wall_us) + ',"value":' + _value_json(value) + "}\n"
    )


def run(args: argparse.Namespace) -> int:
    logs.configure_from(args)
    needs_run = args.what in ("metrics", "rows", "series")
    if needs_run and not args.run:
        return usage_error(args, f"{args.what} needs --run (list the runs with `tau-collector store runs`)")
    if args.what in ("rows", "series") and not args.metric:
        return usage_error(args, f"{args.what} needs --metric (list a run's metrics with "
                                 "`tau-collector store metrics --run RUN_ID`)")
    if args.start_step is not None and args.end_step is not None and args.start_step > args.end_step:
        return usage_error(args, "--start-step must not be greater than --end-step")
    if args.format == "csv" and args.what != "rows":
        return usage_error(args, f"--format csv is for rows (every stored point), not {args.what}")
    if args.max_points < 1:
        return usage_error(args, "--max-points must be at least 1")
    started = time.monotonic()
    try:
        code = _compact(args) if args.what == "compact" else _query(args)
    except StoreNotFoundError as exc:
        log.error(f"{exc}; pass the directory that holds manifest.json: the --store given to "
                  "`tau-collector collect` or `taunotebook import`")
        return EXIT_MISSING
    except BrokenPipeError:  # `store rows … | head` is fine
        return 0
    except (StoreError, OSError, sqlite3.DatabaseError) as exc:
        log.error(f"cannot read the store {args.store}: {exc}; check that it is a complete expstore "
                  "and readable by you (another collector writing it is fine)")
        return EXIT_MISSING
    log.info("store read", extra={"what": args.what, "store": args.store, "run": args.run or "",
                                  "seconds": round(time.monotonic() - started, 3)})
    return code


def _compact(args: argparse.Namespace) -> int:
    from tau_collector.expstore.maintain.compaction import compact_all

    store = ExpStore(args.store, writable=True)
    runs = [args.run] if args.run else [r[0] for r in store.connection().execute(
        "SELECT run_id FROM runs ORDER BY run_id")]
    for run_id in runs:
        merges = compact_all(store, run_id)  # pyarrow for the files of other writers
        sys.stdout.write(orjson.dumps({"run_id": run_id, "merges": merges}).decode() + "\n")
    return 0


def _query(args: argparse.Namespace) -> int:
    from tau_collector.expstore.read.reader import StoreReader  # pyarrow and numpy: loaded by this command only

    reader = StoreReader(ExpStore(args.store))
    out = sys.stdout
    if args.what == "runs":
        for r in reader.runs(args.workspace, project=args.project):
            record = {k: getattr(r, k) for k in r.__slots__ if getattr(r, k) is not None}
            record["metric_names"] = list(r.metric_names)
            out.write(orjson.dumps(record).decode() + "\n")
        return 0
    if reader.run(args.run, args.project) is None:
        scope = f" of project {args.project!r}" if args.project else ""
        log.error(f"run {args.run!r}{scope} not found in {reader.store.root}; list the runs with "
                  f"`tau-collector store runs --store {args.store}`")
        return EXIT_MISSING
    if args.what == "metrics":
        for s in reader.metric_summaries(args.run):
            record = {"name": s.metric_name}
            for key in ("count", "finite_count", "non_finite_count", "min_step", "max_step", "latest_step",
                        "latest_wall_time", "latest_value", "min_value", "max_value", "updated_at"):
                if getattr(s, key) is not None:
                    record[key] = getattr(s, key)
            out.write(orjson.dumps(record).decode() + "\n")
        return 0
    if args.what == "rows" and args.format == "csv":
        from tau_collector.expstore.read.series_export import csv_chunks

        out.flush()
        sys.stdout.buffer.writelines(csv_chunks(reader.export_series(args.run, args.metric, args.start_step,
                                                                     args.end_step)))
        return 0
    if args.what == "rows":
        # In bounded batches, as the CSV: a 10M-point series never sits in memory (a wall time the
        # store does not have keeps the reader's sentinel, as before).
        for batch in reader.export_series(args.run, args.metric, args.start_step, args.end_step):
            out.writelines(_point_line(args.metric, s, w, v) for s, w, v in zip(
                batch.step.tolist(), batch.wall_time.tolist(), batch.value.tolist(), strict=True))
        return 0
    series = reader.series(args.run, args.metric, args.start_step, args.end_step, args.max_points)
    step, wall, value = series.step.tolist(), series.wall_time.tolist(), series.value.tolist()
    out.writelines(_point_line(args.metric, s, w, v) for s, w, v in zip(step, wall, value, strict=True))
    out.write(orjson.dumps({"source_points": series.source_points, "returned_points": series.returned_points,
                            "partial": series.partial}).decode() + "\n")
    return 0
