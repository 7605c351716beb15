"""Where taunotebook keeps its files: ``TAU_HOME`` (runs, the local store, the local Portal's record)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["tau_home"]


def tau_home() -> Path:
    """``$TAU_HOME``, else the per-user data directory (``$XDG_DATA_HOME/tau`` or ``~/.local/share/tau``)."""
    if os.environ.get("TAU_HOME"):
        return Path(os.environ["TAU_HOME"])
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "tau"
