"""``tau-collector collect``: TauGrid's ``taugrid-metrics-collector collect`` flags, plus ours.

Every TauGrid flag keeps its name, default and ``TAU_METRICS_OFFLOAD_*`` variable (used only
when the flag is absent). Additions: ``--tfevents`` logdirs, ``--wandb`` directories, ``--sink`` (repeatable:
``expstore`` needs ``--store``; the ADX flags are required only for ``adx-queued-v1`` and
``adx-streaming``, which streams with a queued fallback and takes ``--adx-ingest-uri``),
``--step-field``/``--time-field``. Without ``--sink`` the sink is TauGrid's ``adx-queued-v1``,
or ``expstore`` when ``--store`` is given.

Every duration (``--interval``, ``--batch-wait``, ``--closed-after``, the ADX ones, and their variables)
is seconds (``10``) or Go syntax (``1m30s``): :mod:`tau_collector.cli.durations`.

Run, project, experiment and group ids follow TauGrid's ID rule (lowercase ``[a-z0-9._-]``, a
letter or digit first and last): another id is a usage error naming the flag or variable.

On success prints one status line, ``{"chunks","events","completed", …our counts}``, exit 0;
on any error (a signal included) a message on stderr and exit 1; usage errors exit 2.
Source problems and delivery retries are logged as warnings on stderr as they happen.
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import sqlite3
import sys
import threading

from tau_collector.cli import logging_setup as logs
from tau_collector.cli import progress
from tau_collector.cli.common import subcommand_parser, usage_error
from tau_collector.cli.durations import duration_type
from tau_collector.collect.loop import (
    Collector,
    CollectorCancelled,
    CollectorError,
    CollectorOptions,
    install_signal_handlers,
)
from tau_collector.collect.options import SPOOL_FORMATS
from tau_collector.collect.process_memory import bound_process_memory
from tau_collector.collect.stop_rules import StopRuleError, StopWatch, parse_stop_if, parse_stop_on_nan
from tau_collector.expstore.store import StoreError, StoreReadOnlyError
from tau_collector.sinks.base import Sink, SinkError
from tau_collector.sources import read_limits as input_limits
from tau_collector.spool.manifest import SpoolError
from tau_collector.taugrid.ids import InvalidID, validate_id

log = logging.getLogger("tau_collector.collect")

ENV_PREFIX = "TAU_METRICS_OFFLOAD_"
SINKS = ("expstore", "adx-queued-v1", "adx-streaming")

_EPILOG = """\
examples:
  # the embedded default: a job's history chunks into a local store, until the job completes
  tau-collector collect --watch --run r1 --project demo --experiment sweep --group lr \\
      --out run/collector --history 'run/metrics-history-attempt-0/*.jsonl' --tfevents run/tb \\
      --completion-file run/completion.json --sink expstore --store ~/.local/share/tau/store

  # one pass over existing history into a local store, with info logs and a progress line
  tau-collector collect -v --progress --run r1 --project demo --experiment sweep --group lr \\
      --out run/collector --history 'run/metrics-history-attempt-0/*.jsonl' --store run/store

  # TauGrid's sidecar, configured by environment as its renderer does
  TAU_METRICS_OFFLOAD_RUN=r1 ... tau-collector collect --watch --interval 10s
"""

# Each duration flag's rule (the syntax is cli/durations'): 0 is refused where it would mean nothing.
INTERVAL = duration_type()  # TauGrid's --interval: a watch that never waits is not a thing
_BATCH_WAIT = duration_type(zero=True)  # 0: drain at every change
_CLOSED_AFTER = duration_type(zero=True)  # 0: fold a closed file as soon as it qualifies
_ADX_DURATION = duration_type(zero=True)  # 0: TauGrid's default (1s backoff, 10m final-status timeout)


DEFAULT_CPU_BUDGET = "3%"  # also in --cpu-budget's help


def _percent(text: str) -> float:
    """``5%`` (or ``0.05``) as a fraction in [0, 1]."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid share {text!r} (use e.g. 5% or 0.05)") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0% and 100%, got {text!r}")
    return value


