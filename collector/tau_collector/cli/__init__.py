"""The ``tau-collector`` command line: one subcommand per module in this package.

Every subcommand has ``--help`` with examples, exits 2 on usage errors (a one-line message naming
the parameter), logs to stderr through :mod:`tau_collector.cli.logging_setup` (warnings and errors by default,
``-v`` info, ``-vv`` debug, ``--log-format json``) and keeps stdout for its data.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from tau_collector import __version__

_SUBCOMMANDS = ("collect", "wrap", "normalize", "dump", "project", "store")

_EPILOG = """\
examples:
  tau-collector collect --run r1 --project demo --experiment sweep --group lr \\
      --out run/collector --history 'run/history/*.jsonl' --store run/store
  python train.py | tau-collector normalize --out run/history
  tau-collector wrap --run-dir runs/r2 --run r2 --project demo --experiment sweep --group lr \\
      --store run/store -- python train.py
  tau-collector dump logs/
  tau-collector project run/history/chunk-*.jsonl --run r1 --project demo \\
      --experiment sweep --group lr
  tau-collector store runs --store run/store
  tau-collector COMMAND --help        # the flags and examples of one command
"""


def build_parser() -> argparse.ArgumentParser:
    # The subcommands are imported here, not with the package: a light module of it (durations) is
    # imported by job launchers and by taunotebook without loading the collector.
    import importlib

    from tau_collector.cli.common import command_parser

    parser = command_parser(
        "tau-collector",
        description="TauGrid-compatible metrics collector: read history and event files, "
                    "project canonical MetricEvents, spool and deliver them.",
        epilog=_EPILOG,
        version=__version__,
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in _SUBCOMMANDS:
        importlib.import_module(f"tau_collector.cli.{name}").add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from tau_collector.cli import wrap

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["wrap"] and not {"-h", "--help"} & set(wrap.split_argv(argv[1:])[0]):
        # wrap passes the flags it does not know to `collect`, and the command after `--` to the trainer
        args = wrap.parse(argv[1:])
    else:
        args = build_parser().parse_args(argv)
    return args.func(args)  # each command configures logging from its -v/--log-format first


if __name__ == "__main__":
    sys.exit(main())
