"""The ``taunotebook`` command: dispatches its subcommands (``import``, ``portal``, ``export-view``).

``taunotebook --help`` (or ``-h``) prints the commands with examples and exits 0; no command, or
an unknown one, prints the usage and a one-line error on stderr and exits 2. Each subcommand has
its own ``--help`` with examples, ``-v`` (info logs on stderr, ``-vv`` debug) and ``--log-format``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["main"]

COMMANDS = ("import", "portal", "export-view")

USAGE = "usage: taunotebook [-h] [--version] COMMAND [options]\n"

HELP = USAGE + """
Import existing experiment history into a local Tau expstore and serve it with TauGrid's v2
Stellar API and pages.

commands:
  import    import TensorBoard, W&B, Ray Tune and JSONL history into the store (taunotebook import --help)
  portal    serve a local expstore with TauGrid's v2 Stellar API and pages (taunotebook portal --help)
  export-view  save a Stellar run or compare view as one HTML file that opens offline (taunotebook export-view --help)

options:
  -h, --help  show this help and exit
  --version   show the version and exit

examples:
  taunotebook import runs/                     # a TensorBoard logdir into <TAU_HOME>/store
  taunotebook portal --store ~/.local/share/tau/store
  taunotebook import --help                    # the flags and examples of one command
"""


def _usage_error(message: str) -> int:
    from tau_collector.cli.common import print_usage_error  # here: `taunotebook --help` imports no collector

    return print_usage_error(USAGE, "taunotebook", message)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        return _usage_error(f"a command is required (choose from {', '.join(COMMANDS)})")
    if args[0] in ("-h", "--help"):
        print(HELP, end="")
        return 0
    if args[0] == "--version":
        from . import __version__

        print(f"taunotebook {__version__}")
        return 0
    command, rest = args[0], args[1:]
    if command == "import":
        from .cli_import import main as import_main

        return import_main(rest)
    if command == "portal":
        from .portal.cli import main as portal_main

        return portal_main(rest)
    if command == "export-view":
        from .export_view import main as export_main

        return export_main(rest)
    kind = "option" if command.startswith("-") else "command"
    return _usage_error(f"unknown {kind} {command!r} (choose from {', '.join(COMMANDS)}; see taunotebook --help)")


if __name__ == "__main__":
    sys.exit(main())