def flag_or_env(value, variable: str, default: str, parse):
    """A flag of ours, else its ``TAU_COLLECTOR_*`` variable, else the default."""
    if value is not None:
        return value
    try:
        return parse(os.environ.get(variable, "").strip() or default)
    except argparse.ArgumentTypeError as exc:
        raise UsageError(f"${variable}: {exc}") from None


def _tag(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"tag {text!r} must be KEY=VALUE")
    return key, value


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subcommand_parser(
        subparsers, "collect", run, help="watch history and event files and deliver canonical MetricEvents to sinks",
        description=__doc__, epilog=_EPILOG,
    )
    ident = p.add_argument_group("run identity (TauGrid)")
    ident.add_argument("--run", help="run_id [$TAU_METRICS_OFFLOAD_RUN]")
    ident.add_argument("--project", help="[$TAU_METRICS_OFFLOAD_PROJECT]")
    ident.add_argument("--experiment", help="experiment_id [$TAU_METRICS_OFFLOAD_EXPERIMENT]")
    ident.add_argument("--group", help="run_group_id [$TAU_METRICS_OFFLOAD_GROUP]")
    ident.add_argument("--source", help="event source field (default stellar-online) [$TAU_METRICS_OFFLOAD_SOURCE]")
    ident.add_argument("--tag", action="append", type=_tag, metavar="KEY=VALUE",
                     help="event tag, repeatable [$TAU_METRICS_OFFLOAD_TAGS: comma list]")
    src = p.add_argument_group("sources")
    src.add_argument("--history", action="append", metavar="PATH|GLOB",
                     help="JSONL history file or glob, repeatable [$TAU_METRICS_HISTORY]")
    src.add_argument("--tfevents", action="append", default=[], metavar="LOGDIR",
                     help="TensorBoard logdir to watch, repeatable (ours)")
    src.add_argument("--wandb", action="append", default=[], metavar="DIR",
                     help="W&B directory to watch for run-<id>.wandb logs: a run folder, a wandb/ folder or "
                          "the job's WANDB_DIR, repeatable (ours)")
    src.add_argument("--run-config", default="", metavar="PATH",
                     help="the run's configuration (hyperparameters), a JSON or YAML file, stored with the "
                          "run in the expstore (ours; default: a source's own, e.g. TensorBoard HParams)")
    src.add_argument("--step-field", default="_step", help="JSONL step field (ours; default _step)")
    src.add_argument("--time-field", default="_timestamp", help="JSONL time field (ours; default _timestamp)")
    src.add_argument("--baseline-existing-history", action="store_true",
                     help="checkpoint history that already exists without delivering it (needs --ready-file)")
    spool = p.add_argument_group("spool and lifecycle (TauGrid)")
    spool.add_argument("--out", help="spool and checkpoint directory [$TAU_METRICS_OFFLOAD_OUT]")
    spool.add_argument("--completion-file", help="the job's completion file [$TAU_METRICS_OFFLOAD_COMPLETION_FILE]")
    spool.add_argument("--interval", type=INTERVAL, metavar="DURATION",
                       help="longest wait between drains when no change is seen (default 1m; more than 0) "
                            "[$TAU_METRICS_OFFLOAD_INTERVAL]")
    spool.add_argument("--watch", action="store_true", help="run until the completion file appears")
    spool.add_argument("--batch-wait", type=_BATCH_WAIT, metavar="DURATION",
                       help="with --watch, the shortest time between two drains: changes meanwhile are read "
                            "together, as one chunk per file (ours; default 0s: drain at every change) "
                            "[$TAU_COLLECTOR_BATCH_WAIT]")
    spool.add_argument("--cpu-budget", type=_percent,
                       help="with --watch, after a drain that spent C of CPU on appended files, wait C/BUDGET "
                            "(at most 1s) before the next, so that reading them uses about BUDGET of a core (ours; "
                            "default 3%%; "
                            "0 drains at every change) [$TAU_COLLECTOR_CPU_BUDGET]")
    spool.add_argument("--closed-after", type=_CLOSED_AFTER, metavar="DURATION",
                       help="a history file unchanged this long, completely read and followed by 64 later-named "
                            "files is folded into one complete-through checkpoint entry for its directory, so "
                            "checkpoint.json stays bounded (ours; default 1m) [$TAU_COLLECTOR_CLOSED_AFTER]")
    spool.add_argument("--spool-format", choices=SPOOL_FORMATS, default="auto",
                       help="how history chunks are spooled: TauGrid's pending manifest (canonical NDJSON), or our "
                            "column record of the points, which needs sinks that keep points (expstore) and skips "
                            "building events nobody sends; auto: columns when every sink keeps points (ours; "
                            "default auto)")
    spool.add_argument("--max-iterations", type=int, default=0, help="stop watching after N drains")
    spool.add_argument("--ready-file", default="", help="written with 'ready' once the spool is replayed")
    spool.add_argument("--done-file", default="", help="written with 'done' after the terminal marker")
    spool.add_argument("--status-artifact-uri", help="[$TAU_METRICS_OFFLOAD_ARTIFACT_URI]")
    spool.add_argument("--status-checkpoint-uri", help="[$TAU_METRICS_OFFLOAD_CHECKPOINT_URI]; default: the last "
                       "checkpoint --checkpoints registered")
    spool.add_argument("--checkpoints", action="append", default=[], metavar="GLOB",
                       help="the job's checkpoints (files or directories whose names end in their step: "
                            "ckpt-1000.pt, step_1000/), registered in --store as checkpoint artifacts of the run "
                            "once each is stable (ours; repeatable)")
    sink = p.add_argument_group("sinks")
    sink.add_argument("--sink", action="append", choices=SINKS, help="repeatable (ours); see description")
    sink.add_argument("--store", help="expstore directory for --sink expstore (ours)")
    sink.add_argument("--delivery-mode", help="adx-required, the only mode [$TAU_METRICS_OFFLOAD_DELIVERY_MODE]")
    sink.add_argument("--adx-cluster-uri", help="[$TAU_METRICS_OFFLOAD_ADX_CLUSTER_URI]")
    sink.add_argument("--adx-database", help="[$TAU_METRICS_OFFLOAD_ADX_DATABASE]")
    sink.add_argument("--adx-client-id", help="[$TAU_METRICS_OFFLOAD_ADX_CLIENT_ID]")
    sink.add_argument("--adx-ingest-uri", help="adx-streaming's queued fallback endpoint (ours); default: the "
                      "cluster URI with ingest- [$TAU_METRICS_OFFLOAD_ADX_INGEST_URI]")
    sink.add_argument("--adx-table", help="default TauExpMetricEventsV1 [$TAU_METRICS_OFFLOAD_ADX_TABLE]")
    sink.add_argument("--adx-mapping", help="default TauExpMetricEventsV1Json [$TAU_METRICS_OFFLOAD_ADX_MAPPING]")
    sink.add_argument("--adx-max-attempts", type=int, help="0..10, 0 means 3 [$TAU_METRICS_OFFLOAD_ADX_MAX_ATTEMPTS]")
    sink.add_argument("--adx-retry-backoff", type=_ADX_DURATION, metavar="DURATION",
                      help="default 1s; 0 means 1s [$TAU_METRICS_OFFLOAD_ADX_RETRY_BACKOFF]")
    sink.add_argument("--adx-final-status-timeout", type=_ADX_DURATION, metavar="DURATION",
                      help="default 10m; 0 means 10m [$TAU_METRICS_OFFLOAD_ADX_FINAL_STATUS_TIMEOUT]")
    stop = p.add_argument_group("stop on divergence (ours)")
    stop.add_argument("--stop-on-nan", action="append", nargs="?", const="", metavar="METRIC",
                      help="ask the job to stop at the first NaN or infinite value of METRIC (any metric without "
                           "one), repeatable; writes stop-request.json into --out, which `wrap` acts on")
    stop.add_argument("--stop-if", action="append", metavar="RULE",
                      help="ask the job to stop when RULE holds for an observation: METRIC>VALUE, METRIC<VALUE, "
                           "METRIC>=VALUE or METRIC<=VALUE, repeatable")
    bounds = p.add_argument_group("memory bounds (ours)")
    input_limits.add_arguments(bounds)
    out = p.add_argument_group("logging and progress (ours)")
    logs.add_arguments(out)
    progress.add_argument(out)
    return p


