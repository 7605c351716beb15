"""The ``taunotebook`` command: dispatches its subcommands (``portal``)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["main"]

USAGE = """usage: taunotebook <command> [options]

commands:
  import    import TensorBoard, W&B, Ray Tune and JSONL history into the store (taunotebook import --help)
  portal    serve a local expstore with TauGrid's v2 Stellar API and pages (taunotebook portal --help)
"""


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE, end="")
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command == "import":
        from .cli_import import main as import_main

        return import_main(rest)
    if command == "portal":
        from .portal.cli import main as portal_main

        return portal_main(rest)
    print(f"taunotebook: unknown command {command!r}\n\n{USAGE}", end="", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
