"""The ``tau-collector`` command line: one subcommand per module in this package."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .. import __version__
from . import collect, dump, normalize, project, store, wrap

_SUBCOMMANDS = (collect, wrap, normalize, dump, project, store)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tau-collector",
        description="TauGrid-compatible metrics collector: read history and event files, "
                    "project canonical MetricEvents, spool and deliver them.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _SUBCOMMANDS:
        module.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["wrap"] and not {"-h", "--help"} & set(wrap.split_argv(argv[1:])[0]):
        # wrap passes the flags it does not know to `collect`, and the command after `--` to the trainer
        args = wrap.parse(argv[1:])
        return args.func(args)
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
