"""Running a command where a directory is really read-only: a read-only bind mount in a private mount namespace.

Tests run as root here (and in CI), and root writes through ``chmod a-w``; a read-only mount stops
root too, and ``unshare --mount`` keeps it invisible to every other process. Without root no mount
namespace can be made, so the tests that need one say so and do not run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

# Mount ``$1`` read-only over itself, check that a write really fails, then run the command.
_SCRIPT = (
    'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" || exit 96; '
    'if touch "$1/.write-probe" 2>/dev/null; then echo "$1 is still writable" >&2; exit 97; fi; '
    'shift; exec "$@"'
)


def require_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to make a read-only bind mount in a private mount namespace "
                    "(unshare --mount); CI runs as root, so it runs there")


def read_only(directory: Path, argv: list[str]) -> list[str]:
    """``argv`` run with ``directory`` mounted read-only (for that command only)."""
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", _SCRIPT, "sh", str(directory), *argv]


def run_read_only(directory: Path, argv: list[str], **kw) -> subprocess.CompletedProcess:
    result = subprocess.run(read_only(directory, argv), capture_output=True, text=True, timeout=120, **kw)
    assert result.returncode not in (96, 97), result.stderr
    return result


def snapshot(directory: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``directory`` with its size and mtime: equal snapshots mean nothing was written."""
    return {str(p.relative_to(directory)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(directory.rglob("*"))}


def as_nobody(argv: list[str]) -> list[str]:
    """``argv`` run as the unprivileged user ``nobody`` (root's write permission bypass gone)."""
    return [shutil.which("setpriv") or "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