class UsageError(Exception):
    pass


def _env(name: str) -> str:
    return os.environ.get(ENV_PREFIX + name, "").strip()


# Every duration of collect: (flag, its variable, default, parser). The flag wins, then the variable.
DURATIONS = (
    ("--interval", ENV_PREFIX + "INTERVAL", "1m", INTERVAL),
    ("--batch-wait", "TAU_COLLECTOR_BATCH_WAIT", "0s", _BATCH_WAIT),
    ("--closed-after", "TAU_COLLECTOR_CLOSED_AFTER", "1m", _CLOSED_AFTER),
    ("--adx-retry-backoff", ENV_PREFIX + "ADX_RETRY_BACKOFF", "1s", _ADX_DURATION),
    ("--adx-final-status-timeout", ENV_PREFIX + "ADX_FINAL_STATUS_TIMEOUT", "10m", _ADX_DURATION),
)


def resolve_durations(args: argparse.Namespace) -> dict[str, float]:
    """Each duration in seconds, keyed by its flag's attribute (``batch_wait``): from the flag, else its
    variable, else its default; a bad variable is a :class:`UsageError` naming it."""
    durations = {}
    for flag, variable, default, parse in DURATIONS:
        name = flag[2:].replace("-", "_")
        durations[name] = flag_or_env(getattr(args, name), variable, default, parse)
    return durations


