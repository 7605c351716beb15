"""IPython magics: ``%%tau_submit`` turns a cell into a run with its live pane; ``%tau_runs/logs/cancel/pane``.

Load with ``%load_ext taunotebook``. Every usage problem (an unknown flag, a name TauGrid's
``ValidateID`` rejects, a backend whose dependency is missing) is one ``UsageError`` line and
nothing is submitted.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from datetime import datetime
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class
from IPython.display import display

from .backends import BACKENDS, BackendError
from .resources import add_resource_arguments, resources_from_args
from .submission import SubmittedRun, attach, notify_flags, runs, stop_rule_flags, submit

__all__ = ["TauMagics", "load_ipython_extension"]

SUBMIT_USAGE = ("%%tau_submit [--name N] [--project P] [--experiment E] [--group G] [--workspace W] "
                "[--backend local|ray|tau] [--tfevents DIR]... [--config K=V]... [--config-file F] "
                "[--metric M]... [--x step|relative|wall|METRIC] [--notify URL]... [--no-pane] [--as VAR] "
                "[--dry-run] [--ray-address A] [--base-config tau.yaml] [--gpus N] [--gpus-per-worker N] "
                "[--workers N] [--cpu Q] [--cpu-limit Q] [--memory Q] [--memory-limit Q] [--image I] [--pip REQ]... "
                "[--env K=V]... [--secret K=SECRET:KEY]... [--queue Q] [--profile P] [--nodes N] "
                "[--procs-per-node N] [--retries N] [--checkpoint-path P] [--time-limit T] [--engine job|rayjob]   "
                "(or: %tau_submit [flags] script.py [args...])")


class _Parser(argparse.ArgumentParser):
    """argparse that reports problems as one ``UsageError`` line instead of exiting the kernel."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")

    def exit(self, status: int = 0, message: str | None = None) -> None:  # type: ignore[override]
        if message:
            raise UsageError(message.strip())
        raise UsageError(self.format_usage().strip())


def _submit_parser() -> _Parser:
    p = _Parser(prog="%tau_submit", usage=SUBMIT_USAGE, add_help=False, allow_abbrev=False)
    p.add_argument("--name")
    p.add_argument("--project")
    p.add_argument("--experiment")
    p.add_argument("--group")
    p.add_argument("--workspace", default="default")
    p.add_argument("--backend", default="local", choices=BACKENDS)
    p.add_argument("--tfevents", action="append", default=[], metavar="DIR")
    p.add_argument("--config", action="append", default=[], metavar="K=V")
    p.add_argument("--config-file", metavar="F")
    p.add_argument("--metric", action="append", default=[], metavar="M")
    p.add_argument("--x", metavar="AXIS")  # the pane's x axis: step, relative, wall or a metric (tokens)
    p.add_argument("--no-pane", action="store_true")
    p.add_argument("--as", dest="var", default="tau_run", metavar="VAR")
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--ray-address")
    p.add_argument("--stop-on-nan", action="append", nargs="?", const="", default=[], metavar="METRIC")
    p.add_argument("--stop-if", action="append", default=[], metavar="RULE")
    p.add_argument("--notify", action="append", default=None, metavar="URL")
    p.add_argument("--base-config", metavar="tau.yaml")
    p.add_argument("--checkpoints", action="append", default=[], metavar="GLOB")
    add_resource_arguments(p)
    p.add_argument("script", nargs="?")
    p.add_argument("args", nargs=argparse.REMAINDER)
    return p


def _split(line: str, prog: str) -> list[str]:
    try:
        return shlex.split(line)
    except ValueError as err:
        raise UsageError(f"{prog}: {err}") from None


def _check_x(prog: str, x: str | None) -> None:
    """``--x`` is checked before anything is submitted: a bad axis names the flag."""
    from .pane import x_axis_value

    try:
        x_axis_value(x)
    except ValueError as err:
        raise UsageError(f"{prog}: --x: {err}") from None


def _show_pane(run: SubmittedRun, metrics: list[str] | None, x: str | None = None) -> None:
    """Display the run's live loss pane; if the pane cannot be built here, say why in one status line."""
    try:
        pane = run.pane(metrics, x=x)
    except Exception as err:  # the run is submitted either way: a missing widget must not hide its handle
        print(f"(no loss pane: {err}) run {run.run_id} is {run.state}; follow it with %tau_logs {run.run_id} "
              f"--follow or open {run.stellar_url()}")
        return
    display(pane)


