"""``tau-collector store``: inspect an expstore -- its runs, a run's metrics, raw rows or a reduced series.

stdout carries JSON lines:
- ``runs``: one run per line (the run's columns, ``tags`` and ``metric_names``), newest first;
- ``metrics``: one summary per metric of ``--run`` (``name``, counts, steps, values; absent when NULL);
- ``rows``: ``{"metric","step","wall_time","value"}`` per point of ``--metric``, one per step
  (last wins), wall_time as RFC3339Nano, non-finite values as "NaN"/"Infinity"/"-Infinity";
- ``series``: the same point lines after M4 reduction to ``--max-points``, then one line
  ``{"source_points","returned_points","partial"}``.
Exit 0 on success, 1 when the store or run is missing, 2 on usage errors.
"""

from __future__ import annotations

import argparse
import math
import sys

import orjson

from ..expstore import StoreNotFoundError, StoreReader
from ..expstore.store import ExpStore, StoreError
from ..gojson import encode_float, encode_string, format_time

_EPILOG = """\
examples:
  tau-collector store runs --store ~/.tau/expstore
  tau-collector store metrics --store ~/.tau/expstore --run seed-1
  tau-collector store rows --store ~/.tau/expstore --run seed-1 --metric train/loss --start-step 100
  tau-collector store series --store ~/.tau/expstore --run seed-1 --metric train/loss --max-points 400
"""

EXIT_MISSING = 1
EXIT_USAGE = 2


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "store",
        help="inspect an expstore: runs, metrics, rows, series (JSON lines)",
        description=__doc__,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("what", choices=("runs", "metrics", "rows", "series"), help="what to print")
    parser.add_argument("--store", required=True, metavar="DIR",
                        help="the store directory (holds manifest.json)")
    parser.add_argument("--run", metavar="RUN_ID", help="run id (metrics, rows, series)")
    parser.add_argument("--project", help="only a run of this project")
    parser.add_argument("--workspace", help="runs: only runs tagged tau_workspace=WORKSPACE or untagged")
    parser.add_argument("--metric", metavar="NAME", help="metric name (rows, series)")
    parser.add_argument("--start-step", type=int, metavar="N", help="first step to include")
    parser.add_argument("--end-step", type=int, metavar="N", help="last step to include")
    parser.add_argument("--max-points", type=int, default=8000, metavar="N",
                        help="series: at most N points (default 8000, as the Portal)")
    parser.set_defaults(func=run)
    return parser


def _usage(message: str) -> int:
    print(f"tau-collector store: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _value_json(value: float) -> str:
    if math.isnan(value):
        return '"NaN"'
    if math.isinf(value):
        return '"Infinity"' if value > 0 else '"-Infinity"'
    return encode_float(value)


def _point_line(metric: str, step: int, wall_us: int, value: float) -> str:
    return (
        '{"metric":' + encode_string(metric) + ',"step":' + str(step)
        + ',"wall_time":"' + format_time(wall_us * 1000) + '","value":' + _value_json(value) + "}\n"
    )


def run(args: argparse.Namespace) -> int:
    needs_run = args.what in ("metrics", "rows", "series")
    if needs_run and not args.run:
        return _usage(f"{args.what} needs --run")
    if args.what in ("rows", "series") and not args.metric:
        return _usage(f"{args.what} needs --metric")
    if args.start_step is not None and args.end_step is not None and args.start_step > args.end_step:
        return _usage("--start-step must not be greater than --end-step")
    if args.max_points < 1:
        return _usage("--max-points must be at least 1")
    try:
        reader = StoreReader(ExpStore(args.store))
    except StoreNotFoundError as exc:
        print(f"tau-collector store: {exc}", file=sys.stderr)
        return EXIT_MISSING
    except StoreError as exc:
        print(f"tau-collector store: {exc}", file=sys.stderr)
        return EXIT_MISSING
    out = sys.stdout
    if args.what == "runs":
        for r in reader.runs(args.workspace, project=args.project):
            record = {k: getattr(r, k) for k in r.__slots__ if getattr(r, k) is not None}
            record["metric_names"] = list(r.metric_names)
            out.write(orjson.dumps(record).decode() + "\n")
        return 0
    if reader.run(args.run, args.project) is None:
        print(f"tau-collector store: run {args.run!r} not found in {reader.store.root}", file=sys.stderr)
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
    if args.what == "rows":
        rows = reader.rows(args.run, args.metric, args.start_step, args.end_step)
        step, wall, value = rows.step.tolist(), rows.wall_time.tolist(), rows.value.tolist()
    else:
        series = reader.series(args.run, args.metric, args.start_step, args.end_step, args.max_points)
        step, wall, value = series.step.tolist(), series.wall_time.tolist(), series.value.tolist()
    out.writelines(_point_line(args.metric, s, w, v) for s, w, v in zip(step, wall, value, strict=True))
    if args.what == "series":
        out.write(orjson.dumps({"source_points": series.source_points,
                                "returned_points": series.returned_points,
                                "partial": series.partial}).decode() + "\n")
    return 0
