"""``tau-collector wrap -- CMD...``: run a trainer with the collector beside it (TauGrid's wrapper semantics).

Starts ``tau-collector collect --watch`` as a sidecar over the run directory, waits for its ready
file, runs the trainer with its stdout through the normalizer (JSON rows become history chunks,
every other line goes to our stdout unchanged: the job log), writes the completion file with the
outcome, waits for the collector's done file, and exits with the trainer's code — or TauGrid's
124 (collector not ready in time), 125 (no done file in time), 143 (terminated before ready).

Run directory layout (TauGrid's workspace layout below ``runs/<run>/``)::

    metrics-history-attempt-0/chunk-*.jsonl   history chunks ($TAU_HISTORY_DIR)
    tensorboard/                              TensorBoard logdir ($TAU_TENSORBOARD_DIR)
    collector/                                the collector's spool, ready and done files
    completion.json                           the outcome, written when the trainer exits
    collector.log                             the collector's own log

Flags before ``--`` that are not wrap's own are passed to ``collect`` (``--run``, ``--project``,
``--experiment``, ``--group``, ``--store``/``--sink``, ``--tag``, ADX flags, ...). ``-v`` and
``--log-format`` are wrap's own; the collector always logs at info level into ``collector.log``,
in wrap's ``--log-format``. Durations are seconds (``10``) or Go syntax (``1m30s``):
:mod:`tau_collector.cli.durations`. Usage errors exit 2, a missing or invalid run identity or stop rule among
them (checked before anything starts).

Beside the trainer, wrap samples its process tree, the host and NVIDIA GPUs as ``system/`` metrics
every ``--system-interval`` (:mod:`tau_collector.job.system_sampler`), and stops it when one of
the collector's stop rules fires (``--stop-on-nan``/``--stop-if``, passed on to ``collect``, which
writes ``collector/stop-request.json``): the run then ends ``cancelled``, reason
``metric-stop-rule``, with the rule, metric, value and step in the completion's message.

With ``--retries N`` a trainer that failed (not one cancelled, stopped by a rule or at its time limit) is
started again, at most N times, beside the same collector: ``$TAU_RESUME_FROM`` names the last checkpoint
on disk (the highest step among ``--checkpoints``, or ``--checkpoint-path``'s files; else the path itself,
as TauGrid gives its checkpoint directory), ``$TAU_RESUME_STEP`` its step, and ``$TAU_RETRY_ATTEMPT``,
``$TAU_RETRY_MAX``, ``$TAU_RETRY_REASON`` as TauGrid's retry loop sets them. Each retry is a ``retry`` run
event in a local ``--store`` with the step it resumes from.

With ``--notify URL`` (repeatable; else ``$TAU_NOTIFY_URL``, else ``<TAU_HOME>/notify-urls``) wrap POSTs
a webhook when a stop rule fires and when the run finishes, fails or is cancelled
(:mod:`tau_collector.job.notify`). Delivery runs on background threads with bounded retries; at exit
wrap waits at most ``--notify-grace`` for it, and never changes its exit code for it. Each delivery,
sent or failed, becomes a ``notification`` run event in a local ``--store``.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable

from tau_collector.cli import logging_setup as logs
from tau_collector.cli.collect import IDENTITY, INTERVAL, UsageError, flag_or_env, resolve_identity
from tau_collector.cli.common import subcommand_parser, usage_error
from tau_collector.cli.durations import duration_type
from tau_collector.cli.normalize import HistoryFilter, Passthrough
from tau_collector.collect.checkpoints import latest_checkpoint
from tau_collector.collect.completion_file import write_completion
from tau_collector.collect.signal_stop import StopFlag, leave_stop_signals_to_main_thread
from tau_collector.collect.stop_rules import REASON as STOP_RULE_REASON
from tau_collector.collect.stop_rules import (
    STOP_REQUEST,
    StopRuleError,
    parse_stop_if,
    parse_stop_on_nan,
    read_stop_request,
)
from tau_collector.job.faults import cgroup_oom_kills, describe_exit, fault_event
from tau_collector.job.history_writer import HistoryWriter
from tau_collector.job.notify import (
    Delivery,
    Notification,
    Notifier,
    NotifyUrlError,
    check_notify_url,
    resolve_notify_urls,
)
from tau_collector.job.system_sampler import SystemSampler

log = logging.getLogger("tau_collector.wrap")

EXIT_NOT_READY = 124
EXIT_NO_DONE = 125
EXIT_TERMINATED = 143
HISTORY_DIR = "metrics-history-attempt-0"

_EPILOG = """\
examples:
  tau-collector wrap --run-dir runs/seed-1 --run seed-1 --project demo --experiment sweep --group lr \\
      --store ~/.local/share/tau/store -- python train.py --lr 0.1
  # log each step of the wrapper (collector ready, trainer exit, terminal publication) as JSON lines
  tau-collector wrap -v --log-format json --run-dir runs/seed-2 --run seed-2 --project demo \\
      --experiment sweep --group lr --store ~/.local/share/tau/store -- python train.py --lr 0.01