def _pick(value: object, env: str, default: object = None) -> object:
    """TauGrid's rule: the environment applies only when the flag is absent."""
    if value is not None:
        return value
    raw = _env(env)
    return raw if raw else default


# (flag, environment variable, TauGrid's field name) of the run identity.
IDENTITY = (("run", "RUN", "run_id"), ("project", "PROJECT", "project"), ("experiment", "EXPERIMENT", "experiment_id"),
            ("group", "GROUP", "run_group_id"))


def _required(value: object, flag: str, env: str) -> str:
    resolved = _pick(value, env)
    if resolved is None or not str(resolved).strip():
        raise UsageError(f"--{flag} is required (or ${ENV_PREFIX}{env})")
    return str(resolved)


def resolve_identity(flags: dict[str, str | None]) -> dict[str, str]:
    """``run``/``project``/``experiment``/``group`` from their flags, else their environment, each a valid
    TauGrid id; :class:`UsageError` naming the flag (or the variable it came from) with TauGrid's message."""
    identity = {}
    for flag, env, kind in IDENTITY:
        value = _required(flags.get(flag), flag, env)
        try:
            validate_id(kind, value)
        except InvalidID as exc:
            where = f"--{flag}" if flags.get(flag) is not None else f"${ENV_PREFIX}{env}"
            raise UsageError(f"{where}: {exc}") from None
        identity[flag] = value
    return identity


