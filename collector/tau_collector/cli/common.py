"""What every command line shares: its parser's preamble and its usage errors, reported as argparse reports its own.

``tau-collector`` and its subcommands use it, and so do ``taunotebook``'s commands (``import``, ``portal``): each
parser keeps its description and examples as written, ends with the logging flags of
:mod:`tau_collector.cli.logging_setup`, and a usage error is the usage line and ``PROG: error: MESSAGE`` on
stderr with exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["EXIT_USAGE", "command_parser", "print_usage_error", "subcommand_parser", "usage_error"]

EXIT_USAGE = 2


def command_parser(prog: str, *, description: str, epilog: str, version: str | None = None,
                   **kwargs: Any) -> argparse.ArgumentParser:
    """A command's parser: ``--help`` prints ``description`` and the examples of ``epilog`` as written, and
    with ``version`` the command has ``--version`` (``PROG VERSION``)."""
    parser = argparse.ArgumentParser(prog=prog, description=description, epilog=epilog,
                                     formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs)
    if version is not None:
        parser.add_argument("--version", action="version", version=f"%(prog)s {version}")
    return parser


def subcommand_parser(subparsers: argparse._SubParsersAction, name: str, run: Callable[[argparse.Namespace], int],
                      *, help: str, description: str | None, epilog: str, **kwargs: Any) -> argparse.ArgumentParser:
    """A subcommand's parser, as :func:`command_parser`'s, whose parsed arguments carry ``func`` (``run``, which
    the command line calls with them) and ``parser`` (for :func:`usage_error`)."""
    parser = subparsers.add_parser(name, help=help, description=description, epilog=epilog,
                                   formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs)
    parser.set_defaults(func=run, parser=parser)
    return parser


def print_usage_error(usage: str, prog: str, message: str) -> int:
    """``usage`` (the usage line(s), may be empty) and ``PROG: error: MESSAGE`` on stderr; returns
    :data:`EXIT_USAGE`."""
    sys.stderr.write(f"{usage}{prog}: error: {message}\n")
    sys.stderr.flush()
    return EXIT_USAGE


def usage_error(args: argparse.Namespace, message: str) -> int:
    """A validation argparse cannot express (a bad value combination, a missing variable): the usage line
    and ``PROG: error: MESSAGE`` on stderr, like ``parser.error``, but returned as exit status 2 so that
    ``run(args)`` stays callable from tests and other code without catching ``SystemExit``."""
    parser: argparse.ArgumentParser | None = getattr(args, "parser", None)
    if parser is None:
        return print_usage_error("", "tau-collector", message)
    return print_usage_error(parser.format_usage(), parser.prog, message)