"""


def _interval_text(text: str) -> str:
    INTERVAL(text)  # a bad duration is wrap's usage error, not a collector that never gets ready
    return text


_interval_text.__name__ = "duration"
SYSTEM_INTERVAL_ENV = "TAU_COLLECTOR_SYSTEM_INTERVAL"
_TIMEOUT = duration_type()  # a wait that cannot last is refused, not taken as "do not wait"
SYSTEM_INTERVAL = duration_type(zero=True)  # 0 turns system metrics off
NOTIFY_GRACE = duration_type(zero=True)
NOTIFY_EVENT = "notification"  # the run event type of each webhook delivery
RETRY_EVENT = "retry"  # the run event type of each retry of a failed trainer


def resolve_system_interval(args: argparse.Namespace) -> float:
    """``--system-interval``, else ``$TAU_COLLECTOR_SYSTEM_INTERVAL``, else 10 s; 0 is off. A bad variable is a
    :class:`UsageError` naming it."""
    return flag_or_env(args.system_interval, SYSTEM_INTERVAL_ENV, "10s", SYSTEM_INTERVAL)


def _gpu_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a whole number of GPUs >= 0, got {text!r}")
    return value


def _wait_limited(trainer: subprocess.Popen, limit: float | None) -> tuple[int, bool]:
    """The trainer's exit code, and True when it was stopped at the time limit."""
    try:
        return trainer.wait(timeout=limit), False
    except subprocess.TimeoutExpired:
        log.error(f"time limit of {limit:g}s reached; stopping the trainer")
        trainer.terminate()
        try:
            return trainer.wait(timeout=30), True
        except subprocess.TimeoutExpired:
            trainer.kill()
            return trainer.wait(), True


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subcommand_parser(
        subparsers, "wrap", run, help="run a training command with the collector beside it",
        description=__doc__, epilog=_EPILOG,
        usage="tau-collector wrap --run-dir DIR [wrap options] [collect options] -- CMD [ARGS...]",
        allow_abbrev=False,  # `--run` belongs to collect, not an abbreviation of --run-dir
    )
    p.add_argument("--run-dir", required=True, help="the run's directory (created if missing)")
    p.add_argument("--ready-timeout", type=_TIMEOUT, default=120.0, metavar="DURATION",
                   help="how long to wait for the collector to be ready (default 120s)")
    p.add_argument("--done-timeout", type=_TIMEOUT, default=None, metavar="DURATION",
                   help="how long to wait for the collector's terminal publication after the trainer exits "
                        "(default: 1833s for ADX, TauGrid's drain budget at its default ADX flags; 120s for a "
                        "local store)")
    p.add_argument("--interval", default="10s", type=_interval_text, metavar="DURATION",
                   help="collector --interval (default 10s, TauGrid's renderer)")
    p.add_argument("--system-interval", type=SYSTEM_INTERVAL, default=None, metavar="DURATION",
                   help="sample the trainer's CPU, memory and GPUs as system/ metrics every DURATION "
                        "(default 10s; 0 turns it off) [$TAU_COLLECTOR_SYSTEM_INTERVAL]")
    p.add_argument("--notify", action="append", default=[], metavar="URL",
                   help="POST a Slack/Teams-compatible webhook when a stop rule fires and when the run finishes, "
                        "fails or is cancelled (repeatable; default $TAU_NOTIFY_URL, comma- or space-separated, "
                        "else the URLs in <TAU_HOME>/notify-urls; --notify '' sends none)")
    p.add_argument("--notify-grace", type=NOTIFY_GRACE, default=5.0, metavar="DURATION",
                   help="at exit, wait at most this long for webhooks still being retried (default 5s; 0: not at "
                        "all); a webhook never changes wrap's exit code")
    p.add_argument("--notify-link", metavar="URL", help="the run's Stellar page, put in each notification")
    p.add_argument("--gpus", type=_gpu_count, default=None, metavar="N",
                   help="give the trainer N GPUs: CUDA_VISIBLE_DEVICES=0,...,N-1 (unless the environment sets it)")
    p.add_argument("--time-limit", type=_TIMEOUT, default=None, metavar="DURATION",
                   help="stop the trainer (SIGTERM, SIGKILL 30s later) after DURATION (all attempts together); the "
                        "run ends failed")
    p.add_argument("--retries", type=_gpu_count, default=0, metavar="N",
                   help="start a trainer that failed again, at most N times, resuming from the last checkpoint: "
                        "$TAU_RESUME_FROM names it (else --checkpoint-path), with $TAU_RESUME_STEP, "
                        "$TAU_RETRY_ATTEMPT, $TAU_RETRY_MAX and $TAU_RETRY_REASON (TauGrid's resilience); each "
                        "retry is a run event of type retry at the checkpoint's step")
    p.add_argument("--checkpoint-path", default=None, metavar="DIR",
                   help="where the trainer writes its checkpoints (TauGrid's resilience.checkpoint_path): "
                        "without --checkpoints, the collector registers DIR/* as the run's checkpoints")
    logs.add_arguments(p)
    p.set_defaults(collect_args=[], command=[])
    return p


