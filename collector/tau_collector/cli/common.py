"""What the subcommands share: usage errors reported exactly as argparse reports its own."""

from __future__ import annotations

import argparse
import sys

__all__ = ["EXIT_USAGE", "usage_error"]

EXIT_USAGE = 2


def usage_error(args: argparse.Namespace, message: str) -> int:
    """A validation argparse cannot express (a bad value combination, a missing variable): the usage line
    and ``PROG: error: MESSAGE`` on stderr, like ``parser.error``, but returned as exit status 2 so that
    ``run(args)`` stays callable from tests and other code without catching ``SystemExit``."""
    parser: argparse.ArgumentParser | None = getattr(args, "parser", None)
    if parser is None:
        sys.stderr.write(f"tau-collector: error: {message}\n")
    else:
        parser.print_usage(sys.stderr)
        sys.stderr.write(f"{parser.prog}: error: {message}\n")
    sys.stderr.flush()
    return EXIT_USAGE