def resolve_options(args: argparse.Namespace) -> tuple[CollectorOptions, list[Sink]]:
    identity = resolve_identity({flag: getattr(args, flag) for flag, _, _ in IDENTITY})
    run, project, experiment, group = (identity[flag] for flag, _, _ in IDENTITY)
    out = _required(args.out, "out", "OUT")
    history = args.history or ([os.environ["TAU_METRICS_HISTORY"]] if os.environ.get("TAU_METRICS_HISTORY") else [])
    if not history and not args.tfevents and not args.wandb:
        raise UsageError("--history is required (or $TAU_METRICS_HISTORY, or --tfevents, or --wandb)")
    tags = dict(args.tag or [])
    if args.tag is None and _env("TAGS"):
        for item in _env("TAGS").split(","):
            if item.strip():
                try:
                    key, value = _tag(item)
                except argparse.ArgumentTypeError as exc:
                    raise UsageError(f"${ENV_PREFIX}TAGS: {exc}") from None
                tags[key] = value
    durations = resolve_durations(args)
    cpu_budget = flag_or_env(args.cpu_budget, "TAU_COLLECTOR_CPU_BUDGET", DEFAULT_CPU_BUDGET, _percent)
    if args.max_iterations < 0:
        raise UsageError(f"--max-iterations must be 0 (no limit) or more, got {args.max_iterations}")
    if args.baseline_existing_history and not args.ready_file.strip():
        raise UsageError("--baseline-existing-history needs --ready-file")
    mode = _pick(args.delivery_mode, "DELIVERY_MODE", "adx-required")
    if mode != "adx-required":
        raise UsageError(f"--delivery-mode {mode!r} is not supported; adx-required is the only mode")
    try:
        limits = input_limits.from_args(args)
    except input_limits.LimitsError as exc:
        raise UsageError(str(exc)) from None
    sinks_wanted = args.sink or (["expstore"] if args.store else ["adx-queued-v1"])
    sinks: list[Sink] = []
    for name in dict.fromkeys(sinks_wanted):
        if name == "expstore":
            if not args.store:
                raise UsageError("--sink expstore needs --store DIR")
            from tau_collector.sinks.expstore import ExpstoreSink

            sinks.append(ExpstoreSink(args.store, source_id=os.path.abspath(out), background_compaction=True))
        else:
            sinks.append(_adx_sink(args, name, durations))
    try:
        rules = [parse_stop_on_nan(m) for m in args.stop_on_nan or ()] + [parse_stop_if(r) for r in args.stop_if or ()]
    except StopRuleError as exc:
        raise UsageError(str(exc)) from None
    options = CollectorOptions(
        run=run, project=project, experiment=experiment, group=group, out=out, sinks=sinks,
        history=history, tfevents=list(args.tfevents), wandb=list(args.wandb),
        source=str(_pick(args.source, "SOURCE", "stellar-online")),
        tags=tags, completion_file=str(_pick(args.completion_file, "COMPLETION_FILE", "")),
        interval=durations["interval"], batch_wait=durations["batch_wait"], cpu_budget=cpu_budget,
        baseline_existing_history=args.baseline_existing_history,
        ready_file=args.ready_file, done_file=args.done_file,
        status_artifact_uri=str(_pick(args.status_artifact_uri, "ARTIFACT_URI", "")),
        status_checkpoint_uri=str(_pick(args.status_checkpoint_uri, "CHECKPOINT_URI", "")),
        checkpoints=[g for g in args.checkpoints if g.strip()],
        watch=args.watch, max_iterations=args.max_iterations, step_field=args.step_field,
        time_field=args.time_field, limits=limits, run_config=args.run_config, closed_after=durations["closed_after"],
        spool_format=args.spool_format,
        on_delivered=StopWatch(rules, out, log=log.warning).check if rules else None,
    )
    return options, sinks


def _adx_sink(args: argparse.Namespace, name: str, durations: dict[str, float]) -> Sink:
    from tau_collector.sinks.adx.queued import AdxQueuedSink

    values = {}
    for flag, env in (("adx_cluster_uri", "ADX_CLUSTER_URI"), ("adx_database", "ADX_DATABASE"),
                      ("adx_client_id", "ADX_CLIENT_ID")):
        value = _pick(getattr(args, flag), env)
        if not value:
            raise UsageError(f"--{flag.replace('_', '-')} is required for the {name} sink "
                             f"(or ${ENV_PREFIX}{env})")
        values[flag] = str(value)
    attempts = _pick(args.adx_max_attempts, "ADX_MAX_ATTEMPTS", 0)
    try:
        attempts = int(attempts)  # type: ignore[arg-type]
    except ValueError:
        raise UsageError(f"--adx-max-attempts must be an integer, got {attempts!r}") from None
    if not 0 <= attempts <= 10:
        raise UsageError("--adx-max-attempts must be between 0 and 10")
    options = dict(
        client_id=values["adx_client_id"],
        table=str(_pick(args.adx_table, "ADX_TABLE", "TauExpMetricEventsV1")),
        mapping=str(_pick(args.adx_mapping, "ADX_MAPPING", "TauExpMetricEventsV1Json")),
        max_attempts=attempts, retry_backoff_s=durations["adx_retry_backoff"],
        final_status_timeout_s=durations["adx_final_status_timeout"],
    )
    if name == "adx-streaming":
        from tau_collector.sinks.adx.streaming import AdxStreamingSink

        return AdxStreamingSink(values["adx_cluster_uri"], values["adx_database"],
                                ingest_uri=str(_pick(args.adx_ingest_uri, "ADX_INGEST_URI", "")), **options)
    return AdxQueuedSink(values["adx_cluster_uri"], values["adx_database"], **options)