@magics_class
class TauMagics(Magics):
    @line_cell_magic
    def tau_submit(self, line: str, cell: str | None = None) -> None:
        """Submit the cell (or ``script.py [args]`` on the line) as a run and show its live loss pane."""
        opts = _submit_parser().parse_args(_split(line, "%tau_submit"))
        if opts.script and opts.script.startswith("-"):
            raise UsageError(f"%tau_submit: unrecognized argument: {opts.script}")
        if cell is None and not opts.script:
            raise UsageError("%tau_submit: give a script (%tau_submit train.py [args]) or use %%tau_submit "
                             "with the training code in the cell")
        if cell is not None and opts.script:
            raise UsageError(f"%%tau_submit: unexpected argument {opts.script!r}: the cell body is the script")
        if not opts.var.isidentifier():
            raise UsageError(f"%tau_submit: --as {opts.var!r} is not a Python identifier")
        _check_x("%tau_submit", opts.x)
        try:  # checked here, so that an error names the magic's flags
            stop_rule_flags([m or None for m in opts.stop_on_nan], opts.stop_if, names=("--stop-on-nan", "--stop-if"))
            notify_flags(opts.notify, opts.backend, name="--notify")
            resources, env = resources_from_args(opts)
        except ValueError as err:
            raise UsageError(f"%tau_submit: {err}") from None
        common: dict[str, Any] = {
            "name": opts.name, "project": opts.project, "experiment": opts.experiment, "group": opts.group,
            "workspace": opts.workspace, "backend": opts.backend, "tfevents": opts.tfevents,
            "ray_address": opts.ray_address, "dry_run": opts.dry_run, "config_items": opts.config,
            "config_file": opts.config_file, "stop_on_nan": [m or None for m in opts.stop_on_nan],
            "stop_if": opts.stop_if, "notify": opts.notify, "resources": resources, "env": env,
            "base_config": opts.base_config, "checkpoints": opts.checkpoints,
        }
        try:
            if cell is None:
                run = submit(opts.script, args=opts.args, **common)
            else:
                run = submit(code=cell, **common)
        except (ValueError, BackendError) as err:
            raise UsageError(f"%tau_submit: {err}") from None
        if opts.dry_run:
            return
        self.shell.user_ns[opts.var] = run
        print(f"run {run.run_id} submitted ({run.backend}; project {run.project}, group {run.run_group_id}) "
              f"-> {opts.var}", flush=True)
        if not opts.no_pane:
            _show_pane(run, opts.metric or None, opts.x)

    @line_magic
    def tau_runs(self, line: str) -> None:
        """List the runs submitted from this machine, newest first."""
        p = _Parser(prog="%tau_runs", add_help=False, allow_abbrev=False)
        p.add_argument("--workspace")
        p.add_argument("--project")
        opts = p.parse_args(_split(line, "%tau_runs"))
        found = runs(opts.workspace, opts.project)
        if not found:
            print("no runs yet: submit one with %%tau_submit")
            return
        rows = [("RUN", "STATE", "BACKEND", "PROJECT", "GROUP", "WORKSPACE", "SUBMITTED")]
        for run in found:
            created = datetime.fromtimestamp(run.record.get("created_at", 0)).strftime("%Y-%m-%d %H:%M:%S")
            rows.append((run.run_id, run.state, run.backend, run.project, run.run_group_id, run.workspace, created))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        for row in rows:
            print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())

    def _run(self, line: str, prog: str, *, follow: bool = False) -> tuple[SubmittedRun, argparse.Namespace]:
        p = _Parser(prog=prog, add_help=False, allow_abbrev=False)
        p.add_argument("run")
        p.add_argument("--workspace")
        if follow:
            p.add_argument("--follow", action="store_true")
        opts = p.parse_args(_split(line, prog))
        try:
            return attach(opts.run, opts.workspace), opts
        except KeyError as err:
            raise UsageError(f"{prog}: {err.args[0]}") from None

    @line_magic
    def tau_logs(self, line: str) -> None:
        """Print a run's job log; ``--follow`` keeps printing until the run is done."""
        run, opts = self._run(line, "%tau_logs", follow=True)
        if opts.follow:
            run.follow(lambda text: (sys.stdout.write(text), sys.stdout.flush()))
        else:
            sys.stdout.write(run.logs())
        sys.stdout.flush()

    @line_magic
    def tau_cancel(self, line: str) -> None:
        """Cancel a run: its trainer is stopped and the run ends ``cancelled``."""
        run, _ = self._run(line, "%tau_cancel")
        state = run.state
        if state in ("succeeded", "failed", "cancelled"):
            print(f"run {run.run_id} already ended: {state}")
            return
        run.cancel()
        print(f"cancelling run {run.run_id}")

    @line_magic
    def tau_pane(self, line: str) -> None:
        """Show the loss pane of a run (e.g. after a kernel restart)."""
        p = _Parser(prog="%tau_pane", add_help=False, allow_abbrev=False)
        p.add_argument("run")
        p.add_argument("--workspace")
        p.add_argument("--metric", action="append", default=[])
        p.add_argument("--x", metavar="AXIS")
        p.add_argument("--as", dest="var", default="tau_run")
        opts = p.parse_args(_split(line, "%tau_pane"))
        _check_x("%tau_pane", opts.x)
        try:
            run = attach(opts.run, opts.workspace)
        except KeyError as err:
            raise UsageError(f"%tau_pane: {err.args[0]}") from None
        self.shell.user_ns[opts.var] = run
        _show_pane(run, opts.metric or None, opts.x)


def load_ipython_extension(ip) -> None:
    """``%load_ext taunotebook``."""
    ip.register_magics(TauMagics)
