"""The on-demand local Portal keeps its token out of `ps` and out of world-readable files."""

from __future__ import annotations

import stat
from pathlib import Path

from taunotebook.local_portal import ensure_portal, stop_portal


def test_the_token_is_not_on_the_command_line_and_the_log_is_private(tmp_path):
    home = tmp_path / "home"
    portal = ensure_portal(home=home)
    try:
        cmdline = Path(f"/proc/{portal.pid}/cmdline").read_bytes().decode()
        assert portal.token not in cmdline
        assert "--token" not in cmdline.split("\0")
        for log in home.glob("portal*.log"):
            assert stat.S_IMODE(log.stat().st_mode) & 0o077 == 0, f"{log.name} is readable by others"
        with portal.client() as client:  # and the Portal does use that token
            assert client.experiment_runs("none").runs == ()
    finally:
        assert stop_portal(home=home)