def split_argv(argv: list[str]) -> tuple[list[str], list[str]]:
    """``wrap [opts] -- CMD...`` → (options, command)."""
    if "--" not in argv:
        return argv, []
    index = argv.index("--")
    return argv[:index], argv[index + 1:]


def parse(argv: list[str]) -> argparse.Namespace:
    """Parse ``wrap``'s argv: its own flags, pass-through collect flags, and the command."""
    options, command = split_argv(argv)
    parser = argparse.ArgumentParser(prog="tau-collector", allow_abbrev=False)
    sub = parser.add_subparsers()
    add_parser(sub)
    args, rest = parser.parse_known_args(["wrap", *options])
    args.collect_args, args.command = rest, command
    return args


def _terminate_with_parent() -> None:
    """In a child, before exec: SIGTERM when the wrapper dies (even by SIGKILL). The trainer stops with
    its job, and no collector is left watching forever: on SIGTERM it drains, waits briefly for the
    completion file and records the run as cancelled."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG (Linux)
    except (OSError, AttributeError):
        pass


def _pump(fd: int, history_dir: str, log: Passthrough) -> None:
    leave_stop_signals_to_main_thread()
    with HistoryWriter(history_dir) as writer:
        filter_ = HistoryFilter(writer, log)
        while True:
            data = os.read(fd, 1 << 16)
            if not data:
                break
            filter_.feed(data)
            log.flush()
        filter_.finish()
        log.flush()
    os.close(fd)


def _wait_for(path: str, timeout: float, *, stop: StopFlag, process: subprocess.Popen) -> str:
    """'ok' when ``path`` exists, 'timeout', 'stopped' (signal) or 'exited' (the collector died)."""
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if stop.is_set():
            return "stopped"
        if process.poll() is not None:
            return "ok" if os.path.exists(path) else "exited"
        if time.monotonic() >= deadline:
            return "timeout"
        time.sleep(0.05)
    return "ok"


def _stop_on_request(out_dir: str, trainer: subprocess.Popen, request: dict,
                     on_request: Callable[[dict], None] = lambda found: None) -> None:
    """Stop the trainer when one of the collector's stop rules fired (its stop-request.json): SIGTERM, and
    SIGKILL if it is still running 30 s later."""
    leave_stop_signals_to_main_thread()
    while trainer.poll() is None:
        found = read_stop_request(out_dir)
        if found is not None:
            request.update(found)
            on_request(found)
            log.warning(f"{found.get('message', 'a stop rule fired')}; stopping the trainer")
            trainer.send_signal(signal.SIGTERM)
            try:
                trainer.wait(timeout=30)
            except subprocess.TimeoutExpired:
                trainer.kill()
            return
        time.sleep(0.2)


def _identity_flags(collect_args: list[str]) -> dict[str, str | None]:
    """The identity flags among those passed on to ``collect`` (``--run X`` or ``--run=X``)."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    for flag, _, _ in IDENTITY:
        parser.add_argument(f"--{flag}")
    known, _ = parser.parse_known_args(collect_args)
    return vars(known)