def describe_os_error(exc: OSError, out: str) -> str:
    where = f" ({exc.filename})" if exc.filename else f" (under {os.path.abspath(out)})"
    text = f"{exc.strerror or exc}{where}"
    if exc.errno == errno.ENOSPC:
        text += ("; free space on that filesystem and start the collector again: the checkpoint and the "
                 "spool were left consistent, nothing already read is lost")
    return text


def _next_step(exc: Exception, out: str) -> str:
    """The error's message, with what to do next unless it already says."""
    text = str(exc)
    where = os.path.abspath(out)
    if isinstance(exc, CollectorCancelled):
        return (f"{text}; the checkpoint and spool in {where} are consistent: start the collector again with the "
                "same flags to resume")
    if any(hint in text for hint in ("Restore", "remove it", "free space", "use a new --out")):
        return text
    if text.startswith("deliver chunk") or isinstance(exc, SinkError):
        return (f"{text}; nothing is lost: the chunk stays spooled in {where}; fix the sink (run with -v for "
                "details) and start the collector again with the same flags")
    if isinstance(exc, SpoolError):
        return (f"{text}; the spool in {where} was left as it is: repair or move it aside (a new --out "
                "delivers the history again from its start; readers deduplicate by event_id)")
    if "history" in text:
        return (f"{text}; history files may only be appended to: if this is a new run, collect it with a new "
                "--out directory")
    return text


def _show_progress(collector: Collector, bar: progress.Progress, stop: threading.Event) -> None:
    while not stop.wait(0.25):
        r = collector.result
        bar.update(f"{r.chunks} chunks, {r.events} events delivered"
                   + (f", {len(r.problems)} problems" if r.problems else ""))


def run(args: argparse.Namespace) -> int:
    logs.configure_from(args)
    bound_process_memory()  # before the expstore sink imports pyarrow
    try:
        options, sinks = resolve_options(args)
    except (UsageError, argparse.ArgumentTypeError) as exc:
        return usage_error(args, str(exc))
    except SinkError as exc:
        log.error(f"{exc}; install the sink's dependencies or pick another --sink")
        return 1
    except StoreReadOnlyError as exc:
        log.error(f"{exc}; give a --store this process can write, then run the same command again")
        return 1
    except StoreError as exc:
        log.error(f"--store {args.store}: {exc}")
        return 1
    except OSError as exc:  # e.g. a full disk while the store is created
        log.error(f"--store {args.store}: {describe_os_error(exc, args.out or '.')}")
        return 1
    except sqlite3.Error as exc:  # SQLite says a full disk as "disk I/O error" or "database or disk is full"
        log.error(f"--store {args.store}: its index cannot be written ({exc}); free space on that filesystem (or "
                  "fix its permissions) and start the collector again: nothing already read is lost")
        return 1

    log.info("collector starting", extra={
        "run": options.run, "project": options.project, "experiment": options.experiment, "group": options.group,
        "out": os.path.abspath(options.out), "sinks": ",".join(s.name for s in sinks),
        "history": ",".join(options.history), "tfevents": ",".join(options.tfevents), "wandb": ",".join(options.wandb),
        "watch": options.watch,
    })
    return _collect(args, options, sinks)


def _collect(args: argparse.Namespace, options: CollectorOptions, sinks: list[Sink]) -> int:
    bar = progress.Progress("collect", enabled=progress.wanted(args.progress))
    stop_bar = threading.Event()
    try:
        collector = Collector(options, log=log.warning)
        install_signal_handlers(collector)
        if bar.enabled:
            threading.Thread(target=_show_progress, args=(collector, bar, stop_bar), name="tau-progress",
                             daemon=True).start()
        result = collector.run()
    except OSError as exc:
        log.error(describe_os_error(exc, options.out))
        return 1
    except (CollectorError, SpoolError, SinkError) as exc:  # CollectorCancelled included
        log.error(_next_step(exc, options.out))
        return 1
    finally:
        stop_bar.set()
        for sink in sinks:
            sink.close()
    bar.close(f"{result.chunks} chunks, {result.events} events delivered")
    log.info("collector finished", extra={
        "chunks": result.chunks, "events": result.events, "completed": result.completed,
        "non_finite": result.non_finite, "problems": len(result.problems),
    })
    sys.stdout.buffer.write(result.status_line() + b"\n")
    sys.stdout.flush()
    return 0