def _check_stop_rules(collect_args: list[str]) -> None:
    """The stop rules among the flags passed on to ``collect``, read now: a bad one is wrap's usage error."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--stop-on-nan", action="append", nargs="?", const="")
    parser.add_argument("--stop-if", action="append")
    known, _ = parser.parse_known_args(collect_args)
    try:
        for metric in known.stop_on_nan or ():
            parse_stop_on_nan(metric)
        for rule in known.stop_if or ():
            parse_stop_if(rule)
    except StopRuleError as exc:
        raise UsageError(str(exc)) from None


def _store_flag(collect_args: list[str]) -> str | None:
    """The ``--store`` among the flags passed on to ``collect``: where notifications are recorded."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--store")
    known, _ = parser.parse_known_args(collect_args)
    return known.store


def _checkpoint_globs(collect_args: list[str]) -> list[str]:
    """The ``--checkpoints`` globs among the flags passed on to ``collect``."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--checkpoints", action="append", default=[])
    known, _ = parser.parse_known_args(collect_args)
    return [g for g in known.checkpoints if g.strip()]


def _record_retry(store_root: str | None, run_id: str, payload: dict, message: str) -> None:
    """A retry as a ``retry`` run event in the local store (its step in the payload); never raises."""
    log.warning(message)
    if store_root is None:
        return
    try:
        from tau_collector.expstore import open_store, record_run_events
        from tau_collector.expstore.store import utc_now_rfc3339
        from tau_collector.reads import RunEvent

        record_run_events(open_store(store_root, writable=True), [
            RunEvent(run_id, utc_now_rfc3339(), RETRY_EVENT, "tau-collector-wrap", "warning", message, payload)])
    except Exception as exc:  # the retry goes ahead whatever happens to its record
        log.warning(f"could not record the retry in --store {store_root}: {exc}")


def _record_deliveries(store_root: str | None, run_id: str, deliveries: list[Delivery], grace: float) -> None:
    """Each webhook delivery as a ``notification`` run event in the local store; never raises."""
    events = []
    for d in deliveries:
        outcome, detail = d.outcome, d.detail
        if outcome == "pending":
            outcome = "failed"
            detail = f"still undelivered when wrap exited ({grace:g}s grace; last: {detail or 'no answer yet'})"
        n = d.notification
        message = f"{n.trigger} notification to {d.redacted_url} {outcome} after {d.attempts} attempt(s): {detail}"
        log.info(message) if outcome == "sent" else log.warning(message)
        events.append((outcome, message, {"trigger": n.trigger, "outcome": outcome, "url": d.redacted_url,
                                          "attempts": d.attempts, "status": d.status, "detail": detail,
                                          "state": n.state, "reason": n.reason}))
    if store_root is None or not events:
        return
    try:
        from tau_collector.expstore import open_store, record_run_events
        from tau_collector.expstore.store import utc_now_rfc3339
        from tau_collector.reads import RunEvent

        now = utc_now_rfc3339()
        record_run_events(open_store(store_root, writable=True), [
            RunEvent(run_id, now, NOTIFY_EVENT, "tau-collector-wrap", "info" if outcome == "sent" else "warning",
                     message, payload) for outcome, message, payload in events])
    except Exception as exc:  # the run's outcome stands whatever happens to its notification record
        log.warning(f"could not record the notifications in --store {store_root}: {exc}")


RETRY_ENV = ("TAU_RESUME_FROM", "TAU_RESUME_STEP", "TAU_RETRY_ATTEMPT", "TAU_RETRY_MAX", "TAU_RETRY_REASON")


def _run_trainer(args: argparse.Namespace, env: dict, history_dir: str, out_dir: str, stop: StopFlag,
                 stop_request: dict, system_interval: float, notify: Callable[..., None],
                 deadline: float | None) -> tuple[subprocess.Popen | None, int, str, str, str, dict | None]:
    """Run the trainer once: (its process, exit status, the run's state, how it ended (``ok``, ``failed``,
    ``stopped`` (a signal or a stop rule), ``timed-out`` or ``not-started``), its end in words, and the fault
    when it ended by one: a signal, a kill for memory)."""
    read_fd, write_fd = os.pipe()
    trainer: subprocess.Popen | None = None
    try:
        oom_before = cgroup_oom_kills()
        trainer = subprocess.Popen(args.command, stdout=write_fd, env=env, preexec_fn=_terminate_with_parent)
        _TRAINER[0] = trainer
        if stop.is_set():  # the signal arrived while the trainer was being started
            trainer.send_signal(signal.SIGTERM)
    except OSError as exc:
        os.close(read_fd)
        log.error(f"cannot start {args.command[0]!r}: {exc.strerror or exc}; check the command after -- "
                  "(its name, PATH and permissions)")
        return None, 127, "failed", "not-started", "", None
    finally:
        os.close(write_fd)
    log.info("trainer started", extra={"pid": trainer.pid, "command": " ".join(args.command)})
    sampler = SystemSampler(history_dir, trainer.pid, system_interval).start() if system_interval else None
    pump = threading.Thread(target=_pump, args=(read_fd, history_dir, Passthrough(sys.stdout.buffer)),
                            name="tau-normalize", daemon=True)
    pump.start()

    def on_stop_request(found: dict) -> None:
        step = found.get("step")
        notify("stop-rule", "running", STOP_RULE_REASON, found.get("message", "a stop rule fired"),
               step if isinstance(step, int) else None)

    threading.Thread(target=_stop_on_request, args=(out_dir, trainer, stop_request, on_stop_request),
                     name="tau-stop-rules", daemon=True).start()
    limit = None if deadline is None else max(0.0, deadline - time.monotonic())
    code, timed_out = _wait_limited(trainer, limit)
    pump.join()
    if sampler is not None:
        sampler.stop()  # its rows are on disk before the completion file starts the final drain
    status = code if code >= 0 else 128 - code
    log.info("trainer exited", extra={"code": status})
    exit_words, fault = describe_exit(code, oom_before, cgroup_oom_kills())
    if stop.is_set():
        return trainer, status, "cancelled", "stopped", exit_words, None
    if stop_request:
        return trainer, status, "cancelled", "stopped", exit_words, None
    if timed_out:
        return trainer, status, "failed", "timed-out", exit_words, None
    if status != 0:
        return trainer, status, "failed", "failed", exit_words, fault
    return trainer, status, "succeeded", "ok", exit_words, None


_TRAINER: list[subprocess.Popen | None] = [None]  # the running trainer, for the signal handler


def _record_fault(store_root: str | None, run_id: str, message: str, fault: dict) -> None:
    """The trainer's fault as a ``fault`` run event in the local store (``--store``); never raises."""
    log.error(message, extra={"fault": fault["kind"]})
    if store_root is None:
        return
    try:
        from tau_collector.expstore import open_store, record_run_events
        from tau_collector.expstore.store import utc_now_rfc3339

        payload = {k: v for k, v in fault.items() if k != "kind"}
        record_run_events(open_store(store_root, create=True),
                          [fault_event(run_id, utc_now_rfc3339(), fault["kind"], message, **payload)])
    except Exception as exc:  # the run's outcome stands whatever happens to its fault record
        log.warning(f"could not record the fault in --store {store_root}: {exc}")


def run(args: argparse.Namespace) -> int:
    logs.configure_from(args)
    if not args.command:
        return usage_error(args, "no command given; put the training command after --, "
                                 "e.g. `tau-collector wrap --run-dir DIR ... -- python train.py`")
    try:
        system_interval = resolve_system_interval(args)
        # A run the collector would refuse is refused before the trainer starts or a file is written.
        identity = resolve_identity(_identity_flags(args.collect_args))
        _check_stop_rules(args.collect_args)
        notify_urls = resolve_notify_urls(args.notify)
        if args.notify_link is not None:
            check_notify_url(args.notify_link, where="--notify-link")
    except (UsageError, NotifyUrlError) as exc:
        return usage_error(args, str(exc))
    notifier = Notifier(notify_urls)

    def notify(trigger: str, state: str, reason: str, message: str, step: int | None = None) -> None:
        if notify_urls:
            notifier.send(Notification(trigger, identity["run"], identity.get("project"), state, reason, message,
                                       step=step, link=args.notify_link))

    run_dir = os.path.abspath(args.run_dir)
    history_dir = os.path.join(run_dir, HISTORY_DIR)
    tensorboard_dir = os.path.join(run_dir, "tensorboard")
    out_dir = os.path.join(run_dir, "collector")
    completion = os.path.join(run_dir, "completion.json")
    ready, done = os.path.join(out_dir, "ready"), os.path.join(out_dir, "done")
    for directory in (history_dir, tensorboard_dir, out_dir):
        os.makedirs(directory, exist_ok=True)
    for stale in (completion, ready, done, os.path.join(out_dir, STOP_REQUEST)):
        if os.path.exists(stale):
            os.unlink(stale)

    uses_adx = "adx-queued-v1" in args.collect_args or not any(
        a in ("--store", "--sink") or a.startswith(("--store=", "--sink=")) for a in args.collect_args)
    done_timeout = args.done_timeout if args.done_timeout is not None else (1833.0 if uses_adx else 120.0)

    checkpoint_globs = _checkpoint_globs(args.collect_args)
    extra_collect: list[str] = []
    if not checkpoint_globs and args.checkpoint_path:
        checkpoint_globs = [os.path.join(os.path.abspath(args.checkpoint_path), "*")]
        extra_collect = ["--checkpoints", checkpoint_globs[0]]
    collector_cmd = [
        sys.executable, "-m", "tau_collector", "collect", "--watch", "-v", "--log-format", args.log_format,
        "--no-progress", "--interval", args.interval,
        "--out", out_dir, "--history", os.path.join(history_dir, "*.jsonl"), "--tfevents", tensorboard_dir,
        "--completion-file", completion, "--ready-file", ready, "--done-file", done, *args.collect_args,
        *extra_collect,
    ]
    log_path = os.path.join(run_dir, "collector.log")
    log_file = open(log_path, "ab")  # lives as long as the sidecar
    collector = subprocess.Popen(collector_cmd, stdout=open(os.path.join(out_dir, "result.json"), "wb"),
                                 stderr=log_file, start_new_session=True, preexec_fn=_terminate_with_parent)
    log.info("collector started", extra={"pid": collector.pid, "run_dir": run_dir, "log": log_path})

    stop = StopFlag()  # set by the signal handler: lock-free

    def on_signal(signum: int, frame: object) -> None:
        stop.set()
        running = _TRAINER[0]
        if running is not None and running.poll() is None:
            running.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    status = 0
    state, reason = "succeeded", "workload-entrypoint-exit"
    stop_request: dict = {}  # what a stop rule wrote, once it fired
    limit_message = ""  # set when the trainer was stopped at --time-limit
    fault: dict | None = None  # the trainer's last end when it was a fault (a signal, a kill for memory)
    exit_words = ""
    waited = _wait_for(ready, args.ready_timeout, stop=stop, process=collector)
    if waited == "stopped" or (waited == "ok" and stop.is_set()):
        # Terminated before the trainer started: TauGrid's 143, and the run is cancelled, not succeeded.
        status = EXIT_TERMINATED
        state, reason = "cancelled", "workload-termination"
    elif waited != "ok":
        why = "exited before it was ready" if waited == "exited" else f"did not become ready within " \
              f"{args.ready_timeout:.0f}s"
        log.error(f"metrics collector {why}; the trainer was not started: see {log_path} for the reason, "
                  "or raise --ready-timeout if the collector is only slow to start")
        status = EXIT_NOT_READY
        state, reason = "failed", "metrics-offloader-not-ready"
    else:
        log.info("collector ready", extra={"ready_file": ready})
        env = dict(os.environ, TAU_RUN_DIR=run_dir, TAU_HISTORY_DIR=history_dir,
                   TAU_TENSORBOARD_DIR=tensorboard_dir, TENSORBOARD_LOGDIR=tensorboard_dir,
                   PYTHONUNBUFFERED="1")
        if args.gpus is not None and "CUDA_VISIBLE_DEVICES" not in os.environ:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(args.gpus))
        attempt = 0
        deadline = None if args.time_limit is None else time.monotonic() + args.time_limit
        while True:
            _, status, state, outcome, exit_words, fault = _run_trainer(
                args, env, history_dir, out_dir, stop, stop_request, system_interval, notify, deadline)
            if fault is not None:
                _record_fault(_store_flag(args.collect_args), identity["run"], f"entrypoint {exit_words}", fault)
            if outcome == "timed-out":
                limit_message = f"stopped at its time limit of {args.time_limit:g}s"
            elif outcome == "stopped":
                reason = STOP_RULE_REASON if stop_request else "workload-termination"
            if outcome != "failed" or attempt >= args.retries:
                break
            attempt += 1
            resume = latest_checkpoint(checkpoint_globs) if checkpoint_globs else None
            resume_from = resume.path if resume is not None else (args.checkpoint_path or "")
            step = resume.step if resume is not None else None
            where = (f"resuming from {resume_from}" + (f" (step {step})" if step is not None else "")) \
                if resume_from else "no checkpoint to resume from"
            _record_retry(_store_flag(args.collect_args), identity["run"],
                          {"attempt": attempt, "max_retries": args.retries, "exit_code": status, "step": step,
                           "resume_from": resume_from or None},
                          f"retry {attempt}/{args.retries} after the trainer exited with code {status}; {where}")
            env = {k: v for k, v in env.items() if k not in RETRY_ENV}
            env.update(TAU_RETRY_ATTEMPT=str(attempt), TAU_RETRY_MAX=str(args.retries),
                       TAU_RETRY_REASON=f"exit code {status}")
            if resume_from:
                env["TAU_RESUME_FROM"] = resume_from
            if step is not None:
                env["TAU_RESUME_STEP"] = str(step)
    message = f"entrypoint exited with code {status}"
    if fault is not None and state == "failed" and not limit_message:
        message = f"entrypoint {exit_words}"
    if limit_message:
        message = f"{limit_message}; {message}"
    elif stop_request:
        message = f"{stop_request.get('message', 'a stop rule fired')}; {message}"
    write_completion(completion, state, reason=reason, message=message,
                     completed_at=time.time_ns() // 1_000_000_000 * 1_000_000_000)
    if not stop_request:  # a stop rule's own notification already said how this run ends
        notify("finished" if state == "succeeded" else state, state, reason, message)
    waited = _wait_for(done, done_timeout, stop=StopFlag(), process=collector)
    if waited != "ok":
        why = "exited before confirming the terminal publication" if waited == "exited" else \
            f"did not confirm terminal publication within {done_timeout:.0f}s"
        log.error(f"metrics collector {why}; see "
                  f"{log_path}. The history and the collector's checkpoint stay in {run_dir}: what was not "
                  "delivered is sent when a collector runs again with the same flags (or raise --done-timeout)")
        if status == 0:
            status = EXIT_NO_DONE
    else:
        log.info("collector done", extra={"state": state, "code": status})
    try:
        collector.wait(timeout=30)
    except subprocess.TimeoutExpired:
        collector.terminate()
    log_file.close()
    if notify_urls:  # after the collector's terminal publication: the run page is complete before this
        _record_deliveries(_store_flag(args.collect_args), identity["run"], notifier.close(args.notify_grace),
                           args.notify_grace)
    return status
